// Schedules: every collective algorithm is written once, as a list of
// point-to-point and local steps grouped in rounds, and then either run to
// completion at once (blocking collectives) or advanced by a ULM progress
// hook (nonblocking collectives, completed by MPI_Wait/Test like any
// request).
//
//   round 0: send(A), recv(B)          posted in order when the round starts
//   fence
//   round 1: reduce(B -> C), send(C)   local steps run when the round starts,
//                                      in order with the posts
//
// A round starts once every step of the previous one completed (sends and
// receives complete; local steps are done at once). So a builder writes
// "receive into X, fence, use X". Between two given ranks, messages of one
// schedule match in the order both sides post them (ULM keeps MPI's
// non-overtaking order), and every collective call gets its own tag from the
// communicator's collective sequence number (coll.h), so concurrent
// nonblocking collectives never match each other's messages. All traffic
// goes on the communicator's coll_ctx.
//
// Memory: steps point at user buffers or at scratch space owned by the
// schedule (its arena), which lives until the schedule is cleared. Ops, and
// the derived datatypes of nonblocking calls, are retained while the
// schedule holds them.
//
// Errors: a failed step (a peer failed, a message longer than its buffer)
// stops the schedule: later rounds are not started, receives still pending
// are cancelled, and error() gives the MPI error class.
#pragma once

#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"
#include "mpi/op.h"
#include "runtime/intrusive_list.h"
#include "ulm/message.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ulmpi::mpi {
struct Request;
struct GroupPhase;
}

namespace ulmpi::mpi::coll {

// Scratch memory: bump allocation in a few blocks, 64-byte aligned, stable
// until reset(). reset() keeps one block big enough for next time (up to a cap).
class Arena {
public:
    Arena() = default;
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    ~Arena();
    void* alloc(std::uint64_t bytes);
    void reset();

private:
    struct Block {
        std::byte* mem;
        std::uint64_t size;
        std::uint64_t used;
    };
    std::vector<Block> blocks_;
};

struct Step {
    enum class Kind : std::uint8_t { send, recv, reduce, copy };
    Kind kind = Kind::send;
    bool live = false;            // send/recv: posted and not yet harvested
    int peer = -1;                // send/recv: world rank
    int tag = -1;                 // send/recv: -1 for the schedule's tag
    std::uint64_t count = 0;      // elements of `type`
    std::uint64_t count2 = 0;     // copy: elements of `type2`
    const void* src = nullptr;    // send: data; reduce: in; copy: source
    void* dst = nullptr;          // recv: buffer; reduce: inout; copy: destination
    const Datatype* type = nullptr;
    const Datatype* type2 = nullptr;
    const Op* op = nullptr;
    ulm::SendMsg* smsg = nullptr;
    ulm::RecvMsg* rmsg = nullptr;
};

class Schedule {
public:
    Schedule() = default;
    Schedule(const Schedule&) = delete;
    Schedule& operator=(const Schedule&) = delete;
    ~Schedule();

    // Prepares an empty schedule for one collective call on `comm`.
    void begin(Comm* comm, int tag);
    Comm* comm() const { return comm_; }
    int tag() const { return tag_; }
    // Only these members take part (MPI_Comm_create_group): a failure
    // interrupts the schedule when it is one of theirs (mpi/ft_comm.h).
    void among(const GroupPhase* g) { among_ = g; }

    // ---- building
    // `tag`: -1 for the call's tag; a call that needs several message
    // streams between the same two ranks (neighbourhood collectives on a
    // periodic Cartesian dimension of size 1 or 2) reserves more tags with
    // next_tag() and names them here.
    void send(int world_peer, const void* buf, std::uint64_t count, const Datatype* t,
              int tag = -1);
    void recv(int world_peer, void* buf, std::uint64_t count, const Datatype* t, int tag = -1);
    // inout = in op inout (count elements of t).
    void reduce(const void* in, void* inout, std::uint64_t count, const Datatype* t, Op* op);
    // Local copy of scount elements of st into dcount elements of dt
    // (scount * size(st) bytes; dcount * size(dt) must hold them).
    void copy(const void* src, std::uint64_t scount, const Datatype* st, void* dst,
              std::uint64_t dcount, const Datatype* dt);
    // Steps added after a fence start once every earlier step completed.
    void fence();
    // Scratch space, valid until the schedule is cleared.
    void* scratch(std::uint64_t bytes);
    // Scratch for `count` elements of `t`, returned as the buffer address to
    // use with t (true lower bound accounted for).
    void* scratch_for(std::uint64_t count, const Datatype* t);
    std::size_t steps() const { return steps_.size(); }
    // Holds a reference on a (derived) datatype until the schedule is
    // cleared: a nonblocking collective's types may be freed by the program
    // before it completes.
    void hold(const Datatype* t);

    // ---- running
    void start();
    // Polls the current round and starts the next ones; true once finished.
    bool advance();
    bool finished() const { return finished_; }
    int error() const { return error_; }
    const char* error_what() const { return what_; }
    int error_peer() const { return error_peer_; }
    // Drops steps, scratch and op references (the schedule can be reused).
    void clear();

    // ---- nonblocking bookkeeping (nbc.cpp)
    rt::ListHook hook;
    Request* request = nullptr;
    bool pooled = false;

private:
    void start_round();
    bool post(Step& s);
    bool harvest(Step& s);
    void fail(int error, int peer, const char* what);
    bool abandon_round();

    Comm* comm_ = nullptr;
    const GroupPhase* among_ = nullptr;
    ulm::ContextId ctx_;
    int tag_ = 0;
    std::vector<Step> steps_;
    std::vector<std::uint32_t> round_end_; // end index of every closed round
    std::vector<Op*> ops_;
    std::vector<Datatype*> types_;
    Arena arena_;
    std::size_t round_ = 0;       // current round
    std::size_t first_ = 0;       // first step of the current round
    std::size_t end_ = 0;         // one past its last step
    std::size_t check_ = 0;       // first step of the round that may still be live
    bool started_ = false;
    bool finished_ = false;
    bool abandoning_ = false; // abandon_round() cancelled the round's steps
    int error_ = MPI_SUCCESS;
    int error_peer_ = -1;
    const char* what_ = "";
};

// Runs a schedule to completion (blocking collectives); returns error().
int run(Schedule& s);

} // namespace ulmpi::mpi::coll
