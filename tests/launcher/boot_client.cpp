// A non-MPI rank for the launcher tests: it uses the bootstrap directly.
//
//   boot_client kv                 put/fence/get across all ranks, twice; finalize
//   boot_client env                print the job as the bootstrap sees it; finalize
//   boot_client abort CODE         the last rank aborts, the others wait in a fence
//   boot_client segv R             rank R segfaults, the others wait in a fence
//   boot_client exit R N           rank R exits with N without finalize; others fence
//   boot_client sleep              print "ready R", then sleep (SIGTERM ends it)
//   boot_client sleep-stubborn     the same, ignoring SIGINT and SIGTERM
//   boot_client events             rank 1 dies; rank 0 (ignoring SIGTERM) prints the
//                                  events it receives
//   boot_client closeconn R        rank R closes its bootstrap socket and sleeps
//   boot_client ft R HOW           (mpirun --with-ft ulfm) rank R fails after a
//                                  fence (HOW: kill = SIGKILL, exit0 = exit 0
//                                  without finalize, close = close its socket
//                                  and sleep); the others watch the notice word
//                                  without a system call until it changes,
//                                  print the notices, fence again without R
//                                  (twice), finalize and exit 0. R = -1: nobody
//                                  here fails; wait for a notice (a host killed
//                                  from outside) after printing "ready R"
//   boot_client final-exit R N     everyone finalizes; then rank R exits N
//   boot_client refused            connect with a wrong secret
//   boot_client shm                rank 0 creates /dev/shm/ulmpi-<jobid>-test, then
//                                  the last rank aborts
//   boot_client lines N LEN        write N lines of LEN bytes, each in several writes
//   boot_client singleton          (without mpirun) the singleton bootstrap
//   boot_client singleton-abort C  (without mpirun) abort with code C
#include "runtime/bootstrap.h"
#include "runtime/status.h"

#include <atomic>
#include <cerrno>
#include <ctime>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

using ulmpi::rt::Bootstrap;
using ulmpi::rt::Errc;
using ulmpi::rt::FailureEvent;

namespace {

[[noreturn]] void die(const char* fmt, const std::string& what)
{
    std::fprintf(stderr, "boot_client: ");
    std::fprintf(stderr, fmt, what.c_str());
    std::fprintf(stderr, "\n");
    std::exit(99);
}

std::unique_ptr<Bootstrap> boot()
{
    std::string why;
    auto b = ulmpi::rt::make_bootstrap(why);
    if (!b) {
        die("make_bootstrap failed: %s", why);
    }
    return b;
}

void say(const std::string& line)
{
    std::string l = line + "\n";
    ssize_t n = ::write(STDOUT_FILENO, l.data(), l.size());
    (void)n;
}

void put_text(Bootstrap& b, const std::string& key, const std::string& value)
{
    if (!b.put(key, value.data(), value.size()).ok()) {
        die("put %s failed", key);
    }
}

std::string get_text(Bootstrap& b, int rank, const std::string& key)
{
    std::vector<std::byte> out;
    ulmpi::rt::Status st = b.get(rank, key, out);
    if (!st.ok()) {
        die("get failed for %s", std::to_string(rank) + "/" + key);
    }
    return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

void fence(Bootstrap& b)
{
    if (!b.fence().ok()) {
        die("fence failed%s", "");
    }
}

[[noreturn]] void wait_forever()
{
    for (;;) {
        ::pause();
    }
}

int kv()
{
    auto b = boot();
    const auto& job = b->job();
    for (int round = 0; round < 2; ++round) {
        std::string key = "addr" + std::to_string(round);
        put_text(*b, key,
                 "value " + std::to_string(round) + " of rank " + std::to_string(job.rank));
        fence(*b);
        for (int r = 0; r < job.size; ++r) {
            std::string want = "value " + std::to_string(round) + " of rank " + std::to_string(r);
            std::string got = get_text(*b, r, key);
            if (got != want) {
                die("bad value: %s", got);
            }
        }
    }
    std::vector<std::byte> out;
    if (b->get(0, "missing", out).code() != Errc::invalid_arg) {
        die("get of a missing key did not fail%s", "");
    }
    if (static_cast<int>(job.node_of_rank.size()) != job.size) {
        die("node_of_rank has the wrong size%s", "");
    }
    // A large value goes through too (more than one socket buffer).
    std::string big(300000, static_cast<char>('a' + job.rank % 26));
    put_text(*b, "big", big);
    fence(*b);
    for (int r = 0; r < job.size; ++r) {
        if (get_text(*b, r, "big") != std::string(300000, static_cast<char>('a' + r % 26))) {
            die("bad big value from rank %s", std::to_string(r));
        }
    }
    say("rank " + std::to_string(job.rank) + " of " + std::to_string(job.size) + " ok");
    return b->finalize().ok() ? 0 : 98;
}

int env()
{
    auto b = boot();
    const auto& j = b->job();
    std::string nodes;
    for (int n : j.node_of_rank) {
        nodes += std::to_string(n);
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "rank=%d size=%d local_rank=%d local_size=%d node=%d num_nodes=%d host=%s "
                  "jobid=%s appnum=%d universe=%d nodes=%s impl=%s",
                  j.rank, j.size, j.local_rank, j.local_size, j.node_id, j.num_nodes,
                  j.host.c_str(), j.jobid.c_str(), j.appnum, j.universe_size, nodes.c_str(),
                  b->name());
    say(line);
    fence(*b);
    return b->finalize().ok() ? 0 : 98;
}

int sleeper(bool stubborn)
{
    if (stubborn) {
        std::signal(SIGINT, SIG_IGN);
        std::signal(SIGTERM, SIG_IGN);
    }
    auto b = boot();
    say("ready " + std::to_string(b->job().rank));
    ::sleep(60);
    return 0;
}

int events()
{
    std::signal(SIGTERM, SIG_IGN);
    auto b = boot();
    fence(*b);
    if (b->job().rank == 1) {
        std::signal(SIGKILL, SIG_DFL);
        ::raise(SIGKILL);
    }
    if (b->job().rank != 0) {
        wait_forever();
    }
    bool ending = false;
    for (int i = 0; i < 500 && !ending; ++i) {
        FailureEvent ev;
        while (b->poll_event(ev)) {
            if (ev.kind == FailureEvent::Kind::rank_failed) {
                say("event rank_failed " + std::to_string(ev.rank) + " " + ev.detail);
            } else if (ev.kind == FailureEvent::Kind::job_ending) {
                say("event job_ending");
                ending = true;
            }
        }
        pollfd p{b->event_fd(), POLLIN, 0};
        ::poll(&p, 1, 10);
    }
    return 0;
}

int ft(int victim, const std::string& how)
{
    auto b = boot();
    const std::atomic<std::uint64_t>* word = b->notice_word();
    if (word == nullptr) {
        die("%s", "no notice word: is this job started with --with-ft ulfm?");
    }
    const auto& job = b->job();
    int me = job.rank;
    fence(*b);
    if (me == victim) {
        if (how == "exit0") {
            std::exit(0);
        }
        if (how == "close") {
            ::close(b->event_fd());
            ::sleep(30);
            return 0;
        }
        std::signal(SIGKILL, SIG_DFL);
        ::raise(SIGKILL);
    }
    say("ready " + std::to_string(me));
    // Spin on the word only (no system call), as ULM's progress loop does,
    // with a watchdog.
    std::uint64_t seen = 0;
    timespec start{};
    ::clock_gettime(CLOCK_MONOTONIC, &start);
    while (word->load(std::memory_order_acquire) == seen) {
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 15) {
            die("%s", "the notice word never changed");
        }
        sched_yield();
    }
    std::vector<bool> failed(static_cast<std::size_t>(job.size), false);
    bool got = false;
    for (int i = 0; i < 200 && !got; ++i) {
        FailureEvent ev;
        while (b->poll_event(ev)) {
            if (ev.kind == FailureEvent::Kind::rank_failed) {
                say("rank " + std::to_string(me) + " notice rank_failed " +
                    std::to_string(ev.rank) + " " + ev.detail);
                failed[static_cast<std::size_t>(ev.rank)] = true;
                got = got || victim < 0 || ev.rank == victim;
            } else if (ev.kind == FailureEvent::Kind::host_failed) {
                say("rank " + std::to_string(me) + " notice host_failed " +
                    std::to_string(ev.node_id) + " " + ev.detail);
                for (int r = 0; r < job.size; ++r) {
                    if (job.node_of_rank[static_cast<std::size_t>(r)] == ev.node_id) {
                        failed[static_cast<std::size_t>(r)] = true;
                    }
                }
                got = got || victim < 0 ||
                      job.node_of_rank[static_cast<std::size_t>(victim)] == ev.node_id;
            } else if (ev.kind == FailureEvent::Kind::job_ending) {
                die("%s", "job_ending in a fault-tolerant job: " + ev.detail);
            }
        }
        if (!got) {
            pollfd p{b->event_fd(), POLLIN, 0};
            ::poll(&p, 1, 10);
        }
    }
    if (!got) {
        die("%s", "the word changed but no failure notice came");
    }
    // Fences go on without the failed ranks; the survivors' values arrive.
    put_text(*b, "after", std::to_string(me));
    fence(*b);
    int peer = me;
    for (int k = 1; k < job.size; ++k) {
        int r = (me + k) % job.size;
        if (!failed[static_cast<std::size_t>(r)]) {
            peer = r;
            break;
        }
    }
    if (get_text(*b, peer, "after") != std::to_string(peer)) {
        die("%s", "wrong value after the failure");
    }
    fence(*b);
    say("rank " + std::to_string(me) + " ft ok");
    return b->finalize().ok() ? 0 : 98;
}

// Every rank fences and finalizes; then rank `who` exits with `code`.
int exit_after_finalize(int who, int code)
{
    auto b = boot();
    fence(*b);
    if (!b->finalize().ok()) {
        return 98;
    }
    return b->job().rank == who ? code : 0;
}

} // namespace

int main(int argc, char** argv)
{
    std::string mode = argc > 1 ? argv[1] : "";
    auto arg = [&](int i) { return i < argc ? std::atoi(argv[i]) : 0; };

    if (mode == "kv") {
        return kv();
    }
    if (mode == "env") {
        return env();
    }
    if (mode == "abort" || mode == "segv" || mode == "exit") {
        auto b = boot();
        int me = b->job().rank;
        int last = b->job().size - 1;
        if (mode == "abort" && me == last) {
            b->abort(arg(2), "test abort");
        }
        if (mode == "segv" && me == arg(2)) {
            std::signal(SIGSEGV, SIG_DFL);
            ::raise(SIGSEGV);
        }
        if (mode == "exit" && me == arg(2)) {
            std::exit(arg(3));
        }
        (void)b->fence(); // blocks: the failing rank never joins
        say("fence returned on rank " + std::to_string(me));
        wait_forever();
    }
    if (mode == "sleep" || mode == "sleep-stubborn") {
        return sleeper(mode == "sleep-stubborn");
    }
    if (mode == "events") {
        return events();
    }
    if (mode == "ft") {
        return ft(arg(2), argc > 3 ? argv[3] : "kill");
    }
    if (mode == "final-exit") {
        return exit_after_finalize(arg(2), arg(3));
    }
    if (mode == "closeconn") {
        auto b = boot();
        if (b->job().rank == arg(2)) {
            ::close(b->event_fd());
        }
        ::sleep(30);
        return 0;
    }
    if (mode == "refused") {
        ::setenv("ULMPI_JOB_SECRET", "00000000000000000000000000000000", 1);
        std::string why;
        auto b = ulmpi::rt::make_bootstrap(why);
        say(b ? "connected" : "refused: " + why);
        return 0;
    }
    if (mode == "shm") {
        auto b = boot();
        if (b->job().rank == 0) {
            std::string name = "/ulmpi-" + b->job().jobid + "-test";
            int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
            if (fd < 0) {
                die("shm_open: %s", std::strerror(errno));
            }
            ::close(fd);
            say("created /dev/shm" + name);
        }
        fence(*b);
        if (b->job().rank == b->job().size - 1) {
            b->abort(3, "shm test");
        }
        wait_forever();
    }
    if (mode == "lines") {
        int n = arg(2);
        int len = arg(3);
        const char* r = std::getenv("ULMPI_RANK");
        std::string rank = r != nullptr ? r : "x";
        for (int i = 0; i < n; ++i) {
            // "<rank>:<i>:" then filler of the rank's letter, cut into 3 writes.
            std::string line = rank + ":" + std::to_string(i) + ":";
            char fill = static_cast<char>('a' + std::atoi(rank.c_str()) % 26);
            line.append(static_cast<std::size_t>(len) - line.size(), fill);
            line.push_back('\n');
            std::size_t third = line.size() / 3;
            for (std::size_t off = 0; off < line.size();) {
                std::size_t chunk = std::min(third == 0 ? line.size() : third, line.size() - off);
                ssize_t w = ::write(STDOUT_FILENO, line.data() + off, chunk);
                if (w <= 0) {
                    return 97;
                }
                off += static_cast<std::size_t>(w);
                sched_yield();
            }
        }
        return 0;
    }
    if (mode == "singleton") {
        auto b = boot();
        const auto& j = b->job();
        put_text(*b, "k", "v");
        fence(*b);
        bool ok = j.rank == 0 && j.size == 1 && std::string(b->name()) == "singleton" &&
                  get_text(*b, 0, "k") == "v" && !j.jobid.empty() && j.node_of_rank.size() == 1;
        FailureEvent ev;
        ok = ok && !b->poll_event(ev) && b->finalize().ok();
        say(ok ? "singleton ok" : "singleton BAD");
        return ok ? 0 : 1;
    }
    if (mode == "singleton-abort") {
        auto b = boot();
        b->abort(arg(2), "singleton abort");
    }
    std::fprintf(stderr, "boot_client: unknown mode '%s'\n", mode.c_str());
    return 2;
}
