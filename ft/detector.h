// Failure detection and the job's reaction to it.
//
// ULM reports what it learns (ulm/ft_hooks.h): the runtime says a process
// died, every path to a peer gave up, or the launcher is going away. The
// detector records failed ranks, in the order it learned of them, and
// applies the job's failure mode:
//   ABORT (the default): any failure ends the whole job with a message
//     naming who failed and why (the launcher reaps everything).
//   ULFM (`mpirun --with-ft ulfm`, ULMPI_FT=ulfm): the job lives on. The
//     peer's link is failed (every operation with it completes with an
//     error), and the listeners (the MPI layer: communicators, ANY_SOURCE
//     receives, collectives, agreements) are told. A peer that no path
//     reaches any more (silent past the retries) is failed the same way.
// FT-MPI modes and replication build on the same notices.
#pragma once

#include "runtime/bootstrap.h"
#include "ulm/engine.h"
#include "ulm/ft_hooks.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ulmpi::ft {

enum class Mode : std::uint8_t { abort, ulfm };

// The job's mode from the `ft` parameter (set by mpirun --with-ft).
Mode mode_from_params();

class Detector final : public ulm::FailureHooks {
public:
    using Listener = std::function<void(int world_rank)>;

    Detector(rt::Bootstrap& boot, ulm::Engine& engine, Mode mode = mode_from_params());

    void on_peer_failed(int peer, const char* detail) override;
    void on_peer_unreachable(int peer, const char* why) override;
    void on_job_ending(const char* detail) override;

    Mode mode() const { return mode_; }
    bool tolerant() const { return mode_ != Mode::abort; }
    bool failed(int rank) const
    {
        return rank >= 0 && static_cast<std::size_t>(rank) < is_failed_.size() &&
               is_failed_[static_cast<std::size_t>(rank)];
    }
    // World ranks in the order their failure became known here.
    const std::vector<int>& failed_ranks() const { return failed_; }
    // Changes whenever a failure is recorded (cheap to compare).
    std::uint64_t generation() const { return failed_.size(); }
    const std::string& detail(int rank) const;
    // Called for every new failure, after the peer's link was failed.
    void add_listener(Listener fn) { listeners_.push_back(std::move(fn)); }
    // A failure learned another way (an agreement's outcome names a process
    // that did not contribute): recorded as if the runtime had said so.
    void learned(int rank, const char* how);
    // The failed rank was replaced by a new process (FT-MPI REBUILD; the
    // engine's link was reset to it): alive again. failed_ranks() keeps the
    // history; a later failure of the new process is recorded anew.
    void revive(int rank);
    // How many times `rank` was revived: which of its processes a fact
    // gathered earlier is about (an agreement started before a revival
    // must not name the new process failed).
    std::uint32_t revivals(int rank) const
    {
        return rank >= 0 && static_cast<std::size_t>(rank) < revivals_.size()
                   ? revivals_[static_cast<std::size_t>(rank)]
                   : 0;
    }

private:
    void record(int rank, const char* detail);

    rt::Bootstrap& boot_;
    ulm::Engine& engine_;
    Mode mode_;
    std::vector<int> failed_;
    std::vector<bool> is_failed_;
    std::vector<std::string> details_;
    std::vector<std::uint32_t> revivals_;
    std::vector<Listener> listeners_;
};

} // namespace ulmpi::ft
