// Entry points of the rooted collectives: Bcast, Gather(v), Scatter(v),
// Reduce, and their nonblocking forms. Each blocking/nonblocking pair shares
// one implementation (req == nullptr: blocking).
#include "mpi/checks.h"
#include "mpi/coll/api.h"
#include "mpi/coll/util.h"

using namespace ulmpi::mpi;
using namespace ulmpi::mpi::coll;

namespace {

// For intercommunicators: does this rank take part (not MPI_PROC_NULL), and
// is it the root?
struct Role {
    bool root = false;
    bool idle = false;   // intercommunicator, root group, not the root
    bool member = true;  // contributes or receives as a non-root
};

Role role(Comm* c, int root)
{
    Role r;
    if (c->inter()) {
        r.root = root == MPI_ROOT;
        r.idle = root == MPI_PROC_NULL;
        r.member = !r.root && !r.idle;
    } else {
        r.root = c->rank == root;
        r.member = true;
    }
    return r;
}

int bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* req,
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
    if (checking()) {
        if (int e = check_root(c, root, fn)) {
            return e;
        }
    }
    Role me = role(c, root);
    Datatype* t = nullptr;
    if (!me.idle) {
        if (int e = check_coll_type(c, type, fn, &t)) {
            return e;
        }
        if (checking()) {
            if (int e = check_coll_count(c, count, "count", fn)) {
                return e;
            }
            if (buf == MPI_IN_PLACE) {
                return no_in_place(c, "the buffer", fn);
            }
            if (int e = check_coll_buffer(c, buf, count, t, "the buffer", fn)) {
                return e;
            }
        }
    }
    Args a;
    set_teams(c, a);
    a.rbuf = buf;
    a.rcount = t != nullptr ? static_cast<std::uint64_t>(count) : 0;
    a.rtype = t != nullptr ? t : byte_type();
    a.root = root;
    a.bytes = a.rcount * a.rtype->size;
    return launch(c, Coll::bcast, a, req, fn);
}

int gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
           const int* rcounts, const int* displs, MPI_Datatype rtype, int root, MPI_Comm comm,
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
    if (checking()) {
        if (int e = check_root(c, root, fn)) {
            return e;
        }
    }
    Role me = role(c, root);
    const bool in_place = !c->inter() && me.root && sbuf == MPI_IN_PLACE;
    const int n = c->peer_count();
    Datatype* st = nullptr;
    Datatype* rt = nullptr;
    if (me.member && !in_place) {
        if (sbuf == MPI_IN_PLACE) {
            return no_in_place(c, "the send buffer", fn);
        }
        if (int e = check_coll_type(c, stype, fn, &st)) {
            return e;
        }
        if (checking()) {
            if (int e = check_coll_count(c, scount, "sendcount", fn)) {
                return e;
            }
            if (int e = check_coll_buffer(c, sbuf, scount, st, "the send buffer", fn)) {
                return e;
            }
        }
    }
    if (me.root) {
        if (int e = check_coll_type(c, rtype, fn, &rt)) {
            return e;
        }
        if (checking()) {
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
    }
    Args a;
    set_teams(c, a);
    a.sbuf = sbuf;
    a.scount = st != nullptr ? static_cast<std::uint64_t>(scount) : 0;
    a.stype = st != nullptr ? st : byte_type();
    a.rbuf = rbuf;
    a.rtype = rt != nullptr ? rt : byte_type();
    if (v) {
        a.rcounts = rcounts;
        a.rdispls = displs;
    } else {
        a.rcount = rt != nullptr ? static_cast<std::uint64_t>(rcount) : 0;
    }
    a.root = root;
    a.in_place = in_place;
    a.bytes = me.root ? a.rcount * a.rtype->size : a.scount * a.stype->size;
    return launch(c, v ? Coll::gatherv : Coll::gather, a, req, fn);
}

int scatter(const void* sbuf, int scount, const int* scounts, const int* displs,
            MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root,
            MPI_Comm comm, MPI_Request* req, bool v, const char* fn)
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
    if (checking()) {
        if (int e = check_root(c, root, fn)) {
            return e;
        }
    }
    Role me = role(c, root);
    const bool in_place = !c->inter() && me.root && rbuf == MPI_IN_PLACE;
    const int n = c->peer_count();
    Datatype* st = nullptr;
    Datatype* rt = nullptr;
    if (me.root) {
        if (int e = check_coll_type(c, stype, fn, &st)) {
            return e;
        }
        if (checking()) {
            if (sbuf == MPI_IN_PLACE) {
                return no_in_place(c, "the send buffer", fn);
            }
            if (v) {
                if (int e = check_array(c, scounts, n, true, "sendcounts", fn)) {
                    return e;
                }
                if (int e = check_array(c, displs, n, false, "displs", fn)) {
                    return e;
                }
            } else {
                if (int e = check_coll_count(c, scount, "sendcount", fn)) {
                    return e;
                }
                if (int e = check_coll_buffer(c, sbuf, scount, st, "the send buffer", fn)) {
                    return e;
                }
            }
        }
    }
    if (me.member && !in_place) {
        if (rbuf == MPI_IN_PLACE) {
            return no_in_place(c, "the receive buffer", fn);
        }
        if (int e = check_coll_type(c, rtype, fn, &rt)) {
            return e;
        }
        if (checking()) {
            if (int e = check_coll_count(c, rcount, "recvcount", fn)) {
                return e;
            }
            if (int e = check_coll_buffer(c, rbuf, rcount, rt, "the receive buffer", fn)) {
                return e;
            }
            if (me.root && sbuf == rbuf && rcount > 0 && rt->size > 0) {
                return aliased(c, fn);
            }
        }
    }
    Args a;
    set_teams(c, a);
    a.sbuf = sbuf;
    a.stype = st != nullptr ? st : byte_type();
    if (v) {
        a.scounts = scounts;
        a.sdispls = displs;
    } else {
        a.scount = st != nullptr ? static_cast<std::uint64_t>(scount) : 0;
    }
    a.rbuf = rbuf;
    a.rcount = rt != nullptr ? static_cast<std::uint64_t>(rcount) : 0;
    a.rtype = rt != nullptr ? rt : byte_type();
    a.root = root;
    a.in_place = in_place;
    a.bytes = me.root ? a.scount * a.stype->size : a.rcount * a.rtype->size;
    return launch(c, v ? Coll::scatterv : Coll::scatter, a, req, fn);
}

int reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
           MPI_Comm comm, MPI_Request* req, const char* fn)
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
    if (checking()) {
        if (int e = check_root(c, root, fn)) {
            return e;
        }
    }
    Role me = role(c, root);
    const bool in_place = !c->inter() && me.root && sbuf == MPI_IN_PLACE;
    Datatype* t = nullptr;
    Op* o = nullptr;
    if (!me.idle) {
        if (int e = check_coll_type(c, type, fn, &t)) {
            return e;
        }
        if (int e = check_op(c, op, t, fn, &o)) {
            return e;
        }
        if (checking()) {
            if (int e = check_coll_count(c, count, "count", fn)) {
                return e;
            }
            if (sbuf == MPI_IN_PLACE && !in_place) {
                return no_in_place(c, "the send buffer", fn);
            }
            if (me.root && rbuf == MPI_IN_PLACE) {
                return no_in_place(c, "the receive buffer", fn);
            }
            if (me.member && !in_place) {
                if (int e = check_coll_buffer(c, sbuf, count, t, "the send buffer", fn)) {
                    return e;
                }
            }
            if (me.root) {
                if (int e = check_coll_buffer(c, rbuf, count, t, "the receive buffer", fn)) {
                    return e;
                }
                if (!c->inter() && !in_place && sbuf == rbuf && count > 0 && t->size > 0) {
                    return aliased(c, fn);
                }
            }
        }
    }
    Args a;
    set_teams(c, a);
    a.sbuf = sbuf;
    a.rbuf = rbuf;
    a.scount = a.rcount = t != nullptr ? static_cast<std::uint64_t>(count) : 0;
    a.stype = a.rtype = t != nullptr ? t : byte_type();
    a.op = o != nullptr ? o : op_get(MPI_NO_OP);
    a.root = root;
    a.in_place = in_place;
    a.bytes = a.rcount * a.rtype->size;
    return launch(c, Coll::reduce, a, req, fn);
}

} // namespace

int PMPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) try {
    EntryGuard guard;
    return bcast(buf, count, type, root, comm, nullptr, "MPI_Bcast");
} catch (...) {
    return api_exception("MPI_Bcast");
}
ULMPI_ALIAS(MPI_Bcast)

int PMPI_Ibcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ibcast")) {
        return e;
    }
    return bcast(buf, count, type, root, comm, req, "MPI_Ibcast");
} catch (...) {
    return api_exception("MPI_Ibcast");
}
ULMPI_ALIAS(MPI_Ibcast)

int PMPI_Gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm) try {
    EntryGuard guard;
    return gather(sbuf, scount, stype, rbuf, rcount, nullptr, nullptr, rtype, root, comm, nullptr,
                  false, "MPI_Gather");
} catch (...) {
    return api_exception("MPI_Gather");
}
ULMPI_ALIAS(MPI_Gather)

int PMPI_Igather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Igather")) {
        return e;
    }
    return gather(sbuf, scount, stype, rbuf, rcount, nullptr, nullptr, rtype, root, comm, req,
                  false, "MPI_Igather");
} catch (...) {
    return api_exception("MPI_Igather");
}
ULMPI_ALIAS(MPI_Igather)

int PMPI_Gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                 const int* rcounts, const int* displs, MPI_Datatype rtype, int root,
                 MPI_Comm comm) try {
    EntryGuard guard;
    return gather(sbuf, scount, stype, rbuf, 0, rcounts, displs, rtype, root, comm, nullptr, true,
                  "MPI_Gatherv");
} catch (...) {
    return api_exception("MPI_Gatherv");
}
ULMPI_ALIAS(MPI_Gatherv)

int PMPI_Igatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                  const int* rcounts, const int* displs, MPI_Datatype rtype, int root,
                  MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Igatherv")) {
        return e;
    }
    return gather(sbuf, scount, stype, rbuf, 0, rcounts, displs, rtype, root, comm, req, true,
                  "MPI_Igatherv");
} catch (...) {
    return api_exception("MPI_Igatherv");
}
ULMPI_ALIAS(MPI_Igatherv)

int PMPI_Scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm) try {
    EntryGuard guard;
    return scatter(sbuf, scount, nullptr, nullptr, stype, rbuf, rcount, rtype, root, comm,
                   nullptr, false, "MPI_Scatter");
} catch (...) {
    return api_exception("MPI_Scatter");
}
ULMPI_ALIAS(MPI_Scatter)

int PMPI_Iscatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                  MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Iscatter")) {
        return e;
    }
    return scatter(sbuf, scount, nullptr, nullptr, stype, rbuf, rcount, rtype, root, comm, req,
                   false, "MPI_Iscatter");
} catch (...) {
    return api_exception("MPI_Iscatter");
}
ULMPI_ALIAS(MPI_Iscatter)

int PMPI_Scatterv(const void* sbuf, const int* scounts, const int* displs, MPI_Datatype stype,
                  void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm) try {
    EntryGuard guard;
    return scatter(sbuf, 0, scounts, displs, stype, rbuf, rcount, rtype, root, comm, nullptr,
                   true, "MPI_Scatterv");
} catch (...) {
    return api_exception("MPI_Scatterv");
}
ULMPI_ALIAS(MPI_Scatterv)

int PMPI_Iscatterv(const void* sbuf, const int* scounts, const int* displs, MPI_Datatype stype,
                   void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                   MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Iscatterv")) {
        return e;
    }
    return scatter(sbuf, 0, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req, true,
                   "MPI_Iscatterv");
} catch (...) {
    return api_exception("MPI_Iscatterv");
}
ULMPI_ALIAS(MPI_Iscatterv)

int PMPI_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm) try {
    EntryGuard guard;
    return reduce(sbuf, rbuf, count, type, op, root, comm, nullptr, "MPI_Reduce");
} catch (...) {
    return api_exception("MPI_Reduce");
}
ULMPI_ALIAS(MPI_Reduce)

int PMPI_Ireduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                 MPI_Comm comm, MPI_Request* req) try {
    EntryGuard guard;
    if (int e = check_nb_request(comm, req, "MPI_Ireduce")) {
        return e;
    }
    return reduce(sbuf, rbuf, count, type, op, root, comm, req, "MPI_Ireduce");
} catch (...) {
    return api_exception("MPI_Ireduce");
}
ULMPI_ALIAS(MPI_Ireduce)
