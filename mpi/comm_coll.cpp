#include "mpi/comm_coll.h"

#include "mpi/errors.h"
#include "mpi/ft_comm.h"
#include "mpi/ftmpi.h"

#include "mpi/coll/coll.h"
#include "mpi/coll/nbc.h"
#include "mpi/coll/schedule.h"
#include "mpi/datatype/datatype.h"
#include "mpi/op.h"

namespace ulmpi::mpi {
namespace {

const Datatype* word_type()
{
    static const Datatype* t = datatype_get(MPI_UINT32_T);
    return t;
}

Op* band_op()
{
    static Op* op = op_get(MPI_BAND);
    return op;
}

int g_blocking_phases = 0;

coll::Args args_for(const Members& m)
{
    coll::Args a;
    a.team = coll::Team{m.world, m.size, m.rank};
    a.stype = a.rtype = word_type();
    return a;
}

} // namespace

Members local_members(const Comm* c)
{
    if (ftmpi_on()) [[unlikely]] {
        if (const Members* m = ftmpi_live_members(c)) {
            return *m; // FT-MPI BLANK: the holes take no part
        }
    }
    return Members{c->local->world.data(), c->local->size(), c->rank};
}

Phase::Phase(Comm* c) : Phase(c, coll::next_tag(c)) {}

Phase::Phase(Comm* c, int tag) : s_(&coll::blocking_schedule())
{
    s_->begin(c, tag);
    ++g_blocking_phases;
    if (ftmpi_on()) {
        error_ = ftmpi_phase_error(c); // FT-MPI's gate (mpi/ftmpi.h)
    } else if (c->revoked || ft_enabled()) {
        // Fault tolerance: constructing on a revoked communicator, or on
        // one with a failed member, fails at once (mpi/ft_comm.h).
        if (c->revoked) {
            error_ = kErrRevoked;
        } else if (!c->ft_failed.empty()) {
            error_ = kErrProcFailed;
        }
    }
}

Phase::Phase(Comm* c, int tag, const Members& group) : s_(&coll::blocking_schedule())
{
    s_->begin(c, tag);
    ++g_blocking_phases;
    group_ = GroupPhase{c, group.world, group.size, tag};
    if (ftmpi_on()) {
        error_ = ftmpi_phase_error(c); // FT-MPI's gate (mpi/ftmpi.h)
        return;
    }
    if ((error_ = ft_group_interrupted(group_)) == MPI_SUCCESS) {
        among_ = true;
        s_->among(&group_);
        ft_group_phase_begin(&group_);
    }
}

bool blocking_phase_alive() { return g_blocking_phases > 0; }

BlockingPhaseMark::BlockingPhaseMark() { ++g_blocking_phases; }

BlockingPhaseMark::~BlockingPhaseMark() { --g_blocking_phases; }

Phase::Phase(coll::Schedule& s) : s_(&s), owned_(false) {}

Phase::~Phase()
{
    if (among_) {
        ft_group_phase_end(&group_);
    }
    if (owned_) {
        coll::release_blocking_schedule(*s_);
        --g_blocking_phases;
    }
}

void Phase::allreduce_band(const Members& m, std::uint32_t* words, int n)
{
    coll::Args a = args_for(m);
    a.sbuf = MPI_IN_PLACE;
    a.in_place = true;
    a.rbuf = words;
    a.scount = a.rcount = static_cast<std::uint64_t>(n);
    a.op = band_op();
    a.bytes = a.rcount * 4;
    if (int e = coll::build_flat(*s_, coll::Coll::allreduce, a)) {
        error_ = e;
    }
}

void Phase::allgather(const Members& m, const std::uint32_t* mine, int n, std::uint32_t* all)
{
    coll::Args a = args_for(m);
    a.sbuf = mine;
    a.rbuf = all;
    a.scount = a.rcount = static_cast<std::uint64_t>(n);
    a.bytes = a.rcount * 4;
    if (int e = coll::build_flat(*s_, coll::Coll::allgather, a)) {
        error_ = e;
    }
}

void Phase::bcast(const Members& m, int root, std::uint32_t* buf, int n)
{
    coll::Args a = args_for(m);
    a.rbuf = buf;
    a.rcount = static_cast<std::uint64_t>(n);
    a.root = root;
    a.bytes = a.rcount * 4;
    if (int e = coll::build_flat(*s_, coll::Coll::bcast, a)) {
        error_ = e;
    }
}

void Phase::alltoall(const Members& m, const std::uint32_t* send, int n, std::uint32_t* recv)
{
    coll::Args a = args_for(m);
    a.sbuf = send;
    a.rbuf = recv;
    a.scount = a.rcount = static_cast<std::uint64_t>(n);
    a.bytes = a.rcount * 4;
    if (int e = coll::build_flat(*s_, coll::Coll::alltoall, a)) {
        error_ = e;
    }
}

void Phase::alltoallv(const Members& m, const std::uint32_t* send, const int* scounts,
                      const int* sdispls, std::uint32_t* recv, const int* rcounts,
                      const int* rdispls)
{
    coll::Args a = args_for(m);
    a.sbuf = send;
    a.rbuf = recv;
    a.scounts = scounts;
    a.sdispls = sdispls;
    a.rcounts = rcounts;
    a.rdispls = rdispls;
    std::uint64_t total = 0;
    for (int j = 0; j < m.size; ++j) {
        total += static_cast<std::uint64_t>(scounts[j]);
    }
    a.bytes = m.size > 0 ? total * 4 / static_cast<std::uint64_t>(m.size) : 0;
    if (int e = coll::build_flat(*s_, coll::Coll::alltoallv, a)) {
        error_ = e;
    }
}

void Phase::swap(int world_peer, const std::uint32_t* out, int n_out, std::uint32_t* in, int n_in)
{
    s_->recv(world_peer, in, static_cast<std::uint64_t>(n_in), word_type());
    s_->send(world_peer, out, static_cast<std::uint64_t>(n_out), word_type());
}

void Phase::band(const std::uint32_t* in, std::uint32_t* inout, int n)
{
    s_->reduce(in, inout, static_cast<std::uint64_t>(n), word_type(), band_op());
}

void Phase::fence() { s_->fence(); }

int Phase::run()
{
    if (error_ != MPI_SUCCESS) {
        return error_;
    }
    return coll::run(*s_);
}

} // namespace ulmpi::mpi
