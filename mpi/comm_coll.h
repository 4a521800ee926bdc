// The collective steps of communicator construction (MPI_Comm_dup, split,
// create, Intercomm_create, merge, the topology constructors): small
// allreduce / allgather / bcast / alltoall(v) of 32-bit words among some
// members, and leader-to-leader swaps, all on a parent communicator's
// collective context.
//
// They are written on the collective engine's schedules (mpi/coll/
// schedule.h): a Phase is one schedule on a parent communicator with one
// tag; its builders append flat collective algorithms (coll::build_flat)
// on any set of members, plus point-to-point swaps and local ANDs, and
// run() runs the whole thing to completion. Several builders in one phase
// are safe: messages between two processes match in the order both post
// them, and both post in program order.
//
// Tags. Phase(c) takes c's next collective tag (coll::next_tag), like any
// collective call: every member of c (both groups of an intercommunicator)
// must run the same phases in the same order. The constructors that only
// some members call use a tag space of their own above the collective
// sequence numbers (which stay below 2^30):
//   kCreateGroupTag | tag   MPI_Comm_create_group among the group's members
//   kIntercommTag | tag     MPI_Intercomm_create between the two leaders
// (on the parent's collective context, so user messages never match them).
#pragma once

#include "mpi/comm.h"
#include "mpi/ft_comm.h"

#include <cstdint>

namespace ulmpi::mpi {

namespace coll {
class Schedule;
}

inline constexpr int kCreateGroupTag = 0x40000000;
inline constexpr int kIntercommTag = 0x60000000;
inline constexpr int kUserTagBits = 0x1fffffff;

// Processes taking part in a step: their world ranks, and my index.
struct Members {
    const int* world = nullptr;
    int size = 0;
    int rank = 0;
};
Members local_members(const Comm* c);

// True while a blocking constructor's Phase is alive on this process: its
// members contributed bitmaps that MPI_Comm_idup must not take a pair from
// meanwhile below MULTIPLE (comm_idup.cpp; under MULTIPLE the blocking
// constructors confirm their pair, comm_ctx.h). Progress happens only inside Phase::run, so
// between the contribution and the reservation of a blocking constructor
// some Phase is always alive whenever a progress hook can run.
bool blocking_phase_alive();
// A blocking constructor's step that is not a Phase (ULFM's agreement,
// ft_agree_words) counts as one while it lives.
class BlockingPhaseMark {
public:
    BlockingPhaseMark();
    ~BlockingPhaseMark();
    BlockingPhaseMark(const BlockingPhaseMark&) = delete;
    BlockingPhaseMark& operator=(const BlockingPhaseMark&) = delete;
};

class Phase {
public:
    explicit Phase(Comm* c);   // the next collective tag of c
    Phase(Comm* c, int tag);   // an explicit tag (see above)
    // Among the members of a group of c only (MPI_Comm_create_group): only
    // their failures fail it (ft_comm.h, GroupPhase).
    Phase(Comm* c, int tag, const Members& group);
    // Builds into a schedule the caller owns, began on its communicator and
    // tag, and runs itself (MPI_Comm_idup's rounds); run() is not for it.
    explicit Phase(coll::Schedule& s);
    ~Phase();
    Phase(const Phase&) = delete;
    Phase& operator=(const Phase&) = delete;

    // words[i] &= (the same word of every member), in place.
    void allreduce_band(const Members& m, std::uint32_t* words, int n);
    // all[j * n .. j * n + n) = member j's `mine`.
    void allgather(const Members& m, const std::uint32_t* mine, int n, std::uint32_t* all);
    void bcast(const Members& m, int root, std::uint32_t* buf, int n);
    // n words to and from every member.
    void alltoall(const Members& m, const std::uint32_t* send, int n, std::uint32_t* recv);
    void alltoallv(const Members& m, const std::uint32_t* send, const int* scounts,
                   const int* sdispls, std::uint32_t* recv, const int* rcounts,
                   const int* rdispls);
    // Sends `out` to and receives up to n_in words from one world rank.
    void swap(int world_peer, const std::uint32_t* out, int n_out, std::uint32_t* in, int n_in);
    // inout[i] &= in[i], once everything before it completed.
    void band(const std::uint32_t* in, std::uint32_t* inout, int n);
    // Later steps start once the earlier ones completed.
    void fence();

    // Runs everything; MPI_SUCCESS or an MPI error class.
    int run();

    int error() const { return error_; }

private:
    coll::Schedule* s_;
    bool owned_ = true;
    GroupPhase group_;
    bool among_ = false;
    int error_ = MPI_SUCCESS;
};

} // namespace ulmpi::mpi
