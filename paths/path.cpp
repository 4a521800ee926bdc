#include "paths/path.h"

#include <cstring>

namespace ulmpi::path {

std::size_t RxFrag::read_payload(std::size_t, const iovec*, int) { return 0; }

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
