// Argument checks shared by the entry points. Each returns MPI_SUCCESS, or
// the code that raise() produced (the error handler already ran). Handles are
// always resolved; the remaining checks (ranks, tags, counts, buffers) can be
// switched off with ULMPI_MPI_CHECK_ARGS=off for speed.
#pragma once

#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/state.h"

namespace ulmpi::mpi {

inline constexpr int kTagUb = 0x7fffffff;

// Fails (and exits) unless MPI is initialized and not finalized.
inline void require_init(const char* fn)
{
    const State& s = state();
    if (!s.initialized || s.finalized) [[unlikely]] {
        raise_uninitialized(fn);
    }
}

// A communicator handle. One that an FT-MPI recovery made invalid is refused
// (MPI_ERR_COMM) except by MPI_Comm_free and the error handler calls.
int check_comm(MPI_Comm h, const char* fn, Comm** out);
// A group handle (`what` names the argument); raised on `c` (nullptr: no
// communicator). One made before an FT-MPI recovery is refused
// (MPI_ERR_GROUP) except by MPI_Group_free.
int check_group(Comm* c, MPI_Group h, const char* what, const char* fn, Group** out);
// Datatype usable for communication: valid, committed, not a marker.
int check_type(Comm* c, MPI_Datatype h, const char* fn, Datatype** out);
int check_count(Comm* c, int count, const char* fn);
// Destination rank: a peer rank or MPI_PROC_NULL.
int check_dest(Comm* c, int rank, const char* fn);
// Source rank: a peer rank, MPI_ANY_SOURCE or MPI_PROC_NULL.
int check_source(Comm* c, int rank, const char* fn);
int check_send_tag(Comm* c, int tag, const char* fn);
int check_recv_tag(Comm* c, int tag, const char* fn); // MPI_ANY_TAG allowed
int check_buffer(Comm* c, const void* buf, int count, const Datatype* t, const char* fn);
// An output pointer that must not be NULL (inline: every nonblocking call
// checks its request pointer).
int raise_null_ptr(Comm* c, const char* what, const char* fn);
inline int check_out_ptr(Comm* c, const void* p, const char* what, const char* fn)
{
    if (p == nullptr) [[unlikely]] {
        return raise_null_ptr(c, what, fn);
    }
    return MPI_SUCCESS;
}
// The arguments of a rooted call over an intracommunicator that returns a
// new communicator (MPI_Comm_spawn, MPI_Comm_accept, MPI_Comm_connect):
// `comm` valid and not an intercommunicator, `root` one of its ranks, the
// output pointer (named `what`) not NULL.
int check_intra_root(MPI_Comm comm, int root, const void* out, const char* what, const char* fn,
                     Comm** c);

// Everything a send-like call checks: (buf, count, type, dest, tag, comm).
// The same, one check after the other, raising the first error found.
int check_send_all(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   const char* fn, Comm** c, Datatype** t);
int check_recv_all(const void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   const char* fn, Comm** c, Datatype** t);

// A communicating type: committed and not a marker (see check_type).
inline bool type_usable(const Datatype* t)
{
    return t != nullptr && t->committed && t->category != Category::marker;
}
// The buffer test of check_buffer.
inline bool buffer_fine(const void* buf, int count, const Datatype* t)
{
    return !(buf == nullptr && count > 0 && t->size > 0 && t->predefined) && buf != MPI_IN_PLACE;
}

// Fast paths of every point-to-point call: all tests in one pass, inline;
// only when one fails does check_*_all run them in order to raise the
// first error with its message.
[[gnu::always_inline]] inline int check_send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                      const char* fn, Comm** c, Datatype** t)
{
    const State& s = state();
    Comm* cm = comm_get(comm);
    Datatype* ty = datatype_get(type);
    if (!s.initialized || s.finalized || cm == nullptr || !type_usable(ty) || cm->revoked || cm->ft_gate) [[unlikely]] {
        return check_send_all(buf, count, type, dest, tag, comm, fn, c, t);
    }
    if (s.check_args && (count < 0 || tag < 0 || tag > kTagUb ||
                         !(dest == MPI_PROC_NULL || (dest >= 0 && dest < cm->peer_count())) ||
                         !buffer_fine(buf, count, ty))) [[unlikely]] {
        return check_send_all(buf, count, type, dest, tag, comm, fn, c, t);
    }
    *c = cm;
    *t = ty;
    return MPI_SUCCESS;
}

[[gnu::always_inline]] inline int check_recv(const void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      const char* fn, Comm** c, Datatype** t)
{
    const State& s = state();
    Comm* cm = comm_get(comm);
    Datatype* ty = datatype_get(type);
    if (!s.initialized || s.finalized || cm == nullptr || !type_usable(ty) || cm->revoked || cm->ft_gate) [[unlikely]] {
        return check_recv_all(buf, count, type, source, tag, comm, fn, c, t);
    }
    if (s.check_args && (count < 0 || (tag != MPI_ANY_TAG && (tag < 0 || tag > kTagUb)) ||
                         !(source == MPI_PROC_NULL || source == MPI_ANY_SOURCE ||
                           (source >= 0 && source < cm->peer_count())) ||
                         !buffer_fine(buf, count, ty))) [[unlikely]] {
        return check_recv_all(buf, count, type, source, tag, comm, fn, c, t);
    }
    *c = cm;
    *t = ty;
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi
