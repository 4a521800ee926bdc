// intra_profile: where Section::end() spends its time (Stats::ns_*), read
// on the clock the parameter names.
#pragma once

#include "runtime/clock.h"

namespace ulmpi::intra {

// "wall" (the default; CLOCK_MONOTONIC) or "cpu" (this thread's CPU time:
// the work of each phase without the time the thread waited for the CPU on
// a loaded machine).
rt::Nanos profile_now();

} // namespace ulmpi::intra
