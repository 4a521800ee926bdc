// What the files of the ofi path share beside ofi_path.h: the closing of
// libfabric objects, what an error of a remote read means, and the timing
// constants of registrations and reads.
#pragma once

#include "runtime/clock.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>

#include <cstdint>

namespace ulmpi::path::ofi {

constexpr rt::Nanos kSecond = 1000000000;
constexpr rt::Nanos kMrIdle = 30 * kSecond; // a cached registration unused this long goes
constexpr rt::Nanos kReadLimit = 60 * kSecond;
constexpr std::uint32_t kMaxReads = 64;     // fi_read pieces in flight (all reads)
constexpr std::uint32_t kGetDepth = 64;     // start_get() reads under way: PathInfo::get_depth
constexpr std::uint32_t kSyncGets = 8;      // more slots, for get() beside a full depth
// After make_rkey(), how long the path asks the waiting rank not to sleep:
// the peer reads our memory through the provider's progress in our calls
// (rxm over tcp), and a rank that sleeps 200 us between polls holds every
// read that long. Long enough for a receiver that posts late, short enough
// that an idle rank sleeps again soon.
constexpr rt::Nanos kExposedNs = kSecond;

// An error completion of a read that speaks of the key, not of the path
// (the sender's registration expired): ULM streams the message instead.
inline bool key_error(int err)
{
    return err == FI_EACCES || err == FI_EKEYREJECTED || err == FI_EINVAL || err == FI_EFAULT ||
           err == FI_EPERM;
}

template <class F> void close_fid(F*& f)
{
    if (f != nullptr) {
        (void)fi_close(&f->fid);
        f = nullptr;
    }
}

} // namespace ulmpi::path::ofi
