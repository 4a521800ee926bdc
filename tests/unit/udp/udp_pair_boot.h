// Two ranks (this process and a forked child) wired by a socketpair, for the
// udp engine tests. Like tests/unit/paths/pair_bootstrap.h, but the fence
// has a non-blocking form (fence_begin/fence_test) as mpirun's bootstrap
// does: MPI_Finalize keeps answering its peer while it waits in the fence,
// which a lossy path needs (the last ACK of a job may be lost, and the peer
// resends until it hears one). The two ranks sit on one host.
#pragma once

#include "runtime/bootstrap.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace ulmpi::test {

class NbPairBootstrap final : public rt::Bootstrap {
public:
    NbPairBootstrap(int fd, int rank, const std::string& jobid) : fd_(fd)
    {
        job_.rank = rank;
        job_.size = 2;
        job_.local_rank = rank;
        job_.local_size = 2;
        job_.jobid = jobid;
        job_.host = "unit";
        job_.node_of_rank = {0, 0};
    }
    ~NbPairBootstrap() override { ::close(fd_); }

    const rt::JobInfo& job() const override { return job_; }
    rt::Status put(std::string_view key, const void* data, std::size_t len) override
    {
        auto& v = mine_[std::string(key)];
        v.assign(static_cast<const std::byte*>(data), static_cast<const std::byte*>(data) + len);
        return rt::Errc::ok;
    }
    rt::Status fence() override
    {
        rt::Status st = fence_begin();
        while (st.ok()) {
            pollfd p{fd_, POLLIN, 0};
            (void)::poll(&p, 1, -1);
            st = fence_test();
            if (st.code() != rt::Errc::again) {
                break;
            }
        }
        return st;
    }
    rt::Status fence_begin() override
    {
        std::vector<std::byte> out;
        put_u64(out, mine_.size());
        for (auto& [k, v] : mine_) {
            put_u64(out, k.size());
            out.insert(out.end(), reinterpret_cast<const std::byte*>(k.data()),
                       reinterpret_cast<const std::byte*>(k.data()) + k.size());
            put_u64(out, v.size());
            out.insert(out.end(), v.begin(), v.end());
        }
        std::uint64_t n = out.size();
        if (!io(&n, sizeof n, true) || !io(out.data(), out.size(), true)) {
            return rt::Errc::io_error;
        }
        return rt::Errc::ok;
    }
    rt::Status fence_test() override
    {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) {
            return rt::Errc::again;
        }
        std::uint64_t m = 0;
        if (!io(&m, sizeof m, false)) {
            return rt::Errc::io_error;
        }
        std::vector<std::byte> in(m);
        if (!io(in.data(), m, false)) {
            return rt::Errc::io_error;
        }
        theirs_.clear();
        std::size_t pos = 0;
        for (std::uint64_t count = get_u64(in, pos); count > 0; --count) {
            std::uint64_t kl = get_u64(in, pos);
            std::string k(reinterpret_cast<const char*>(in.data() + pos), kl);
            pos += kl;
            std::uint64_t vl = get_u64(in, pos);
            theirs_[k].assign(in.begin() + static_cast<std::ptrdiff_t>(pos),
                              in.begin() + static_cast<std::ptrdiff_t>(pos + vl));
            pos += vl;
        }
        return rt::Errc::ok;
    }
    rt::Status get(int rank, std::string_view key, std::vector<std::byte>& out) override
    {
        auto& m = rank == job_.rank ? mine_ : theirs_;
        auto it = m.find(std::string(key));
        if (it == m.end()) {
            return rt::Errc::invalid_arg;
        }
        out = it->second;
        return rt::Errc::ok;
    }
    [[noreturn]] void abort(int code, std::string_view msg) override
    {
        ADD_FAILURE() << "abort(" << code << "): " << msg;
        _exit(3);
    }
    rt::Status finalize() override { return rt::Errc::ok; }
    bool poll_event(rt::FailureEvent&) override { return false; }
    int event_fd() const override { return -1; }
    const char* name() const override { return "nbpair"; }

private:
    static void put_u64(std::vector<std::byte>& v, std::uint64_t x)
    {
        auto* p = reinterpret_cast<const std::byte*>(&x);
        v.insert(v.end(), p, p + sizeof x);
    }
    static std::uint64_t get_u64(const std::vector<std::byte>& v, std::size_t& pos)
    {
        std::uint64_t x = 0;
        std::memcpy(&x, v.data() + pos, sizeof x);
        pos += sizeof x;
        return x;
    }
    bool io(void* p, std::size_t n, bool write)
    {
        auto* b = static_cast<char*>(p);
        while (n > 0) {
            ssize_t r = write ? ::write(fd_, b, n) : ::read(fd_, b, n);
            if (r < 0 && errno == EINTR) {
                continue;
            }
            if (r <= 0) {
                return false;
            }
            b += r;
            n -= static_cast<std::size_t>(r);
        }
        return true;
    }

    int fd_;
    rt::JobInfo job_;
    std::map<std::string, std::vector<std::byte>> mine_;
    std::map<std::string, std::vector<std::byte>> theirs_;
};

// Runs body(boot) as rank 1 in a forked child (killed by SIGALRM after
// `watchdog_s`) and as rank 0 here; returns the child's exit code (-1 when
// it did not exit normally).
template <class Body> int run_nb_pair(Body&& body, unsigned watchdog_s)
{
    static int counter = 0;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        ADD_FAILURE() << "socketpair: " << std::strerror(errno);
        return -1;
    }
    std::string jobid = "udp" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
        ADD_FAILURE() << "fork: " << std::strerror(errno);
        return -1;
    }
    if (pid == 0) {
        ::close(sv[0]);
        ::alarm(watchdog_s);
        int code = 0;
        {
            NbPairBootstrap boot(sv[1], 1, jobid);
            code = body(boot);
        }
        if (::testing::Test::HasFailure()) {
            code = 1;
        }
        std::fflush(nullptr);
        _exit(code);
    }
    ::close(sv[1]);
    {
        NbPairBootstrap boot(sv[0], 0, jobid);
        (void)body(boot);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    ADD_FAILURE() << "child died" << (WIFSIGNALED(status) ? " by signal " : "")
                  << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return -1;
}

} // namespace ulmpi::test
