// ULM -> FT: the interface ULM owns and the fault-tolerance layer implements.
// ULM reports what it learns about peers; FT decides what it means for the
// job (abort, FT-MPI recovery, ULFM error reporting, replica take-over).
#pragma once

namespace ulmpi::ulm {

class FailureHooks {
public:
    // The runtime reported that a process died.
    virtual void on_peer_failed(int peer, const char* detail) = 0;
    // No path reaches `peer` any more (retries exhausted with every path
    // down or silent); `why` says so in one line naming the paths.
    virtual void on_peer_unreachable(int peer, const char* why) = 0;
    // The launcher is ending the job (its connection closed, or it said so).
    virtual void on_job_ending(const char* detail) = 0;

protected:
    ~FailureHooks() = default;
};

} // namespace ulmpi::ulm
