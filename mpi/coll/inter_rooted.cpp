// Intercommunicator forms of the rooted collectives. The root passes
// MPI_ROOT, the other ranks of its group MPI_PROC_NULL, and every rank of
// the other group the root's rank in the remote group. The local group
// phases run the flat algorithms on the local team (coll.h).
//
//   Bcast    root -> rank 0 of the other group, then a flat Bcast there.
//            Cost: alpha + n beta + flat bcast.
//   Gather(v), Scatter(v)  linear between the root and the other group.
//            Cost: p_remote * (alpha + n beta) at the root.
//   Reduce   flat Reduce to rank 0 of the other group, which sends the
//            result to the root. Cost: flat reduce + alpha + n beta.
#include "mpi/coll/algos.h"
#include "mpi/coll/util.h"

namespace ulmpi::mpi::coll {

int inter_bcast(Schedule& s, const Args& a)
{
    s.fence();
    if (a.root == MPI_PROC_NULL) {
        return MPI_SUCCESS;
    }
    if (a.root == MPI_ROOT) {
        s.send(a.remote.w(0), a.rbuf, a.rcount, a.rtype);
        s.fence();
        return MPI_SUCCESS;
    }
    if (a.team.rank == 0) {
        s.recv(a.remote.w(a.root), a.rbuf, a.rcount, a.rtype);
        s.fence();
    }
    Args b = a;
    b.inter = false;
    b.root = 0;
    return build_flat(s, Coll::bcast, b);
}

int inter_gather(Schedule& s, const Args& a)
{
    s.fence();
    if (a.root == MPI_PROC_NULL) {
        return MPI_SUCCESS;
    }
    if (a.root == MPI_ROOT) {
        for (int j = 0; j < a.remote.size; ++j) {
            Block b = gathered_block(a, j);
            if (b.bytes() > 0) {
                s.recv(a.remote.w(j), b.mut(), b.count, b.type);
            }
        }
    } else if (a.scount * a.stype->size > 0) {
        s.send(a.remote.w(a.root), a.sbuf, a.scount, a.stype);
    }
    s.fence();
    return MPI_SUCCESS;
}

int inter_scatter(Schedule& s, const Args& a)
{
    s.fence();
    if (a.root == MPI_PROC_NULL) {
        return MPI_SUCCESS;
    }
    if (a.root == MPI_ROOT) {
        for (int j = 0; j < a.remote.size; ++j) {
            Block b = scattered_block(a, j);
            if (b.bytes() > 0) {
                s.send(a.remote.w(j), b.buf, b.count, b.type);
            }
        }
    } else if (a.rcount * a.rtype->size > 0) {
        s.recv(a.remote.w(a.root), a.rbuf, a.rcount, a.rtype);
    }
    s.fence();
    return MPI_SUCCESS;
}

int inter_reduce(Schedule& s, const Args& a)
{
    s.fence();
    if (a.root == MPI_PROC_NULL) {
        return MPI_SUCCESS;
    }
    const std::uint64_t count = a.rcount;
    const Datatype* type = a.rtype;
    if (count == 0) {
        return MPI_SUCCESS;
    }
    if (a.root == MPI_ROOT) {
        s.recv(a.remote.w(0), a.rbuf, count, type);
        s.fence();
        return MPI_SUCCESS;
    }
    void* result = a.team.rank == 0 ? s.scratch_for(count, type) : nullptr;
    Args r = a;
    r.inter = false;
    r.root = 0;
    r.in_place = false;
    r.rbuf = result;
    if (int e = build_flat(s, Coll::reduce, r)) {
        return e;
    }
    if (a.team.rank == 0) {
        s.send(a.remote.w(a.root), result, count, type);
        s.fence();
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
