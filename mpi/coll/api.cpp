#include "mpi/coll/api.h"

#include "mpi/checks.h"
#include "mpi/coll/nbc.h"
#include "mpi/coll/schedule.h"
#include "mpi/coll/shm_coll.h"
#include "mpi/ft_comm.h"
#include "mpi/ftmpi.h"
#include "mpi/state.h"
#include "runtime/log.h"

namespace ulmpi::mpi::coll {

bool checking() { return state().check_args; }

int check_coll_comm(MPI_Comm h, bool inter_ok, const char* fn, Comm** out)
{
    require_init(fn);
    if (int e = check_comm(h, fn, out)) {
        return e;
    }
    if (!inter_ok && (*out)->inter()) [[unlikely]] {
        return raise(*out, MPI_ERR_COMM, fn, "%s is an intercommunicator; this call needs an "
                     "intracommunicator", (*out)->display_name().c_str());
    }
    if ((*out)->revoked || ft_enabled()) [[unlikely]] {
        return ft_check_coll(*out, fn); // revoked, or a member failed
    }
    return MPI_SUCCESS;
}

int check_coll_type(Comm* c, MPI_Datatype h, const char* fn, Datatype** out)
{
    return check_type(c, h, fn, out);
}

int check_coll_count(Comm* c, int count, const char* what, const char* fn)
{
    if (count < 0) [[unlikely]] {
        return raise(c, MPI_ERR_COUNT, fn, "%s %d is negative", what, count);
    }
    return MPI_SUCCESS;
}

int check_coll_buffer(Comm* c, const void* buf, int count, const Datatype* t, const char* what,
                      const char* fn)
{
    if (buf == nullptr && count > 0 && t->size > 0 && t->predefined) [[unlikely]] {
        return raise(c, MPI_ERR_BUFFER, fn, "%s is NULL with count %d of %s", what, count,
                     t->name.c_str());
    }
    return MPI_SUCCESS;
}

int check_root(Comm* c, int root, const char* fn)
{
    if (c->inter()) {
        if (root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < c->peer_count())) {
            return MPI_SUCCESS;
        }
        return raise(c, MPI_ERR_ROOT, fn,
                     "root %d is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group "
                     "(size %d)",
                     root, c->peer_count());
    }
    if (root < 0 || root >= c->size()) [[unlikely]] {
        return raise(c, MPI_ERR_ROOT, fn, "root %d is not a rank of %s (size %d)", root,
                     c->display_name().c_str(), c->size());
    }
    return MPI_SUCCESS;
}

int check_op(Comm* c, MPI_Op h, const Datatype* t, const char* fn, Op** out)
{
    Op* op = op_get(h);
    if (op == nullptr) [[unlikely]] {
        return raise(c, MPI_ERR_OP, fn,
                     h == MPI_OP_NULL ? "the op is MPI_OP_NULL" : "0x%x is not a valid op",
                     static_cast<unsigned>(h));
    }
    if (t != nullptr && !op_accepts(op, t)) [[unlikely]] {
        return raise(c, MPI_ERR_OP, fn, "%s is not defined for datatype %s%s", op->name,
                     t->name.empty() ? "(derived)" : t->name.c_str(),
                     t->basic == nullptr ? " (it mixes several basic types)" : "");
    }
    *out = op;
    return MPI_SUCCESS;
}

int check_array(Comm* c, const int* a, int n, bool counts, const char* what, const char* fn)
{
    if (n > 0 && a == nullptr) [[unlikely]] {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    if (counts) {
        for (int i = 0; i < n; ++i) {
            if (a[i] < 0) [[unlikely]] {
                return raise(c, MPI_ERR_COUNT, fn, "%s[%d] = %d is negative", what, i, a[i]);
            }
        }
    }
    return MPI_SUCCESS;
}

int check_request_ptr(Comm* c, const MPI_Request* r, const char* fn)
{
    if (r == nullptr) [[unlikely]] {
        return raise(c, MPI_ERR_REQUEST, fn, "the request pointer is NULL");
    }
    return MPI_SUCCESS;
}

int check_nb_request(MPI_Comm comm, const MPI_Request* r, const char* fn)
{
    if (r != nullptr) [[likely]] {
        return MPI_SUCCESS;
    }
    require_init(fn);
    return raise(comm_get(comm), MPI_ERR_REQUEST, fn, "the request pointer is NULL");
}

int no_in_place(Comm* c, const char* what, const char* fn)
{
    return raise(c, MPI_ERR_ARG, fn, "MPI_IN_PLACE is not allowed as %s here", what);
}

int aliased(Comm* c, const char* fn)
{
    return raise(c, MPI_ERR_BUFFER, fn,
                 "the send and receive buffers are the same (use MPI_IN_PLACE)");
}

Schedule& acquire(Comm* c, MPI_Request* req)
{
    Schedule& s = req != nullptr ? *nbc_schedule() : blocking_schedule();
    s.begin(c, next_tag(c));
    return s;
}

void set_teams(Comm* c, Args& a)
{
    a.team = local_team(c);
    a.inter = c->inter();
    if (a.inter) {
        a.remote = remote_team(c);
    }
}

namespace {

int run_shm(Comm* c, Coll coll, const Args& a, const char* fn)
{
    if (tracing() && a.team.rank == 0) [[unlikely]] {
        rt::log(rt::LogLevel::info, "coll: shm %s (team of %d, %llu bytes)", coll_name(coll),
                a.team.size, static_cast<unsigned long long>(a.bytes));
    }
    if (int e = ShmColl::run(c, a)) [[unlikely]] {
        return raise(c, e, fn, "%s (shared memory): interrupted by a process failure or a revoke",
                     coll_name(coll));
    }
    return MPI_SUCCESS;
}

} // namespace

int launch(Comm* c, Coll coll, Args& a, MPI_Request* req, const char* fn)
{
    a.coll = coll;
    if (req == nullptr && ShmColl::takes(c, a)) {
        return run_shm(c, coll, a, fn);
    }
    return launch(acquire(c, req), c, coll, a, req, fn);
}

int launch(Schedule& s, Comm* c, Coll coll, Args& a, MPI_Request* req, const char* fn)
{
    a.coll = coll;
    if (req == nullptr && ShmColl::takes(c, a)) {
        release_blocking_schedule(s);
        return run_shm(c, coll, a, fn);
    }
    const Algo& algo = select(*comm_coll(c).table, coll, a);
    if (int e = algo.build(s, a)) {
        if (req != nullptr) {
            nbc_discard(&s);
        } else {
            release_blocking_schedule(s);
        }
        return raise(c, e, fn, "cannot set up %s (%s)", coll_name(coll), algo.name);
    }
    if (req != nullptr) {
        // The program may free its datatypes before the operation completes.
        s.hold(a.stype);
        s.hold(a.rtype);
        if (a.stypes != nullptr || a.rtypes != nullptr) {
            int n = a.inter ? a.remote.size : a.team.size;
            const int ns = is_neighbor(coll) ? a.nbr_out : n;
            const int nr = is_neighbor(coll) ? a.nbr_in : n;
            for (int j = 0; a.stypes != nullptr && j < ns; ++j) {
                s.hold(a.stypes[j]);
            }
            for (int j = 0; a.rtypes != nullptr && j < nr; ++j) {
                s.hold(a.rtypes[j]);
            }
        }
        if (int e = start_nonblocking(&s, req)) {
            return raise(c, e, fn, "cannot start %s", coll_name(coll));
        }
        return MPI_SUCCESS;
    }
    int err = run(s);
    if (ftmpi_on()) [[unlikely]] {
        // FT-MPI's ATOMIC mode: the outcome is the same at every member.
        if (const int atomic = ftmpi_coll_outcome(c, err); atomic != err) {
            release_blocking_schedule(s);
            return raise(c, atomic, fn, "%s (%s) failed at another member (FT-MPI ATOMIC mode)",
                         coll_name(coll), algo.name);
        }
    }
    if (err != MPI_SUCCESS) [[unlikely]] {
        int peer = s.error_peer();
        const char* what = s.error_what();
        release_blocking_schedule(s);
        if (peer >= 0) {
            return raise(c, err, fn, "%s (%s): %s (peer: world rank %d)", coll_name(coll),
                         algo.name, what, peer);
        }
        return raise(c, err, fn, "%s (%s): %s", coll_name(coll), algo.name, what);
    }
    release_blocking_schedule(s);
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
