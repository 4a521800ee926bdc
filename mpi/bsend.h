// Buffered mode. The user attaches one buffer; each buffered send packs its
// data into a block of it (data + MPI_BSEND_OVERHEAD, first fit) and sends
// from there, so the call completes at once. Blocks whose sends have
// finished are reclaimed before each allocation and at detach, which waits
// for the blocks still in flight.
#pragma once

#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"

namespace ulmpi::mpi {

int bsend_start(Comm* c, const void* buf, int count, const Datatype* t, int dest, int tag,
                const char* fn);
// Waits for every buffered send (MPI_Buffer_detach, MPI_Finalize).
void bsend_drain();

} // namespace ulmpi::mpi
