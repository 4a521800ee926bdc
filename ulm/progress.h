// How a waiting process behaves: poll, and when nothing happens spin a
// little, then yield the CPU, then sleep in growing steps. Ranks that share
// few cores (16 ranks on 2 cores in CI) must hand the CPU to the rank that
// has work; a rank alone on its core keeps the lowest latency by spinning.
#pragma once

#include <cstdint>

namespace ulmpi::ulm {

class Backoff {
public:
    struct Policy {
        std::uint32_t spin_polls;   // idle polls before the first yield
        std::uint32_t yield_polls;  // idle polls (yielding) before sleeping
        std::uint32_t max_sleep_us; // longest single sleep
    };
    explicit Backoff(const Policy& p) : p_(p) {}
    void reset() { idle_ = 0; }
    // Called after a poll that found nothing to do. may_sleep false: a
    // path needs our polls to move (Path::needs_polling), so yield at most.
    void idle(bool may_sleep = true);
    std::uint32_t idle_polls() const { return idle_; }
    // Whether the next idle() would sleep if allowed (past spinning and
    // yielding): only then is it worth asking the paths whether it may.
    bool sleeps_next() const { return idle_ + 1 > p_.spin_polls + p_.yield_polls; }

private:
    const Policy& p_;
    std::uint32_t idle_ = 0;
};

} // namespace ulmpi::ulm
