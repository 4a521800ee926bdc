#include "runtime/stream_io.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>

namespace ulmpi::rt::stream_io {

int send_all(int fd, const void* data, std::size_t len)
{
    const auto* b = static_cast<const char*>(data);
    std::size_t off = 0;
    while (off < len) {
        ssize_t n = ::send(fd, b + off, len - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        off += static_cast<std::size_t>(n);
    }
    return 0;
}

ReadOutcome read_some(int fd, int timeout_ms, char* buf, std::size_t cap)
{
    if (timeout_ms != 0) {
        pollfd p{fd, POLLIN, 0};
        int rc = ::poll(&p, 1, timeout_ms);
        if (rc < 0 && errno == EINTR) {
            return {Got::nothing, 0, 0};
        }
        if (rc == 0) {
            return {Got::timeout, 0, 0};
        }
    }
    ssize_t n = ::recv(fd, buf, cap, timeout_ms == 0 ? MSG_DONTWAIT : 0);
    if (n > 0) {
        return {Got::bytes, static_cast<std::size_t>(n), 0};
    }
    if (n == 0) {
        return {Got::closed, 0, 0};
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return {Got::nothing, 0, 0};
    }
    return {Got::failed, 0, errno};
}

std::string describe(const char* what, int err)
{
    return std::string(what) + ": " + std::strerror(err);
}

} // namespace ulmpi::rt::stream_io
