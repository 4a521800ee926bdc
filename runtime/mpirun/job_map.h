// The job map: which host runs which rank. Hosts come from -H / --hostfile
// (or are just this machine) with a number of slots each (a name given twice
// adds up its slots; every name of this machine is one host). With
// --map-by slot ranks fill the slots host by host in rank order; with
// --map-by node they go round-robin over the hosts that still have a free
// slot; either way they wrap around when every slot is taken
// (oversubscription is never refused). --npernode N makes every host's slot
// count N and is a hard limit. App contexts (MPMD) take consecutive ranks.
// Hosts that get no rank are left out, so node ids are 0..num_nodes-1 over
// the hosts that run something. A host's identity is its name here, never
// gethostname(): two names are two hosts even on one machine.
// --replicas R: the ranks above are replica 0; replica k of rank i is process
// k*N + i, k * max(1, H/R) hosts after replica 0's host (round the H hosts),
// so the replicas of a rank never share a host when there are R hosts or more.
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
    std::vector<int> spawn_slots; // world ranks of this host's spawn slots, ascending
};

struct MapRank {
    int node = 0;       // index into hosts()
    int local_rank = 0; // index among the ranks of that host
    int app = 0;        // app context (ULMPI_APPNUM)
};

class JobMap {
public:
    // `cpus`: slots of this host when not given. `hostname`: this machine.
    // A host is this machine when net::is_this_machine() says so.
    static bool build(const Options& opts, int cpus, const std::string& hostname, JobMap& out,
                      std::string& why);
    // The same with the test for "this machine" given.
    template <class IsLocal>
    static bool build(const Options& opts, int cpus, const std::string& hostname,
                      IsLocal is_local, JobMap& out, std::string& why);

    // Ranks started with the job (spawn slots not counted).
    int size() const { return launched_; }
    // Ranks and spawn slots: the world ranks of the job.
    int total() const { return static_cast<int>(ranks_.size()); }
    bool is_spawn_slot(int r) const { return r >= launched_; }
    // Gives every host `per_host` spawn slots (after build).
    void add_spawn_slots(int per_host);
    // Gives host h per_host[h] spawn slots (after build).
    void add_spawn_slots(const std::vector<int>& per_host);
    // mpirun without --spawn-slots: every host as many spawn slots as it
    // has slots (-H host:N, hostfile slots=N, else this machine's CPUs), at
    // least `at_least`.
    void add_spawn_slots_auto(int at_least);
    int num_nodes() const { return static_cast<int>(hosts_.size()); }
    const MapHost& host(int node) const { return hosts_[static_cast<std::size_t>(node)]; }
    // r < total(); a spawn slot has app -1.
    const MapRank& rank(int r) const { return ranks_[static_cast<std::size_t>(r)]; }
    int local_size(int node) const { return static_cast<int>(host(node).ranks.size()); }
    std::vector<std::int32_t> node_of_rank() const; // total() entries
    int universe_size() const { return universe_size_; }
    bool has_remote() const;
    // One line per process: "process p (rank i, replica k) on host h".
    std::string describe(int replicas) const;

    // build() with the locality of every opts.hosts entry decided.
    static bool build_from(const Options& opts, int cpus, const std::string& hostname,
                           const std::vector<bool>& local, JobMap& out, std::string& why);

private:
    std::vector<MapHost> hosts_;
    std::vector<MapRank> ranks_;
    int launched_ = 0;
    int universe_size_ = 0;
};

template <class IsLocal>
bool JobMap::build(const Options& opts, int cpus, const std::string& hostname, IsLocal is_local,
                   JobMap& out, std::string& why)
{
    std::vector<bool> locals;
    for (const HostSpec& h : opts.hosts) {
        locals.push_back(is_local(h.name));
    }
    return build_from(opts, cpus, hostname, locals, out, why);
}

// True when `name` designates this machine ("localhost", its host name,
// the host name without domain, or a loopback address).
bool is_local_host(const std::string& name, const std::string& hostname);

} // namespace ulmpi::rt::mpirun
