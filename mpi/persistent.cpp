// Persistent requests: *_init keeps the arguments; MPI_Start begins one
// operation with them; completion makes the request inactive again.
#include "mpi/bsend.h"
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/p2p.h"
#include "mpi/request.h"
#include "mpi/state.h"

using namespace ulmpi::mpi;
using ulmpi::ulm::SendMode;

namespace {

enum class Op { send, bsend, recv };

int make_persistent(const void* buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                    MPI_Request* request, Op op, SendMode mode, const char* fn)
{
    Comm* c;
    Datatype* t;
    int e = op == Op::recv ? check_recv(buf, count, type, peer, tag, comm, fn, &c, &t)
                           : check_send(buf, count, type, peer, tag, comm, fn, &c, &t);
    if (e != MPI_SUCCESS) {
        return e;
    }
    if (int e2 = check_out_ptr(c, request, "request pointer", fn)) {
        return e2;
    }
    Request* r = request_new(Request::Kind::done, c);
    if (r == nullptr) {
        return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a request");
    }
    r->persistent = true;
    r->active = false;
    r->buffered = op == Op::bsend;
    r->buf = buf;
    r->count = count;
    r->type = t;
    datatype_retain(t); // released with the request
    r->peer = peer;
    r->tag = tag;
    r->mode = mode;
    r->is_recv_persistent = op == Op::recv;
    status_empty(&r->status);
    *request = r->handle;
    return MPI_SUCCESS;
}

int start(MPI_Request h, const char* fn)
{
    Request* r = request_get(h);
    if (r == nullptr || !r->persistent) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "0x%x is not a persistent request", static_cast<unsigned>(h));
    }
    if (r->active) {
        return raise(r->comm, MPI_ERR_REQUEST, fn, "the persistent request is already active");
    }
    Comm* c = r->comm;
    r->active = true;
    if (r->peer == MPI_PROC_NULL) {
        r->kind = Request::Kind::done;
        if (r->is_recv_persistent) {
            status_set(&r->status, MPI_PROC_NULL, MPI_ANY_TAG, MPI_SUCCESS, 0, false);
        } else {
            status_empty(&r->status);
        }
        return MPI_SUCCESS;
    }
    if (r->is_recv_persistent) {
        r->kind = Request::Kind::recv;
        return p2p_irecv(c, const_cast<void*>(r->buf), static_cast<std::uint64_t>(r->count), r->type,
                         r->peer, r->tag, c->ctx, &r->recv, fn);
    }
    if (r->buffered) {
        r->kind = Request::Kind::done;
        status_empty(&r->status);
        return bsend_start(c, r->buf, r->count, r->type, r->peer, r->tag, fn);
    }
    r->kind = Request::Kind::send;
    return p2p_isend(c, r->buf, static_cast<std::uint64_t>(r->count), r->type, r->peer, r->tag, c->ctx,
                     r->mode, &r->send, fn);
}

} // namespace

int PMPI_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) try {
    EntryGuard guard;
    return make_persistent(buf, count, type, dest, tag, comm, request, Op::send, SendMode::standard,
                           "MPI_Send_init");
} catch (...) {
    return api_exception("MPI_Send_init");
}
ULMPI_ALIAS(MPI_Send_init)

int PMPI_Ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) try {
    EntryGuard guard;
    return make_persistent(buf, count, type, dest, tag, comm, request, Op::send, SendMode::synchronous,
                           "MPI_Ssend_init");
} catch (...) {
    return api_exception("MPI_Ssend_init");
}
ULMPI_ALIAS(MPI_Ssend_init)

int PMPI_Rsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) try {
    EntryGuard guard;
    return make_persistent(buf, count, type, dest, tag, comm, request, Op::send, SendMode::ready,
                           "MPI_Rsend_init");
} catch (...) {
    return api_exception("MPI_Rsend_init");
}
ULMPI_ALIAS(MPI_Rsend_init)

int PMPI_Bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) try {
    EntryGuard guard;
    return make_persistent(buf, count, type, dest, tag, comm, request, Op::bsend, SendMode::standard,
                           "MPI_Bsend_init");
} catch (...) {
    return api_exception("MPI_Bsend_init");
}
ULMPI_ALIAS(MPI_Bsend_init)

int PMPI_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Request* request) try {
    EntryGuard guard;
    return make_persistent(buf, count, type, source, tag, comm, request, Op::recv, SendMode::standard,
                           "MPI_Recv_init");
} catch (...) {
    return api_exception("MPI_Recv_init");
}
ULMPI_ALIAS(MPI_Recv_init)

int PMPI_Start(MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Start";
    require_init(fn);
    if (request == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "the request pointer is NULL");
    }
    return start(*request, fn);
} catch (...) {
    return api_exception("MPI_Start");
}
ULMPI_ALIAS(MPI_Start)

int PMPI_Startall(int count, MPI_Request* requests) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Startall";
    require_init(fn);
    if (count < 0) {
        return raise(nullptr, MPI_ERR_COUNT, fn, "count %d is negative", count);
    }
    if (count > 0 && requests == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "the request array is NULL");
    }
    for (int i = 0; i < count; ++i) {
        if (int e = start(requests[i], fn)) {
            return e;
        }
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Startall");
}
ULMPI_ALIAS(MPI_Startall)
