// Collectives over a communicator with holes (FT-MPI's BLANK mode): the
// "blank" dispatch table. Its one algorithm per collective runs the flat
// table's choice over the live members only: the team is the members that
// are not holes, a root is renumbered among them (a hole as root:
// MPIX_ERR_PROC_FAILED), and the gather, scatter, allgather and alltoall
// families become their v forms whose counts and displacements keep every
// live rank's block where it is in the program's buffers (a hole's block is
// neither sent nor written); alltoallw keeps the live members' entries of
// its arrays. Reduce_scatter reduces the whole vector over the live members
// and scatters each live member its block (a hole's block is reduced, and
// given to nobody). A neighbourhood collective treats a hole among the
// neighbours as MPI_PROC_NULL: its block is neither sent nor written
// (docs/ftmpi.md).
//
// mpi/ftmpi_recovery.cpp points a communicator at this table when a
// collective meets a hole in it.
#include "mpi/coll/algos.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/rs_counts.h"
#include "mpi/ftmpi.h"

#include <climits>

namespace ulmpi::mpi::coll {
namespace {

// The live part of a team, in the schedule's scratch memory.
struct Live {
    Team team;
    const int* pos = nullptr; // team rank of each live member
};

Live live_of(Schedule& s, const Team& t)
{
    auto* world = static_cast<int*>(s.scratch(sizeof(int) * static_cast<std::size_t>(t.size)));
    auto* pos = static_cast<int*>(s.scratch(sizeof(int) * static_cast<std::size_t>(t.size)));
    int n = 0;
    int me = 0;
    for (int r = 0; r < t.size; ++r) {
        if (ftmpi_is_hole(t.w(r))) {
            continue;
        }
        if (r == t.rank) {
            me = n;
        }
        world[n] = t.w(r);
        pos[n] = r;
        ++n;
    }
    return Live{Team{world, n, me}, pos};
}

int live_index(const Live& l, int rank)
{
    for (int i = 0; i < l.team.size; ++i) {
        if (l.pos[i] == rank) {
            return i;
        }
    }
    return -1;
}

int* ints(Schedule& s, int n)
{
    return static_cast<int*>(s.scratch(sizeof(int) * static_cast<std::size_t>(n)));
}

// Counts and displacements of the live members' blocks.
bool blocks(Schedule& s, const Live& l, const int* counts, const int* displs, std::uint64_t count,
            const int** out_counts, const int** out_displs)
{
    int* c = ints(s, l.team.size);
    int* d = ints(s, l.team.size);
    for (int i = 0; i < l.team.size; ++i) {
        const int j = l.pos[i];
        if (counts != nullptr) {
            c[i] = counts[j];
            d[i] = displs[j];
        } else {
            const std::uint64_t disp = static_cast<std::uint64_t>(j) * count;
            if (count > INT_MAX || disp > INT_MAX) {
                return false;
            }
            c[i] = static_cast<int>(count);
            d[i] = static_cast<int>(disp);
        }
    }
    *out_counts = c;
    *out_displs = d;
    return true;
}

// Reduce_scatter(_block) with holes: a Reduce of the whole vector over the
// live members to the first of them, then a Scatterv of the live members'
// blocks, where they are in the vector.
int blank_reduce_scatter(Schedule& s, const Args& a, const Live& l)
{
    const int p = a.team.size;
    const RsBlocks blk = rs_blocks(s, a, p);
    const std::uint64_t total = blk.first[p];
    if (total == 0) {
        return MPI_SUCCESS;
    }
    if (total > INT_MAX) {
        return MPI_ERR_COUNT;
    }
    s.fence();
    int* counts = ints(s, l.team.size);
    int* displs = ints(s, l.team.size);
    for (int i = 0; i < l.team.size; ++i) {
        counts[i] = static_cast<int>(blk.count[l.pos[i]]);
        displs[i] = static_cast<int>(blk.first[l.pos[i]]);
    }
    return reduce_then_scatterv(s, a, l.team, total, counts, displs, blk.count[a.team.rank]);
}

// Alltoallw with holes: the live members' entries of every array.
void live_w(Schedule& s, const Live& l, const int* counts, const int* displs,
            const Datatype* const* types, const int** oc, const int** od, const Datatype* const** ot)
{
    int* c = ints(s, l.team.size);
    int* d = ints(s, l.team.size);
    auto* t = static_cast<const Datatype**>(
        s.scratch(sizeof(const Datatype*) * static_cast<std::size_t>(l.team.size)));
    for (int i = 0; i < l.team.size; ++i) {
        c[i] = counts[l.pos[i]];
        d[i] = displs[l.pos[i]];
        t[i] = types[l.pos[i]];
    }
    *oc = c;
    *od = d;
    *ot = t;
}

// A neighbour list (world ranks, -1: MPI_PROC_NULL) with the holes as -1.
const int* without_holes(Schedule& s, const int* nbr, int n)
{
    int* out = ints(s, n);
    for (int k = 0; k < n; ++k) {
        out[k] = nbr[k] >= 0 && ftmpi_is_hole(nbr[k]) ? -1 : nbr[k];
    }
    return out;
}

bool rooted(Coll c)
{
    return c == Coll::bcast || c == Coll::reduce || c == Coll::gather || c == Coll::gatherv ||
           c == Coll::scatter || c == Coll::scatterv;
}

int build_blank(Schedule& s, const Args& a)
{
    const Live l = live_of(s, a.team);
    Args b = a;
    b.team = l.team;
    if (rooted(a.coll)) {
        b.root = live_index(l, a.root);
        if (b.root < 0) {
            return MPIX_ERR_PROC_FAILED; // the root is a hole
        }
    }
    Coll c = a.coll;
    switch (a.coll) {
    case Coll::barrier:
    case Coll::bcast:
    case Coll::reduce:
    case Coll::allreduce:
    case Coll::scan:
    case Coll::exscan: break;
    case Coll::gather:
    case Coll::gatherv:
    case Coll::allgather:
    case Coll::allgatherv:
        if (!blocks(s, l, a.rcounts, a.rdispls, a.rcount, &b.rcounts, &b.rdispls)) {
            return MPI_ERR_COUNT;
        }
        c = a.coll == Coll::gather || a.coll == Coll::gatherv ? Coll::gatherv : Coll::allgatherv;
        break;
    case Coll::scatter:
    case Coll::scatterv:
        if (!blocks(s, l, a.scounts, a.sdispls, a.scount, &b.scounts, &b.sdispls)) {
            return MPI_ERR_COUNT;
        }
        c = Coll::scatterv;
        break;
    case Coll::alltoall:
    case Coll::alltoallv:
        if (!blocks(s, l, a.scounts, a.sdispls, a.scount, &b.scounts, &b.sdispls) ||
            !blocks(s, l, a.rcounts, a.rdispls, a.rcount, &b.rcounts, &b.rdispls)) {
            return MPI_ERR_COUNT;
        }
        c = Coll::alltoallv;
        break;
    case Coll::reduce_scatter:
    case Coll::reduce_scatter_block:
        return blank_reduce_scatter(s, a, l);
    case Coll::alltoallw:
        live_w(s, l, a.scounts, a.sdispls, a.stypes, &b.scounts, &b.sdispls, &b.stypes);
        live_w(s, l, a.rcounts, a.rdispls, a.rtypes, &b.rcounts, &b.rdispls, &b.rtypes);
        break;
    case Coll::neighbor_allgather:
    case Coll::neighbor_allgatherv:
    case Coll::neighbor_alltoall:
    case Coll::neighbor_alltoallv:
    case Coll::neighbor_alltoallw:
        b.team = a.team; // the neighbours are named by world rank
        b.nbr_src = without_holes(s, a.nbr_src, a.nbr_in);
        b.nbr_dst = without_holes(s, a.nbr_dst, a.nbr_out);
        break;
    }
    return build_flat(s, c, b);
}

struct BlankTable {
    Algo algo{"blank", &build_blank, nullptr};
    Table table;
    BlankTable()
    {
        table.name = "blank";
        for (Table::Entry& e : table.entry) {
            e.algos = &algo;
            e.count = 1;
            e.forced = 0;
        }
    }
};

} // namespace

const Table& blank_table()
{
    static const BlankTable t;
    return t.table;
}

} // namespace ulmpi::mpi::coll
