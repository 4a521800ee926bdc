// Byte-stream I/O on a process's connection to its launcher (mpirun's
// socket, Slurm's PMI_FD), shared by the bootstraps that speak over one.
#pragma once

#include "runtime/status.h"

#include <cstddef>
#include <string>

namespace ulmpi::rt::stream_io {

// Sends every byte of [data, data + len), retrying interrupted calls and
// never raising SIGPIPE. 0, or the errno of the failure.
int send_all(int fd, const void* data, std::size_t len);

enum class Got : unsigned char {
    bytes,   // `n` bytes were read into the buffer
    nothing, // nothing there yet (or interrupted): try again
    timeout, // the wait ran out with nothing to read
    closed,  // the other side closed the connection
    failed,  // a system call failed: `err` is its errno
};

struct ReadOutcome {
    Got got = Got::nothing;
    std::size_t n = 0;
    int err = 0;
};

// Waits up to `timeout_ms` for bytes (-1: as long as it takes, 0: not at
// all) and reads what is there, at most `cap` bytes, into `buf`.
ReadOutcome read_some(int fd, int timeout_ms, char* buf, std::size_t cap);

// "what: <strerror(err)>", for the message naming a failed call.
std::string describe(const char* what, int err);

// read_some into `reader` (anything with append(const char*, size_t)).
// ok with bytes appended, again, timeout; on a closed or failed connection
// calls lost(why) (why is `closed_why`, or the failed call) and gives
// peer_failed.
template <class Reader, class Lost>
Status read_into(int fd, int timeout_ms, Reader& reader, const char* closed_why, Lost&& lost)
{
    char buf[65536];
    ReadOutcome r = read_some(fd, timeout_ms, buf, sizeof buf);
    switch (r.got) {
    case Got::bytes:
        reader.append(buf, r.n);
        return Errc::ok;
    case Got::nothing:
        return Errc::again;
    case Got::timeout:
        return Errc::timeout;
    case Got::closed:
        lost(std::string(closed_why));
        return Errc::peer_failed;
    case Got::failed:
        break;
    }
    lost(describe("recv", r.err));
    return Errc::peer_failed;
}

} // namespace ulmpi::rt::stream_io
