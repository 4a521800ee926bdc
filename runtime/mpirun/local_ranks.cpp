// This machine's ranks: the start of the job's own ranks (launch_all) and
// the spawn description of a local rank (program, environment, binding).
#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/monitor.h"
#include "runtime/mpirun/monitor_timing.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unistd.h>

namespace ulmpi::rt::mpirun {

void Monitor::launch_all()
{
    std::vector<std::string> warnings;
    base_env_ = base_environment(opts_, warnings);
    for (const std::string& w : warnings) {
        report("warning: " + w);
    }
    respawnable_ = policy_.tolerant() &&
                   std::find(base_env_.begin(), base_env_.end(), "ULMPI_FT_MODE=rebuild") !=
                       base_env_.end();
    if (respawnable_) {
        base_env_.push_back(std::string(wire::env::respawnable) + "=1");
    }
    if (map_.total() > map_.size()) {
        base_env_.push_back(std::string(wire::env::first_slot) + "=" +
                            std::to_string(map_.size()));
    }
    // The daemons start first: they take longest, and run meanwhile.
    start_daemons();

    // A background mpirun must not read its terminal (it would be stopped by
    // SIGTTIN): then the stdin rank reads /dev/null like the others.
    stdin_usable_ = !(::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) != ::getpgrp());
    if (stdin_usable_ && opts_.stdin_rank >= 0 &&
        !map_.host(map_.rank(opts_.stdin_rank).node).local) {
        stdin_remote_rank_ = opts_.stdin_rank;
        stdin_remote_eof_ = false;
    }
    int local_node = -1;
    for (int n = 0; n < map_.num_nodes(); ++n) {
        if (map_.host(n).local) {
            local_node = n;
        }
    }
    if (local_node >= 0) {
        cpus_ = binding_sets(opts_.bind, map_.local_size(local_node));
        std::string why;
        if (!shm_.make(why)) {
            ULMPI_DEBUG("no anonymous shared memory (%s): the ranks name a segment", why.c_str());
        }
    }

    // Ranks are forked without waiting for each exec (which, on a loaded
    // machine, waits for the child to be scheduled): up to kSpawnWindow
    // children whose exec is not known yet, each exec report read in rank
    // order, so a program that cannot start is still named by its first rank.
    constexpr std::size_t kSpawnWindow = 64;
    struct Pending {
        int rank;
        int report_fd;
        std::string program;
        std::string wdir;
    };
    std::deque<Pending> pending;
    auto failed = [&](int r, const std::string& program, const std::string& wdir,
                      const SpawnFailure& fail) {
        std::string what;
        if (std::strcmp(fail.step, "exec") == 0) {
            what = "cannot run '" + program + "': " + std::strerror(fail.err);
            if (fail.err == ENOENT && program.find('/') == std::string::npos) {
                what = "cannot run '" + program + "': not found in PATH";
            }
        } else if (std::strcmp(fail.step, "chdir") == 0) {
            what = "cannot change to directory '" + wdir + "': " + std::strerror(fail.err);
        } else {
            what = std::string("cannot start rank ") + std::to_string(r) + " (" + fail.step +
                   "): " + std::strerror(fail.err);
        }
        const Rank& rank = ranks_[static_cast<std::size_t>(r)];
        int code = rank.pid > 0 ? spawn_exit_status(fail) : exit_code::failure;
        end_job(code, r > 0 ? what + "; ending the job" : what, kFailureGrace);
    };
    auto await_oldest = [&] {
        Pending p = std::move(pending.front());
        pending.pop_front();
        SpawnFailure fail;
        if (!await_exec(p.report_fd, fail).ok() && !ending_) {
            failed(p.rank, p.program, p.wdir, fail);
        }
    };
    for (int r = 0; r < map_.size() && !ending_; ++r) {
        const MapRank& mr = map_.rank(r);
        const MapHost& host = map_.host(mr.node);
        Rank& rank = ranks_[static_cast<std::size_t>(r)];
        if (!host.local) {
            rank.remote = true;
            rank.rout = std::make_unique<OutputSink>(out_sink(r, STDOUT_FILENO));
            rank.rerr = std::make_unique<OutputSink>(out_sink(r, STDERR_FILENO));
            continue; // its daemon starts it
        }
        SpawnSpec spec = local_spec(r);
        Child child;
        SpawnFailure fail;
        int report_fd = -1;
        Status st = start_rank(spec, child, report_fd, fail);
        if (child.pid > 0) {
            rank.pid = child.pid;
            rank_of_pid_[child.pid] = r;
            rank.out = std::make_unique<OutputStream>(child.out_fd, out_sink(r, STDOUT_FILENO));
            rank.err = std::make_unique<OutputStream>(child.err_fd, out_sink(r, STDERR_FILENO));
            if (child.in_fd >= 0) {
                stdin_.start(STDIN_FILENO, child.in_fd);
            }
            ULMPI_DEBUG("started rank %d: pid %d", r, static_cast<int>(child.pid));
        } else {
            rank.reaped = true; // nothing to wait for
        }
        if (!st.ok()) {
            // Not forked (pipe, fork): the ranks before it are judged first.
            while (!pending.empty() && !ending_) {
                await_oldest();
            }
            if (!ending_) {
                failed(r, spec.argv[0], spec.wdir, fail);
            }
            break;
        }
        pending.push_back(Pending{r, report_fd, std::move(spec.argv[0]), std::move(spec.wdir)});
        while (pending.size() >= kSpawnWindow && !ending_) {
            await_oldest();
        }
    }
    while (!pending.empty()) {
        if (ending_) {
            ::close(pending.front().report_fd);
            pending.pop_front();
        } else {
            await_oldest();
        }
    }
    for (Rank& r : ranks_) {
        if (r.pid < 0 && !r.remote) {
            r.reaped = true; // never started: nothing to wait for
        }
    }
    if (!respawnable_ && map_.total() == map_.size()) {
        // Every local rank has them; the mappings stay.
        board_.close_fd();
        shm_.close();
    }
}

RankEnv Monitor::rank_env(int r, int appnum, int local_size) const
{
    const MapRank& mr = map_.rank(r);
    RankEnv e;
    e.rank = r;
    e.size = map_.total();
    e.local_rank = mr.local_rank;
    e.local_size = local_size;
    e.node = mr.node;
    e.num_nodes = map_.num_nodes();
    e.host = map_.host(mr.node).name;
    e.jobid = jobid_;
    e.boot_addr = wire::format_boot_addr(listener_.address());
    e.secret = wire::secret_to_hex(secret_);
    e.universe_size = map_.universe_size();
    e.appnum = appnum;
    e.notice_fd = board_.fd();
    e.shm_fd = shm_.fd();
    return e;
}

SpawnSpec Monitor::local_spec(int r) const
{
    const MapRank& mr = map_.rank(r);
    SpawnSpec spec;
    spec.argv = opts_.apps[static_cast<std::size_t>(mr.app)].argv;
    // --wdir must not change where a program given as ./prog is found.
    if (!opts_.wdir.empty() && !cwd_.empty() && spec.argv[0].find('/') != std::string::npos &&
        spec.argv[0][0] != '/') {
        spec.argv[0] = cwd_ + "/" + spec.argv[0];
    }
    spec.env = base_env_;
    append_rank_env(spec.env, rank_env(r, mr.app, map_.local_size(mr.node)));
    spec.keep_fds = {board_.fd(), shm_.fd()};
    spec.wdir = opts_.wdir;
    spec.stdin_pipe = stdin_usable_ && r == opts_.stdin_rank;
    spec.sigpipe_ignored = sigpipe_ignored_;
    if (!cpus_.empty() && !ranks_[static_cast<std::size_t>(r)].moved) {
        spec.bind = true;
        spec.cpus = cpus_[static_cast<std::size_t>(mr.local_rank)];
    }
    return spec;
}

} // namespace ulmpi::rt::mpirun
