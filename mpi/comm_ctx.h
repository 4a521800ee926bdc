// Context ids. Every communicator owns a pair of ULM contexts: 2k carries
// its point-to-point traffic, 2k + 1 its collective traffic (and the
// messages that build communicators from it), so the two never match each
// other. Pair 0 is MPI_COMM_WORLD (contexts 0/1), pair 1 MPI_COMM_SELF (2/3).
//
// Allocation is an agreement, not a counter. Each process keeps a bitmap of
// the pairs it does not use (bit set = free). A communicator constructor is
// collective over a parent: every member contributes its bitmap (a process
// that will not be in any new communicator contributes all ones), the
// members AND them over the parent's collective context (for an
// intercommunicator: each group locally, then the two leaders), and every
// one takes the lowest pair that is free everywhere. Communicators of
// different colours of one MPI_Comm_split share the pair: their groups are
// disjoint, and ULM matches on (context, source world rank, tag).
//
// Determinism: the result depends only on the members' bitmaps, which
// depend only on the sequence of creations and frees each has seen; the
// same sequence gives the same ids on every rank and in every run (fault
// recovery relies on this to re-create matching communicators). A pair is
// released when its communicator is deallocated (MPI_Comm_free and no
// pending request on it), never earlier: a stale receive can never match a
// message of a later communicator.
#pragma once

#include "ulm/types.h"

#include <array>
#include <cstdint>

namespace ulmpi::mpi {

inline constexpr int kContextPairs = 4096;
inline constexpr int kContextWords = kContextPairs / 32;
inline constexpr int kWorldPair = 0;
inline constexpr int kSelfPair = 1;

using ContextMask = std::array<std::uint32_t, kContextWords>;

// This process's free pairs.
const ContextMask& context_free_mask();
// Every pair free: what a process that joins no new communicator contributes.
ContextMask context_all_free();
// Lowest pair free in `m`, or -1. Pairs 0 and 1 (world, self) are never
// free; bit 0 of a contribution is the claim flag below.
int context_lowest(const ContextMask& m);
void context_reserve(int pair);
void context_release(int pair);
bool context_in_use(int pair);
// Pairs in use by this process (for tests and diagnostics).
int context_used_count();

// Threads (MPI_THREAD_MULTIPLE). Several threads may build communicators
// at once from different parents; two agreements that both read this
// process's bitmap before either reserved would hand out one pair twice.
// So one creation at a time owns the bitmap (from its contribution until
// its communicator has reserved the pair); a member that cannot own it
// contributes an empty bitmap with bit 0 clear. Bit 0 (pair 0, never free)
// is set by every honest contribution (the owner's, a non-member's), so the
// AND tells every member alike whether nothing was free because someone
// deferred (then all run the creation again) or because the ids ran out.
// Among the creations waiting here, the one whose parent has the lowest
// pair (then the lowest tag) owns the bitmap first, on every process alike, so concurrent
// creations converge (a creation stays registered across its attempts).
// Below MULTIPLE a claim always owns: the contribution is the bitmap with
// bit 0 set and nothing ever defers. An owner keeps the bitmap while it
// waits for the other members, so two processes whose threads start
// creations in opposite orders can wait for each other; MPI_Comm_dup (the
// creation threads use most) therefore runs as MPI_Comm_idup + MPI_Wait
// under MULTIPLE, whose propose/reserve/confirm rounds own nothing while
// they wait (comm_idup.cpp). The other constructors still claim.
class ContextClaim {
public:
    // `member`: this process joins the new communicator (else it
    // contributes all ones and owns nothing). `tag` tells apart creations
    // on one parent at once (MPI_Comm_create_group's tag; else 0).
    ContextClaim(int parent_pair, int tag, bool member);
    ~ContextClaim();
    ContextClaim(const ContextClaim&) = delete;
    ContextClaim& operator=(const ContextClaim&) = delete;

    // One attempt: takes the bitmap if this creation may, and says what to
    // contribute. end_attempt() gives the bitmap back (after the reserve).
    ContextMask begin_attempt();
    void end_attempt();
    // After the agreement: nothing was free because some member deferred.
    static bool deferred(const ContextMask& agreed) { return (agreed[0] & 1u) == 0; }

private:
    std::uint64_t key_; // (parent pair, tag): the lowest owns first
    bool member_;
    bool multi_;
    bool owner_ = false;
};
// FT-MPI recoveries (mpi/ftmpi.h) move contexts to a new generation (bits
// 16 and up), so that no message of an earlier one matches: collectives at
// every recovery, point-to-point in the RESET message mode. Zero otherwise.
extern std::uint32_t g_context_gen_p2p;
extern std::uint32_t g_context_gen_coll;
inline std::uint32_t context_generation_p2p() { return g_context_gen_p2p; }
inline std::uint32_t context_generation_coll() { return g_context_gen_coll; }
void set_context_generations(std::uint32_t p2p, std::uint32_t coll);
// Every pair free but MPI_COMM_WORLD's and MPI_COMM_SELF's (an FT-MPI recovery).
void context_reset_predefined();

inline ulm::ContextId context_p2p(int pair)
{
    return ulm::ContextId((g_context_gen_p2p << 16) | (2u * static_cast<std::uint32_t>(pair)));
}
inline ulm::ContextId context_coll(int pair)
{
    return ulm::ContextId((g_context_gen_coll << 16) |
                          (2u * static_cast<std::uint32_t>(pair) + 1u));
}

} // namespace ulmpi::mpi
