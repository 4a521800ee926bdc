#include "runtime/clock.h"

namespace ulmpi::rt {
namespace detail {
ManualClock* g_manual_clock = nullptr;
Nanos manual_now() noexcept { return g_manual_clock->now(); }
} // namespace detail

ManualClock::ManualClock(Nanos start) : now_(start) { detail::g_manual_clock = this; }
ManualClock::~ManualClock() { detail::g_manual_clock = nullptr; }

} // namespace ulmpi::rt
