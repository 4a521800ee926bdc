// Who is who under replication: R replicas of each of N logical ranks.
//
// Physical process p (its rank in the launcher's job) is replica p / N of
// logical rank p % N, so replica 0 of every rank comes first
// (docs/replication.md). A dead replica is served by the lowest live
// replica of its rank (the substitute); the choice depends only on the set
// of dead processes, so every process that knows the same deaths makes the
// same choice.
#pragma once

#include <cstdint>
#include <vector>

namespace ulmpi::rep {

class ReplicaSet {
public:
    ReplicaSet(int logical_size, int replicas)
        : n_(logical_size), r_(replicas),
          dead_(static_cast<std::size_t>(logical_size) * static_cast<std::size_t>(replicas), false)
    {
    }

    int logical_size() const { return n_; }
    int replicas() const { return r_; }
    int logical_of(int phys) const { return phys % n_; }
    int replica_of(int phys) const { return phys / n_; }
    int phys(int replica, int rank) const { return replica * n_ + rank; }

    bool dead(int phys) const { return dead_[static_cast<std::size_t>(phys)]; }
    bool alive(int replica, int rank) const { return !dead(phys(replica, rank)); }
    // Records a death; false when it was known already.
    bool mark_dead(int phys)
    {
        if (dead_[static_cast<std::size_t>(phys)]) {
            return false;
        }
        dead_[static_cast<std::size_t>(phys)] = true;
        return true;
    }
    // A dead process was re-created (recovery).
    void revive(int phys) { dead_[static_cast<std::size_t>(phys)] = false; }
    // The lowest live replica of `rank`, -1 when every one is dead.
    int lowest_live(int rank) const
    {
        for (int k = 0; k < r_; ++k) {
            if (alive(k, rank)) {
                return k;
            }
        }
        return -1;
    }
    bool all_dead(int rank) const { return lowest_live(rank) < 0; }
    // The physical process that sends rank `rank`'s messages to replica
    // `replica` of every other rank: that replica itself while it lives,
    // else the substitute. -1 when the rank is lost.
    int server(int rank, int replica) const
    {
        if (alive(replica, rank)) {
            return phys(replica, rank);
        }
        const int s = lowest_live(rank);
        return s < 0 ? -1 : phys(s, rank);
    }
    // Bit l set for every live replica l of `rank` other than `except`.
    std::uint32_t live_mask(int rank, int except) const
    {
        std::uint32_t m = 0;
        for (int l = 0; l < r_; ++l) {
            if (l != except && alive(l, rank)) {
                m |= 1u << l;
            }
        }
        return m;
    }

private:
    int n_;
    int r_;
    std::vector<bool> dead_;
};

} // namespace ulmpi::rep
