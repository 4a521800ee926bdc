// Block counts of Reduce_scatter (the program's recvcounts) and
// Reduce_scatter_block (one count for every rank), as one array, with
// prefix sums.
#pragma once

#include "mpi/coll/coll.h"

namespace ulmpi::mpi::coll {

struct RsBlocks {
    const std::uint64_t* count; // team.size entries
    const std::uint64_t* first; // team.size + 1 entries (first[p] = total)
};

inline RsBlocks rs_blocks(Schedule& s, const Args& a, int p)
{
    auto* c = static_cast<std::uint64_t*>(s.scratch(sizeof(std::uint64_t) * static_cast<std::size_t>(p)));
    auto* f = static_cast<std::uint64_t*>(s.scratch(sizeof(std::uint64_t) * static_cast<std::size_t>(p + 1)));
    f[0] = 0;
    for (int j = 0; j < p; ++j) {
        c[j] = a.rcounts != nullptr ? static_cast<std::uint64_t>(a.rcounts[j]) : a.rcount;
        f[j + 1] = f[j] + c[j];
    }
    return RsBlocks{c, f};
}

} // namespace ulmpi::mpi::coll
