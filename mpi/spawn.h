// Dynamic processes: MPI_Comm_spawn, MPI_Comm_spawn_multiple and
// MPI_Comm_get_parent (mpi/spawn.cpp; docs/dynamic_processes.md).
#pragma once

namespace ulmpi::mpi {

// MPI_Init of a spawned process, after MPI_COMM_WORLD exists: makes the
// intercommunicator to its parents (MPI_Comm_get_parent). Nothing for a
// process the job started with.
void spawn_init_parent();

} // namespace ulmpi::mpi
