// Point-to-point operations on MPI objects, shared by the entry points, the
// persistent and buffered modes and the collectives. Ranks are communicator
// ranks (never MPI_PROC_NULL here); `ctx` chooses user or collective traffic.
#pragma once

#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"
#include "mpi/state.h"
#include "ulm/message.h"

namespace ulmpi::mpi {

int p2p_isend(Comm* c, const void* buf, std::uint64_t count, const Datatype* t, int dest, int tag,
              ulm::ContextId ctx, ulm::SendMode mode, ulm::SendMsg** out, const char* fn);
int p2p_irecv(Comm* c, void* buf, std::uint64_t count, const Datatype* t, int source, int tag,
              ulm::ContextId ctx, ulm::RecvMsg** out, const char* fn);
// The same into a descriptor of the caller's (Engine::irecv_into); on an
// error it is withdrawn again. Inline: MPI_Irecv's whole path.
int p2p_post_error(Comm* c, ulm::RecvMsg& into, rt::Status st, const char* fn);
inline int p2p_irecv_into(Comm* c, void* buf, std::uint64_t count, const Datatype* t, int source, int tag,
                          ulm::ContextId ctx, ulm::RecvMsg& into, const char* fn)
{
    int src = source == MPI_ANY_SOURCE ? ulm::kAnySource : c->world_of(source);
    int utag = tag == MPI_ANY_TAG ? ulm::kAnyTag : tag;
    rt::Status st = state().engine.irecv_into(into, t->ref(buf, count), src, utag, ctx);
    if (!st.ok()) [[unlikely]] {
        return p2p_post_error(c, into, st, fn);
    }
    return MPI_SUCCESS;
}
// Wait for a descriptor, release it, and report its error (if any).
int p2p_wait_send(Comm* c, ulm::SendMsg* s, const char* fn);
int p2p_wait_recv(Comm* c, ulm::RecvMsg* r, MPI_Status* st, const char* fn);
// Status of a completed receive descriptor (MPI_ERROR untouched: single-status
// calls, see status_fill); returns its MPI error code.
int p2p_recv_status(Comm* c, const ulm::RecvMsg* r, MPI_Status* st);
// Reports the error of a completed descriptor through the handler.
int p2p_send_error(Comm* c, const ulm::SendMsg* s, const char* fn);
int p2p_recv_error(Comm* c, const ulm::RecvMsg* r, const char* fn);

// Blocking helpers for collectives and Sendrecv.
int p2p_send(Comm* c, const void* buf, std::uint64_t count, const Datatype* t, int dest, int tag,
             ulm::ContextId ctx, const char* fn);
int p2p_recv(Comm* c, void* buf, std::uint64_t count, const Datatype* t, int source, int tag,
             ulm::ContextId ctx, MPI_Status* st, const char* fn);

} // namespace ulmpi::mpi
