// MPI_Comm_join (MPI-4.0 11.8.4): two processes joined by a socket become
// the two groups of an intercommunicator. Over the socket each writes a
// hello (a magic word, its world rank, incarnation, join count and job id)
// and reads the other's; then the two agree on a context pair as the roots
// of a port connection do (ports.h), each its own group of one. Only
// processes of one job can be joined (there is no wire-up between jobs).
// While it waits for the other's hello the process keeps progressing, so
// that peers waiting for it are answered.
#include "mpi/ports.h"

#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/state.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace ulmpi::mpi;

namespace {

constexpr std::uint32_t kMagic = 0x756c6a6eu; // "uljn"
constexpr std::size_t kJobIdMax = 96;

struct Hello {
    std::uint32_t magic = kMagic;
    std::uint32_t world = 0;
    std::uint32_t incarnation = 0;
    std::uint32_t count = 0;
    char jobid[kJobIdMax] = {};
};

int g_joins = 0;

// Writes all of `len` bytes; errno of the failure, or 0.
int write_all(int fd, const void* p, std::size_t len)
{
    const auto* b = static_cast<const char*>(p);
    while (len > 0) {
        ssize_t n = ::send(fd, b, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK) {
            n = ::write(fd, b, len);
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
                state().engine.progress();
                continue;
            }
            return errno;
        }
        b += n;
        len -= static_cast<std::size_t>(n);
    }
    return 0;
}

// Reads all of `len` bytes, progressing while none are there; errno of the
// failure, -1 at end of file, or 0.
int read_all(int fd, void* p, std::size_t len)
{
    auto* b = static_cast<char*>(p);
    int err = 0;
    state().engine.wait([&] {
        while (len > 0) {
            pollfd pfd{fd, POLLIN, 0};
            int ready = ::poll(&pfd, 1, 0);
            if (ready < 0 && errno != EINTR) {
                err = errno;
                return true;
            }
            if (ready <= 0) {
                return false;
            }
            ssize_t n = ::read(fd, b, len);
            if (n == 0) {
                err = -1;
                return true;
            }
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
                    return false;
                }
                err = errno;
                return true;
            }
            b += n;
            len -= static_cast<std::size_t>(n);
        }
        return true;
    });
    return err;
}

} // namespace

int PMPI_Comm_join(int fd, MPI_Comm* intercomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_join";
    require_init(fn);
    if (intercomm == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "intercomm is NULL");
    }
    *intercomm = MPI_COMM_NULL;
    if (fd < 0 || ::fcntl(fd, F_GETFD) < 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "fd %d is not an open descriptor", fd);
    }
    State& s = state();
    if (s.engine.replicated()) {
        return raise(nullptr, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                     "MPI_Comm_join is not available under --replicas (docs/replication.md)");
    }
    const std::string& jobid = s.boot->job().jobid;
    Hello mine;
    mine.world = static_cast<std::uint32_t>(s.engine.rank());
    mine.incarnation = static_cast<std::uint32_t>(s.boot->job().incarnation);
    mine.count = static_cast<std::uint32_t>(g_joins++);
    std::memcpy(mine.jobid, jobid.data(), std::min(jobid.size(), kJobIdMax - 1));
    if (int e = write_all(fd, &mine, sizeof mine)) {
        return raise(nullptr, MPI_ERR_OTHER, fn, "writing to fd %d failed: %s", fd,
                     std::strerror(e));
    }
    Hello theirs;
    if (int e = read_all(fd, &theirs, sizeof theirs)) {
        return raise(nullptr, MPI_ERR_OTHER, fn, "reading from fd %d failed: %s", fd,
                     e < 0 ? "the other end closed it" : std::strerror(e));
    }
    theirs.jobid[kJobIdMax - 1] = '\0';
    if (theirs.magic != kMagic) {
        return raise(nullptr, MPI_ERR_OTHER, fn,
                     "the other end of fd %d is not a ulmpi process in MPI_Comm_join", fd);
    }
    if (jobid != theirs.jobid) {
        return raise(nullptr, MPI_ERR_OTHER, fn,
                     "the other end of fd %d belongs to another job (%s); processes of one job "
                     "only can be joined",
                     fd, theirs.jobid);
    }
    const int other = static_cast<int>(theirs.world);
    if (other == s.engine.rank() || other < 0 || other >= s.engine.size()) {
        return raise(nullptr, MPI_ERR_OTHER, fn,
                     "the other end of fd %d is world rank %d: not another process of the job", fd,
                     other);
    }
    // Tags of this join: the same at both ends, apart from their ports'.
    const int tag_base = 0x800000 | static_cast<int>(std::max(mine.count, theirs.count) & 0x7fffff);
    Comm* n = nullptr;
    if (int e = port_make_intercomm(s.self, 0, other, tag_base, {other}, &n, fn)) {
        return e;
    }
    *intercomm = n->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_join");
}
ULMPI_ALIAS(MPI_Comm_join)
