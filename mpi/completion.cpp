// Completion: Wait/Test and their any/all/some forms, Cancel,
// Request_free, Test_cancelled, Get_count, Get_elements, Type_size.
#include "mpi/checks.h"
#include "mpi/coll/nbc.h"
#include "mpi/entry.h"
#include "mpi/ft_comm.h"
#include "mpi/p2p.h"
#include "mpi/request.h"
#include "mpi/state.h"

#include <climits>
#include <vector>

using namespace ulmpi::mpi;

namespace {

// A request handle as found in a user array: null, inactive, or live.
enum class Slot { null, inactive, live, invalid };

Slot classify(MPI_Request h, Request** out)
{
    if (h == MPI_REQUEST_NULL) {
        return Slot::null;
    }
    Request* r = request_get(h);
    if (r == nullptr) {
        return Slot::invalid;
    }
    *out = r;
    return r->persistent && !r->active ? Slot::inactive : Slot::live;
}

// Complete, or a wildcard receive that a failure keeps from completing for
// now (fault tolerance: it raises MPIX_ERR_PROC_FAILED_PENDING and stays).
[[gnu::always_inline]] inline bool settled(const Request* r)
{
    return r->complete() || (ft_enabled() && ft_request_blocked(r));
}

// A point-to-point request whose completion is its ULM descriptor's flag
// alone (no fault tolerance to consult): waited for with wait_p2p, which
// under fine locks releases the MPI lock for the whole wait.
bool p2p_only(const Request* r)
{
    return (r->kind == Request::Kind::send || r->kind == Request::Kind::recv) && !ft_enabled();
}

// Waits for these live point-to-point requests without the MPI lock
// (fine locks): their descriptors are read, never the request objects,
// which other threads' calls may move meanwhile. False: not all of them
// are such requests; the caller waits the usual way.
bool wait_p2p_all(int count, Request* const* found, int first)
{
    ulmpi::ulm::Engine& eng = state().engine;
    if (!eng.fine()) {
        return false;
    }
    std::vector<const ulmpi::ulm::DoneFlag*> flags;
    for (int i = first; i < count; ++i) {
        Request* r = found[i];
        if (r == nullptr || r->complete()) {
            continue;
        }
        if (!p2p_only(r)) {
            return false;
        }
        flags.push_back(r->kind == Request::Kind::send ? &r->send->complete : &r->recv->complete);
    }
    std::size_t next = 0;
    eng.wait_p2p([&] {
        while (next < flags.size() && *flags[next]) {
            ++next;
        }
        return next == flags.size();
    });
    return true;
}

// A nonblocking receive that completed cleanly into its request's own
// descriptor (MPI_Irecv, Engine::irecv_into), not persistent: its status,
// then the request goes; ULM has nothing to forget (Engine::withdraw's
// inline case). False: finish() does it. `array`: the status's MPI_ERROR
// is set (the array forms), else left as the program set it.
[[gnu::always_inline]] inline bool finish_plain_recv(MPI_Request* h, Request* r, MPI_Status* st, bool array)
{
    const ulmpi::ulm::RecvMsg& m = r->own_recv;
    if (r->kind != Request::Kind::recv || r->recv != &m || r->persistent) {
        return false;
    }
    if (m.error != ulmpi::rt::Errc::ok || m.cancelled || m.id != 0 || !m.complete || m.reading) [[unlikely]] {
        return false;
    }
    if (st != MPI_STATUS_IGNORE) {
        const int src = m.matched ? r->comm->peer_rank_of(m.env.source) : MPI_ANY_SOURCE;
        status_set(st, src, m.env.tag, array ? MPI_SUCCESS : st->MPI_ERROR, m.received, false);
    }
    r->recv = nullptr;
    request_free(r);
    *h = MPI_REQUEST_NULL;
    return true;
}

int bad_request(MPI_Request h, const char* fn)
{
    return raise(nullptr, MPI_ERR_REQUEST, fn, "0x%x is not a valid request handle", static_cast<unsigned>(h));
}

// Finishes request i; reports a failure through its communicator's handler
// when `report` (single completion) or returns the code (array forms).
// Single completion leaves MPI_ERROR as the program set it (status_fill).
int finish_one(MPI_Request* h, Request* r, MPI_Status* st, bool report, const char* fn);

int finish(MPI_Request* h, Request* r, MPI_Status* st, bool report, const char* fn)
{
    if (!report || st == MPI_STATUS_IGNORE) {
        return finish_one(h, r, st, report, fn);
    }
    const int saved = st->MPI_ERROR;
    int err = finish_one(h, r, st, report, fn);
    st->MPI_ERROR = saved;
    return err;
}

int finish_one(MPI_Request* h, Request* r, MPI_Status* st, bool report, const char* fn)
{
    Comm* c = r->comm;
    if (!r->complete()) {
        // Blocked by an unacknowledged failure (see settled()): it stays.
        if (st != MPI_STATUS_IGNORE) {
            status_empty(st);
            st->MPI_ERROR = kErrProcFailedPending;
        }
        if (!report) {
            return kErrProcFailedPending;
        }
        return raise(c, kErrProcFailedPending, fn,
                     "a process that could match this wildcard receive failed (%s); the request is "
                     "still pending: acknowledge the failure (MPIX_Comm_ack_failed) to go on",
                     ft_failed_text(c).c_str());
    }
    bool is_recv = r->kind == Request::Kind::recv;
    bool is_send = r->kind == Request::Kind::send;
    int err = MPI_SUCCESS;
    if (report && ((is_recv && r->recv->error != ulmpi::rt::Errc::ok) ||
                   (is_send && r->send->error != ulmpi::rt::Errc::ok))) {
        // Report with the descriptor still alive (the message names it).
        int code = is_recv ? p2p_recv_error(c, r->recv, fn) : p2p_send_error(c, r->send, fn);
        request_finish(h, r, st);
        return code;
    }
    err = request_finish(h, r, st);
    if (report && err != MPI_SUCCESS) {
        return raise(c, err, fn, "the request completed with an error");
    }
    return err;
}

// The requests of an array, looked up once: a call over an array reads
// each handle when it checks it, while it waits and when it finishes.
// Up to 64 (a window of OSU's bandwidth tests) live on the stack.
class RequestArray {
public:
    explicit RequestArray(int count)
    {
        if (count > kInline) {
            heap_.resize(static_cast<std::size_t>(count));
            p_ = heap_.data();
        }
    }
    RequestArray(const RequestArray&) = delete;
    RequestArray& operator=(const RequestArray&) = delete;
    Request** data() { return p_; }

private:
    static constexpr int kInline = 64;
    Request* inline_[kInline];
    std::vector<Request*> heap_;
    Request** p_ = inline_;
};

// Checks the array; with `found`, also stores each live request there
// (nullptr for MPI_REQUEST_NULL and inactive persistent requests).
int check_array(int count, MPI_Request* reqs, const char* fn, Request** found = nullptr)
{
    require_init(fn);
    if (count < 0) {
        return raise(nullptr, MPI_ERR_COUNT, fn, "count %d is negative", count);
    }
    if (count > 0 && reqs == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "the request array is NULL");
    }
    for (int i = 0; i < count; ++i) {
        Request* r = nullptr;
        const Slot k = classify(reqs[i], &r);
        if (k == Slot::invalid) {
            return raise(nullptr, MPI_ERR_REQUEST, fn, "requests[%d] = 0x%x is not a valid request", i,
                         static_cast<unsigned>(reqs[i]));
        }
        if (found != nullptr) {
            found[i] = k == Slot::live ? r : nullptr;
        }
    }
    return MPI_SUCCESS;
}

MPI_Status* status_at(MPI_Status* statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

// Completes every finished request of the array (as check_array found
// them) into the statuses; returns MPI_ERR_IN_STATUS if one failed (each
// status then carries its code).
int finish_all(int count, MPI_Request* reqs, Request* const* found, MPI_Status* statuses, const char* fn)
{
    bool any_error = false;
    Comm* err_comm = nullptr;
    for (int i = 0; i < count; ++i) {
        Request* r = found[i];
        MPI_Status* st = status_at(statuses, i);
        if (r == nullptr || reqs[i] == kDoneSendHandle) {
            status_empty(st); // also the status of a send that completed in its call
            if (r != nullptr) {
                reqs[i] = MPI_REQUEST_NULL;
            }
            continue;
        }
        if (finish_plain_recv(&reqs[i], r, st, true)) {
            continue;
        }
        Comm* c = r->comm;
        int e = finish(&reqs[i], r, st, false, fn);
        if (e != MPI_SUCCESS) {
            any_error = true;
            err_comm = c;
        }
    }
    if (any_error) {
        if (statuses == MPI_STATUSES_IGNORE) {
            return raise(err_comm, MPI_ERR_IN_STATUS, fn, "a request completed with an error");
        }
        return raise(err_comm, MPI_ERR_IN_STATUS, fn,
                     "a request completed with an error (see the MPI_ERROR field of the statuses)");
    }
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Wait(MPI_Request* request, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Wait";
    require_init(fn);
    if (request == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "the request pointer is NULL");
    }
    Request* r;
    switch (classify(*request, &r)) {
    case Slot::null:
    case Slot::inactive:
        status_empty(status);
        return MPI_SUCCESS;
    case Slot::invalid:
        return bad_request(*request, fn);
    case Slot::live:
        break;
    }
    if (!r->complete()) {
        if (p2p_only(r) && r->kind == Request::Kind::send) {
            const ulmpi::ulm::SendMsg* d = r->send;
            state().engine.wait_p2p([d] { return bool(d->complete); });
        } else if (p2p_only(r)) {
            const ulmpi::ulm::RecvMsg* d = r->recv;
            state().engine.wait_p2p([d] { return bool(d->complete); });
        } else {
            state().engine.wait([r] { return settled(r); });
        }
    }
    if (finish_plain_recv(request, r, status, false)) {
        return MPI_SUCCESS;
    }
    return finish(request, r, status, true, fn);
} catch (...) {
    return api_exception("MPI_Wait");
}
ULMPI_ALIAS(MPI_Wait)

int PMPI_Test(MPI_Request* request, int* flag, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Test";
    require_init(fn);
    if (request == nullptr || flag == nullptr) {
        return raise(nullptr, request == nullptr ? MPI_ERR_REQUEST : MPI_ERR_ARG, fn, "%s is NULL",
                     request == nullptr ? "the request pointer" : "flag");
    }
    Request* r;
    switch (classify(*request, &r)) {
    case Slot::null:
    case Slot::inactive:
        *flag = 1;
        status_empty(status);
        return MPI_SUCCESS;
    case Slot::invalid:
        return bad_request(*request, fn);
    case Slot::live:
        break;
    }
    if (!r->complete()) {
        state().engine.poll();
        if (!r->complete()) {
            *flag = 0;
            return settled(r) ? finish(request, r, status, true, fn) : MPI_SUCCESS;
        }
    }
    *flag = 1;
    if (finish_plain_recv(request, r, status, false)) {
        return MPI_SUCCESS;
    }
    return finish(request, r, status, true, fn);
} catch (...) {
    return api_exception("MPI_Test");
}
ULMPI_ALIAS(MPI_Test)

int PMPI_Waitall(int count, MPI_Request* reqs, MPI_Status* statuses) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Waitall";
    RequestArray found(count);
    if (int e = check_array(count, reqs, fn, found.data())) {
        return e;
    }
    Request* const* rs = found.data();
    int first_pending = 0; // requests before it are complete (they stay so)
    auto all_done = [&] {
        for (int& i = first_pending; i < count; ++i) {
            if (rs[i] != nullptr && !settled(rs[i])) {
                return false;
            }
        }
        return true;
    };
    if (!all_done() && !wait_p2p_all(count, rs, first_pending)) {
        state().engine.wait(all_done);
    }
    return finish_all(count, reqs, rs, statuses, fn);
} catch (...) {
    return api_exception("MPI_Waitall");
}
ULMPI_ALIAS(MPI_Waitall)

int PMPI_Testall(int count, MPI_Request* reqs, int* flag, MPI_Status* statuses) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Testall";
    RequestArray found(count);
    if (int e = check_array(count, reqs, fn, found.data())) {
        return e;
    }
    if (flag == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "flag is NULL");
    }
    state().engine.poll();
    Request* const* rs = found.data();
    for (int i = 0; i < count; ++i) {
        if (rs[i] != nullptr && !settled(rs[i])) {
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    return finish_all(count, reqs, rs, statuses, fn);
} catch (...) {
    return api_exception("MPI_Testall");
}
ULMPI_ALIAS(MPI_Testall)

namespace {

// Index of the first complete live request, -1 if none, or MPI_UNDEFINED
// when no request is live.
int first_complete(int count, MPI_Request* reqs)
{
    bool any_live = false;
    for (int i = 0; i < count; ++i) {
        Request* r;
        if (classify(reqs[i], &r) == Slot::live) {
            any_live = true;
            if (settled(r)) {
                return i;
            }
        }
    }
    return any_live ? -1 : MPI_UNDEFINED;
}

} // namespace

int PMPI_Waitany(int count, MPI_Request* reqs, int* index, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Waitany";
    if (int e = check_array(count, reqs, fn)) {
        return e;
    }
    if (index == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "index is NULL");
    }
    int i = first_complete(count, reqs);
    if (i == -1) {
        state().engine.wait([&] { return (i = first_complete(count, reqs)) != -1; });
    }
    if (i == MPI_UNDEFINED) {
        *index = MPI_UNDEFINED;
        status_empty(status);
        return MPI_SUCCESS;
    }
    *index = i;
    return finish(&reqs[i], request_get(reqs[i]), status, true, fn);
} catch (...) {
    return api_exception("MPI_Waitany");
}
ULMPI_ALIAS(MPI_Waitany)

int PMPI_Testany(int count, MPI_Request* reqs, int* index, int* flag, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Testany";
    if (int e = check_array(count, reqs, fn)) {
        return e;
    }
    if (index == nullptr || flag == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", index == nullptr ? "index" : "flag");
    }
    int i = first_complete(count, reqs);
    if (i == -1) {
        state().engine.poll();
        i = first_complete(count, reqs);
    }
    if (i == -1) {
        *flag = 0;
        *index = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    *flag = 1;
    if (i == MPI_UNDEFINED) {
        *index = MPI_UNDEFINED;
        status_empty(status);
        return MPI_SUCCESS;
    }
    *index = i;
    return finish(&reqs[i], request_get(reqs[i]), status, true, fn);
} catch (...) {
    return api_exception("MPI_Testany");
}
ULMPI_ALIAS(MPI_Testany)

namespace {

// Finishes every complete request; *outcount = how many, or MPI_UNDEFINED
// when no request is live.
int finish_some(int count, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses,
                const char* fn)
{
    int n = 0;
    bool any_live = false;
    bool any_error = false;
    Comm* err_comm = nullptr;
    for (int i = 0; i < count; ++i) {
        Request* r;
        if (classify(reqs[i], &r) != Slot::live) {
            continue;
        }
        any_live = true;
        if (!settled(r)) {
            continue;
        }
        Comm* c = r->comm;
        int e = finish(&reqs[i], r, status_at(statuses, n), false, fn);
        if (e != MPI_SUCCESS) {
            any_error = true;
            err_comm = c;
        }
        indices[n++] = i;
    }
    *outcount = any_live ? n : MPI_UNDEFINED;
    if (any_error) {
        return raise(err_comm, MPI_ERR_IN_STATUS, fn, "a request completed with an error");
    }
    return MPI_SUCCESS;
}

int some(int count, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses,
         bool blocking, const char* fn)
{
    if (int e = check_array(count, reqs, fn)) {
        return e;
    }
    if (outcount == nullptr || (count > 0 && indices == nullptr)) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", outcount == nullptr ? "outcount" : "indices");
    }
    int i = first_complete(count, reqs);
    if (i == -1) {
        if (blocking) {
            state().engine.wait([&] { return first_complete(count, reqs) != -1; });
        } else {
            state().engine.poll();
        }
    }
    return finish_some(count, reqs, outcount, indices, statuses, fn);
}

} // namespace

int PMPI_Waitsome(int count, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses) try {
    EntryGuard guard;
    return some(count, reqs, outcount, indices, statuses, true, "MPI_Waitsome");
} catch (...) {
    return api_exception("MPI_Waitsome");
}
ULMPI_ALIAS(MPI_Waitsome)

int PMPI_Testsome(int count, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses) try {
    EntryGuard guard;
    return some(count, reqs, outcount, indices, statuses, false, "MPI_Testsome");
} catch (...) {
    return api_exception("MPI_Testsome");
}
ULMPI_ALIAS(MPI_Testsome)

int PMPI_Cancel(MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Cancel";
    require_init(fn);
    if (request == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "the request pointer is NULL");
    }
    Request* r;
    switch (classify(*request, &r)) {
    case Slot::null:
        return raise(nullptr, MPI_ERR_REQUEST, fn, "cannot cancel MPI_REQUEST_NULL");
    case Slot::invalid:
        return bad_request(*request, fn);
    case Slot::inactive:
        return raise(r->comm, MPI_ERR_REQUEST, fn, "the persistent request is not active");
    case Slot::live:
        break;
    }
    // Cancellation may fail (the message already left or matched): the
    // request then completes normally and MPI_Test_cancelled says false.
    if (r->kind == Request::Kind::recv) {
        state().engine.cancel(r->recv);
    } else if (r->kind == Request::Kind::send) {
        state().engine.cancel(r->send);
    } else if (r->kind == Request::Kind::generalized) {
        if (int e = grequest_cancel(r)) {
            return raise(r->comm, e, fn, "the cancel callback of the generalized request failed");
        }
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Cancel");
}
ULMPI_ALIAS(MPI_Cancel)

int PMPI_Test_cancelled(const MPI_Status* status, int* flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Test_cancelled";
    require_init(fn);
    if (status == nullptr || status == MPI_STATUS_IGNORE || flag == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s", flag == nullptr ? "flag is NULL" : "no status given");
    }
    *flag = status_cancelled(status) ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Test_cancelled");
}
ULMPI_ALIAS(MPI_Test_cancelled)

int PMPI_Request_free(MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Request_free";
    require_init(fn);
    if (request == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "the request pointer is NULL");
    }
    Request* r;
    switch (classify(*request, &r)) {
    case Slot::null:
        return raise(nullptr, MPI_ERR_REQUEST, fn, "cannot free MPI_REQUEST_NULL");
    case Slot::invalid:
        return bad_request(*request, fn);
    case Slot::inactive:
    case Slot::live:
        break;
    }
    if (r->kind == Request::Kind::generalized) {
        *request = MPI_REQUEST_NULL;
        if (int e = grequest_free(r)) {
            return raise(nullptr, e, fn, "the free callback of the generalized request failed");
        }
        return MPI_SUCCESS;
    }
    // The operation goes on. A send or receive keeps the request (its
    // descriptor, communicator and datatype) until it completes.
    if ((r->kind == Request::Kind::send || r->kind == Request::Kind::recv) && !r->complete()) {
        request_detach(r);
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    if (r->kind == Request::Kind::send && r->send != nullptr) {
        state().engine.release(r->send);
    } else if (r->kind == Request::Kind::recv && r->recv != nullptr) {
        request_release_recv(r);
    } else if (r->kind == Request::Kind::schedule && r->sched != nullptr) {
        ulmpi::mpi::coll::nbc_detach(r->sched); // the collective goes on without its request
    } else if (r->idup != nullptr) {
        comm_idup_detach(r->idup);
    } else if (r->ftop != nullptr) {
        ft_op_detach(r->ftop);
    }
    request_free(r);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Request_free");
}
ULMPI_ALIAS(MPI_Request_free)

namespace {

int type_for_count(const MPI_Status* status, MPI_Datatype type, const char* fn, Datatype** t)
{
    require_init(fn);
    if (status == nullptr || status == MPI_STATUS_IGNORE) {
        return raise(nullptr, MPI_ERR_ARG, fn, "no status given");
    }
    Datatype* d = datatype_get(type);
    if (d == nullptr) {
        return raise(nullptr, MPI_ERR_TYPE, fn, "0x%x is not a valid datatype", static_cast<unsigned>(type));
    }
    *t = d;
    return MPI_SUCCESS;
}

// Basic elements in `bytes` of type t, or -1 when they end inside a basic
// element (derived types are walked: a struct of int and double cut after
// the int holds one element).
long long elements_in(const Datatype* t, std::uint64_t bytes)
{
    return static_cast<long long>(datatype_elements_in(t, bytes));
}

} // namespace

int PMPI_Get_count(const MPI_Status* status, MPI_Datatype type, int* count) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Get_count";
    Datatype* t;
    if (int e = type_for_count(status, type, fn, &t)) {
        return e;
    }
    if (count == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "count is NULL");
    }
    std::uint64_t bytes = status_bytes(status);
    if (t->size == 0) {
        *count = 0;
    } else if (bytes % t->size != 0 || bytes / t->size > INT_MAX) {
        *count = MPI_UNDEFINED;
    } else {
        *count = static_cast<int>(bytes / t->size);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Get_count");
}
ULMPI_ALIAS(MPI_Get_count)

int PMPI_Get_elements_x(const MPI_Status* status, MPI_Datatype type, MPI_Count* count) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Get_elements_x";
    Datatype* t;
    if (int e = type_for_count(status, type, fn, &t)) {
        return e;
    }
    if (count == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "count is NULL");
    }
    long long n = elements_in(t, status_bytes(status));
    *count = n < 0 ? MPI_UNDEFINED : n;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Get_elements_x");
}
ULMPI_ALIAS(MPI_Get_elements_x)

int PMPI_Get_elements(const MPI_Status* status, MPI_Datatype type, int* count) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Get_elements";
    Datatype* t;
    if (int e = type_for_count(status, type, fn, &t)) {
        return e;
    }
    if (count == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "count is NULL");
    }
    long long n = elements_in(t, status_bytes(status));
    *count = (n < 0 || n > INT_MAX) ? MPI_UNDEFINED : static_cast<int>(n);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Get_elements");
}
ULMPI_ALIAS(MPI_Get_elements)

int PMPI_Type_size_x(MPI_Datatype type, MPI_Count* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_size_x";
    require_init(fn);
    Datatype* t = datatype_get(type);
    if (t == nullptr) {
        return raise(nullptr, MPI_ERR_TYPE, fn, "0x%x is not a valid datatype", static_cast<unsigned>(type));
    }
    if (size == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "size is NULL");
    }
    *size = static_cast<MPI_Count>(t->size);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_size_x");
}
ULMPI_ALIAS(MPI_Type_size_x)

int PMPI_Type_size(MPI_Datatype type, int* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_size";
    require_init(fn);
    Datatype* t = datatype_get(type);
    if (t == nullptr) {
        return raise(nullptr, MPI_ERR_TYPE, fn, "0x%x is not a valid datatype", static_cast<unsigned>(type));
    }
    if (size == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "size is NULL");
    }
    *size = t->size > INT_MAX ? MPI_UNDEFINED : static_cast<int>(t->size);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_size");
}
ULMPI_ALIAS(MPI_Type_size)
