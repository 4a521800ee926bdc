#include "mpi/coll/schedule.h"

#include "mpi/coll/util.h"
#include "mpi/ft_comm.h"
#include "mpi/state.h"

#include <cstdlib>
#include <new>

namespace ulmpi::mpi::coll {

// ---------------------------------------------------------------- Arena

namespace {
constexpr std::uint64_t kAlign = 64;
constexpr std::uint64_t kFirstBlock = 64 * 1024;
constexpr std::uint64_t kKeepMax = 64ull << 20; // larger scratch is given back after use

std::uint64_t round_up(std::uint64_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

std::byte* block_alloc(std::uint64_t size)
{
    void* p = std::aligned_alloc(kAlign, round_up(size));
    if (p == nullptr) {
        throw std::bad_alloc();
    }
    return static_cast<std::byte*>(p);
}
} // namespace

Arena::~Arena()
{
    for (Block& b : blocks_) {
        std::free(b.mem);
    }
}

void* Arena::alloc(std::uint64_t bytes)
{
    bytes = round_up(bytes == 0 ? 1 : bytes);
    if (!blocks_.empty()) {
        Block& b = blocks_.back();
        if (b.size - b.used >= bytes) {
            void* p = b.mem + b.used;
            b.used += bytes;
            return p;
        }
    }
    std::uint64_t size = blocks_.empty() ? kFirstBlock : blocks_.back().size * 2;
    if (size < bytes) {
        size = round_up(bytes);
    }
    blocks_.push_back(Block{block_alloc(size), size, bytes});
    return blocks_.back().mem;
}

void Arena::reset()
{
    if (blocks_.empty()) {
        return;
    }
    std::uint64_t total = 0;
    for (Block& b : blocks_) {
        total += b.size;
    }
    if (blocks_.size() == 1 && total <= kKeepMax) {
        blocks_[0].used = 0;
        return;
    }
    for (Block& b : blocks_) {
        std::free(b.mem);
    }
    blocks_.clear();
    if (total <= kKeepMax) {
        blocks_.push_back(Block{block_alloc(total), total, 0});
    }
}

const Datatype* byte_type()
{
    static const Datatype* t = datatype_get(MPI_BYTE);
    return t;
}

// ---------------------------------------------------------------- building

Schedule::~Schedule() { clear(); }

void Schedule::begin(Comm* comm, int tag)
{
    clear();
    comm_ = comm;
    among_ = nullptr;
    ctx_ = comm->coll_ctx;
    tag_ = tag;
}

void Schedule::send(int world_peer, const void* buf, std::uint64_t count, const Datatype* t,
                    int tag)
{
    Step s;
    s.kind = Step::Kind::send;
    s.peer = world_peer;
    s.tag = tag;
    s.src = buf;
    s.count = count;
    s.type = t;
    steps_.push_back(s);
}

void Schedule::recv(int world_peer, void* buf, std::uint64_t count, const Datatype* t, int tag)
{
    Step s;
    s.kind = Step::Kind::recv;
    s.peer = world_peer;
    s.tag = tag;
    s.dst = buf;
    s.count = count;
    s.type = t;
    steps_.push_back(s);
}

void Schedule::reduce(const void* in, void* inout, std::uint64_t count, const Datatype* t, Op* op)
{
    if (count == 0) {
        return;
    }
    if (ops_.empty() || ops_.back() != op) {
        op_retain(op);
        ops_.push_back(op);
    }
    Step s;
    s.kind = Step::Kind::reduce;
    s.src = in;
    s.dst = inout;
    s.count = count;
    s.type = t;
    s.op = op;
    steps_.push_back(s);
}

void Schedule::copy(const void* src, std::uint64_t scount, const Datatype* st, void* dst,
                    std::uint64_t dcount, const Datatype* dt)
{
    if (scount * st->size == 0 || (src == dst && st == dt)) {
        return;
    }
    Step s;
    s.kind = Step::Kind::copy;
    s.src = src;
    s.count = scount;
    s.type = st;
    s.dst = dst;
    s.count2 = dcount;
    s.type2 = dt;
    steps_.push_back(s);
}

void Schedule::fence()
{
    std::uint32_t n = static_cast<std::uint32_t>(steps_.size());
    std::uint32_t last = round_end_.empty() ? 0 : round_end_.back();
    if (n != last) {
        round_end_.push_back(n);
    }
}

void* Schedule::scratch(std::uint64_t bytes) { return arena_.alloc(bytes); }

void Schedule::hold(const Datatype* t)
{
    if (t == nullptr || t->predefined) {
        return;
    }
    auto* d = const_cast<Datatype*>(t);
    datatype_retain(d);
    types_.push_back(d);
}

void* Schedule::scratch_for(std::uint64_t count, const Datatype* t)
{
    if (count == 0) {
        return arena_.alloc(1);
    }
    std::uint64_t span = (count - 1) * static_cast<std::uint64_t>(t->extent()) +
                         static_cast<std::uint64_t>(t->true_ub - t->true_lb);
    auto* p = static_cast<std::byte*>(arena_.alloc(span));
    return p - t->true_lb;
}

void Schedule::clear()
{
    ulm::Engine& eng = state().engine;
    for (std::size_t i = first_; i < end_ && i < steps_.size(); ++i) {
        Step& s = steps_[i];
        if (s.live) {
            if (s.rmsg != nullptr) {
                eng.cancel(s.rmsg);
                eng.release(s.rmsg);
            }
            if (s.smsg != nullptr) {
                eng.release(s.smsg);
            }
            s.live = false;
        }
    }
    steps_.clear();
    round_end_.clear();
    for (Op* op : ops_) {
        op_release(op);
    }
    ops_.clear();
    for (Datatype* t : types_) {
        datatype_release(t);
    }
    types_.clear();
    arena_.reset();
    round_ = first_ = end_ = check_ = 0;
    started_ = finished_ = abandoning_ = false;
    error_ = MPI_SUCCESS;
    error_peer_ = -1;
    what_ = "";
    comm_ = nullptr;
}

// ---------------------------------------------------------------- running

void Schedule::fail(int error, int peer, const char* what)
{
    if (error_ == MPI_SUCCESS) {
        error_ = error;
        error_peer_ = peer;
        what_ = what;
    }
}

bool Schedule::post(Step& s)
{
    ulm::Engine& eng = state().engine;
    switch (s.kind) {
    case Step::Kind::send: {
        rt::Status st = eng.isend(s.type->ref(s.src, s.count), s.peer, s.tag < 0 ? tag_ : s.tag,
                                  ctx_, ulm::SendMode::standard, &s.smsg);
        if (!st.ok()) {
            fail(to_mpi_class(st.code()), s.peer, "cannot send");
            return false;
        }
        s.live = true;
        return true;
    }
    case Step::Kind::recv: {
        rt::Status st = eng.irecv(s.type->ref(s.dst, s.count), s.peer, s.tag < 0 ? tag_ : s.tag,
                                  ctx_, &s.rmsg);
        if (!st.ok()) {
            fail(to_mpi_class(st.code()), s.peer, "cannot post a receive");
            return false;
        }
        s.live = true;
        return true;
    }
    case Step::Kind::reduce:
        op_apply(s.op, s.src, s.dst, s.count, s.type);
        return true;
    case Step::Kind::copy: {
        std::uint64_t bytes = s.count * s.type->size;
        if (s.count2 * s.type2->size < bytes) {
            fail(MPI_ERR_TRUNCATE, -1, "local copy longer than its destination");
            return false;
        }
        copy_packed(s.type->ref(s.src, s.count), s.type2->ref(s.dst, s.count2), bytes);
        return true;
    }
    }
    return true;
}

// A live step that completed: check it, release its descriptor.
bool Schedule::harvest(Step& s)
{
    ulm::Engine& eng = state().engine;
    if (s.kind == Step::Kind::send) {
        if (!s.smsg->complete) {
            return false;
        }
        if (s.smsg->error != rt::Errc::ok) {
            fail(to_mpi_class(s.smsg->error), s.peer, "send failed");
        }
        eng.release(s.smsg);
        s.smsg = nullptr;
    } else {
        if (!s.rmsg->complete) {
            return false;
        }
        if (s.rmsg->error != rt::Errc::ok) {
            fail(to_mpi_class(s.rmsg->error), s.peer,
                 s.rmsg->error == rt::Errc::truncated ? "message longer than the receive buffer"
                                                       : "receive failed");
        }
        eng.release(s.rmsg);
        s.rmsg = nullptr;
    }
    s.live = false;
    return true;
}

// The schedule failed: give up on what the round still has in flight.
// Receives are abandoned (nothing writes their buffers afterwards); sends
// are cancelled and stay live until they complete, since their data may
// still be read (a rendezvous the receiver granted, a single-copy read,
// fragments not yet acknowledged). The buffers are the program's once the
// collective returns: it may free them. True once nothing is in flight.
bool Schedule::abandon_round()
{
    ulm::Engine& eng = state().engine;
    bool idle = true;
    for (std::size_t i = first_; i < end_; ++i) {
        Step& s = steps_[i];
        if (!s.live) {
            continue;
        }
        if (s.rmsg != nullptr) {
            if (!abandoning_) {
                eng.abandon(s.rmsg, rt::Errc::internal);
            }
            if (!s.rmsg->complete) {
                idle = false; // being filled right now
                continue;
            }
            eng.release(s.rmsg);
            s.rmsg = nullptr;
        }
        if (s.smsg != nullptr) {
            if (!abandoning_) {
                (void)eng.cancel(s.smsg);
            }
            if (!s.smsg->complete) {
                idle = false; // the receiver answers the cancel, or its failure ends it
                continue;
            }
            eng.release(s.smsg);
            s.smsg = nullptr;
        }
        s.live = false;
    }
    abandoning_ = true;
    return idle;
}

void Schedule::start_round()
{
    first_ = end_;
    end_ = round_ < round_end_.size() ? round_end_[round_] : steps_.size();
    check_ = first_;
    // A member's failure or a revoke interrupts what is posted on the
    // communicator once; a later round must not post anew and wait for
    // peers that have left the collective (fault tolerance: ft_comm.h).
    if (comm_ != nullptr) {
        if (int cls = among_ != nullptr ? ft_group_interrupted(*among_) : ft_coll_interrupted(comm_)) {
            fail(cls, -1, "interrupted by a process failure or a revoke");
            end_ = first_;
            return;
        }
    }
    for (std::size_t i = first_; i < end_; ++i) {
        if (!post(steps_[i])) {
            end_ = i + 1;
            return;
        }
    }
}

void Schedule::start()
{
    fence();
    started_ = true;
    round_ = 0;
    first_ = end_ = 0;
    if (round_end_.empty()) {
        finished_ = true;
        return;
    }
    start_round();
    advance();
}

bool Schedule::advance()
{
    if (finished_) {
        return true;
    }
    for (;;) {
        // The current round: harvest what completed.
        bool all = true;
        for (std::size_t i = check_; i < end_; ++i) {
            Step& s = steps_[i];
            if (s.live && !harvest(s)) {
                all = false;
            } else if (all) {
                check_ = i + 1;
            }
        }
        if (error_ != MPI_SUCCESS) {
            if (!abandon_round()) {
                return false;
            }
            finished_ = true;
            return true;
        }
        if (!all) {
            return false;
        }
        if (++round_ >= round_end_.size()) {
            finished_ = true;
            return true;
        }
        start_round();
    }
}

int run(Schedule& s)
{
    s.start();
    if (!s.finished()) {
        state().engine.wait([&s] { return s.advance(); });
    }
    return s.error();
}

} // namespace ulmpi::mpi::coll
