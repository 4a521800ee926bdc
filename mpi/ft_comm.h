// Fault tolerance in the MPI layer (User-Level Failure Mitigation, ULFM):
// what a process failure and a revoke do to communicators and operations.
//
// With `mpirun --with-ft ulfm` (ft::Mode::ulfm) the job lives on when
// processes fail. Then:
//   * every communicator is registered here; a failure of one of its members
//     is recorded in it (Comm::ft_failed, in the order it became known) and
//     interrupts its collectives: every collective pending on it completes
//     with MPIX_ERR_PROC_FAILED at every survivor (each hears of the failure),
//     and later collectives on it raise MPIX_ERR_PROC_FAILED at once —
//     except agree and shrink — until the program shrinks it;
//   * point-to-point with the failed process fails (ULM's link fails every
//     operation with it); between live processes it goes on;
//   * a receive from MPI_ANY_SOURCE cannot complete safely while a failure
//     on its communicator is unacknowledged: a blocking one (and a blocking
//     probe) raises MPIX_ERR_PROC_FAILED; a nonblocking one stays pending and
//     its completion calls raise MPIX_ERR_PROC_FAILED_PENDING, until the
//     program acknowledges (MPIX_Comm_ack_failed / MPIX_Comm_failure_ack);
//   * a revoked communicator (MPIX_Comm_revoke, spread by ft::Revoker)
//     interrupts everything pending on it with MPIX_ERR_REVOKED, and every
//     later non-local operation on it raises MPIX_ERR_REVOKED, except agree,
//     shrink and the local calls (free, get_failed, ack_failed, ...).
// Without fault tolerance nothing here runs: a failure ends the job.
#pragma once

#include "ft/agree.h"
#include "ft/channel.h"
#include "ft/revoke.h"
#include "mpi/comm.h"
#include "mpi/request.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace ulmpi::mpi {

// Process-wide fault-tolerance machinery (MPI_Init creates it in ULFM mode).
struct FtState {
    std::unique_ptr<ft::Channel> channel;
    std::unique_ptr<ft::Revoker> revoker;
    std::unique_ptr<ft::Agreements> agreements;
    std::vector<Comm*> comms; // registered communicators
    // Context pairs of freed communicators that ran agreements or were
    // revoked: kept from new communicators for a while, so that a member
    // still finishing one of those agreements (it heard of a failure late)
    // gets its answer, no message of theirs is taken for a later
    // communicator's, and a revoke notice still on its way does not revoke
    // a later communicator of the same members on the same context.
    std::vector<std::pair<int, std::int64_t>> quarantine; // (pair, release time in ns)
};

// Releases the quarantined context pairs whose time has come (called when
// contexts are allocated).
void ft_release_quarantined();

// True in ULFM mode (after MPI_Init). Hidden: one PC-relative load.
[[gnu::visibility("hidden")]] extern constinit std::atomic<bool> g_ft_on;
inline bool ft_enabled() { return g_ft_on.load(std::memory_order_relaxed); }
FtState& ft_state();
// The machinery (made by ft_init in every job: the MPIX_ calls work in a job
// without fault tolerance too, and a revoke must reach every member).
FtState& ft_machinery();
void ft_init();
void ft_finalize();
// Every communicator with a handle (and the predefined ones) is attached.
void ft_attach(Comm* c);
// The communicator goes: true when its context pair must not be released
// now (ft_detach keeps it in quarantine and releases it later).
bool ft_detach(Comm* c);

// The members of c in the order every member sees them (local group, then
// for an intercommunicator the remote one, the group of the lower leader
// first).
std::vector<int> ft_members(const Comm* c);
// "rank 3 (exited with signal 9)" for the failed members of c, in c's ranks.
std::string ft_failed_text(const Comm* c);
// What MPI_Error_string adds to MPIX_ERR_PROC_FAILED(_PENDING): the failed
// processes known here, as MPI_COMM_WORLD ranks with what happened to them
// ("; failed: rank 3 of MPI_COMM_WORLD (died from signal 9 (Killed))"), at
// most `room` characters; empty without fault tolerance or failures.
std::string ft_failure_note(std::size_t room);

// ULFM: the AND of `n` words over the members of c by the fault-tolerant
// agreement (ft/agree.h) instead of an allreduce, for the communicator
// constructors: the result is the same at every member, even when a member
// dies during the call after some others already returned (an allreduce
// interrupted by the failure failed at some members only, and the new
// communicator existed at some and not at others). Every member takes
// part. Not raised: MPI_SUCCESS; MPIX_ERR_REVOKED when some member knew c
// revoked; MPIX_ERR_PROC_FAILED when some member knew of a failed member of
// c, or a member failed before it contributed (one that contributed and
// died after is in the new communicator, and later operations with it
// fail); MPI_ERR_OTHER with `why` when other members called
// MPIX_Comm_agree or shrink in the same place. `local_error`: what an
// earlier step of the constructor raised here (MPIX_ERR_REVOKED counts as a
// revoke, any other class as a failure), so that every member fails alike.
int ft_agree_words(Comm* c, std::uint32_t* words, int n, const char** why,
                   int local_error = MPI_SUCCESS);
// The same in two halves, for the nonblocking constructors (MPI_Comm_idup):
// start as the `seq`-th agreement on c (a number of c->ft_agree_seq's, or
// one of ft_agree_round_seq's), a handle for done/end; end takes the
// outcome into `words` and returns what ft_agree_words would.
int ft_agree_words_start(Comm* c, const std::uint32_t* words, int n, std::uint64_t seq,
                         int local_error = MPI_SUCCESS);
bool ft_agree_words_done(int handle);
int ft_agree_words_end(int handle, std::uint32_t* words, int n, const char** why);
// The agreement number of round `round` of an operation that took `base`
// from c->ft_agree_seq at its call: rounds started later (from progress)
// keep the numbers of the call's place in the program, as a collective's
// tag does. Apart from every plain number (the top bit).
inline std::uint64_t ft_agree_round_seq(std::uint64_t base, int round)
{
    return (std::uint64_t{1} << 63) | (base << 16) | static_cast<std::uint16_t>(round);
}

// Checks at the start of an operation on c; MPI_SUCCESS or the error raised.
int ft_check_p2p(Comm* c, const char* fn);   // revoked
int ft_check_coll(Comm* c, const char* fn);  // revoked, or a member failed
// A collective on c cannot complete: a member failed (FT-MPI: one that is
// not a hole of a recovery, mpi/ftmpi.h).
bool ft_coll_doomed(const Comm* c);
// Whether a collective running on c must stop before its next round: the
// error class (revoked, or a member failed), or MPI_SUCCESS.
inline int ft_coll_interrupted(const Comm* c)
{
    return c->revoked ? MPIX_ERR_REVOKED : (ft_coll_doomed(c) ? MPIX_ERR_PROC_FAILED : MPI_SUCCESS);
}
// A constructor that runs among a group of c only (MPI_Comm_create_group):
// failures outside the group neither fail it at its start nor interrupt it
// (ULFM: it is collective over the group alone). Registered while it runs.
struct GroupPhase {
    const Comm* parent = nullptr;
    const int* world = nullptr; // the group's world ranks
    int size = 0;
    int tag = 0;
};
void ft_group_phase_begin(const GroupPhase* g);
void ft_group_phase_end(const GroupPhase* g);
// revoked, or a member of the group failed: the error class, or MPI_SUCCESS.
int ft_group_interrupted(const GroupPhase& g);
// A wildcard receive on c that must not wait: a failure is unacknowledged.
inline bool ft_any_source_blocked(const Comm* c) { return c->has_unacked_failure(); }
// A pending receive request that cannot complete for now (raises
// MPIX_ERR_PROC_FAILED_PENDING in completion calls; the request stays).
bool ft_request_blocked(const Request* r);

} // namespace ulmpi::mpi
