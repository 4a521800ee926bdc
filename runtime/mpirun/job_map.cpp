#include "runtime/mpirun/job_map.h"

#include "runtime/mpirun/net.h"

#include <algorithm>

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
    return build(
        opts, cpus, hostname,
        [&](const std::string& name) { return net::is_this_machine(name, hostname); }, out,
        why);
}

bool JobMap::has_remote() const
{
    for (const MapHost& h : hosts_) {
        if (!h.local) {
            return true;
        }
    }
    return false;
}

bool JobMap::build_from(const Options& opts, int cpus, const std::string& hostname,
                        const std::vector<bool>& local, JobMap& out, std::string& why)
{
    if (cpus < 1) {
        cpus = 1;
    }
    std::vector<MapHost> hosts;
    if (opts.hosts.empty()) {
        hosts.push_back(MapHost{hostname, cpus, true, {}});
    }
    int local_index = -1;
    for (std::size_t i = 0; i < opts.hosts.size(); ++i) {
        const HostSpec& h = opts.hosts[i];
        bool here = local[i];
        int slots = h.slots > 0 ? h.slots : 1; // as Open MPI's -H: a bare name is one slot
        MapHost* same = nullptr;
        if (here && local_index >= 0) {
            same = &hosts[static_cast<std::size_t>(local_index)];
        }
        for (MapHost& m : hosts) {
            if (same == nullptr && !m.local && !here && m.name == h.name) {
                same = &m;
            }
        }
        if (same != nullptr) {
            same->slots += slots;
            continue;
        }
        std::string name = h.name;
        if (here && (name == "localhost" || name == "127.0.0.1" || name == "::1")) {
            name = hostname; // the job map names this machine as it calls itself
        }
        if (here) {
            local_index = static_cast<int>(hosts.size());
        }
        hosts.push_back(MapHost{name, slots, here, {}});
    }

    int total_slots = 0;
    for (const MapHost& h : hosts) {
        total_slots += h.slots;
    }
    std::vector<int> cap;
    for (const MapHost& h : hosts) {
        cap.push_back(opts.npernode > 0 ? opts.npernode : h.slots);
    }
    int cap_total = 0;
    for (int c : cap) {
        cap_total += c;
    }

    int nranks = 0;
    std::vector<int> app_of_rank;
    for (std::size_t app = 0; app < opts.apps.size(); ++app) {
        int np = opts.apps[app].np;
        if (opts.npernode > 0 && !opts.apps[app].np_given) {
            np = opts.npernode * static_cast<int>(hosts.size());
        }
        for (int k = 0; k < np; ++k) {
            app_of_rank.push_back(static_cast<int>(app));
        }
        nranks += np;
    }
    if (opts.npernode > 0 && nranks > cap_total) {
        why = "--npernode " + std::to_string(opts.npernode) + ": " +
              std::to_string(hosts.size()) + " host(s) take at most " +
              std::to_string(cap_total) + " rank(s), the job has " + std::to_string(nranks);
        return false;
    }

    // Host of every rank.
    std::vector<int> node_of(static_cast<std::size_t>(nranks), 0);
    if (opts.map_by == MapBy::slot) {
        for (int rank = 0; rank < nranks; ++rank) {
            // Slot number `rank mod cap_total`, host by host.
            int slot = rank % cap_total;
            int node = 0;
            while (slot >= cap[static_cast<std::size_t>(node)]) {
                slot -= cap[static_cast<std::size_t>(node)];
                ++node;
            }
            node_of[static_cast<std::size_t>(rank)] = node;
        }
    } else {
        std::vector<int> used(hosts.size(), 0);
        int rank = 0;
        bool room = true;
        while (rank < nranks && room) {
            room = false;
            for (std::size_t h = 0; h < hosts.size() && rank < nranks; ++h) {
                if (used[h] < cap[h]) {
                    ++used[h];
                    node_of[static_cast<std::size_t>(rank++)] = static_cast<int>(h);
                    room = true;
                }
            }
        }
        for (int k = 0; rank < nranks; ++k) { // oversubscribed: plain round-robin
            node_of[static_cast<std::size_t>(rank++)] =
                k % static_cast<int>(hosts.size());
        }
    }

    // Replication: the mapping above placed the program's ranks (replica 0);
    // replica k of rank i goes k * max(1, H / R) hosts further, round the H
    // hosts, so the replicas of a rank run on different hosts whenever the
    // job has at least R hosts (physical process k * N + i).
    if (opts.replicas > 1) {
        const int h = static_cast<int>(hosts.size());
        const int shift = std::max(1, h / opts.replicas);
        const int n = nranks;
        for (int k = 1; k < opts.replicas; ++k) {
            for (int i = 0; i < n; ++i) {
                node_of.push_back((node_of[static_cast<std::size_t>(i)] + k * shift) % h);
                app_of_rank.push_back(app_of_rank[static_cast<std::size_t>(i)]);
            }
        }
        nranks *= opts.replicas;
    }

    // Hosts without ranks leave the map; the others are numbered in order.
    std::vector<int> count(hosts.size(), 0);
    for (int n : node_of) {
        ++count[static_cast<std::size_t>(n)];
    }
    std::vector<int> renumber(hosts.size(), -1);
    JobMap m;
    for (std::size_t h = 0; h < hosts.size(); ++h) {
        if (count[h] > 0) {
            renumber[h] = static_cast<int>(m.hosts_.size());
            m.hosts_.push_back(std::move(hosts[h]));
        }
    }
    for (int rank = 0; rank < nranks; ++rank) {
        int node = renumber[static_cast<std::size_t>(node_of[static_cast<std::size_t>(rank)])];
        MapHost& host = m.hosts_[static_cast<std::size_t>(node)];
        MapRank r;
        r.node = node;
        r.local_rank = static_cast<int>(host.ranks.size());
        r.app = app_of_rank[static_cast<std::size_t>(rank)];
        host.ranks.push_back(rank);
        m.ranks_.push_back(r);
    }
    m.universe_size_ = nranks > total_slots ? nranks : total_slots;
    m.launched_ = nranks;
    out = std::move(m);
    return true;
}

std::string JobMap::describe(int replicas) const
{
    const int r = replicas < 1 ? 1 : replicas;
    const int n = size() / r;
    std::string out;
    for (int p = 0; p < size(); ++p) {
        out += "process " + std::to_string(p);
        if (r > 1) {
            out += " (rank " + std::to_string(p % n) + ", replica " + std::to_string(p / n) + ")";
        }
        out += " on " + host(rank(p).node).name + "\n";
    }
    return out;
}

void JobMap::add_spawn_slots(int per_host)
{
    add_spawn_slots(std::vector<int>(hosts_.size(), per_host));
}

void JobMap::add_spawn_slots_auto(int at_least)
{
    std::vector<int> count;
    for (const MapHost& h : hosts_) {
        count.push_back(std::max(h.slots, at_least));
    }
    add_spawn_slots(count);
}

void JobMap::add_spawn_slots(const std::vector<int>& per_host)
{
    for (std::size_t h = 0; h < hosts_.size() && h < per_host.size(); ++h) {
        for (int k = 0; k < per_host[h]; ++k) {
            MapRank r;
            r.node = static_cast<int>(h);
            r.local_rank = static_cast<int>(hosts_[h].ranks.size() + hosts_[h].spawn_slots.size());
            r.app = -1;
            hosts_[h].spawn_slots.push_back(static_cast<int>(ranks_.size()));
            ranks_.push_back(r);
        }
    }
    // What the job can hold: its ranks and every slot.
    universe_size_ = static_cast<int>(ranks_.size());
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
