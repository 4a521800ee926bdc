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

int check_comm(MPI_Comm h, const char* fn, Comm** out);
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
int check_out_ptr(Comm* c, const void* p, const char* what, const char* fn);

// Everything a send-like call checks: (buf, count, type, dest, tag, comm).
int check_send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               const char* fn, Comm** c, Datatype** t);
int check_recv(const void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
               const char* fn, Comm** c, Datatype** t);

} // namespace ulmpi::mpi
