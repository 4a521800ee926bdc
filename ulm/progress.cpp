#include "ulm/progress.h"

#include <ctime>
#include <sched.h>

namespace ulmpi::ulm {

void Backoff::idle(bool may_sleep)
{
    ++idle_;
    if (idle_ <= p_.spin_polls) {
        __builtin_ia32_pause();
        return;
    }
    if (idle_ <= p_.spin_polls + p_.yield_polls || !may_sleep) {
        sched_yield();
        return;
    }
    // Sleep 1, 2, 4 ... max_sleep_us microseconds.
    std::uint32_t step = idle_ - p_.spin_polls - p_.yield_polls;
    std::uint32_t us = step >= 16 ? p_.max_sleep_us : (1u << (step < 16 ? step : 16));
    if (us > p_.max_sleep_us) {
        us = p_.max_sleep_us;
    }
    timespec ts{0, static_cast<long>(us) * 1000};
    nanosleep(&ts, nullptr);
}

} // namespace ulmpi::ulm
