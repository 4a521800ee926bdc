// Entry points of the neighbourhood collectives (MPI-3.1 7.6):
// Neighbor_allgather(v), Neighbor_alltoall(v, w) and their nonblocking
// forms, on communicators with a Cartesian, graph or distributed-graph
// topology (neighbour order: topo.h; the algorithm: neighbor_linear.cpp).
//
// Error classes: MPI_ERR_COMM (invalid communicator), MPI_ERR_TOPOLOGY (a
// communicator without a topology, intercommunicators included),
// MPI_ERR_ARG (MPI_IN_PLACE, which these calls do not take; NULL count,
// displacement or datatype arrays), MPI_ERR_TYPE, MPI_ERR_COUNT,
// MPI_ERR_BUFFER, MPI_ERR_REQUEST (NULL request pointer). The count and
// displacement arrays have one entry per in-neighbour (receive side) or
// out-neighbour (send side), MPI_PROC_NULL neighbours included.
#include "mpi/checks.h"
#include "mpi/coll/api.h"
#include "mpi/coll/util.h"
#include "mpi/topo.h"

#include <vector>

using namespace ulmpi::mpi;
using namespace ulmpi::mpi::coll;

namespace {

// One call's arguments as the program gave them.
struct Call {
    Coll coll = Coll::neighbor_allgather;
    const void* sbuf = nullptr;
    int scount = 0;
    const int* scounts = nullptr;
    const int* sdispls = nullptr;
    const MPI_Aint* sdispls_bytes = nullptr;
    MPI_Datatype stype = MPI_DATATYPE_NULL;
    const MPI_Datatype* stypes = nullptr;
    void* rbuf = nullptr;
    int rcount = 0;
    const int* rcounts = nullptr;
    const int* rdispls = nullptr;
    const MPI_Aint* rdispls_bytes = nullptr;
    MPI_Datatype rtype = MPI_DATATYPE_NULL;
    const MPI_Datatype* rtypes = nullptr;
};

bool send_per_neighbor(Coll c)
{
    return c == Coll::neighbor_alltoallv || c == Coll::neighbor_alltoallw;
}
bool recv_per_neighbor(Coll c)
{
    return c == Coll::neighbor_allgatherv || send_per_neighbor(c);
}

int check_arrays(Comm* c, const Call& k, int nin, int nout, const char* fn)
{
    if (send_per_neighbor(k.coll)) {
        if (int e = check_array(c, k.scounts, nout, true, "sendcounts", fn)) {
            return e;
        }
        if (k.coll == Coll::neighbor_alltoallv) {
            if (int e = check_array(c, k.sdispls, nout, false, "sdispls", fn)) {
                return e;
            }
        } else if (nout > 0 && k.sdispls_bytes == nullptr) {
            return raise(c, MPI_ERR_ARG, fn, "sdispls is NULL");
        }
    } else {
        if (int e = check_coll_count(c, k.scount, "sendcount", fn)) {
            return e;
        }
    }
    if (recv_per_neighbor(k.coll)) {
        if (int e = check_array(c, k.rcounts, nin, true, "recvcounts", fn)) {
            return e;
        }
        if (k.coll != Coll::neighbor_alltoallw) {
            if (int e = check_array(c, k.rdispls, nin, false, "displs", fn)) {
                return e;
            }
        } else if (nin > 0 && k.rdispls_bytes == nullptr) {
            return raise(c, MPI_ERR_ARG, fn, "rdispls is NULL");
        }
    } else {
        if (int e = check_coll_count(c, k.rcount, "recvcount", fn)) {
            return e;
        }
    }
    return MPI_SUCCESS;
}

// Alltoallw: the datatypes of the slots that carry data (empty slots may
// hold anything: MPI_BYTE stands in).
int resolve_types(Comm* c, const MPI_Datatype* h, const int* counts, int n, const char* what,
                  const char* fn, std::vector<const Datatype*>& out)
{
    if (n > 0 && h == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    out.assign(static_cast<std::size_t>(n), byte_type());
    for (int j = 0; j < n; ++j) {
        if (counts[j] > 0) {
            Datatype* d;
            if (int e = check_coll_type(c, h[j], fn, &d)) {
                return e;
            }
            out[static_cast<std::size_t>(j)] = d;
        }
    }
    return MPI_SUCCESS;
}

// A copy of v in the schedule's scratch (it must live as long as the call).
template <class T> const T* keep(Schedule& s, const std::vector<T>& v)
{
    auto* p = static_cast<T*>(s.scratch(sizeof(T) * v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) {
        p[i] = v[i];
    }
    return p;
}

int neighbor(const Call& k, MPI_Comm comm, MPI_Request* req, const char* fn)
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
    const Topology* topo = comm_topology(c);
    if (topo == nullptr) {
        return raise(c, MPI_ERR_TOPOLOGY, fn,
                     "%s has no Cartesian, graph or distributed-graph topology",
                     c->display_name().c_str());
    }
    if (k.sbuf == MPI_IN_PLACE || k.rbuf == MPI_IN_PLACE) {
        return no_in_place(c, k.sbuf == MPI_IN_PLACE ? "the send buffer" : "the receive buffer",
                           fn);
    }
    std::vector<int> src;
    std::vector<int> dst;
    topo->neighbors(c->rank, src, dst);
    const int nin = static_cast<int>(src.size());
    const int nout = static_cast<int>(dst.size());
    const bool w = k.coll == Coll::neighbor_alltoallw;
    Datatype* st = nullptr;
    Datatype* rt = nullptr;
    if (!w) {
        if (int e = check_coll_type(c, k.stype, fn, &st)) {
            return e;
        }
        if (int e = check_coll_type(c, k.rtype, fn, &rt)) {
            return e;
        }
    }
    if (checking()) {
        if (int e = check_arrays(c, k, nin, nout, fn)) {
            return e;
        }
        if (!send_per_neighbor(k.coll)) {
            if (int e = check_coll_buffer(c, k.sbuf, k.scount, st, "the send buffer", fn)) {
                return e;
            }
        }
        if (!recv_per_neighbor(k.coll)) {
            if (int e = check_coll_buffer(c, k.rbuf, k.rcount, rt, "the receive buffer", fn)) {
                return e;
            }
        }
    } else if (w && ((nout > 0 && k.scounts == nullptr) || (nin > 0 && k.rcounts == nullptr))) {
        return raise(c, MPI_ERR_ARG, fn, "a count array is NULL"); // needed to read the types
    }
    // Datatype arrays before a schedule is taken: an error must not consume a tag.
    std::vector<const Datatype*> sts;
    std::vector<const Datatype*> rts;
    if (w) {
        if (int e = resolve_types(c, k.stypes, k.scounts, nout, "sendtypes", fn, sts)) {
            return e;
        }
        if (int e = resolve_types(c, k.rtypes, k.rcounts, nin, "recvtypes", fn, rts)) {
            return e;
        }
    }
    // World ranks of the neighbours (-1: MPI_PROC_NULL).
    for (int& r : src) {
        r = r >= 0 ? c->world_of(r) : -1;
    }
    for (int& r : dst) {
        r = r >= 0 ? c->world_of(r) : -1;
    }

    Schedule& s = acquire(c, req);
    Args a;
    set_teams(c, a);
    a.nbr_src = keep(s, src);
    a.nbr_in = nin;
    a.nbr_dst = keep(s, dst);
    a.nbr_out = nout;
    if (topo->kind == MPI_CART) {
        a.nbr_tag_up = next_tag(c); // a second stream, see neighbor_linear.cpp
    }
    a.sbuf = k.sbuf;
    a.rbuf = k.rbuf;
    a.stype = st != nullptr ? st : byte_type();
    a.rtype = rt != nullptr ? rt : byte_type();
    a.scount = static_cast<std::uint64_t>(k.scount);
    a.rcount = static_cast<std::uint64_t>(k.rcount);
    a.scounts = k.scounts;
    a.sdispls = k.sdispls;
    a.rcounts = k.rcounts;
    a.rdispls = k.rdispls;
    a.sdispls_bytes = k.sdispls_bytes;
    a.rdispls_bytes = k.rdispls_bytes;
    if (w) {
        a.stypes = keep(s, sts);
        a.rtypes = keep(s, rts);
    }
    a.bytes = send_per_neighbor(k.coll) ? 0 : a.scount * a.stype->size;
    return launch(s, c, k.coll, a, req, fn);
}

Call allgather_call(Coll coll, const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                    int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype)
{
    Call k;
    k.coll = coll;
    k.sbuf = sbuf;
    k.scount = scount;
    k.stype = stype;
    k.rbuf = rbuf;
    k.rcount = rcount;
    k.rcounts = rcounts;
    k.rdispls = displs;
    k.rtype = rtype;
    return k;
}

Call alltoall_call(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                   MPI_Datatype rtype)
{
    Call k = allgather_call(Coll::neighbor_alltoall, sbuf, scount, stype, rbuf, rcount, nullptr,
                            nullptr, rtype);
    return k;
}

Call alltoallv_call(const void* sbuf, const int* scounts, const int* sdispls, MPI_Datatype stype,
                    void* rbuf, const int* rcounts, const int* rdispls, MPI_Datatype rtype)
{
    Call k;
    k.coll = Coll::neighbor_alltoallv;
    k.sbuf = sbuf;
    k.scounts = scounts;
    k.sdispls = sdispls;
    k.stype = stype;
    k.rbuf = rbuf;
    k.rcounts = rcounts;
    k.rdispls = rdispls;
    k.rtype = rtype;
    return k;
}

Call alltoallw_call(const void* sbuf, const int* scounts, const MPI_Aint* sdispls,
                    const MPI_Datatype* stypes, void* rbuf, const int* rcounts,
                    const MPI_Aint* rdispls, const MPI_Datatype* rtypes)
{
    Call k;
    k.coll = Coll::neighbor_alltoallw;
    k.sbuf = sbuf;
    k.scounts = scounts;
    k.sdispls_bytes = sdispls;
    k.stypes = stypes;
    k.rbuf = rbuf;
    k.rcounts = rcounts;
    k.rdispls_bytes = rdispls;
    k.rtypes = rtypes;
    return k;
}

} // namespace

int PMPI_Neighbor_allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                            int rcount, MPI_Datatype rtype, MPI_Comm comm) try {
    EntryGuard guard;
    return neighbor(allgather_call(Coll::neighbor_allgather, sbuf, scount, stype, rbuf, rcount,
                                   nullptr, nullptr, rtype),
                    comm, nullptr, "MPI_Neighbor_allgather");
} catch (...) {
    return api_exception("MPI_Neighbor_allgather");
}
ULMPI_ALIAS(MPI_Neighbor_allgather)

int PMPI_Ineighbor_allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                             int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ineighbor_allgather")) {
        return e;
    }
    return neighbor(allgather_call(Coll::neighbor_allgather, sbuf, scount, stype, rbuf, rcount,
                                   nullptr, nullptr, rtype),
                    comm, req, "MPI_Ineighbor_allgather");
} catch (...) {
    return api_exception("MPI_Ineighbor_allgather");
}
ULMPI_ALIAS(MPI_Ineighbor_allgather)

int PMPI_Neighbor_allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                             const int rcounts[], const int displs[], MPI_Datatype rtype,
                             MPI_Comm comm) try {
    EntryGuard guard;
    return neighbor(allgather_call(Coll::neighbor_allgatherv, sbuf, scount, stype, rbuf, 0,
                                   rcounts, displs, rtype),
                    comm, nullptr, "MPI_Neighbor_allgatherv");
} catch (...) {
    return api_exception("MPI_Neighbor_allgatherv");
}
ULMPI_ALIAS(MPI_Neighbor_allgatherv)

int PMPI_Ineighbor_allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                              const int rcounts[], const int displs[], MPI_Datatype rtype,
                              MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ineighbor_allgatherv")) {
        return e;
    }
    return neighbor(allgather_call(Coll::neighbor_allgatherv, sbuf, scount, stype, rbuf, 0,
                                   rcounts, displs, rtype),
                    comm, req, "MPI_Ineighbor_allgatherv");
} catch (...) {
    return api_exception("MPI_Ineighbor_allgatherv");
}
ULMPI_ALIAS(MPI_Ineighbor_allgatherv)

int PMPI_Neighbor_alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                           int rcount, MPI_Datatype rtype, MPI_Comm comm) try {
    EntryGuard guard;
    return neighbor(alltoall_call(sbuf, scount, stype, rbuf, rcount, rtype), comm, nullptr,
                    "MPI_Neighbor_alltoall");
} catch (...) {
    return api_exception("MPI_Neighbor_alltoall");
}
ULMPI_ALIAS(MPI_Neighbor_alltoall)

int PMPI_Ineighbor_alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                            int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ineighbor_alltoall")) {
        return e;
    }
    return neighbor(alltoall_call(sbuf, scount, stype, rbuf, rcount, rtype), comm, req,
                    "MPI_Ineighbor_alltoall");
} catch (...) {
    return api_exception("MPI_Ineighbor_alltoall");
}
ULMPI_ALIAS(MPI_Ineighbor_alltoall)

int PMPI_Neighbor_alltoallv(const void* sbuf, const int scounts[], const int sdispls[],
                            MPI_Datatype stype, void* rbuf, const int rcounts[],
                            const int rdispls[], MPI_Datatype rtype, MPI_Comm comm) try {
    EntryGuard guard;
    return neighbor(alltoallv_call(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype),
                    comm, nullptr, "MPI_Neighbor_alltoallv");
} catch (...) {
    return api_exception("MPI_Neighbor_alltoallv");
}
ULMPI_ALIAS(MPI_Neighbor_alltoallv)

int PMPI_Ineighbor_alltoallv(const void* sbuf, const int scounts[], const int sdispls[],
                             MPI_Datatype stype, void* rbuf, const int rcounts[],
                             const int rdispls[], MPI_Datatype rtype, MPI_Comm comm,
                             MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ineighbor_alltoallv")) {
        return e;
    }
    return neighbor(alltoallv_call(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype),
                    comm, req, "MPI_Ineighbor_alltoallv");
} catch (...) {
    return api_exception("MPI_Ineighbor_alltoallv");
}
ULMPI_ALIAS(MPI_Ineighbor_alltoallv)

int PMPI_Neighbor_alltoallw(const void* sbuf, const int scounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype stypes[], void* rbuf, const int rcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype rtypes[],
                            MPI_Comm comm) try {
    EntryGuard guard;
    return neighbor(alltoallw_call(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes),
                    comm, nullptr, "MPI_Neighbor_alltoallw");
} catch (...) {
    return api_exception("MPI_Neighbor_alltoallw");
}
ULMPI_ALIAS(MPI_Neighbor_alltoallw)

int PMPI_Ineighbor_alltoallw(const void* sbuf, const int scounts[], const MPI_Aint sdispls[],
                             const MPI_Datatype stypes[], void* rbuf, const int rcounts[],
                             const MPI_Aint rdispls[], const MPI_Datatype rtypes[],
                             MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ineighbor_alltoallw")) {
        return e;
    }
    return neighbor(alltoallw_call(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes),
                    comm, req, "MPI_Ineighbor_alltoallw");
} catch (...) {
    return api_exception("MPI_Ineighbor_alltoallw");
}
ULMPI_ALIAS(MPI_Ineighbor_alltoallw)
