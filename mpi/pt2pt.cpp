// Point-to-point entry points: blocking and nonblocking send/receive,
// Sendrecv, Probe. Buffered mode lives in bsend.cpp, persistent requests in
// persistent.cpp, completion in completion.cpp.
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/ft_comm.h"
#include "mpi/p2p.h"
#include "mpi/request.h"
#include "mpi/state.h"

#include <vector>

using namespace ulmpi::mpi;
using ulmpi::ulm::SendMode;

namespace {

void proc_null_status(MPI_Status* st) { status_fill(st, MPI_PROC_NULL, MPI_ANY_TAG, 0, false); }

// Inlined into each entry point: MPI_Send's eager path is a handful of calls.
[[gnu::always_inline]] inline int blocking_send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  SendMode mode, const char* fn)
{
    Comm* c;
    Datatype* t;
    if (int e = check_send(buf, count, type, dest, tag, comm, fn, &c, &t)) {
        return e;
    }
    if (dest == MPI_PROC_NULL) {
        return MPI_SUCCESS;
    }
    if (mode != SendMode::synchronous &&
        state().engine.send_now(t->ref(buf, static_cast<std::uint64_t>(count)), c->world_of(dest), tag, c->ctx)) {
        return MPI_SUCCESS; // eager, gone at once
    }
    ulmpi::ulm::SendMsg* s = nullptr;
    if (int e = p2p_isend(c, buf, static_cast<std::uint64_t>(count), t, dest, tag, c->ctx, mode, &s, fn)) {
        return e;
    }
    return p2p_wait_send(c, s, fn);
}

int nonblocking_send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                     MPI_Request* request, SendMode mode, const char* fn)
{
    Comm* c;
    Datatype* t;
    if (int e = check_send(buf, count, type, dest, tag, comm, fn, &c, &t)) {
        return e;
    }
    if (int e = check_out_ptr(c, request, "request pointer", fn)) {
        return e;
    }
    // An eager message that leaves at once needs no ULM descriptor and no
    // request of its own: it gets the shared complete one, like a send to
    // MPI_PROC_NULL (MPI_Cancel then finds nothing to cancel, as for any
    // eager send that has left, and a peer's later failure has nothing to
    // fail). A send that must wait (a full FIFO, earlier queued sends,
    // rendezvous, synchronous mode, a dead or replicated peer) takes the
    // descriptor path.
    if (dest == MPI_PROC_NULL ||
        (mode != SendMode::synchronous &&
         state().engine.send_now(t->ref(buf, static_cast<std::uint64_t>(count)), c->world_of(dest), tag,
                                 c->ctx))) {
        *request = request_done_send();
        return MPI_SUCCESS;
    }
    Request* r = request_new(Request::Kind::send, c);
    if (r == nullptr) {
        return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a request");
    }
    if (int e = p2p_isend(c, buf, static_cast<std::uint64_t>(count), t, dest, tag, c->ctx, mode, &r->send, fn)) {
        request_free(r);
        return e;
    }
    r->type = t; // a freed type stays alive while the send is pending
    datatype_retain(t);
    *request = r->handle;
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) try {
    EntryGuard guard;
    return blocking_send(buf, count, type, dest, tag, comm, SendMode::standard, "MPI_Send");
} catch (...) {
    return api_exception("MPI_Send");
}
ULMPI_ALIAS(MPI_Send)

int PMPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) try {
    EntryGuard guard;
    return blocking_send(buf, count, type, dest, tag, comm, SendMode::synchronous, "MPI_Ssend");
} catch (...) {
    return api_exception("MPI_Ssend");
}
ULMPI_ALIAS(MPI_Ssend)

int PMPI_Rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) try {
    EntryGuard guard;
    return blocking_send(buf, count, type, dest, tag, comm, SendMode::ready, "MPI_Rsend");
} catch (...) {
    return api_exception("MPI_Rsend");
}
ULMPI_ALIAS(MPI_Rsend)

int PMPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) try {
    EntryGuard guard;
    return nonblocking_send(buf, count, type, dest, tag, comm, request, SendMode::standard, "MPI_Isend");
} catch (...) {
    return api_exception("MPI_Isend");
}
ULMPI_ALIAS(MPI_Isend)

int PMPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) try {
    EntryGuard guard;
    return nonblocking_send(buf, count, type, dest, tag, comm, request, SendMode::synchronous,
                            "MPI_Issend");
} catch (...) {
    return api_exception("MPI_Issend");
}
ULMPI_ALIAS(MPI_Issend)

int PMPI_Irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) try {
    EntryGuard guard;
    return nonblocking_send(buf, count, type, dest, tag, comm, request, SendMode::ready, "MPI_Irsend");
} catch (...) {
    return api_exception("MPI_Irsend");
}
ULMPI_ALIAS(MPI_Irsend)

int PMPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Recv";
    Comm* c;
    Datatype* t;
    if (int e = check_recv(buf, count, type, source, tag, comm, fn, &c, &t)) {
        return e;
    }
    if (source == MPI_PROC_NULL) {
        proc_null_status(status);
        return MPI_SUCCESS;
    }
    return p2p_recv(c, buf, static_cast<std::uint64_t>(count), t, source, tag, c->ctx, status, fn);
} catch (...) {
    return api_exception("MPI_Recv");
}
ULMPI_ALIAS(MPI_Recv)

int PMPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
               MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Irecv";
    Comm* c;
    Datatype* t;
    if (int e = check_recv(buf, count, type, source, tag, comm, fn, &c, &t)) {
        return e;
    }
    if (int e = check_out_ptr(c, request, "request pointer", fn)) {
        return e;
    }
    Request* r = request_new(source == MPI_PROC_NULL ? Request::Kind::done : Request::Kind::recv, c);
    if (r == nullptr) {
        return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a request");
    }
    if (source == MPI_PROC_NULL) {
        proc_null_status(&r->status);
    } else if (int e = p2p_irecv_into(c, buf, static_cast<std::uint64_t>(count), t, source, tag, c->ctx,
                                      r->own_recv, fn)) {
        request_free(r);
        return e;
    } else {
        r->recv = &r->own_recv;
    }
    r->type = t; // a freed type stays alive while the receive is pending
    datatype_retain(t);
    *request = r->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Irecv");
}
ULMPI_ALIAS(MPI_Irecv)

int PMPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Sendrecv";
    Comm* c;
    Datatype* st;
    Datatype* rtype;
    if (int e = check_send(sendbuf, sendcount, sendtype, dest, sendtag, comm, fn, &c, &st)) {
        return e;
    }
    if (int e = check_recv(recvbuf, recvcount, recvtype, source, recvtag, comm, fn, &c, &rtype)) {
        return e;
    }
    ulmpi::ulm::RecvMsg* r = nullptr;
    ulmpi::ulm::SendMsg* s = nullptr;
    if (source != MPI_PROC_NULL) {
        if (int e = p2p_irecv(c, recvbuf, static_cast<std::uint64_t>(recvcount), rtype, source, recvtag,
                              c->ctx, &r, fn)) {
            return e;
        }
    }
    int err = MPI_SUCCESS;
    if (dest != MPI_PROC_NULL) {
        err = p2p_isend(c, sendbuf, static_cast<std::uint64_t>(sendcount), st, dest, sendtag, c->ctx,
                        SendMode::standard, &s, fn);
        if (err == MPI_SUCCESS) {
            err = p2p_wait_send(c, s, fn);
        }
    }
    if (r != nullptr) {
        int e = p2p_wait_recv(c, r, status, fn);
        err = err != MPI_SUCCESS ? err : e;
    } else {
        proc_null_status(status);
    }
    return err;
} catch (...) {
    return api_exception("MPI_Sendrecv");
}
ULMPI_ALIAS(MPI_Sendrecv)

int PMPI_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                          int recvtag, MPI_Comm comm, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Sendrecv_replace";
    Comm* c;
    Datatype* t;
    if (int e = check_send(buf, count, type, dest, sendtag, comm, fn, &c, &t)) {
        return e;
    }
    if (int e = check_recv(buf, count, type, source, recvtag, comm, fn, &c, &t)) {
        return e;
    }
    // The outgoing data is packed aside so the receive can land in place.
    std::uint64_t bytes = t->size * static_cast<std::uint64_t>(count);
    std::vector<std::byte> packed(bytes);
    ulmpi::ulm::pack(t->ref(buf, static_cast<std::uint64_t>(count)), 0, packed.data(), bytes);
    Datatype* byte = datatype_get(MPI_BYTE);
    ulmpi::ulm::RecvMsg* r = nullptr;
    ulmpi::ulm::SendMsg* s = nullptr;
    if (source != MPI_PROC_NULL) {
        if (int e = p2p_irecv(c, buf, static_cast<std::uint64_t>(count), t, source, recvtag, c->ctx, &r, fn)) {
            return e;
        }
    }
    int err = MPI_SUCCESS;
    if (dest != MPI_PROC_NULL) {
        err = p2p_isend(c, packed.data(), bytes, byte, dest, sendtag, c->ctx, SendMode::standard, &s, fn);
        if (err == MPI_SUCCESS) {
            err = p2p_wait_send(c, s, fn);
        }
    }
    if (r != nullptr) {
        int e = p2p_wait_recv(c, r, status, fn);
        err = err != MPI_SUCCESS ? err : e;
    } else {
        proc_null_status(status);
    }
    return err;
} catch (...) {
    return api_exception("MPI_Sendrecv_replace");
}
ULMPI_ALIAS(MPI_Sendrecv_replace)

namespace {

int probe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status, bool blocking,
          const char* fn)
{
    require_init(fn);
    Comm* c;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (c->revoked) {
        return ft_check_p2p(c, fn);
    }
    if (state().check_args) {
        if (int e = check_source(c, source, fn)) {
            return e;
        }
        if (int e = check_recv_tag(c, tag, fn)) {
            return e;
        }
        if (!blocking) {
            if (int e = check_out_ptr(c, flag, "flag", fn)) {
                return e;
            }
        }
    }
    if (source == MPI_PROC_NULL) {
        proc_null_status(status);
        if (flag != nullptr) {
            *flag = 1;
        }
        return MPI_SUCCESS;
    }
    ulmpi::ulm::Engine& eng = state().engine;
    int src = source == MPI_ANY_SOURCE ? ulmpi::ulm::kAnySource : c->world_of(source);
    int utag = tag == MPI_ANY_TAG ? ulmpi::ulm::kAnyTag : tag;
    ulmpi::ulm::Envelope env;
    bool found = eng.iprobe(src, utag, c->ctx, &env);
    // Fault tolerance: a probe that can never succeed raises instead of
    // waiting (the sender failed; or a wildcard probe while a failure on the
    // communicator is unacknowledged; or the communicator was revoked).
    auto hopeless = [&] {
        return c->revoked || (src == ulmpi::ulm::kAnySource ? ft_any_source_blocked(c) : eng.peer_failed(src));
    };
    if (!found) {
        if (blocking && !ft_enabled()) {
            eng.wait([&] { return eng.iprobe(src, utag, c->ctx, &env); });
            found = true;
        } else if (blocking) {
            eng.wait([&] { return (found = eng.iprobe(src, utag, c->ctx, &env)) || hopeless(); });
        } else {
            eng.poll();
            found = eng.iprobe(src, utag, c->ctx, &env);
        }
        if (!found && ft_enabled() && hopeless()) {
            if (c->revoked) {
                return ft_check_p2p(c, fn);
            }
            return raise(c, kErrProcFailed, fn, "no message can come: %s failed",
                         src == ulmpi::ulm::kAnySource ? ft_failed_text(c).c_str()
                                                       : ("rank " + std::to_string(source)).c_str());
        }
    }
    if (flag != nullptr) {
        *flag = found ? 1 : 0;
    }
    if (found) {
        status_fill(status, c->peer_rank_of(env.source), env.tag, env.msg_len, false);
    }
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) try {
    EntryGuard guard;
    return probe(source, tag, comm, nullptr, status, true, "MPI_Probe");
} catch (...) {
    return api_exception("MPI_Probe");
}
ULMPI_ALIAS(MPI_Probe)

int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) try {
    EntryGuard guard;
    return probe(source, tag, comm, flag, status, false, "MPI_Iprobe");
} catch (...) {
    return api_exception("MPI_Iprobe");
}
ULMPI_ALIAS(MPI_Iprobe)
