#include "mpi/request.h"

#include "mpi/handle.h"
#include "mpi/state.h"
#include "runtime/pool.h"

#include <vector>

namespace ulmpi::mpi {

constinit HandleTable<Request, ULMPI_KIND_REQUEST> g_request_table;

namespace {

// Every nonblocking call takes both several times: plain globals, no
// guard of a function-local static and no call to reach them (the table
// is constant-initialized; the pool is made by the first request and
// kept until exit, like the communicators' table).
constinit rt::Pool<Request>* g_pool = nullptr;

HandleTable<Request, ULMPI_KIND_REQUEST>& table() { return g_request_table; }

[[gnu::noinline, gnu::cold]] rt::Pool<Request>& make_pool()
{
    g_pool = new rt::Pool<Request>{256};
    return *g_pool;
}

rt::Pool<Request>& pool() { return g_pool != nullptr ? *g_pool : make_pool(); }

// request_done_send(): a predefined index of the table (below the user
// ones, so no scan of live requests sees it), registered by the first use.
constexpr int kDoneSendIndex = 1;
static_assert(kDoneSendHandle == make_handle(ULMPI_KIND_REQUEST, kDoneSendIndex));
Request g_done_send;
bool g_done_send_ready = false;

[[gnu::noinline, gnu::cold]] MPI_Request make_done_send()
{
    g_done_send.kind = Request::Kind::done;
    g_done_send.handle = kDoneSendHandle;
    status_empty(&g_done_send.status);
    table().set_predefined(kDoneSendIndex, &g_done_send);
    g_done_send_ready = true;
    return kDoneSendHandle;
}

int error_of(rt::Errc e) { return e == rt::Errc::ok ? MPI_SUCCESS : to_mpi_class(e); }

// Point-to-point requests freed by MPI_Request_free before they completed.
// The operation goes on; the request (without a handle) keeps its ULM
// descriptor, its communicator and its datatype until the descriptor
// completes, then a progress pass frees it all. So a communicator freed
// meanwhile keeps its context pair: no later communicator can get it while
// a stale receive is still posted on it.
class Detached final : public ulm::ProgressHook {
public:
    void add(Request* r)
    {
        if (!registered_) {
            state().engine.add_progress_hook(this);
            registered_ = true;
        }
        list_.push_back(r);
    }

    int poll() override
    {
        if (list_.empty()) {
            return 0;
        }
        int n = 0;
        for (std::size_t i = 0; i < list_.size();) {
            Request* r = list_[i];
            if (!r->complete()) {
                ++i;
                continue;
            }
            list_[i] = list_.back();
            list_.pop_back();
            if (r->kind == Request::Kind::send) {
                state().engine.release(r->send);
                r->send = nullptr;
            } else {
                request_release_recv(r);
            }
            request_free(r);
            ++n;
        }
        return n;
    }

private:
    std::vector<Request*> list_;
    bool registered_ = false;
};

Detached& detached()
{
    static auto* d = new Detached; // never destroyed: the engine may poll it until exit
    return *d;
}

} // namespace

Request* request_new(Request::Kind kind, Comm* comm)
{
    Request* r = pool().get();
    if (r == nullptr) {
        return nullptr;
    }
    r->kind = kind;
    r->comm = comm;
    r->handle = table().insert(r);
    if (r->handle == 0) {
        pool().put(r);
        return nullptr;
    }
    if (comm != nullptr) {
        comm_retain(comm); // MPI_Comm_free may come while the request is pending
    }
    return r;
}

MPI_Request request_done_send() { return g_done_send_ready ? kDoneSendHandle : make_done_send(); }


void request_free(Request* r)
{
    if (r == &g_done_send) {
        return; // shared, never freed (request_done_send)
    }
    if (r->type != nullptr) {
        datatype_release(r->type); // held since the operation started (datatype.h)
    }
    if (r->comm != nullptr) {
        comm_release(r->comm);
    }
    if (r->handle != 0) {
        table().erase(r->handle);
    }
    pool().put(r);
}

void request_release_recv(Request* r)
{
    if (r->recv == &r->own_recv) {
        state().engine.withdraw(r->own_recv); // ULM forgets it; the request keeps the memory
    } else {
        state().engine.release(r->recv);
    }
    r->recv = nullptr;
}

void request_detach(Request* r)
{
    table().erase(r->handle);
    r->handle = 0;
    r->persistent = false;
    detached().add(r);
}

void status_set(MPI_Status* st, int source, int tag, int error, std::uint64_t bytes, bool cancelled)
{
    if (st == MPI_STATUS_IGNORE) {
        return;
    }
    st->MPI_SOURCE = source;
    st->MPI_TAG = tag;
    st->MPI_ERROR = error;
    st->count_lo = static_cast<int>(bytes & 0xffffffffu);
    st->count_hi_and_cancelled =
        static_cast<int>(((bytes >> 32) & 0x7fffffffu) | (cancelled ? 0x80000000u : 0u));
}

void status_fill(MPI_Status* st, int source, int tag, std::uint64_t bytes, bool cancelled)
{
    if (st != MPI_STATUS_IGNORE) {
        status_set(st, source, tag, st->MPI_ERROR, bytes, cancelled);
    }
}

void status_empty(MPI_Status* st) { status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, false); }

std::uint64_t status_bytes(const MPI_Status* st)
{
    return static_cast<std::uint32_t>(st->count_lo) |
           (static_cast<std::uint64_t>(static_cast<std::uint32_t>(st->count_hi_and_cancelled) & 0x7fffffffu) << 32);
}

bool status_cancelled(const MPI_Status* st)
{
    return (static_cast<std::uint32_t>(st->count_hi_and_cancelled) & 0x80000000u) != 0;
}

int request_finish(MPI_Request* h, Request* r, MPI_Status* st)
{
    int err = MPI_SUCCESS;
    ulm::Engine& eng = state().engine;
    switch (r->kind) {
    case Request::Kind::send: {
        ulm::SendMsg* s = r->send;
        err = error_of(s->error);
        // A send's status says only whether it was cancelled.
        status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, err, 0, s->cancelled);
        eng.release(s);
        r->send = nullptr;
        break;
    }
    case Request::Kind::recv: {
        ulm::RecvMsg* m = r->recv;
        err = error_of(m->error);
        if (m->cancelled) {
            status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, true);
            err = MPI_SUCCESS;
        } else {
            int src = m->matched ? r->comm->peer_rank_of(m->env.source) : MPI_ANY_SOURCE;
            status_set(st, src, m->env.tag, err, m->received, false);
        }
        request_release_recv(r);
        break;
    }
    case Request::Kind::generalized:
        err = grequest_finish(r, st);
        break;
    case Request::Kind::done:
    case Request::Kind::schedule:
        err = r->status.MPI_ERROR;
        if (st != MPI_STATUS_IGNORE) {
            *st = r->status;
        }
        break;
    }
    if (r->persistent) {
        r->active = false;
        if (r->kind != Request::Kind::done) {
            r->kind = Request::Kind::done;
        }
        status_empty(&r->status);
    } else {
        request_free(r);
        *h = MPI_REQUEST_NULL;
    }
    return err;
}

} // namespace ulmpi::mpi
