// Entry points of the collectives without a root: Barrier, Allgather(v),
// Alltoall(v, w), Allreduce, Reduce_scatter(_block), Scan, Exscan, and their
// nonblocking forms (req == nullptr: blocking).
#include "mpi/checks.h"
#include "mpi/coll/api.h"
#include "mpi/coll/util.h"

using namespace ulmpi::mpi;
using namespace ulmpi::mpi::coll;

namespace {

int barrier(MPI_Comm comm, MPI_Request* req, const char* fn)
{
    Comm* c;
    if (int e = check_coll_comm(comm, true, fn, &c)) {
        return e;
    }
    if (req != nullptr) {
        if (int e = check_request_ptr(c, req, fn)) {
            return e;
        }
    }
    Args a;
    set_teams(c, a);
    a.stype = a.rtype = byte_type();
    return launch(c, Coll::barrier, a, req, fn);
}

int allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
              const int* rcounts, const int* displs, MPI_Datatype rtype, MPI_Comm comm,
              MPI_Request* req, bool v, const char* fn)
{
    Comm* c;
    if (int e = check_coll_comm(comm, true, fn, &c)) {
        return e;
    }
    if (req != nullptr) {
        if (int e = check_request_ptr(c, req, fn)) {
            return e;
        }
    }
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (in_place && c->inter()) {
        return no_in_place(c, "the send buffer of an intercommunicator collective", fn);
    }
    const int n = c->peer_count();
    Datatype* st = nullptr;
    Datatype* rt = nullptr;
    if (!in_place) {
        if (int e = check_coll_type(c, stype, fn, &st)) {
            return e;
        }
    }
    if (int e = check_coll_type(c, rtype, fn, &rt)) {
        return e;
    }
    std::uint64_t total = 0;
    if (checking()) {
        if (st != nullptr) {
            if (int e = check_coll_count(c, scount, "sendcount", fn)) {
                return e;
            }
            if (int e = check_coll_buffer(c, sbuf, scount, st, "the send buffer", fn)) {
                return e;
            }
        }
        if (rbuf == MPI_IN_PLACE) {
            return no_in_place(c, "the receive buffer", fn);
        }
        if (v) {
            if (int e = check_array(c, rcounts, n, true, "recvcounts", fn)) {
                return e;
            }
            if (int e = check_array(c, displs, n, false, "displs", fn)) {
                return e;
            }
        } else {
            if (int e = check_coll_count(c, rcount, "recvcount", fn)) {
                return e;
            }
            if (int e = check_coll_buffer(c, rbuf, rcount, rt, "the receive buffer", fn)) {
                return e;
            }
        }
        if (st != nullptr && sbuf == rbuf && scount > 0 && st->size > 0) {
            return aliased(c, fn);
        }
    }
    if (v) {
        for (int j = 0; j < n; ++j) {
            total += static_cast<std::uint64_t>(rcounts[j]);
        }
    }
    Args a;
    set_teams(c, a);
    a.sbuf = sbuf;
    a.scount = st != nullptr ? static_cast<std::uint64_t>(scount) : 0;
    a.stype = st != nullptr ? st : byte_type();
    a.rbuf = rbuf;
    a.rtype = rt;
    if (v) {
        a.rcounts = rcounts;
        a.rdispls = displs;
        a.bytes = total * rt->size / static_cast<std::uint64_t>(n);
    } else {
        a.rcount = static_cast<std::uint64_t>(rcount);
        a.bytes = a.rcount * rt->size;
    }
    a.in_place = in_place;
    return launch(c, v ? Coll::allgatherv : Coll::allgather, a, req, fn);
}

enum class A2a { plain, v, w };

int alltoall(const void* sbuf, int scount, const int* scounts, const int* sdispls,
             MPI_Datatype stype, const MPI_Datatype* stypes, void* rbuf, int rcount,
             const int* rcounts, const int* rdispls, MPI_Datatype rtype,
             const MPI_Datatype* rtypes, MPI_Comm comm, MPI_Request* req, A2a form,
             const char* fn)
{
    Comm* c;
    if (int e = check_coll_comm(comm, true, fn, &c)) {
        return e;
    }
    if (req != nullptr) {
        if (int e = check_request_ptr(c, req, fn)) {
            return e;
        }
    }
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (in_place && c->inter()) {
        return no_in_place(c, "the send buffer of an intercommunicator collective", fn);
    }
    const int n = c->peer_count();
    Datatype* st = nullptr;
    Datatype* rt = nullptr;
    if (form != A2a::w) {
        if (!in_place) {
            if (int e = check_coll_type(c, stype, fn, &st)) {
                return e;
            }
        }
        if (int e = check_coll_type(c, rtype, fn, &rt)) {
            return e;
        }
    }
    if (checking()) {
        if (rbuf == MPI_IN_PLACE) {
            return no_in_place(c, "the receive buffer", fn);
        }
        if (form == A2a::plain) {
            if (!in_place) {
                if (int e = check_coll_count(c, scount, "sendcount", fn)) {
                    return e;
                }
                if (int e = check_coll_buffer(c, sbuf, scount, st, "the send buffer", fn)) {
                    return e;
                }
            }
            if (int e = check_coll_count(c, rcount, "recvcount", fn)) {
                return e;
            }
            if (int e = check_coll_buffer(c, rbuf, rcount, rt, "the receive buffer", fn)) {
                return e;
            }
            if (!in_place && sbuf == rbuf && scount > 0 && st->size > 0) {
                return aliased(c, fn);
            }
        } else {
            if (!in_place) {
                if (int e = check_array(c, scounts, n, true, "sendcounts", fn)) {
                    return e;
                }
                if (int e = check_array(c, sdispls, n, false, "sdispls", fn)) {
                    return e;
                }
            }
            if (int e = check_array(c, rcounts, n, true, "recvcounts", fn)) {
                return e;
            }
            if (int e = check_array(c, rdispls, n, false, "rdispls", fn)) {
                return e;
            }
            if (!in_place && sbuf == rbuf && sbuf != nullptr) {
                for (int j = 0; j < n; ++j) {
                    if (scounts[j] > 0) {
                        return aliased(c, fn);
                    }
                }
            }
        }
    }
    // Alltoallw: every type with data must be valid (an empty slot may hold
    // anything).
    if (form == A2a::w) {
        if (n > 0 && (rtypes == nullptr || (!in_place && stypes == nullptr))) {
            return raise(c, MPI_ERR_ARG, fn, "a datatype array is NULL");
        }
        for (int j = 0; j < n; ++j) {
            Datatype* d;
            if (!in_place && scounts[j] > 0) {
                if (int e = check_coll_type(c, stypes[j], fn, &d)) {
                    return e;
                }
            }
            if (rcounts[j] > 0) {
                if (int e = check_coll_type(c, rtypes[j], fn, &d)) {
                    return e;
                }
            }
        }
    }
    Args a;
    set_teams(c, a);
    a.sbuf = sbuf;
    a.rbuf = rbuf;
    a.in_place = in_place;
    a.stype = st != nullptr ? st : byte_type();
    a.rtype = rt != nullptr ? rt : byte_type();
    Coll coll = Coll::alltoall;
    if (form == A2a::plain) {
        a.scount = st != nullptr ? static_cast<std::uint64_t>(scount) : 0;
        a.rcount = static_cast<std::uint64_t>(rcount);
        a.bytes = a.rcount * rt->size;
    } else {
        coll = form == A2a::v ? Coll::alltoallv : Coll::alltoallw;
        a.scounts = scounts;
        a.sdispls = sdispls;
        a.rcounts = rcounts;
        a.rdispls = rdispls;
        if (form == A2a::w) {
            // The type arrays live in the schedule (a nonblocking call
            // outlives the caller's arrays); alltoallw never goes
            // through shared memory.
            Schedule& s = acquire(c, req);
            auto** sts = static_cast<const Datatype**>(s.scratch(sizeof(Datatype*) * static_cast<std::size_t>(n)));
            auto** rts = static_cast<const Datatype**>(s.scratch(sizeof(Datatype*) * static_cast<std::size_t>(n)));
            for (int j = 0; j < n; ++j) {
                const Datatype* d = in_place || scounts[j] == 0 ? nullptr : datatype_get(stypes[j]);
                sts[j] = d != nullptr ? d : byte_type();
                d = rcounts[j] == 0 ? nullptr : datatype_get(rtypes[j]);
                rts[j] = d != nullptr ? d : byte_type();
            }
            a.stypes = sts;
            a.rtypes = rts;
            return launch(s, c, coll, a, req, fn);
        }
    }
    return launch(c, coll, a, req, fn);
}

int allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm, MPI_Request* req, bool inter_ok, Coll coll, const char* fn)
{
    Comm* c;
    if (int e = check_coll_comm(comm, inter_ok, fn, &c)) {
        return e;
    }
    if (req != nullptr) {
        if (int e = check_request_ptr(c, req, fn)) {
            return e;
        }
    }
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (in_place && c->inter()) {
        return no_in_place(c, "the send buffer of an intercommunicator collective", fn);
    }
    Datatype* t;
    if (int e = check_coll_type(c, type, fn, &t)) {
        return e;
    }
    Op* o;
    if (int e = check_op(c, op, t, fn, &o)) {
        return e;
    }
    if (checking()) {
        if (int e = check_coll_count(c, count, "count", fn)) {
            return e;
        }
        if (!in_place) {
            if (int e = check_coll_buffer(c, sbuf, count, t, "the send buffer", fn)) {
                return e;
            }
        }
        if (rbuf == MPI_IN_PLACE) {
            return no_in_place(c, "the receive buffer", fn);
        }
        if (int e = check_coll_buffer(c, rbuf, count, t, "the receive buffer", fn)) {
            return e;
        }
        if (!in_place && sbuf == rbuf && count > 0 && t->size > 0) {
            return aliased(c, fn);
        }
    }
    Args a;
    set_teams(c, a);
    a.sbuf = sbuf;
    a.rbuf = rbuf;
    a.in_place = in_place;
    a.scount = a.rcount = static_cast<std::uint64_t>(count);
    a.stype = a.rtype = t;
    a.op = o;
    a.bytes = a.rcount * t->size;
    return launch(c, coll, a, req, fn);
}

int reduce_scatter(const void* sbuf, void* rbuf, int rcount, const int* rcounts,
                   MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* req, bool block,
                   const char* fn)
{
    Comm* c;
    if (int e = check_coll_comm(comm, true, fn, &c)) {
        return e;
    }
    if (req != nullptr) {
        if (int e = check_request_ptr(c, req, fn)) {
            return e;
        }
    }
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (in_place && c->inter()) {
        return no_in_place(c, "the send buffer of an intercommunicator collective", fn);
    }
    const int n = c->size();
    Datatype* t;
    if (int e = check_coll_type(c, type, fn, &t)) {
        return e;
    }
    Op* o;
    if (int e = check_op(c, op, t, fn, &o)) {
        return e;
    }
    if (checking()) {
        if (block) {
            if (int e = check_coll_count(c, rcount, "recvcount", fn)) {
                return e;
            }
        } else if (int e = check_array(c, rcounts, n, true, "recvcounts", fn)) {
            return e;
        }
        if (rbuf == MPI_IN_PLACE) {
            return no_in_place(c, "the receive buffer", fn);
        }
    }
    std::uint64_t total = 0;
    for (int j = 0; j < n; ++j) {
        total += static_cast<std::uint64_t>(block ? rcount : rcounts[j]);
    }
    std::uint64_t mine = static_cast<std::uint64_t>(block ? rcount : rcounts[c->rank]);
    if (checking()) {
        if (!in_place && total > 0 && sbuf == nullptr && t->predefined && t->size > 0) {
            return raise(c, MPI_ERR_BUFFER, fn, "the send buffer is NULL");
        }
        if (mine > 0 && rbuf == nullptr && t->predefined && t->size > 0) {
            return raise(c, MPI_ERR_BUFFER, fn, "the receive buffer is NULL");
        }
        if (!in_place && sbuf == rbuf && total > 0 && t->size > 0) {
            return aliased(c, fn);
        }
    }
    Args a;
    set_teams(c, a);
    a.sbuf = sbuf;
    a.rbuf = rbuf;
    a.in_place = in_place;
    a.stype = a.rtype = t;
    a.op = o;
    if (block) {
        a.rcount = static_cast<std::uint64_t>(rcount);
    } else {
        a.rcounts = rcounts;
        a.rcount = mine;
    }
    a.scount = total;
    a.bytes = total * t->size;
    return launch(c, block ? Coll::reduce_scatter_block : Coll::reduce_scatter, a, req, fn);
}

} // namespace

int PMPI_Barrier(MPI_Comm comm) try {
    EntryGuard guard;
    return barrier(comm, nullptr, "MPI_Barrier");
} catch (...) {
    return api_exception("MPI_Barrier");
}
ULMPI_ALIAS(MPI_Barrier)

int PMPI_Ibarrier(MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ibarrier")) {
        return e;
    }
    return barrier(comm, req, "MPI_Ibarrier");
} catch (...) {
    return api_exception("MPI_Ibarrier");
}
ULMPI_ALIAS(MPI_Ibarrier)

int PMPI_Allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                   MPI_Datatype rtype, MPI_Comm comm) try {
    EntryGuard guard;
    return allgather(sbuf, scount, stype, rbuf, rcount, nullptr, nullptr, rtype, comm, nullptr,
                     false, "MPI_Allgather");
} catch (...) {
    return api_exception("MPI_Allgather");
}
ULMPI_ALIAS(MPI_Allgather)

int PMPI_Iallgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                    MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Iallgather")) {
        return e;
    }
    return allgather(sbuf, scount, stype, rbuf, rcount, nullptr, nullptr, rtype, comm, req, false,
                     "MPI_Iallgather");
} catch (...) {
    return api_exception("MPI_Iallgather");
}
ULMPI_ALIAS(MPI_Iallgather)

int PMPI_Allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                    const int* rcounts, const int* displs, MPI_Datatype rtype,
                    MPI_Comm comm) try {
    EntryGuard guard;
    return allgather(sbuf, scount, stype, rbuf, 0, rcounts, displs, rtype, comm, nullptr, true,
                     "MPI_Allgatherv");
} catch (...) {
    return api_exception("MPI_Allgatherv");
}
ULMPI_ALIAS(MPI_Allgatherv)

int PMPI_Iallgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                     const int* rcounts, const int* displs, MPI_Datatype rtype, MPI_Comm comm,
                     MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Iallgatherv")) {
        return e;
    }
    return allgather(sbuf, scount, stype, rbuf, 0, rcounts, displs, rtype, comm, req, true,
                     "MPI_Iallgatherv");
} catch (...) {
    return api_exception("MPI_Iallgatherv");
}
ULMPI_ALIAS(MPI_Iallgatherv)

int PMPI_Alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) try {
    EntryGuard guard;
    return alltoall(sbuf, scount, nullptr, nullptr, stype, nullptr, rbuf, rcount, nullptr, nullptr,
                    rtype, nullptr, comm, nullptr, A2a::plain, "MPI_Alltoall");
} catch (...) {
    return api_exception("MPI_Alltoall");
}
ULMPI_ALIAS(MPI_Alltoall)

int PMPI_Ialltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ialltoall")) {
        return e;
    }
    return alltoall(sbuf, scount, nullptr, nullptr, stype, nullptr, rbuf, rcount, nullptr, nullptr,
                    rtype, nullptr, comm, req, A2a::plain, "MPI_Ialltoall");
} catch (...) {
    return api_exception("MPI_Ialltoall");
}
ULMPI_ALIAS(MPI_Ialltoall)

int PMPI_Alltoallv(const void* sbuf, const int* scounts, const int* sdispls, MPI_Datatype stype,
                   void* rbuf, const int* rcounts, const int* rdispls, MPI_Datatype rtype,
                   MPI_Comm comm) try {
    EntryGuard guard;
    return alltoall(sbuf, 0, scounts, sdispls, stype, nullptr, rbuf, 0, rcounts, rdispls, rtype,
                    nullptr, comm, nullptr, A2a::v, "MPI_Alltoallv");
} catch (...) {
    return api_exception("MPI_Alltoallv");
}
ULMPI_ALIAS(MPI_Alltoallv)

int PMPI_Ialltoallv(const void* sbuf, const int* scounts, const int* sdispls, MPI_Datatype stype,
                    void* rbuf, const int* rcounts, const int* rdispls, MPI_Datatype rtype,
                    MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ialltoallv")) {
        return e;
    }
    return alltoall(sbuf, 0, scounts, sdispls, stype, nullptr, rbuf, 0, rcounts, rdispls, rtype,
                    nullptr, comm, req, A2a::v, "MPI_Ialltoallv");
} catch (...) {
    return api_exception("MPI_Ialltoallv");
}
ULMPI_ALIAS(MPI_Ialltoallv)

int PMPI_Alltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                   const MPI_Datatype* stypes, void* rbuf, const int* rcounts, const int* rdispls,
                   const MPI_Datatype* rtypes, MPI_Comm comm) try {
    EntryGuard guard;
    return alltoall(sbuf, 0, scounts, sdispls, MPI_DATATYPE_NULL, stypes, rbuf, 0, rcounts, rdispls,
                    MPI_DATATYPE_NULL, rtypes, comm, nullptr, A2a::w, "MPI_Alltoallw");
} catch (...) {
    return api_exception("MPI_Alltoallw");
}
ULMPI_ALIAS(MPI_Alltoallw)

int PMPI_Ialltoallw(const void* sbuf, const int* scounts, const int* sdispls,
                    const MPI_Datatype* stypes, void* rbuf, const int* rcounts,
                    const int* rdispls, const MPI_Datatype* rtypes, MPI_Comm comm,
                    MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ialltoallw")) {
        return e;
    }
    return alltoall(sbuf, 0, scounts, sdispls, MPI_DATATYPE_NULL, stypes, rbuf, 0, rcounts, rdispls,
                    MPI_DATATYPE_NULL, rtypes, comm, req, A2a::w, "MPI_Ialltoallw");
} catch (...) {
    return api_exception("MPI_Ialltoallw");
}
ULMPI_ALIAS(MPI_Ialltoallw)

int PMPI_Allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm) try {
    EntryGuard guard;
    return allreduce(sbuf, rbuf, count, type, op, comm, nullptr, true, Coll::allreduce,
                     "MPI_Allreduce");
} catch (...) {
    return api_exception("MPI_Allreduce");
}
ULMPI_ALIAS(MPI_Allreduce)

int PMPI_Iallreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                    MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Iallreduce")) {
        return e;
    }
    return allreduce(sbuf, rbuf, count, type, op, comm, req, true, Coll::allreduce,
                     "MPI_Iallreduce");
} catch (...) {
    return api_exception("MPI_Iallreduce");
}
ULMPI_ALIAS(MPI_Iallreduce)

int PMPI_Scan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) try {
    EntryGuard guard;
    return allreduce(sbuf, rbuf, count, type, op, comm, nullptr, false, Coll::scan, "MPI_Scan");
} catch (...) {
    return api_exception("MPI_Scan");
}
ULMPI_ALIAS(MPI_Scan)

int PMPI_Iscan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Iscan")) {
        return e;
    }
    return allreduce(sbuf, rbuf, count, type, op, comm, req, false, Coll::scan, "MPI_Iscan");
} catch (...) {
    return api_exception("MPI_Iscan");
}
ULMPI_ALIAS(MPI_Iscan)

int PMPI_Exscan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm) try {
    EntryGuard guard;
    return allreduce(sbuf, rbuf, count, type, op, comm, nullptr, false, Coll::exscan, "MPI_Exscan");
} catch (...) {
    return api_exception("MPI_Exscan");
}
ULMPI_ALIAS(MPI_Exscan)

int PMPI_Iexscan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Iexscan")) {
        return e;
    }
    return allreduce(sbuf, rbuf, count, type, op, comm, req, false, Coll::exscan, "MPI_Iexscan");
} catch (...) {
    return api_exception("MPI_Iexscan");
}
ULMPI_ALIAS(MPI_Iexscan)

int PMPI_Reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm) try {
    EntryGuard guard;
    return reduce_scatter(sbuf, rbuf, 0, rcounts, type, op, comm, nullptr, false,
                          "MPI_Reduce_scatter");
} catch (...) {
    return api_exception("MPI_Reduce_scatter");
}
ULMPI_ALIAS(MPI_Reduce_scatter)

int PMPI_Ireduce_scatter(const void* sbuf, void* rbuf, const int* rcounts, MPI_Datatype type,
                         MPI_Op op, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ireduce_scatter")) {
        return e;
    }
    return reduce_scatter(sbuf, rbuf, 0, rcounts, type, op, comm, req, false,
                          "MPI_Ireduce_scatter");
} catch (...) {
    return api_exception("MPI_Ireduce_scatter");
}
ULMPI_ALIAS(MPI_Ireduce_scatter)

int PMPI_Reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm) try {
    EntryGuard guard;
    return reduce_scatter(sbuf, rbuf, rcount, nullptr, type, op, comm, nullptr, true,
                          "MPI_Reduce_scatter_block");
} catch (...) {
    return api_exception("MPI_Reduce_scatter_block");
}
ULMPI_ALIAS(MPI_Reduce_scatter_block)

int PMPI_Ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype type,
                               MPI_Op op, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ireduce_scatter_block")) {
        return e;
    }
    return reduce_scatter(sbuf, rbuf, rcount, nullptr, type, op, comm, req, true,
                          "MPI_Ireduce_scatter_block");
} catch (...) {
    return api_exception("MPI_Ireduce_scatter_block");
}
ULMPI_ALIAS(MPI_Ireduce_scatter_block)
