// The bootstraps of the tests: one for ranks that live in one process, one
// for ranks that are processes of their own. Every test that wires paths or
// engines takes its bootstrap from here (the path conformance suite, the
// per-path tests, the engine tests); no test copies its own.
//
//  * LocalJob + LocalBootstrap: several ranks in one process. put/get on a
//    shared board. fence() is a barrier over all ranks when each rank wires
//    up on a thread of its own (Fences::barrier, the engine tests), or
//    nothing when one thread opens every rank's path before connecting any
//    (Fences::none).
//  * SocketBootstrap: two ranks (or one) that are processes, joined by a
//    socketpair. put() stores locally; fence() swaps everything put so far
//    with the peer and is a barrier; fence_begin()/fence_test() are its
//    non-blocking form, as mpirun's bootstrap has (a finalizing engine keeps
//    answering its peer while it waits in the fence). A peer that went away
//    makes a fence fail (io_error), never hang. run_pair() runs rank 0 in
//    the test process and rank 1 in a forked child; run_ranks() forks every
//    rank (the test process opens nothing, so nothing it maps or pins is
//    shared with a later fork, and it can kill a rank).
#pragma once

#include "runtime/bootstrap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace ulmpi::test {

// ---------------------------------------------------------------------------
// Ranks in one process.

struct LocalJob {
    enum class Fences : std::uint8_t { barrier, none };
    explicit LocalJob(int n, Fences f = Fences::barrier) : size(n), fences_are(f), barrier(n) {}
    int size;
    Fences fences_are;
    std::barrier<> barrier;
    std::mutex mu;
    std::map<std::pair<int, std::string>, std::vector<std::byte>> values;
    int fences = 0;     // completed by rank 0, for tests that count them
    int local_cpus = 0; // JobInfo::local_cpus of every rank
};

class LocalBootstrap final : public rt::Bootstrap {
public:
    // `nodes`: the host index of every rank (empty: all on one host).
    LocalBootstrap(LocalJob& job, int rank, std::vector<int> nodes = {}) : shared_(job)
    {
        if (nodes.empty()) {
            nodes.assign(static_cast<std::size_t>(job.size), 0);
        }
        job_.rank = rank;
        job_.size = job.size;
        job_.node_id = nodes[static_cast<std::size_t>(rank)];
        job_.node_of_rank = nodes;
        job_.num_nodes = 1;
        job_.local_size = 0;
        for (int r = 0; r < job.size; ++r) {
            const int n = nodes[static_cast<std::size_t>(r)];
            job_.num_nodes = std::max(job_.num_nodes, n + 1);
            if (n == job_.node_id) {
                job_.local_rank = r == rank ? job_.local_size : job_.local_rank;
                ++job_.local_size;
            }
        }
        job_.host = "unit" + std::to_string(job_.node_id);
        job_.jobid = "unit" + std::to_string(::getpid());
        job_.universe_size = job.size;
        job_.local_cpus = job.local_cpus;
    }

    const rt::JobInfo& job() const override { return job_; }
    rt::JobInfo& mutable_job() { return job_; }
    void moved(int rank, int node) override
    {
        if (job_.placed_node_of_rank.empty()) {
            job_.placed_node_of_rank = job_.node_of_rank;
        }
        job_.node_of_rank[static_cast<std::size_t>(rank)] = node;
    }

    rt::Status put(std::string_view key, const void* data, std::size_t len) override
    {
        std::lock_guard lock(shared_.mu);
        auto& v = shared_.values[{job_.rank, std::string(key)}];
        v.assign(static_cast<const std::byte*>(data), static_cast<const std::byte*>(data) + len);
        return rt::Errc::ok;
    }

    rt::Status fence() override
    {
        if (shared_.fences_are == LocalJob::Fences::none) {
            return rt::Errc::ok;
        }
        shared_.barrier.arrive_and_wait();
        if (job_.rank == 0) {
            std::lock_guard lock(shared_.mu);
            ++shared_.fences;
        }
        shared_.barrier.arrive_and_wait();
        return rt::Errc::ok;
    }

    rt::Status get(int rank, std::string_view key, std::vector<std::byte>& out) override
    {
        std::lock_guard lock(shared_.mu);
        auto it = shared_.values.find({rank, std::string(key)});
        if (it == shared_.values.end()) {
            return rt::Errc::invalid_arg;
        }
        out = it->second;
        return rt::Errc::ok;
    }

    [[noreturn]] void abort(int code, std::string_view msg) override
    {
        ADD_FAILURE() << "bootstrap abort(" << code << "): " << msg;
        std::abort();
    }

    rt::Status finalize() override { return rt::Errc::ok; }

    bool poll_event(rt::FailureEvent& ev) override
    {
        std::lock_guard lock(shared_.mu);
        if (events_.empty()) {
            return false;
        }
        ev = events_.front();
        events_.pop_front();
        return true;
    }
    void push_event(rt::FailureEvent ev)
    {
        std::lock_guard lock(shared_.mu);
        events_.push_back(std::move(ev));
    }

    int event_fd() const override { return -1; }
    const char* name() const override { return "local"; }

private:
    LocalJob& shared_;
    rt::JobInfo job_;
    std::deque<rt::FailureEvent> events_;
};

// ---------------------------------------------------------------------------
// Ranks that are processes.

class SocketBootstrap final : public rt::Bootstrap {
public:
    // `fd`: this rank's end of the socketpair (-1 for a job of one rank).
    SocketBootstrap(int fd, int rank, int size, const std::string& jobid) : fd_(fd)
    {
        job_.rank = rank;
        job_.size = size;
        job_.local_rank = rank;
        job_.local_size = size;
        job_.node_id = 0;
        job_.num_nodes = 1;
        job_.host = "unit";
        job_.jobid = jobid;
        job_.node_of_rank.assign(static_cast<std::size_t>(size), 0);
        job_.universe_size = size;
    }
    ~SocketBootstrap() override
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }

    const rt::JobInfo& job() const override { return job_; }

    rt::Status put(std::string_view key, const void* data, std::size_t len) override
    {
        auto& v = mine_[std::string(key)];
        v.assign(static_cast<const std::byte*>(data), static_cast<const std::byte*>(data) + len);
        return rt::Errc::ok;
    }

    rt::Status fence() override
    {
        if (fd_ < 0) {
            return rt::Errc::ok;
        }
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
        if (fd_ < 0) {
            return rt::Errc::ok;
        }
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
        if (fd_ < 0) {
            return rt::Errc::ok;
        }
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
        std::fflush(nullptr);
        _exit(3);
    }
    rt::Status finalize() override { return rt::Errc::ok; }
    bool poll_event(rt::FailureEvent&) override { return false; }
    int event_fd() const override { return -1; }
    const char* name() const override { return "socketpair"; }

private:
    static void put_u64(std::vector<std::byte>& v, std::uint64_t x)
    {
        auto* p = reinterpret_cast<const std::byte*>(&x);
        v.insert(v.end(), p, p + sizeof x);
    }
    static std::uint64_t get_u64(const std::vector<std::byte>& v, std::size_t& pos)
    {
        std::uint64_t x = 0;
        if (pos + sizeof x <= v.size()) {
            std::memcpy(&x, v.data() + pos, sizeof x);
        }
        pos += sizeof x;
        return x;
    }
    bool io(void* p, std::size_t n, bool write)
    {
        auto* b = static_cast<char*>(p);
        while (n > 0) {
            ssize_t r = write ? ::send(fd_, b, n, MSG_NOSIGNAL) : ::read(fd_, b, n);
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

// Exit code of a rank that asked to skip (GTEST_SKIP cannot cross a fork).
inline constexpr int kRankSkipped = 77;

inline std::string fresh_jobid(const char* prefix)
{
    static int counter = 0;
    return std::string(prefix) + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

// Ends a forked rank: its own failures make it exit 1.
[[noreturn]] inline void exit_rank(int code)
{
    if (::testing::Test::HasFailure()) {
        code = 1;
    }
    std::fflush(nullptr);
    _exit(code);
}

// Waits for a forked rank; its exit code, or -1 (reported) when it did not exit.
inline int wait_rank(pid_t pid, int rank)
{
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    ADD_FAILURE() << "rank " << rank << " died"
                  << (WIFSIGNALED(status) ? " by signal " + std::to_string(WTERMSIG(status)) : "")
                  << (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? " (its watchdog)" : "");
    return -1;
}

// Runs body(boot) as rank 1 in a forked child (killed by SIGALRM after
// `watchdog_s`) and as rank 0 here. Returns the child's exit code (0: its
// part passed; kRankSkipped: it asked to skip), -1 when it did not exit.
template <class Body> int run_pair(Body&& body, unsigned watchdog_s = 60)
{
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        ADD_FAILURE() << "socketpair: " << std::strerror(errno);
        return -1;
    }
    const std::string jobid = fresh_jobid("unit");
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
            SocketBootstrap boot(sv[1], 1, 2, jobid);
            code = body(boot);
        }
        exit_rank(code);
    }
    ::close(sv[1]);
    {
        SocketBootstrap boot(sv[0], 0, 2, jobid);
        (void)body(boot);
    } // closing the socket frees a child stuck in a fence
    return wait_rank(pid, 1);
}

// What run_ranks() tells the test process.
struct RanksRun {
    std::vector<pid_t> pids;
    std::string jobid;
};

// Runs body(boot) in `n` (1 or 2) forked ranks, each killed by SIGALRM
// after `watchdog_s`. `watch(run)`, if given, runs in the test process
// meanwhile (to kill a rank, say). Returns every rank's exit code (-1 when
// it did not exit normally).
inline std::vector<int> run_ranks(int n, const std::function<int(SocketBootstrap&)>& body,
                                  unsigned watchdog_s = 60,
                                  const std::function<void(const RanksRun&)>& watch = {},
                                  std::string jobid = {})
{
    std::vector<int> codes(static_cast<std::size_t>(n), -1);
    int sv[2] = {-1, -1};
    if (n == 2 && ::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        ADD_FAILURE() << "socketpair: " << std::strerror(errno);
        return codes;
    }
    RanksRun run;
    run.jobid = jobid.empty() ? fresh_jobid("unit") : std::move(jobid);
    std::fflush(nullptr);
    for (int r = 0; r < n; ++r) {
        pid_t pid = ::fork();
        if (pid < 0) {
            ADD_FAILURE() << "fork: " << std::strerror(errno);
            break;
        }
        if (pid == 0) {
            if (n == 2) {
                ::close(sv[1 - r]);
            }
            ::alarm(watchdog_s);
            int code = 0;
            {
                SocketBootstrap boot(n == 2 ? sv[r] : -1, r, n, run.jobid);
                code = body(boot);
            }
            exit_rank(code);
        }
        run.pids.push_back(pid);
    }
    if (n == 2) {
        ::close(sv[0]);
        ::close(sv[1]);
    }
    if (watch) {
        watch(run);
    }
    for (std::size_t r = 0; r < run.pids.size(); ++r) {
        codes[r] = wait_rank(run.pids[r], static_cast<int>(r));
    }
    return codes;
}

} // namespace ulmpi::test
