// A two-rank bootstrap over a socketpair, for tests that fork: rank 0 is the
// test process, rank 1 its child, both on one host. put() stores locally;
// fence() swaps everything put so far with the peer (and is a barrier).
// A peer that went away makes fence() fail instead of hang.
#pragma once

#include "runtime/bootstrap.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace ulmpi::test {

class PairBootstrap final : public rt::Bootstrap {
public:
    PairBootstrap(int fd, int rank, const std::string& jobid) : fd_(fd)
    {
        job_.rank = rank;
        job_.size = 2;
        job_.local_rank = rank;
        job_.local_size = 2;
        job_.node_id = 0;
        job_.num_nodes = 1;
        job_.host = "unit";
        job_.jobid = jobid;
        job_.node_of_rank = {0, 0};
        job_.universe_size = 2;
    }
    ~PairBootstrap() override { ::close(fd_); }

    const rt::JobInfo& job() const override { return job_; }

    rt::Status put(std::string_view key, const void* data, std::size_t len) override
    {
        auto& v = mine_[std::string(key)];
        v.resize(len);
        if (len > 0) {
            std::memcpy(v.data(), data, len);
        }
        return rt::Errc::ok;
    }

    rt::Status fence() override
    {
        std::vector<std::byte> out;
        append_u64(out, mine_.size());
        for (auto& [k, v] : mine_) {
            append_u64(out, k.size());
            out.insert(out.end(), reinterpret_cast<const std::byte*>(k.data()),
                       reinterpret_cast<const std::byte*>(k.data()) + k.size());
            append_u64(out, v.size());
            out.insert(out.end(), v.begin(), v.end());
        }
        std::uint64_t n = out.size();
        if (!write_all(&n, sizeof n) || !write_all(out.data(), out.size())) {
            return rt::Errc::io_error;
        }
        std::uint64_t m = 0;
        if (!read_all(&m, sizeof m)) {
            return rt::Errc::io_error;
        }
        std::vector<std::byte> in(m);
        if (!read_all(in.data(), m)) {
            return rt::Errc::io_error;
        }
        theirs_.clear();
        std::size_t pos = 0;
        std::uint64_t count = read_u64(in, pos);
        for (std::uint64_t i = 0; i < count; ++i) {
            std::uint64_t kl = read_u64(in, pos);
            std::string k(reinterpret_cast<const char*>(in.data() + pos), kl);
            pos += kl;
            std::uint64_t vl = read_u64(in, pos);
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
    const char* name() const override { return "pair"; }

private:
    static void append_u64(std::vector<std::byte>& v, std::uint64_t x)
    {
        auto* p = reinterpret_cast<const std::byte*>(&x);
        v.insert(v.end(), p, p + sizeof x);
    }
    static std::uint64_t read_u64(const std::vector<std::byte>& v, std::size_t& pos)
    {
        std::uint64_t x = 0;
        std::memcpy(&x, v.data() + pos, sizeof x);
        pos += sizeof x;
        return x;
    }
    bool write_all(const void* p, std::size_t n)
    {
        const auto* b = static_cast<const char*>(p);
        while (n > 0) {
            ssize_t w = ::write(fd_, b, n);
            if (w < 0 && errno == EINTR) {
                continue;
            }
            if (w <= 0) {
                return false;
            }
            b += w;
            n -= static_cast<std::size_t>(w);
        }
        return true;
    }
    bool read_all(void* p, std::size_t n)
    {
        auto* b = static_cast<char*>(p);
        while (n > 0) {
            ssize_t r = ::read(fd_, b, n);
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

// Child exit codes of run_pair().
inline constexpr int kChildSkipped = 77;

// Runs body(boot) as rank 1 in a forked child and as rank 0 here. The child
// exits 0 when its part passed (kChildSkipped when it asked to skip); it
// dies by SIGALRM after `watchdog_s` seconds if it hangs. Returns the
// child's exit code, or -1 when it did not exit normally.
template <class Body> int run_pair(Body&& body, unsigned watchdog_s = 60)
{
    static int counter = 0;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        ADD_FAILURE() << "socketpair: " << std::strerror(errno);
        return -1;
    }
    std::string jobid = "unit" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
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
            PairBootstrap boot(sv[1], 1, jobid);
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
        PairBootstrap boot(sv[0], 0, jobid);
        (void)body(boot);
    } // closing the socket frees a child stuck in a fence
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
