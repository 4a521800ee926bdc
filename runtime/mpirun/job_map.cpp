#include "runtime/mpirun/job_map.h"

namespace ulmpi::rt::mpirun {

bool is_local_host(const std::string& name, const std::string& hostname)
{
    if (name == "localhost" || name == "127.0.0.1" || name == "::1" || name == hostname) {
        return true;
    }
    std::string short_host = hostname.substr(0, hostname.find('.'));
    std::string short_name = name.substr(0, name.find('.'));
    return short_name == short_host;
}

bool JobMap::build(const Options& opts, int cpus, const std::string& hostname, JobMap& out,
                   std::string& why)
{
    JobMap m;
    if (cpus < 1) {
        cpus = 1;
    }
    if (opts.hosts.empty()) {
        m.hosts_.push_back(MapHost{hostname, cpus, true, {}});
    }
    for (const HostSpec& h : opts.hosts) {
        if (!is_local_host(h.name, hostname)) {
            why = "host '" + h.name +
                  "' is not this machine; jobs over several hosts are not supported yet";
            return false;
        }
        // Several names of this machine are one host whose slots add up.
        int slots = h.slots > 0 ? h.slots : cpus;
        if (!m.hosts_.empty()) {
            m.hosts_[0].slots += slots;
        } else {
            m.hosts_.push_back(MapHost{hostname, slots, true, {}});
        }
    }
    int total_slots = 0;
    for (const MapHost& h : m.hosts_) {
        total_slots += h.slots;
    }

    int rank = 0;
    for (std::size_t app = 0; app < opts.apps.size(); ++app) {
        for (int k = 0; k < opts.apps[app].np; ++k, ++rank) {
            // Slot number `rank mod total_slots`, host by host.
            int slot = rank % total_slots;
            int node = 0;
            while (slot >= m.hosts_[static_cast<std::size_t>(node)].slots) {
                slot -= m.hosts_[static_cast<std::size_t>(node)].slots;
                ++node;
            }
            MapHost& host = m.hosts_[static_cast<std::size_t>(node)];
            MapRank r;
            r.node = node;
            r.local_rank = static_cast<int>(host.ranks.size());
            r.app = static_cast<int>(app);
            host.ranks.push_back(rank);
            m.ranks_.push_back(r);
        }
    }
    m.universe_size_ = rank > total_slots ? rank : total_slots;
    out = std::move(m);
    return true;
}

std::vector<std::int32_t> JobMap::node_of_rank() const
{
    std::vector<std::int32_t> out;
    out.reserve(ranks_.size());
    for (const MapRank& r : ranks_) {
        out.push_back(r.node);
    }
    return out;
}

} // namespace ulmpi::rt::mpirun
