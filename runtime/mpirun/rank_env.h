// The launcher contract's per-process variables (wire::env): what a rank
// learns from its environment about itself, its host and the job. One
// place for mpirun's own ranks, respawned and spawned processes and the
// ranks a host's daemon starts.
#pragma once

#include <string>
#include <vector>

namespace ulmpi::rt::mpirun {

struct RankEnv {
    int rank = 0;        // world rank (a spawn slot's index for a spawned process)
    int size = 0;        // the job's ranks and spawn slots
    int local_rank = 0;
    int local_size = 0;
    int node = 0;
    int num_nodes = 0;
    std::string host;    // as the job map names it
    std::string jobid;
    std::string boot_addr;
    std::string secret;  // hex
    int universe_size = 0;
    int appnum = 0;
    int notice_fd = -1;  // the notice board's descriptor, -1: none
    int shm_fd = -1;     // the host's shared-memory descriptor, -1: none
};

// Appends NAME=value for every variable of `e` (and the CPUs this process
// may use, which the rank sees as its host's) to `env`.
void append_rank_env(std::vector<std::string>& env, const RankEnv& e);

} // namespace ulmpi::rt::mpirun
