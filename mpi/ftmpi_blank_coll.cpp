// Collectives over a communicator with holes (FT-MPI's BLANK mode): the
// "blank" dispatch table. Its one algorithm per collective runs the flat
// table's choice over the live members only: the team is the members that
// are not holes, a root is renumbered among them (a hole as root:
// MPIX_ERR_PROC_FAILED), and the gather, scatter, allgather and alltoall
// families become their v forms whose counts and displacements keep every
// live rank's block where it is in the program's buffers (a hole's block is
// neither sent nor written). Reduce_scatter, alltoallw and the
// neighbourhood collectives have blocks that cannot skip a hole this way:
// they answer MPI_ERR_UNSUPPORTED_OPERATION (docs/ftmpi.md).
//
// mpi/ftmpi_recovery.cpp points a communicator at this table when a
// collective meets a hole in it.
#include "mpi/coll/coll.h"
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
    default: return MPI_ERR_UNSUPPORTED_OPERATION;
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
