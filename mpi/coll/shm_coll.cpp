#include "mpi/coll/shm_coll.h"

#include "mpi/coll/algos.h"
#include "mpi/coll/api.h"
#include "mpi/coll/nbc.h"
#include "mpi/coll/util.h"
#include "mpi/ft_comm.h"
#include "mpi/ftmpi.h"
#include "mpi/state.h"
#include "runtime/config.h"
#include "ulm/thread_lock.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace ulmpi::mpi::coll {

namespace {

constexpr int kMaxMembers = 64;
constexpr std::uint64_t kLine = 64;
// Bcast has a ring of its own, deeper: its root does not wait for the
// readers, and on an oversubscribed host it should get many calls done in
// one time slice, as a point-to-point bcast does with its eager messages.
constexpr std::uint64_t kRing = 32;
// Small bcasts (up to kSmall - 8 bytes) have a ring of kSmallRing slots of
// kSmall bytes, each its call number followed by the data (up to 56 bytes
// of data arrive with the call number in one cache line): at 8
// ranks on 2 cores, 32 calls ahead gave 11 us per 8-byte bcast, 256 gave 2.
constexpr std::uint64_t kSmall = 256;
constexpr std::uint64_t kSmallRing = 256;

// Bytes of the small part of a communicator's segment: p members' flags
// and slot sets, bcast's rings.
std::uint64_t small_size(std::uint64_t p, std::uint64_t slot)
{
    return (2 + ShmColl::kSets) * kLine * p + ShmColl::kSets * slot * p + kRing * slot +
           kSmallRing * kSmall;
}

// The whole segment: the small part, then the big slot sets (kBigSets of p
// chunks) and bcast's big ring (kBigRing chunks).
std::uint64_t segment_size(std::uint64_t p, std::uint64_t slot, std::uint64_t chunk)
{
    return small_size(p, slot) + (ShmColl::kBigSets * p + ShmColl::kBigRing) * chunk;
}

// The big slot sets of a communicator take at most this many bytes (the
// chunk shrinks for many members).
constexpr std::uint64_t kBigSetsMax = 8u << 20;

// MPI_COMM_WORLD's segment is the shm path's shared area once (reserve_world).
bool world_area_taken = false;

const rt::SizeParam shm_max{
    "coll_shm_max", 4096,
    "collectives among ranks of one host: per-rank data up to this size (alltoall: all blocks "
    "of a rank) goes through a shared-memory segment of the communicator; 0: never"};

const rt::SizeParam shm_large_max{
    "coll_shm_large_max", 64u << 20,
    "collectives among ranks of one host: per-rank data above coll_shm_max and up to this size "
    "goes through the communicator's shared-memory segment in chunks; 0: never"};

const rt::SizeParam shm_chunk{
    "coll_shm_chunk", 64u << 10,
    "bytes per rank and step of the shared-memory collectives above coll_shm_max (at most 8 "
    "MiB / (4 ranks), whole 64-byte lines, at least 4096)"};

const rt::BoolParam shm_yield{
    "coll_shm_yield", true,
    "a rank waiting in a shared-memory collective on an oversubscribed host (more ranks than "
    "CPUs) yields its CPU at every poll from the first one, instead of spinning first"};

// More ranks of the job on this host than CPUs for them (the launcher's
// count, else the online CPUs): then the member a waiting rank waits for
// may need this very CPU to get on.
bool oversubscribed()
{
    static const bool over = [] {
        const rt::JobInfo& job = state().engine.job();
        const long cpus = job.local_cpus > 0 ? job.local_cpus : ::sysconf(_SC_NPROCESSORS_ONLN);
        return cpus > 0 && job.local_size > cpus;
    }();
    return over;
}

const rt::SizeParam shm_chunk_over{
    "coll_shm_chunk_oversubscribed", 512u << 10,
    "coll_shm_chunk for a communicator with more members than the host has online CPUs "
    "(fewer steps, each of which needs every member to be scheduled); 0: coll_shm_chunk"};

const rt::BoolParam barrier_root{
    "coll_shm_barrier_root", true,
    "a shared-memory barrier of more members than the host has online CPUs is released by "
    "member 0 (it leaves first) instead of by every member seeing every flag"};

// A reduction may work on the packed bytes: a predefined type whose extent
// is its size (no padding, as in MPI_DOUBLE_INT).
bool plain(const Datatype* t)
{
    return t->predefined && t->lb == 0 && t->true_lb == 0 &&
           static_cast<std::uint64_t>(t->extent()) == t->size;
}

// Setup steps over point-to-point on c (a schedule of their own).
int setup_bcast(Comm* c, void* buf, std::uint64_t bytes)
{
    Schedule& s = acquire(c, nullptr);
    Args a;
    set_teams(c, a);
    a.coll = Coll::bcast;
    a.rbuf = buf;
    a.rcount = bytes;
    a.rtype = byte_type();
    a.root = 0;
    a.bytes = bytes;
    int e = bcast_binomial(s, a);
    if (e == MPI_SUCCESS) {
        e = run(s);
    }
    release_blocking_schedule(s);
    return e;
}

int setup_min(Comm* c, int* value)
{
    Schedule& s = acquire(c, nullptr);
    Args a;
    set_teams(c, a);
    a.coll = Coll::allreduce;
    a.in_place = true;
    a.rbuf = value;
    a.scount = a.rcount = 1;
    a.stype = a.rtype = datatype_get(MPI_INT);
    a.op = op_get(MPI_MIN);
    a.bytes = sizeof(int);
    int e = allreduce_recursive_doubling(s, a);
    if (e == MPI_SUCCESS) {
        e = run(s);
    }
    release_blocking_schedule(s);
    return e;
}

void pack(const void* buf, std::uint64_t count, const Datatype* t, std::byte* to,
          std::uint64_t bytes)
{
    copy_packed(t->ref(buf, count), byte_type()->ref(to, bytes), bytes);
}

void unpack(const std::byte* from, std::uint64_t bytes, void* buf, std::uint64_t count,
            const Datatype* t)
{
    copy_packed(byte_type()->ref(from, bytes), t->ref(buf, count), bytes);
}

} // namespace

ShmColl::~ShmColl() = default;

std::uint64_t ShmColl::slot_bytes()
{
    return (shm_max.get() + kLine - 1) / kLine * kLine;
}

bool ShmColl::crowded(std::uint64_t p)
{
    static const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && p > static_cast<std::uint64_t>(cpus);
}

std::uint64_t ShmColl::chunk_bytes(std::uint64_t p)
{
    if (shm_large_max.get() == 0 || shm_max.get() == 0 || p == 0) {
        return 0;
    }
    // More members than the host has CPUs: every step needs every member
    // to be scheduled, so fewer, larger steps (the segment's size, and so
    // this answer, depends only on p and the host: the same at every
    // member and at every process that maps MPI_COMM_WORLD's area).
    const std::uint64_t want = crowded(p) && shm_chunk_over.get() != 0
                                   ? shm_chunk_over.get()
                                   : shm_chunk.get();
    const std::uint64_t c = std::min(want, kBigSetsMax / (kBigSets * p)) / kLine * kLine;
    return std::max<std::uint64_t>(c, 4096);
}

bool ShmColl::large(const Args& a)
{
    const std::uint64_t per = a.coll == Coll::alltoall
                                  ? a.bytes * static_cast<std::uint64_t>(a.team.size)
                                  : a.bytes;
    return per > shm_max.get();
}

void ShmColl::reserve_world(const rt::JobInfo& job,
                            std::vector<std::unique_ptr<path::Path>>& paths)
{
    // Every process that maps the host's segment must ask for the same
    // size (a spawned, respawned or re-created one too, which never uses
    // it), so the answer depends only on the job map: the first
    // MPI_COMM_WORLD (the ranks before the spawn slots) all on this host.
    const int n = job.first_slot >= 0 ? job.first_slot : job.size;
    if (n < 2 || n > kMaxMembers || shm_max.get() == 0 ||
        job.node_of_rank.size() < static_cast<std::size_t>(n)) {
        return;
    }
    for (int r = 0; r < n; ++r) {
        if (job.node_of_rank[static_cast<std::size_t>(r)] != job.node_id) {
            return;
        }
    }
    const auto un = static_cast<std::uint64_t>(n);
    const std::uint64_t bytes = segment_size(un, slot_bytes(), chunk_bytes(un));
    for (auto& p : paths) {
        p->reserve_shared_area(bytes);
    }
}

void ShmColl::map_world()
{
    const rt::JobInfo& job = state().engine.job();
    if (job.spawned) {
        return;
    }
    const auto p = static_cast<std::uint64_t>(job.first_slot >= 0 ? job.first_slot : job.size);
    for (const auto& path : state().engine.paths()) {
        std::size_t n = 0;
        if (std::byte* a = path->shared_area(&n); a != nullptr) {
            // The flags and the slot sets, whose pages every call touches
            // (not bcast's rings); an older kernel answers EINVAL: then
            // the first calls take the page faults.
            const std::uint64_t hot = (2 + kSets) * kLine * p + kSets * slot_bytes() * p;
            ::madvise(a, std::min<std::uint64_t>((hot + 4095) / 4096 * 4096, n),
                      MADV_POPULATE_WRITE);
            return;
        }
    }
}

void ShmColl::world_barrier()
{
    Comm* c = comm_get(MPI_COMM_WORLD);
    if (world_area_taken || state().engine.job().spawned || !has_world_area()) {
        return; // no setup over point-to-point here
    }
    Args a;
    set_teams(c, a);
    a.coll = Coll::barrier;
    a.stype = a.rtype = byte_type();
    if (takes(c, a)) {
        // A failed member: the program's first collective reports it.
        (void)run(c, a);
    }
}

bool ShmColl::has_world_area()
{
    for (const auto& p : state().engine.paths()) {
        if (p->shared_area(nullptr) != nullptr) {
            return true;
        }
    }
    return false;
}

// MPI_COMM_WORLD's segment when the wire-up reserved it (reserve_world):
// every member has it, zeroed, so nothing needs to be agreed.
std::byte* ShmColl::world_area(Comm* c, std::uint64_t size)
{
    if (world_area_taken || c != comm_get(MPI_COMM_WORLD) || state().engine.job().spawned) {
        return nullptr; // (a spawned process's MPI_COMM_WORLD is not the first one)
    }
    for (const auto& p : state().engine.paths()) {
        std::size_t n = 0;
        if (std::byte* a = p->shared_area(&n); a != nullptr && n >= size) {
            world_area_taken = true;
            return a;
        }
    }
    return nullptr;
}

std::unique_ptr<ShmColl> ShmColl::create(Comm* c, std::uint64_t slot)
{
    State& st = state();
    if (st.replicator != nullptr || ftmpi_on()) {
        return nullptr; // their protocols live below the MPI layer's messages
    }
    const rt::JobInfo& job = st.engine.job();
    const Team t = local_team(c);
    auto node = [&](int w) {
        return static_cast<std::size_t>(w) < job.node_of_rank.size()
                   ? job.node_of_rank[static_cast<std::size_t>(w)]
                   : -1;
    };
    const int here = node(t.w(t.rank));
    for (int j = 0; j < t.size; ++j) {
        if (here < 0 || node(t.w(j)) != here) {
            return nullptr; // the same answer at every member: the job map is shared
        }
    }
    std::unique_ptr<ShmColl> sc(new ShmColl);
    sc->p_ = t.size;
    sc->me_ = t.rank;
    sc->slot_ = slot;
    sc->chunk_ = chunk_bytes(static_cast<std::uint64_t>(t.size));
    for (const auto& path : st.engine.paths()) {
        if (path->info().has_get && std::strcmp(path->info().name, "shm") == 0) {
            sc->direct_ = path.get();
        }
    }
    const std::uint64_t size = segment_size(static_cast<std::uint64_t>(t.size), slot, sc->chunk_);
    if (std::byte* a = world_area(c, size)) {
        sc->base_ = a;
        return sc;
    }
    char name[128] = {};
    int ok = 1;
    if (t.rank == 0) {
        static std::uint64_t made = 0;
        std::string n = "/ulmpi-" + job.jobid + "-coll-" + std::to_string(t.w(0)) + "-" +
                        std::to_string(++made);
        if (n.size() < sizeof name && sc->seg_.create(n, size).ok()) {
            std::memcpy(name, n.data(), n.size());
        } else {
            ok = 0;
        }
    }
    int e = setup_bcast(c, name, sizeof name);
    if (t.rank != 0 && (e != MPI_SUCCESS || name[0] == '\0' ||
                        !sc->seg_.attach(std::string(name), size).ok())) {
        ok = 0;
    }
    // Every member answers, also after a failed step, so that no member
    // waits for one that gave up.
    e = setup_min(c, &ok) != MPI_SUCCESS ? 1 : e;
    if (t.rank == 0 && name[0] != '\0') {
        sc->seg_.unlink();
    }
    if (e != MPI_SUCCESS || ok == 0) {
        return nullptr;
    }
    sc->base_ = static_cast<std::byte*>(sc->seg_.base());
    return sc;
}

bool ShmColl::takes(Comm* c, const Args& a)
{
    const int p = a.team.size;
    if (a.inter || shm_max.get() == 0 || p < 2 || p > kMaxMembers) {
        return false;
    }
    // Per-member data above coll_shm_max goes in chunks, up to
    // coll_shm_large_max (alltoall: all blocks of a member).
    const bool big = a.coll != Coll::barrier && large(a);
    if (big && (chunk_bytes(static_cast<std::uint64_t>(p)) == 0 ||
                (a.coll == Coll::alltoall ? a.bytes * static_cast<std::uint64_t>(p) : a.bytes) >
                    shm_large_max.get())) {
        return false;
    }
    switch (a.coll) {
    case Coll::barrier:
        break;
    case Coll::bcast:
    case Coll::allgather:
    case Coll::alltoall:
        if (a.bytes == 0) {
            return false;
        }
        break;
    case Coll::allreduce:
    case Coll::reduce_scatter:
    case Coll::reduce_scatter_block:
        if (a.bytes == 0 || !plain(a.rtype)) {
            return false;
        }
        break;
    default:
        return false;
    }
    CommColl& cc = comm_coll(c);
    if (cc.table->entry[static_cast<int>(a.coll)].forced >= 0) {
        return false; // ULMPI_COLL_<NAME> chose a point-to-point algorithm
    }
    if (cc.shm_state == 0) {
        cc.shm = create(c, slot_bytes());
        cc.shm_state = cc.shm != nullptr ? 1 : -1;
    }
    return cc.shm_state > 0;
}

std::uint64_t* ShmColl::ready(int j) const
{
    return reinterpret_cast<std::uint64_t*>(base_ + 2 * kLine * static_cast<std::uint64_t>(j));
}

std::uint64_t* ShmColl::done(int j) const
{
    return reinterpret_cast<std::uint64_t*>(base_ + 2 * kLine * static_cast<std::uint64_t>(j) +
                                            kLine);
}

std::byte* ShmColl::line(int j) const
{
    const auto p = static_cast<std::uint64_t>(p_);
    return base_ + 2 * kLine * p + ((seq_ % kSets) * p + static_cast<std::uint64_t>(j)) * kLine;
}

std::byte* ShmColl::slot(int j) const
{
    const auto p = static_cast<std::uint64_t>(p_);
    return base_ + (2 + kSets) * kLine * p +
           ((seq_ % kSets) * p + static_cast<std::uint64_t>(j)) * slot_;
}

std::byte* ShmColl::data(int j) const { return in_line_ ? line(j) + 8 : slot(j); }

std::uint64_t* ShmColl::flag(int j) const
{
    return in_line_ ? reinterpret_cast<std::uint64_t*>(line(j)) : ready(j);
}

void ShmColl::publish() { flag_store(flag(me_), seq_); }

std::byte* ShmColl::ring_slot(std::uint64_t bytes) const
{
    const auto p = static_cast<std::uint64_t>(p_);
    std::byte* ring = base_ + (2 + kSets) * kLine * p + kSets * p * slot_;
    if (bytes <= kSmall - 8) {
        return ring + kRing * slot_ + (seq_ % kSmallRing) * kSmall;
    }
    return ring + (seq_ % kRing) * slot_;
}

std::byte* ShmColl::big_slot(int j, std::uint64_t seq) const
{
    const auto p = static_cast<std::uint64_t>(p_);
    return base_ + small_size(p, slot_) +
           ((seq % kBigSets) * p + static_cast<std::uint64_t>(j)) * chunk_;
}

std::byte* ShmColl::big_ring_slot(std::uint64_t seq) const
{
    const auto p = static_cast<std::uint64_t>(p_);
    return base_ + small_size(p, slot_) + (kBigSets * p + seq % kBigRing) * chunk_;
}

template <class Pred> int ShmColl::wait(Comm* c, Pred&& pred)
{
    if (pred()) {
        return MPI_SUCCESS;
    }
    ulm::Engine& eng = state().engine;
    const int* world = c->local->world.data();
    int err = MPI_SUCCESS;
    std::uint32_t polls = 0;
    // Oversubscribed, the engine's first idle polls spin (pause) before it
    // yields; here every one yields at once, as Open MPI's progress loop
    // does when oversubscribed: the member whose flag we wait for may be
    // waiting for this CPU (4 ranks on 2 cores, OSU bcast 1-64 B under
    // chrt: 2.1 -> 0.9 us, docs/benchmarks.md). The engine still sleeps
    // after its yield polls, so a long wait does not keep stealing the
    // CPU from a computing neighbour.
    const bool yield = shm_yield.get() && oversubscribed();
    eng.wait([&] {
        if (pred()) {
            return true;
        }
        if (yield) {
            ulm::ThreadLock::Released unlocked(ulm::thread_lock());
            sched_yield();
        }
        if ((++polls & 15) == 0) {
            err = ft_coll_interrupted(c);
            for (int j = 0; err == MPI_SUCCESS && j < p_; ++j) {
                if (j != me_ && eng.peer_failed(world[j])) {
                    err = MPIX_ERR_PROC_FAILED;
                }
            }
        }
        return err != MPI_SUCCESS;
    });
    return err;
}

int ShmColl::wait_all_ready(Comm* c)
{
    int next = 0; // members before it are known ready
    const int e = wait(c, [&] {
        while (next < p_ && flag_load(flag(next)) >= seq_) {
            ++next;
        }
        return next == p_;
    });
    if (e == MPI_SUCCESS) {
        // A member that published call seq_ is done with every call before
        // it: the next calls need not read the done counters (lines the
        // others write at every call) to know that their sets are free.
        free_upto_ = std::max(free_upto_, seq_ - 1);
    }
    return e;
}

int ShmColl::wait_ready(Comm* c, int j)
{
    return wait(c, [&] { return flag_load(ready(j)) >= seq_; });
}

int ShmColl::wait_free(Comm* c, std::uint64_t depth)
{
    if (seq_ <= depth + free_upto_) {
        return MPI_SUCCESS; // known from an earlier look: no reads of the flags' lines
    }
    int next = 0;
    std::uint64_t least = ~std::uint64_t{0};
    const int e = wait(c, [&] {
        while (next < p_) {
            const std::uint64_t d = flag_load(done(next));
            if (d + depth < seq_) {
                return false;
            }
            least = d < least ? d : least;
            ++next;
        }
        return true;
    });
    if (e == MPI_SUCCESS) {
        free_upto_ = least;
    }
    return e;
}

void ShmColl::finish() { flag_store(done(me_), seq_); }

int ShmColl::run(Comm* c, const Args& a)
{
    ShmColl& s = *comm_coll(c).shm;
    ++s.seq_;
    // Up to kLine - 8 bytes of a member's data travel with the call number
    // in one cache line (the same size at every member, so every member
    // takes the same road).
    const std::uint64_t per = a.coll == Coll::alltoall
                                  ? a.bytes * static_cast<std::uint64_t>(a.team.size)
                                  : a.bytes;
    s.in_line_ = a.coll != Coll::barrier && a.coll != Coll::bcast && per <= kLine - 8;
    switch (a.coll) {
    case Coll::barrier:
        return s.barrier(c);
    case Coll::bcast:
        return large(a) ? s.bcast_large(c, a) : s.bcast(c, a);
    case Coll::allreduce:
        return large(a) ? s.allreduce_large(c, a) : s.allreduce(c, a);
    case Coll::allgather:
        if (!large(a)) {
            return s.allgather(c, a);
        }
        return s.direct_size(a) ? s.allgather_direct(c, a) : s.allgather_large(c, a);
    case Coll::alltoall:
        if (!large(a)) {
            return s.alltoall(c, a);
        }
        return s.direct_size(a) && !a.in_place ? s.alltoall_direct(c, a) : s.alltoall_large(c, a);
    case Coll::reduce_scatter:
    case Coll::reduce_scatter_block:
        return large(a) ? s.reduce_scatter_large(c, a) : s.reduce_scatter(c, a);
    default:
        return MPI_ERR_INTERN;
    }
}

int ShmColl::barrier(Comm* c)
{
    flag_store(ready(me_), seq_);
    if (me_ != 0 && barrier_root.get() && crowded(static_cast<std::uint64_t>(p_))) {
        // More members than CPUs: member 0 alone waits for every flag and
        // the others for its done (it saw every flag of this call, so all
        // are done with the calls before it). Member 0 leaves first: a bcast
        // from it that follows (OSU's and IMB's loops) finds its data there
        // when the others arrive, where with everybody watching the flags
        // the last one in leaves first and waits for member 0 to be
        // scheduled (4 ranks on 2 cores, OSU bcast: docs/benchmarks.md).
        if (int e = wait(c, [&] { return flag_load(done(0)) >= seq_; })) {
            return e;
        }
        free_upto_ = std::max(free_upto_, seq_ - 1);
    } else if (int e = wait_all_ready(c)) {
        return e;
    }
    finish();
    return MPI_SUCCESS;
}

int ShmColl::bcast(Comm* c, const Args& a)
{
    const int root = a.root;
    const bool small = a.bytes <= kSmall - 8;
    std::byte* at = ring_slot(a.bytes);
    // Small: the slot's first word says which call its data is of.
    auto* flag = small ? reinterpret_cast<std::uint64_t*>(at) : ready(root);
    std::byte* data = small ? at + 8 : at;
    if (me_ == root) {
        if (int e = wait_free(c, small ? kSmallRing : kRing)) {
            return e;
        }
        pack(a.rbuf, a.rcount, a.rtype, data, a.bytes);
        flag_store(flag, seq_);
        finish();
        return MPI_SUCCESS;
    }
    if (int e = wait(c, [&] { return flag_load(flag) >= seq_; })) {
        return e;
    }
    unpack(data, a.bytes, a.rbuf, a.rcount, a.rtype);
    finish();
    return MPI_SUCCESS;
}

// My whole input vector into my slot, then wait for every member's: the
// start of allreduce and reduce_scatter.
int ShmColl::publish_vector(Comm* c, const Args& a)
{
    if (int e = wait_free(c, kSets)) {
        return e;
    }
    std::memcpy(data(me_), a.in_place ? a.rbuf : a.sbuf, a.bytes);
    publish();
    return wait_all_ready(c);
}

int ShmColl::allreduce(Comm* c, const Args& a)
{
    if (int e = publish_vector(c, a)) {
        return e;
    }
    reduce_slots(a, 0);
    finish();
    return MPI_SUCCESS;
}

// rbuf = x0 op (x1 op (... op x(p-1))) over a.rcount elements at byte
// `off` of every member's slot: the same order, and bits, at every member.
void ShmColl::reduce_slots(const Args& a, std::uint64_t off)
{
    std::memcpy(a.rbuf, data(p_ - 1) + off, a.rcount * a.rtype->size);
    for (int j = p_ - 2; j >= 0; --j) {
        op_apply(a.op, data(j) + off, a.rbuf, a.rcount, a.rtype);
    }
}

int ShmColl::reduce_scatter(Comm* c, const Args& a)
{
    if (a.rcount == 0) {
        // An empty block (a vector shorter than the team): nothing of the
        // others' to read, so publish and leave, as a point-to-point
        // reduce + scatterv lets such a rank go once it has sent (OSU's 8
        // B at 8 ranks: 2 floats, 7 empty blocks). wait_free keeps the
        // slot sets safe for the next calls.
        if (int e = wait_free(c, kSets)) {
            return e;
        }
        std::memcpy(data(me_), a.in_place ? a.rbuf : a.sbuf, a.bytes);
        publish();
        finish();
        return MPI_SUCCESS;
    }
    if (int e = publish_vector(c, a)) { // the whole vector
        return e;
    }
    std::uint64_t first = 0; // my block's first element
    if (a.coll == Coll::reduce_scatter_block) {
        first = static_cast<std::uint64_t>(me_) * a.rcount;
    } else {
        for (int j = 0; j < me_; ++j) {
            first += static_cast<std::uint64_t>(a.rcounts[j]);
        }
    }
    if (a.rcount > 0) {
        reduce_slots(a, first * a.rtype->size);
    }
    finish();
    return MPI_SUCCESS;
}

int ShmColl::allgather(Comm* c, const Args& a)
{
    const std::uint64_t bytes = a.bytes;
    if (int e = wait_free(c, kSets)) {
        return e;
    }
    if (a.in_place) {
        pack(elem(a.rbuf, static_cast<std::uint64_t>(me_) * a.rcount, a.rtype), a.rcount, a.rtype,
             data(me_), bytes);
    } else {
        pack(a.sbuf, a.scount, a.stype, data(me_), bytes);
    }
    publish();
    if (int e = wait_all_ready(c)) {
        return e;
    }
    for (int j = 0; j < p_; ++j) {
        if (j != me_ || !a.in_place) {
            unpack(data(j), bytes, elem(a.rbuf, static_cast<std::uint64_t>(j) * a.rcount, a.rtype),
                   a.rcount, a.rtype);
        }
    }
    finish();
    return MPI_SUCCESS;
}

int ShmColl::alltoall(Comm* c, const Args& a)
{
    const std::uint64_t bytes = a.bytes; // per pair
    if (int e = wait_free(c, kSets)) {
        return e;
    }
    std::byte* mine = data(me_);
    for (int j = 0; j < p_; ++j) {
        const auto uj = static_cast<std::uint64_t>(j);
        if (a.in_place) {
            pack(elem(a.rbuf, uj * a.rcount, a.rtype), a.rcount, a.rtype, mine + uj * bytes, bytes);
        } else {
            pack(elem(a.sbuf, uj * a.scount, a.stype), a.scount, a.stype, mine + uj * bytes, bytes);
        }
    }
    publish();
    if (int e = wait_all_ready(c)) {
        return e;
    }
    const auto um = static_cast<std::uint64_t>(me_);
    for (int j = 0; j < p_; ++j) {
        unpack(data(j) + um * bytes, bytes,
               elem(a.rbuf, static_cast<std::uint64_t>(j) * a.rcount, a.rtype), a.rcount, a.rtype);
    }
    finish();
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi::coll
