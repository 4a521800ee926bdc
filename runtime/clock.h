// Time for protocols and timers. now_ns() is CLOCK_MONOTONIC; a test may
// install a manual clock so that back-off and deadlines are checked without
// sleeping.
#pragma once

#include <cstdint>
#include <ctime>

namespace ulmpi::rt {

using Nanos = std::int64_t;

class ManualClock;
namespace detail {
extern ManualClock* g_manual_clock;
Nanos manual_now() noexcept;
} // namespace detail

inline Nanos monotonic_ns() noexcept
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<Nanos>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline Nanos now_ns() noexcept
{
    if (detail::g_manual_clock != nullptr) [[unlikely]] {
        return detail::manual_now();
    }
    return monotonic_ns();
}

// While alive, now_ns() returns this clock's time, advanced only by advance().
class ManualClock {
public:
    explicit ManualClock(Nanos start = 1000000000);
    ~ManualClock();
    ManualClock(const ManualClock&) = delete;
    ManualClock& operator=(const ManualClock&) = delete;
    void advance(Nanos by) noexcept { now_ += by; }
    Nanos now() const noexcept { return now_; }

private:
    Nanos now_;
};

} // namespace ulmpi::rt
