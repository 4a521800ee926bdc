// The waits of mpirun's monitor (monitor.h says what each is for).
#pragma once

#include "runtime/clock.h"

#include <cstddef>

namespace ulmpi::rt::mpirun {

inline constexpr Nanos kMs = 1000 * 1000;
inline constexpr Nanos kSec = 1000 * kMs;
inline constexpr Nanos kFailureGrace = 500 * kMs;   // SIGTERM -> SIGKILL after a failure
inline constexpr Nanos kInterruptGrace = 2 * kSec;  // ... after Ctrl-C / SIGTERM of mpirun
inline constexpr Nanos kLostGrace = 1 * kSec;       // connection gone, process still there
inline constexpr Nanos kDrainGrace = 1 * kSec;      // output still open after every rank ended
inline constexpr Nanos kDaemonExitGrace = 5 * kSec; // SHUTDOWN -> the launch agents must have ended
inline constexpr Nanos kSilentHostGrace = 10 * kSec; // job ending -> a daemon must have reported its ranks
inline constexpr Nanos kSpawnSlotWait = 5 * kSec; // a SPAWN waits this long for a free slot
inline constexpr std::size_t kStdinQueue = 256 * 1024; // stdin bytes queued for a daemon at most

} // namespace ulmpi::rt::mpirun
