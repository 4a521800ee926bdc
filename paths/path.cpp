#include "paths/path.h"

#include <atomic>
#include <cstring>

namespace ulmpi::path {

std::size_t RxFrag::read_payload(std::size_t, const iovec*, int) { return 0; }

namespace {
// Set by every Engine::init: one per process, but the unit tests run several
// engines as threads of one process, which store the same function at once.
// Atomic (relaxed: only the pointer itself is shared), so that is no race.
std::atomic<FragHeaderLengthFn> g_frag_header_length{nullptr};
} // namespace

void set_frag_header_length(FragHeaderLengthFn fn)
{
    g_frag_header_length.store(fn, std::memory_order_relaxed);
}

std::size_t frag_header_length(const std::byte* data, std::size_t len)
{
    FragHeaderLengthFn fn = g_frag_header_length.load(std::memory_order_relaxed);
    return fn != nullptr ? fn(data, len) : 0;
}

SendResult Path::send(int peer, const iovec* iov, int iovcnt, Lane lane)
{
    std::size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) {
        total += iov[i].iov_len;
    }
    TxBuffer buf;
    buf.lane = lane;
    if (!acquire(peer, total, buf)) {
        return SendResult::again;
    }
    std::byte* p = buf.data;
    for (int i = 0; i < iovcnt; ++i) {
        std::memcpy(p, iov[i].iov_base, iov[i].iov_len);
        p += iov[i].iov_len;
    }
    return commit(peer, buf, total);
}

} // namespace ulmpi::path
