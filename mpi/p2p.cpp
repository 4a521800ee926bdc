#include "mpi/p2p.h"

#include "mpi/ft_comm.h"

#include "mpi/errors.h"
#include "mpi/request.h"
#include "mpi/state.h"

namespace ulmpi::mpi {

int p2p_isend(Comm* c, const void* buf, std::uint64_t count, const Datatype* t, int dest, int tag,
              ulm::ContextId ctx, ulm::SendMode mode, ulm::SendMsg** out, const char* fn)
{
    rt::Status st = state().engine.isend(t->ref(buf, count), c->world_of(dest), tag, ctx, mode, out);
    if (!st.ok()) [[unlikely]] {
        return raise(c, to_mpi_class(st.code()), fn, "cannot send to rank %d: %s", dest,
                     rt::errc_name(st.code()));
    }
    return MPI_SUCCESS;
}

int p2p_irecv(Comm* c, void* buf, std::uint64_t count, const Datatype* t, int source, int tag,
              ulm::ContextId ctx, ulm::RecvMsg** out, const char* fn)
{
    int src = source == MPI_ANY_SOURCE ? ulm::kAnySource : c->world_of(source);
    int utag = tag == MPI_ANY_TAG ? ulm::kAnyTag : tag;
    rt::Status st = state().engine.irecv(t->ref(buf, count), src, utag, ctx, out);
    if (!st.ok()) [[unlikely]] {
        return raise(c, to_mpi_class(st.code()), fn, "cannot post a receive: %s",
                     rt::errc_name(st.code()));
    }
    return MPI_SUCCESS;
}

int p2p_post_error(Comm* c, ulm::RecvMsg& into, rt::Status st, const char* fn)
{
    state().engine.withdraw(into);
    return raise(c, to_mpi_class(st.code()), fn, "cannot post a receive: %s", rt::errc_name(st.code()));
}

int p2p_send_error(Comm* c, const ulm::SendMsg* s, const char* fn)
{
    int dest = c->peer_rank_of(s->dst);
    return raise(c, to_mpi_class(s->error), fn, "send to rank %d (tag %d) failed: %s", dest, s->tag,
                 rt::errc_name(s->error));
}

int p2p_recv_error(Comm* c, const ulm::RecvMsg* r, const char* fn)
{
    int src = r->matched ? c->peer_rank_of(r->env.source) : r->src;
    if (r->error == rt::Errc::truncated) {
        return raise(c, MPI_ERR_TRUNCATE, fn,
                     "message of %llu bytes from rank %d (tag %d) is longer than the receive "
                     "buffer (%llu bytes)",
                     static_cast<unsigned long long>(r->env.msg_len), src, r->env.tag,
                     static_cast<unsigned long long>(r->capacity));
    }
    return raise(c, to_mpi_class(r->error), fn, "receive from rank %d failed: %s", src,
                 rt::errc_name(r->error));
}

int p2p_recv_status(Comm* c, const ulm::RecvMsg* r, MPI_Status* st)
{
    if (r->cancelled) {
        status_fill(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, true);
        return MPI_SUCCESS;
    }
    int err = r->error == rt::Errc::ok ? MPI_SUCCESS : to_mpi_class(r->error);
    int src = r->matched ? c->peer_rank_of(r->env.source) : MPI_ANY_SOURCE;
    status_fill(st, src, r->env.tag, r->received, false);
    return err;
}

int p2p_wait_send(Comm* c, ulm::SendMsg* s, const char* fn)
{
    ulm::Engine& eng = state().engine;
    if (!s->complete) {
        eng.wait_p2p([s] { return bool(s->complete); });
    }
    int err = MPI_SUCCESS;
    if (s->error != rt::Errc::ok) [[unlikely]] {
        err = p2p_send_error(c, s, fn);
    }
    eng.release(s);
    return err;
}

int p2p_wait_recv(Comm* c, ulm::RecvMsg* r, MPI_Status* st, const char* fn)
{
    ulm::Engine& eng = state().engine;
    if (!r->complete) {
        eng.wait_p2p([r] { return bool(r->complete); });
    }
    int err = p2p_recv_status(c, r, st);
    if (err != MPI_SUCCESS) [[unlikely]] {
        err = p2p_recv_error(c, r, fn);
    }
    eng.release(r);
    return err;
}

int p2p_send(Comm* c, const void* buf, std::uint64_t count, const Datatype* t, int dest, int tag,
             ulm::ContextId ctx, const char* fn)
{
    if (state().engine.send_now(t->ref(buf, count), c->world_of(dest), tag, ctx)) {
        return MPI_SUCCESS; // eager, gone at once
    }
    ulm::SendMsg* s = nullptr;
    if (int e = p2p_isend(c, buf, count, t, dest, tag, ctx, ulm::SendMode::standard, &s, fn)) {
        return e;
    }
    return p2p_wait_send(c, s, fn);
}

int p2p_recv(Comm* c, void* buf, std::uint64_t count, const Datatype* t, int source, int tag,
             ulm::ContextId ctx, MPI_Status* st, const char* fn)
{
    // The descriptor lives on this stack frame: the call returns only once
    // the receive has completed (or has been withdrawn).
    ulm::Engine& eng = state().engine;
    ulm::RecvMsg r;
    int src = source == MPI_ANY_SOURCE ? ulm::kAnySource : c->world_of(source);
    int utag = tag == MPI_ANY_TAG ? ulm::kAnyTag : tag;
    rt::Status s = eng.irecv_into(r, t->ref(buf, count), src, utag, ctx);
    if (!s.ok()) [[unlikely]] {
        eng.withdraw(r);
        return raise(c, to_mpi_class(s.code()), fn, "cannot post a receive: %s", rt::errc_name(s.code()));
    }
    if (!r.complete) {
        if (src == ulm::kAnySource && ft_enabled()) {
            // A wildcard receive cannot wait while a failure on the
            // communicator is unacknowledged (mpi/ft_comm.h).
            eng.wait([&r, c] { return r.complete || ft_any_source_blocked(c); });
            if (!r.complete) {
                eng.withdraw(r);
                return raise(c, kErrProcFailed, fn,
                             "a process that could send this wildcard receive failed (%s); "
                             "acknowledge it (MPIX_Comm_ack_failed) to receive from MPI_ANY_SOURCE",
                             ft_failed_text(c).c_str());
            }
        } else {
            eng.wait_p2p([&r] { return bool(r.complete); });
        }
    }
    eng.withdraw(r);
    if (r.error == rt::Errc::ok) [[likely]] {
        // A blocking receive is never cancelled: its status, if asked for,
        // without p2p_recv_status's other cases.
        if (st != MPI_STATUS_IGNORE) {
            status_fill(st, r.matched ? c->peer_rank_of(r.env.source) : MPI_ANY_SOURCE, r.env.tag,
                        r.received, false);
        }
        return MPI_SUCCESS;
    }
    int err = p2p_recv_status(c, &r, st);
    if (err != MPI_SUCCESS) [[unlikely]] {
        err = p2p_recv_error(c, &r, fn);
    }
    return err;
}

} // namespace ulmpi::mpi
