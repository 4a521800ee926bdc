// Matched probe and receive (MPI-3.1 3.8.2-3.8.3): MPI_Mprobe, MPI_Improbe,
// MPI_Mrecv, MPI_Imrecv. The message objects are in message.h.
//
// Error classes: MPI_ERR_COMM, MPI_ERR_RANK, MPI_ERR_TAG for the probe's
// envelope; MPI_ERR_ARG for a NULL flag, message or request pointer;
// MPI_ERR_REQUEST for a message handle that is MPI_MESSAGE_NULL or not a
// live message (MPI has no class of its own for messages; MPICH and Open
// MPI use this one); MPI_ERR_TYPE, MPI_ERR_COUNT, MPI_ERR_BUFFER for the
// receive buffer (the message stays valid then); MPI_ERR_TRUNCATE when the
// message is longer than the buffer (it is received all the same: the
// message handle is gone). Errors about a message go to its
// communicator's handler; about MPI_MESSAGE_NO_PROC or a bad handle, to
// MPI_COMM_WORLD's.
//
// Statuses: the probe's is the message's envelope and size; the receive's
// the same with the bytes received. A probe or receive of MPI_PROC_NULL /
// MPI_MESSAGE_NO_PROC gives source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0.
// MPI_ERROR is never written (single-status calls, see status_fill).
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/message.h"
#include "mpi/p2p.h"
#include "mpi/request.h"
#include "mpi/state.h"

using namespace ulmpi::mpi;

namespace {

void proc_null_status(MPI_Status* st) { status_fill(st, MPI_PROC_NULL, MPI_ANY_TAG, 0, false); }

int mprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status,
           const char* fn)
{
    require_init(fn);
    Comm* c;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = check_out_ptr(c, message, "the message pointer", fn)) {
        return e;
    }
    if (state().check_args) {
        if (int e = check_source(c, source, fn)) {
            return e;
        }
        if (int e = check_recv_tag(c, tag, fn)) {
            return e;
        }
    }
    const bool blocking = flag == nullptr;
    if (source == MPI_PROC_NULL) {
        proc_null_status(status);
        *message = MPI_MESSAGE_NO_PROC;
        if (!blocking) {
            *flag = 1;
        }
        return MPI_SUCCESS;
    }
    // The message object first: once improbe took a message, nothing may fail.
    Message* m = message_new(c);
    if (m == nullptr) {
        return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a message handle");
    }
    ulmpi::ulm::Engine& eng = state().engine;
    const int src = source == MPI_ANY_SOURCE ? ulmpi::ulm::kAnySource : c->world_of(source);
    const int utag = tag == MPI_ANY_TAG ? ulmpi::ulm::kAnyTag : tag;
    ulmpi::ulm::Envelope env;
    ulmpi::ulm::Unexpected* u = eng.improbe(src, utag, c->ctx, &env);
    if (u == nullptr) {
        if (blocking) {
            eng.wait([&] {
                u = eng.improbe(src, utag, c->ctx, &env);
                return u != nullptr;
            });
        } else {
            eng.poll();
            u = eng.improbe(src, utag, c->ctx, &env);
        }
    }
    if (!blocking) {
        *flag = u != nullptr ? 1 : 0;
    }
    if (u == nullptr) {
        message_free(m); // *message and *status are left as they were
        return MPI_SUCCESS;
    }
    m->msg = u;
    *message = m->handle;
    status_fill(status, c->peer_rank_of(env.source), env.tag, env.msg_len, false);
    return MPI_SUCCESS;
}

// The receive side's common checks. *m is the message (NO_PROC included).
int check_mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, const char* fn,
                Message** m, Datatype** t)
{
    require_init(fn);
    if (message == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the message pointer is NULL");
    }
    Message* msg = message_get(*message);
    if (msg == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn,
                     *message == MPI_MESSAGE_NULL ? "the message is MPI_MESSAGE_NULL"
                                                  : "0x%x is not a valid message handle",
                     static_cast<unsigned>(*message));
    }
    Comm* c = msg->comm; // nullptr (MPI_COMM_WORLD's handler) for NO_PROC
    if (int e = check_type(c, type, fn, t)) {
        return e;
    }
    if (state().check_args) {
        if (int e = check_count(c, count, fn)) {
            return e;
        }
        if (int e = check_buffer(c, buf, count, *t, fn)) {
            return e;
        }
    }
    *m = msg;
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) try {
    EntryGuard guard;
    return mprobe(source, tag, comm, nullptr, message, status, "MPI_Mprobe");
} catch (...) {
    return api_exception("MPI_Mprobe");
}
ULMPI_ALIAS(MPI_Mprobe)

int PMPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
                 MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Improbe";
    if (flag == nullptr) {
        require_init(fn);
        return raise(comm_get(comm), MPI_ERR_ARG, fn, "flag is NULL");
    }
    return mprobe(source, tag, comm, flag, message, status, fn);
} catch (...) {
    return api_exception("MPI_Improbe");
}
ULMPI_ALIAS(MPI_Improbe)

int PMPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Mrecv";
    Message* m;
    Datatype* t;
    if (int e = check_mrecv(buf, count, type, message, fn, &m, &t)) {
        return e;
    }
    *message = MPI_MESSAGE_NULL;
    if (m->no_proc) {
        proc_null_status(status);
        return MPI_SUCCESS;
    }
    Comm* c = m->comm;
    ulmpi::ulm::Engine& eng = state().engine;
    ulmpi::ulm::RecvMsg* r = nullptr;
    ulmpi::rt::Status s = eng.imrecv(m->msg, t->ref(buf, static_cast<std::uint64_t>(count)), &r);
    if (!s.ok()) [[unlikely]] {
        *message = m->handle; // not received: the program still holds it
        return raise(c, to_mpi_class(s.code()), fn, "cannot receive the message: %s",
                     ulmpi::rt::errc_name(s.code()));
    }
    m->msg = nullptr; // the receive owns it now
    if (!r->complete) {
        eng.wait([r] { return r->complete; });
    }
    int err = p2p_recv_status(c, r, status);
    if (err != MPI_SUCCESS) [[unlikely]] {
        err = p2p_recv_error(c, r, fn);
    }
    eng.release(r);
    message_free(m); // after the error report: its reference keeps c alive
    return err;
} catch (...) {
    return api_exception("MPI_Mrecv");
}
ULMPI_ALIAS(MPI_Mrecv)

int PMPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message,
                MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Imrecv";
    Message* m;
    Datatype* t;
    if (int e = check_mrecv(buf, count, type, message, fn, &m, &t)) {
        return e;
    }
    Comm* c = m->comm;
    if (request == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "the request pointer is NULL");
    }
    Request* r = request_new(m->no_proc ? Request::Kind::done : Request::Kind::recv, c);
    if (r == nullptr) {
        return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a request");
    }
    if (m->no_proc) {
        status_set(&r->status, MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0, false);
    } else {
        ulmpi::rt::Status s =
            state().engine.imrecv(m->msg, t->ref(buf, static_cast<std::uint64_t>(count)), &r->recv);
        if (!s.ok()) [[unlikely]] {
            request_free(r);
            return raise(c, to_mpi_class(s.code()), fn, "cannot receive the message: %s",
                         ulmpi::rt::errc_name(s.code()));
        }
        m->msg = nullptr;
        r->type = t; // a freed type stays alive while the receive is pending
        datatype_retain(t);
    }
    message_free(m); // the request holds the communicator now
    *message = MPI_MESSAGE_NULL;
    *request = r->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Imrecv");
}
ULMPI_ALIAS(MPI_Imrecv)
