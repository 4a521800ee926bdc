#include "paths/path.h"

#include <cstring>

namespace ulmpi::path {

std::size_t RxFrag::read_payload(std::size_t, const iovec*, int) { return 0; }

namespace {
FragHeaderLengthFn g_frag_header_length = nullptr;
} // namespace

void set_frag_header_length(FragHeaderLengthFn fn) { g_frag_header_length = fn; }

std::size_t frag_header_length(const std::byte* data, std::size_t len)
{
    return g_frag_header_length != nullptr ? g_frag_header_length(data, len) : 0;
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
