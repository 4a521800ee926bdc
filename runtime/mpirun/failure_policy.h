// FailurePolicy: what a failure means for the job, apart from how mpirun
// watches its processes (Monitor).
//
// The Monitor sees processes end, connections close and hosts vanish; it
// asks the policy what each of these means and carries the answer out
// (announce the failure, end the job, or only remember it). Two policies,
// chosen by the `ft` parameter (mpirun --with-ft):
//
//   abort (ft = no, the default): the first failure ends the job, and
//     mpirun's exit status is that failure's (see exit_codes.h).
//   keep going (ft = ulfm | mpi): a rank that fails (dies before
//     MPI_Finalize, exits without it, or loses its connection), or every rank
//     of a host whose daemon is lost after it started them, is announced to
//     the survivors and the job goes on. MPI_Abort, the time limit, a signal
//     to mpirun, a program that cannot start and a host that never came up
//     still end the job at once.
//
// Exit status of a job that ran to its end (keep going):
//   0      every rank that did not fail called MPI_Finalize and exited 0:
//          the program finished its work (the failed ranks are named on
//          stderr all the same);
//   N      a rank exited with status N (or 128+S, killed by signal S) after
//          MPI_Finalize: the first such rank's;
//          (a rank replaced by a new process counts as its new process does)
//   else   every rank failed: the first failure's status (as without FT).
// With MPICH's rule (mpirun --disable-auto-cleanup, as MPICH's mpiexec and
// its fault-tolerance tests have it) any failure makes the status the first
// failure's (1 for a rank that exited 0 before MPI_Finalize).
#pragma once

#include "runtime/ft_mode.h"

#include <string>
#include <vector>

namespace ulmpi::rt::mpirun {

// How a rank's process ended, read from its wait status.
struct ExitReading {
    bool success = false;        // exit 0 after MPI_Finalize, or a non-MPI program's 0
    bool after_finalize = false; // it had called MPI_Finalize
    int code = 0;                // mpirun's exit status if this ends the job
    std::string detail;          // "died from signal 9 (Killed)", "exited with status 3"
    std::string when;            // " before MPI_Finalize" or ""
};
ExitReading read_exit(int wait_status, bool said_hello, bool finalized);

class FailurePolicy {
public:
    enum class Action {
        end_job,  // end the job now with the failure's code
        announce, // tell every survivor and go on
        remember, // go on; it counts for the exit status
    };

    FailurePolicy(FtMode mode, int size);
    void set_mpich_rule(bool on) { mpich_rule_ = on; }
    // --replicas: a failed process is replaced by re-creating a replica
    // (recovery), which final_status says so.
    void set_replicated(bool on) { replicated_ = on; }
    bool mpich_rule() const { return mpich_rule_; }

    bool tolerant() const { return mode_ != FtMode::none; }
    bool failed(int rank) const { return failed_[static_cast<std::size_t>(rank)]; }
    const std::vector<int>& failed_ranks() const { return order_; }

    // A rank's process ended badly (not success). Records it.
    Action on_exit(int rank, const ExitReading& e);
    // A rank left MPI without MPI_Finalize and without (yet) an exit status:
    // its connection is gone, or it never came back to a fence. Records it.
    Action on_lost(int rank);
    // The daemon of a host is gone; `started` says it had been given the
    // host's ranks (otherwise the job could not start). Records its ranks.
    Action on_host_lost(const std::vector<int>& ranks, bool started);

    // The failed rank was replaced by a new process (FT-MPI REBUILD): it is
    // judged as any rank again, and its old failure no longer counts against
    // the job (final_status names it as replaced).
    void revive(int rank);
    // Ranks from `first` on are spawn slots: not counted as survivors
    // until born() (a process started in one).
    void set_unborn(int first);
    void born(int rank);

    // mpirun's exit status for a job nothing ended early, and the line to
    // print about it ("" when there is nothing to say).
    int final_status(std::string& summary) const;

private:
    void record(int rank, int code);

    FtMode mode_;
    std::vector<bool> failed_;
    std::vector<int> order_;   // failed ranks in the order they failed
    std::vector<int> replaced_; // revived ranks, once each
    std::vector<bool> unborn_;  // spawn slots without a process yet
    std::size_t unborn_count_ = 0;
    int first_code_ = 0;       // of the first failure
    int after_finalize_code_ = 0;
    int after_finalize_rank_ = -1;
    bool mpich_rule_ = false;
    bool replicated_ = false;
};

// "1, 3, 5" (at most `max` numbers, then ", ...").
std::string rank_list(const std::vector<int>& ranks, std::size_t max = 16);

} // namespace ulmpi::rt::mpirun
