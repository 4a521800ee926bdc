// Process groups: an ordered list of world ranks. Reference counted: a
// communicator holds its groups, MPI_Comm_group hands out another reference.
#pragma once

#include "mpi/entry.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ulmpi::mpi {

struct Group {
    int handle = 0;
    std::vector<int> world;                 // group rank -> world rank
    std::unordered_map<int, int> rank_of_;  // world rank -> group rank (unless identity)
    bool identity = false;                  // world[i] == i for all i
    int refs = 1;
    std::uint32_t era = 0;                  // group_new's era (group_end_era)

    int size() const { return static_cast<int>(world.size()); }
    // Group rank of a world rank, or MPI_UNDEFINED.
    int rank_of(int world_rank) const
    {
        if (identity) {
            return world_rank >= 0 && world_rank < size() ? world_rank : MPI_UNDEFINED;
        }
        auto it = rank_of_.find(world_rank);
        return it == rank_of_.end() ? MPI_UNDEFINED : it->second;
    }
};

// Builds a group from world ranks (takes ownership of the list).
Group* group_new(std::vector<int> world_ranks);
Group* group_get(MPI_Group h);       // nullptr for invalid or MPI_GROUP_NULL
Group* group_empty();
void group_retain(Group* g);
void group_release(Group* g);
// Gives the group a user handle (MPI_Comm_group and the group constructors).
MPI_Group group_handle(Group* g);
// A group of these world ranks: MPI_GROUP_EMPTY's object when empty.
Group* group_make(std::vector<int> world_ranks);
// MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL.
int group_compare(const Group& a, const Group& b);
// Whether every member of `sub` is a member of `super`.
bool group_subset(const Group& sub, const Group& super);

// FT-MPI recovery (mpi/ftmpi.h) invalidates every group made before it:
// group_end_era() starts a new era, and a group of an earlier one is stale
// (the entry points refuse it with MPI_ERR_GROUP; MPI_Group_free works).
// MPI_GROUP_EMPTY is never stale. group_renew(): for the group that a
// predefined communicator keeps across the recovery, a valid one — `g`
// itself when no handle to it was given out, else a new copy (the
// program's handle to `g` stays stale; the caller still holds its
// reference to `g`).
void group_end_era();
bool group_stale(const Group& g);
Group* group_renew(Group* g);

} // namespace ulmpi::mpi
