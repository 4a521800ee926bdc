#include "runtime/mpirun/failure_policy.h"

#include "runtime/mpirun/exit_codes.h"

#include <algorithm>
#include <cstring>
#include <sys/wait.h>

namespace ulmpi::rt::mpirun {

ExitReading read_exit(int status, bool said_hello, bool finalized)
{
    ExitReading e;
    e.after_finalize = said_hello && finalized;
    bool left_early = said_hello && !finalized;
    e.when = left_early ? " before MPI_Finalize" : "";
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char* desc = ::strsignal(sig);
        e.detail = "died from signal " + std::to_string(sig) + " (" + (desc ? desc : "?") + ")";
        e.code = exit_code::signal_base + sig;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        e.detail = "exited with status " + std::to_string(WEXITSTATUS(status));
        e.code = WEXITSTATUS(status);
    } else if (left_early) {
        e.detail = "exited with status 0";
        e.code = exit_code::failure;
    } else {
        e.success = true;
    }
    return e;
}

FailurePolicy::FailurePolicy(FtMode mode, int size)
    : mode_(mode), failed_(static_cast<std::size_t>(size), false)
{
}

void FailurePolicy::record(int rank, int code)
{
    if (failed_[static_cast<std::size_t>(rank)]) {
        return;
    }
    failed_[static_cast<std::size_t>(rank)] = true;
    if (order_.empty()) {
        first_code_ = code;
    }
    order_.push_back(rank);
}

FailurePolicy::Action FailurePolicy::on_exit(int rank, const ExitReading& e)
{
    if (!tolerant()) {
        record(rank, e.code);
        return Action::end_job;
    }
    if (e.after_finalize) {
        // It left MPI properly: not a failure for the others, but the job
        // did not end well.
        if (after_finalize_rank_ < 0) {
            after_finalize_rank_ = rank;
            after_finalize_code_ = e.code;
        }
        return Action::remember;
    }
    record(rank, e.code);
    return Action::announce;
}

FailurePolicy::Action FailurePolicy::on_lost(int rank)
{
    record(rank, exit_code::failure);
    return tolerant() ? Action::announce : Action::end_job;
}

FailurePolicy::Action FailurePolicy::on_host_lost(const std::vector<int>& ranks, bool started)
{
    for (int r : ranks) {
        record(r, exit_code::failure);
    }
    return tolerant() && started ? Action::announce : Action::end_job;
}

void FailurePolicy::revive(int rank)
{
    if (!failed_[static_cast<std::size_t>(rank)]) {
        return;
    }
    failed_[static_cast<std::size_t>(rank)] = false;
    std::erase(order_, rank);
    if (std::find(replaced_.begin(), replaced_.end(), rank) == replaced_.end()) {
        replaced_.push_back(rank);
    }
}

void FailurePolicy::set_unborn(int first)
{
    unborn_.assign(failed_.size(), false);
    for (std::size_t r = static_cast<std::size_t>(std::max(first, 0)); r < unborn_.size(); ++r) {
        unborn_[r] = true;
        ++unborn_count_;
    }
}

void FailurePolicy::born(int rank)
{
    const auto r = static_cast<std::size_t>(rank);
    if (r < unborn_.size() && unborn_[r]) {
        unborn_[r] = false;
        --unborn_count_;
    }
}

int FailurePolicy::final_status(std::string& summary) const
{
    summary.clear();
    if (order_.empty()) {
        if (!replaced_.empty() && replicated_) {
            summary = (replaced_.size() == 1 ? "process " : "processes ") + rank_list(replaced_) +
                      " failed and " + (replaced_.size() == 1 ? "was" : "were") +
                      " re-created from a replica (--replicas recovery)";
        } else if (!replaced_.empty()) {
            summary = (replaced_.size() == 1 ? "rank " : "ranks ") + rank_list(replaced_) +
                      " failed and " + (replaced_.size() == 1 ? "was" : "were") +
                      " replaced by new processes (FT-MPI rebuild)";
        }
        return after_finalize_rank_ >= 0 ? after_finalize_code_ : exit_code::ok;
    }
    std::size_t survivors = failed_.size() - unborn_count_ - order_.size();
    std::string which = (order_.size() == 1 ? "rank " : "ranks ") + rank_list(order_);
    if (survivors == 0 || mpich_rule_) {
        summary = survivors == 0 ? "every rank failed (" + which + "); the job did not finish"
                                 : which + " failed";
        return first_code_ != 0 ? first_code_ : exit_code::failure;
    }
    if (after_finalize_rank_ >= 0) {
        summary = which + " failed; rank " + std::to_string(after_finalize_rank_) +
                  " ended badly after MPI_Finalize";
        return after_finalize_code_;
    }
    summary = which + " failed; the " + std::to_string(survivors) +
              (survivors == 1 ? " other rank" : " other ranks") +
              " finished (MPI_Finalize, exit status 0)";
    return exit_code::ok;
}

std::string rank_list(const std::vector<int>& ranks, std::size_t max)
{
    std::string out;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (i == max) {
            out += ", ...";
            break;
        }
        out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
    }
    return out;
}

} // namespace ulmpi::rt::mpirun
