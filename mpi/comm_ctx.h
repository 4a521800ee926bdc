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
// free.
int context_lowest(const ContextMask& m);
void context_reserve(int pair);
void context_release(int pair);
bool context_in_use(int pair);
// Pairs in use by this process (for tests and diagnostics).
int context_used_count();

// Threads (MPI_THREAD_MULTIPLE). Several threads may build communicators
// at once, from different parents or one parent with different tags, and
// MPI_Comm_idup runs in the background: two agreements that both read this
// process's bitmap before either reserved would hand out one pair twice.
// Below MULTIPLE that cannot happen for blocking constructors (one runs at a
// time; an idup waits with its choice while one agrees, comm_idup.cpp), and
// a creation takes the lowest pair of the AND: ids stay deterministic.
// Under MULTIPLE every creation proposes, reserves and confirms instead:
//   propose  the AND of the members' bitmaps, as above; the candidate is
//            context_pick(AND, key, attempt): the lowest pair at the first
//            attempt, a hash-chosen one of the lowest common free pairs
//            after, so that creations that collided part ways;
//   reserve  each member reserves the candidate if it is still free here
//            (another creation may have taken it since this one's bitmap
//            was contributed);
//   confirm  the AND of one word, "it was free here", over the same
//            processes: all ones, the pair is the creation's everywhere;
//            otherwise every member releases it and proposes again.
// No creation owns the bitmap while it waits for the others, so nothing
// waits for another creation of its process: only for its own members.
// Returns the candidate of `attempt` in `agreed` (the same on every member
// that computes it from the same AND, key and attempt), or -1.
int context_pick(const ContextMask& agreed, std::uint64_t key, int attempt);
// Identifies a creation alike on every member: its parent's pair and tag.
inline std::uint64_t context_key(int parent_pair, int tag)
{
    return (static_cast<std::uint64_t>(parent_pair) << 32) ^ static_cast<std::uint32_t>(tag);
}
// What a process contributes to the AND: its free pairs, or all ones when
// it joins no new communicator.
ContextMask context_contribution(bool member);
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
