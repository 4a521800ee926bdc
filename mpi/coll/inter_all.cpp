// Intercommunicator forms of the all-to-all collectives. Each group's
// result comes from the other group's data; the local phases run the flat
// algorithms on the local team (coll.h) and the two groups' rank 0
// ("leaders") exchange what crosses.
//
//   Barrier     flat barrier, leaders exchange an empty message, binomial
//               release. Cost: 2 flat barriers + alpha.
//   Allgather(v), Alltoall(v, w)  linear: every rank sends its blocks to
//               every remote rank. Cost: p_remote * (alpha + n beta).
//   Allreduce   flat Reduce to the leader, leaders swap results, flat Bcast.
//               Cost: flat reduce + alpha + n beta + flat bcast.
//   Reduce_scatter(_block)  flat Reduce of the whole vector to the leader,
//               leaders swap, flat Scatterv of the remote group's result.
#include "mpi/coll/algos.h"
#include "mpi/coll/rs_counts.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

namespace {
Args local_args(const Args& a, Coll c)
{
    Args l = a;
    l.coll = c;
    l.inter = false;
    l.in_place = false;
    return l;
}
} // namespace

int inter_barrier(Schedule& s, const Args& a)
{
    const Datatype* bt = byte_type();
    if (int e = build_flat(s, Coll::barrier, local_args(a, Coll::barrier))) {
        return e;
    }
    if (a.team.rank == 0) {
        s.recv(a.remote.w(0), nullptr, 0, bt);
        s.send(a.remote.w(0), nullptr, 0, bt);
        s.fence();
    }
    Args b = local_args(a, Coll::bcast);
    b.root = 0;
    b.rbuf = nullptr;
    b.rcount = 0;
    b.rtype = bt;
    return bcast_binomial(s, b); // empty messages: only the binomial sends those
}

int inter_allgather(Schedule& s, const Args& a)
{
    s.fence();
    for (int j = 0; j < a.remote.size; ++j) {
        Block b = gathered_block(a, j);
        if (b.bytes() > 0) {
            s.recv(a.remote.w(j), b.mut(), b.count, b.type);
        }
    }
    if (a.scount * a.stype->size > 0) {
        for (int i = 0; i < a.remote.size; ++i) {
            int j = (a.team.rank + i) % a.remote.size;
            s.send(a.remote.w(j), a.sbuf, a.scount, a.stype);
        }
    }
    s.fence();
    return MPI_SUCCESS;
}

int inter_alltoall(Schedule& s, const Args& a)
{
    s.fence();
    Block* out;
    Block* in;
    a2a_blocks(s, a, &out, &in);
    const int n = a.remote.size;
    for (int j = 0; j < n; ++j) {
        if (in[j].bytes() > 0) {
            s.recv(a.remote.w(j), in[j].mut(), in[j].count, in[j].type);
        }
    }
    for (int i = 0; i < n; ++i) {
        int j = (a.team.rank + i) % n;
        if (out[j].bytes() > 0) {
            s.send(a.remote.w(j), out[j].buf, out[j].count, out[j].type);
        }
    }
    s.fence();
    return MPI_SUCCESS;
}

int inter_allreduce(Schedule& s, const Args& a)
{
    const std::uint64_t count = a.rcount;
    const Datatype* type = a.rtype;
    s.fence();
    if (count == 0) {
        return MPI_SUCCESS;
    }
    const bool leader = a.team.rank == 0;
    void* mine = leader ? s.scratch_for(count, type) : nullptr;
    Args r = local_args(a, Coll::reduce);
    r.root = 0;
    r.rbuf = mine;
    if (int e = build_flat(s, Coll::reduce, r)) {
        return e;
    }
    if (leader) {
        s.recv(a.remote.w(0), a.rbuf, count, type);
        s.send(a.remote.w(0), mine, count, type);
        s.fence();
    }
    Args b = local_args(a, Coll::bcast);
    b.root = 0;
    b.sbuf = nullptr;
    return build_flat(s, Coll::bcast, b);
}

int inter_reduce_scatter(Schedule& s, const Args& a)
{
    const Datatype* type = a.rtype;
    const int p = a.team.size;
    s.fence();
    RsBlocks b = rs_blocks(s, a, p);
    const std::uint64_t total = b.first[p];
    if (total == 0) {
        return MPI_SUCCESS;
    }
    const bool leader = a.team.rank == 0;
    void* mine = leader ? s.scratch_for(total, type) : nullptr;
    void* theirs = leader ? s.scratch_for(total, type) : nullptr;
    Args r = local_args(a, Coll::reduce);
    r.root = 0;
    r.rbuf = mine;
    r.rcount = total;
    r.rcounts = nullptr;
    r.bytes = total * type->size;
    if (int e = build_flat(s, Coll::reduce, r)) {
        return e;
    }
    if (leader) {
        s.recv(a.remote.w(0), theirs, total, type);
        s.send(a.remote.w(0), mine, total, type);
        s.fence();
    }
    auto* counts = static_cast<int*>(s.scratch(sizeof(int) * static_cast<std::size_t>(p)));
    auto* displs = static_cast<int*>(s.scratch(sizeof(int) * static_cast<std::size_t>(p)));
    for (int j = 0; j < p; ++j) {
        counts[j] = static_cast<int>(b.count[j]);
        displs[j] = static_cast<int>(b.first[j]);
    }
    Args v;
    v.coll = Coll::scatterv;
    v.team = a.team;
    v.sbuf = theirs;
    v.scounts = counts;
    v.sdispls = displs;
    v.stype = type;
    v.rbuf = a.rbuf;
    v.rcount = b.count[a.team.rank];
    v.rtype = type;
    v.root = 0;
    v.bytes = total * type->size / static_cast<std::uint64_t>(p);
    return build_flat(s, Coll::scatterv, v);
}

} // namespace ulmpi::mpi::coll
