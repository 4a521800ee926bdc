// Failure detection and the job's reaction to it.
//
// ULM reports what it learns (ulm/ft_hooks.h): the runtime says a process
// died, every path to a peer gave up, or the launcher is going away. The
// detector records failed ranks and applies the job's failure mode. The mode
// of MPI-1 programs is ABORT: any failure ends the whole job with a message
// naming who failed and why (the launcher reaps everything). FT-MPI modes,
// ULFM and replication build on the same notices (ft/ grows with them).
#pragma once

#include "runtime/bootstrap.h"
#include "ulm/engine.h"
#include "ulm/ft_hooks.h"

#include <vector>

namespace ulmpi::ft {

class Detector final : public ulm::FailureHooks {
public:
    Detector(rt::Bootstrap& boot, ulm::Engine& engine);

    void on_peer_failed(int peer, const char* detail) override;
    void on_peer_unreachable(int peer, const char* why) override;
    void on_job_ending(const char* detail) override;

    bool failed(int rank) const;
    const std::vector<int>& failed_ranks() const { return failed_; }

private:
    rt::Bootstrap& boot_;
    ulm::Engine& engine_;
    std::vector<int> failed_;
};

} // namespace ulmpi::ft
