// The job map: which host runs which rank. Hosts come from -H / --hostfile
// (or are just this machine) with a number of slots each; ranks fill the slots
// host by host in rank order and wrap around when every slot is taken
// (oversubscription is never refused). App contexts (MPMD) take consecutive
// ranks. For now every host must be this machine; remote hosts arrive with
// the per-host daemons.
#pragma once

#include "runtime/mpirun/options.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ulmpi::rt::mpirun {

struct MapHost {
    std::string name;     // as the job map names it (ULMPI_HOST)
    int slots = 0;
    bool local = true;    // this machine: mpirun forks its ranks itself
    std::vector<int> ranks; // ranks placed here, ascending
};

struct MapRank {
    int node = 0;       // index into hosts()
    int local_rank = 0; // index among the ranks of that host
    int app = 0;        // app context (ULMPI_APPNUM)
};

class JobMap {
public:
    // `cpus`: slots of this host when not given. `hostname`: this machine.
    static bool build(const Options& opts, int cpus, const std::string& hostname, JobMap& out,
                      std::string& why);

    int size() const { return static_cast<int>(ranks_.size()); }
    int num_nodes() const { return static_cast<int>(hosts_.size()); }
    const MapHost& host(int node) const { return hosts_[static_cast<std::size_t>(node)]; }
    const MapRank& rank(int r) const { return ranks_[static_cast<std::size_t>(r)]; }
    int local_size(int node) const { return static_cast<int>(host(node).ranks.size()); }
    std::vector<std::int32_t> node_of_rank() const;
    int universe_size() const { return universe_size_; }

private:
    std::vector<MapHost> hosts_;
    std::vector<MapRank> ranks_;
    int universe_size_ = 0;
};

// True when `name` designates this machine ("localhost", its host name,
// the host name without domain, or a loopback address).
bool is_local_host(const std::string& name, const std::string& hostname);

} // namespace ulmpi::rt::mpirun
