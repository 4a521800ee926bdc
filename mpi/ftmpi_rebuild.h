// FT-MPI REBUILD: failed ranks replaced by new processes (the protocol is
// described at the top of mpi/ftmpi_rebuild.cpp; the recovery around it in
// mpi/ftmpi.h).
#pragma once

#include "ft/ftmpi_modes.h"

#include <cstdint>
#include <vector>

namespace ulmpi::mpi {

// What a new process takes over from the survivors.
struct FtmpiSnapshot {
    int epoch = 0;              // recoveries applied
    std::uint32_t gen_p2p = 0;  // context generations (mpi/comm_ctx.h)
    std::uint32_t gen_coll = 0;
    ft::FtmpiModes modes;       // as set at run time
    std::vector<int> last_ranks; // FTMPI_ERROR_FAILURE / NUM_FAILED_PROCS
    // Every rank's incarnation, the new processes' included (filled by
    // ftmpi_rebuild_replace): a new process started before the launcher
    // had the request for another one took that one's old incarnation.
    std::vector<int> incarnations;
};

// Survivors: starts a new process for every rank in `removed` (world
// ranks) and waits until they have joined; publishes `snap` for them.
// Returns the ranks that joined (alive again here); the others failed
// again and stay failed. Ends the job when the runtime cannot respawn.
std::vector<int> ftmpi_rebuild_replace(const std::vector<int>& removed, FtmpiSnapshot snap);

// A new process, in MPI_Init before the engine's wire-up: publishes its
// incarnation (how the survivors know it joined).
void ftmpi_rebuild_announce();

// A new process, after its wire-up: true and the survivors' state when this
// process replaces a failed one (JobInfo::incarnation > 0), else false.
bool ftmpi_rebuild_join(FtmpiSnapshot& out);

} // namespace ulmpi::mpi
