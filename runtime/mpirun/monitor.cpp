#include "runtime/mpirun/monitor.h"

#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/launcher.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ulmpi::rt::mpirun {
namespace {

constexpr Nanos kMs = 1000 * 1000;
constexpr Nanos kSec = 1000 * kMs;
constexpr Nanos kFailureGrace = 500 * kMs;   // SIGTERM -> SIGKILL after a failure
constexpr Nanos kInterruptGrace = 2 * kSec;  // ... after Ctrl-C / SIGTERM of mpirun
constexpr Nanos kLostGrace = 1 * kSec;       // connection gone, process still there
constexpr Nanos kDrainGrace = 1 * kSec;      // output still open after every rank ended

const char* signal_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

} // namespace

void report(const std::string& text)
{
    std::string line = "mpirun: " + text + "\n";
    std::size_t off = 0;
    while (off < line.size()) {
        ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        off += static_cast<std::size_t>(n);
    }
}

Monitor::~Monitor()
{
    if (sig_fd_ >= 0) {
        ::close(sig_fd_);
    }
}

std::string Monitor::who(int rank) const
{
    const Rank& r = ranks_[static_cast<std::size_t>(rank)];
    return "rank " + std::to_string(rank) + " (pid " + std::to_string(r.pid) + ")";
}

bool Monitor::setup()
{
    // Signals arrive through a descriptor in the poll loop.
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) {
        sigaddset(&set, s);
    }
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
        report(std::string("sigprocmask: ") + std::strerror(errno));
        return false;
    }
    sig_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sig_fd_ < 0) {
        report(std::string("signalfd: ") + std::strerror(errno));
        return false;
    }
    struct sigaction old{};
    struct sigaction ign{};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ign, &old);
    sigpipe_ignored_ = old.sa_handler == SIG_IGN;

    jobid_ = random_hex(8);
    if (!wire::secret_from_hex(random_hex(16), secret_)) {
        report("cannot make the job secret");
        return false;
    }
    wire::BootAddr addr;
    if (opts_.boot == BootKind::tcp) {
        addr.kind = wire::BootAddr::Kind::tcp;
        addr.ip = opts_.boot_ip;
        addr.port = 0;
    } else {
        addr.kind = wire::BootAddr::Kind::unix_abstract;
        addr.name = "ulmpi-" + jobid_;
    }
    std::string why;
    if (!listener_.listen(addr, why).ok()) {
        report(why);
        return false;
    }
    kv_ = std::make_unique<KvServer>(secret_, map_.node_of_rank(),
                                     static_cast<std::uint32_t>(map_.universe_size()), listener_);
    listener_.attach(*kv_);
    ranks_.resize(static_cast<std::size_t>(map_.size()));
    if (opts_.timeout_s > 0) {
        timeout_at_ = now_ns() + static_cast<Nanos>(opts_.timeout_s * 1e9);
    }
    return true;
}

void Monitor::launch_all()
{
    std::vector<std::string> warnings;
    std::vector<std::string> base = base_environment(opts_, warnings);
    for (const std::string& w : warnings) {
        report("warning: " + w);
    }
    // Every rank is on this host for now (node 0).
    std::vector<cpu_set_t> cpus = binding_sets(opts_.bind, map_.local_size(0));
    std::string cwd;
    if (!opts_.wdir.empty()) {
        char buf[PATH_MAX];
        if (::getcwd(buf, sizeof buf) != nullptr) {
            cwd = buf;
        }
    }
    // A background mpirun must not read its terminal (it would be stopped by
    // SIGTTIN): then the stdin rank reads /dev/null like the others.
    bool stdin_usable = !(::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) != ::getpgrp());
    std::string addr = wire::format_boot_addr(listener_.address());
    std::string secret = wire::secret_to_hex(secret_);

    for (int r = 0; r < map_.size() && !ending_; ++r) {
        const MapRank& mr = map_.rank(r);
        const MapHost& host = map_.host(mr.node);
        SpawnSpec spec;
        spec.argv = opts_.apps[static_cast<std::size_t>(mr.app)].argv;
        // --wdir must not change where a program given as ./prog is found.
        if (!cwd.empty() && spec.argv[0].find('/') != std::string::npos &&
            spec.argv[0][0] != '/') {
            spec.argv[0] = cwd + "/" + spec.argv[0];
        }
        spec.env = base;
        auto set = [&](const char* name, const std::string& value) {
            spec.env.push_back(std::string(name) + "=" + value);
        };
        set(wire::env::rank, std::to_string(r));
        set(wire::env::size, std::to_string(map_.size()));
        set(wire::env::local_rank, std::to_string(mr.local_rank));
        set(wire::env::local_size, std::to_string(map_.local_size(mr.node)));
        set(wire::env::node_id, std::to_string(mr.node));
        set(wire::env::num_nodes, std::to_string(map_.num_nodes()));
        set(wire::env::host, host.name);
        set(wire::env::jobid, jobid_);
        set(wire::env::boot_addr, addr);
        set(wire::env::job_secret, secret);
        set(wire::env::universe_size, std::to_string(map_.universe_size()));
        set(wire::env::appnum, std::to_string(mr.app));
        spec.wdir = opts_.wdir;
        spec.stdin_pipe = stdin_usable && r == opts_.stdin_rank;
        spec.sigpipe_ignored = sigpipe_ignored_;
        if (!cpus.empty()) {
            spec.bind = true;
            spec.cpus = cpus[static_cast<std::size_t>(mr.local_rank)];
        }

        Child child;
        SpawnFailure fail;
        Status st = spawn_rank(spec, child, fail);
        Rank& rank = ranks_[static_cast<std::size_t>(r)];
        if (child.pid > 0) {
            rank.pid = child.pid;
            rank_of_pid_[child.pid] = r;
            std::string prefix = opts_.tag_output ? "[" + std::to_string(r) + "] " : "";
            rank.out = std::make_unique<OutputStream>(child.out_fd, STDOUT_FILENO, prefix);
            rank.err = std::make_unique<OutputStream>(child.err_fd, STDERR_FILENO, prefix);
            if (child.in_fd >= 0) {
                stdin_.start(STDIN_FILENO, child.in_fd);
            }
            ULMPI_DEBUG("started rank %d: pid %d", r, static_cast<int>(child.pid));
        } else {
            rank.reaped = true; // nothing to wait for
        }
        if (!st.ok()) {
            std::string what;
            if (std::strcmp(fail.step, "exec") == 0) {
                what = "cannot run '" + spec.argv[0] + "': " + std::strerror(fail.err);
                if (fail.err == ENOENT && spec.argv[0].find('/') == std::string::npos) {
                    what = "cannot run '" + spec.argv[0] + "': not found in PATH";
                }
            } else if (std::strcmp(fail.step, "chdir") == 0) {
                what = "cannot change to directory '" + spec.wdir + "': " + std::strerror(fail.err);
            } else {
                what = std::string("cannot start rank ") + std::to_string(r) + " (" + fail.step +
                       "): " + std::strerror(fail.err);
            }
            int code = child.pid > 0 ? spawn_exit_status(fail) : exit_code::failure;
            end_job(code, r > 0 ? what + "; ending the job" : what, kFailureGrace);
        }
    }
    for (Rank& r : ranks_) {
        if (r.pid < 0) {
            r.reaped = true; // never started: nothing to wait for
        }
    }
}

void Monitor::end_job(int code, const std::string& message, Nanos grace)
{
    if (ending_) {
        return;
    }
    ending_ = true;
    exit_code_ = code;
    if (!message.empty()) {
        report(message);
    }
    if (kv_) {
        wire::Event ev;
        ev.kind = wire::EventKind::job_ending;
        ev.detail = message;
        kv_->broadcast(ev);
    }
    stdin_.stop();
    kill_all(SIGTERM);
    kill_at_ = now_ns() + grace;
}

void Monitor::interrupted(int sig)
{
    if (!ending_) {
        ending_ = true;
        exit_code_ = exit_code::signal_base + sig;
        report(std::string("caught ") + signal_name(sig) +
               "; passing it to the ranks (repeat it to kill them at once)");
        wire::Event ev;
        ev.kind = wire::EventKind::job_ending;
        ev.detail = std::string("mpirun caught ") + signal_name(sig);
        kv_->broadcast(ev);
        stdin_.stop();
        kill_all(sig);
        kill_at_ = now_ns() + kInterruptGrace;
        return;
    }
    kill_all(SIGKILL);
    kill_at_ = 0;
}

void Monitor::kill_all(int sig)
{
    // Reaped ranks too: their process groups may still hold what they started.
    for (const Rank& r : ranks_) {
        if (r.pid > 0) {
            signal_group(r.pid, sig);
        }
    }
}

bool Monitor::all_reaped() const
{
    for (const Rank& r : ranks_) {
        if (!r.reaped) {
            return false;
        }
    }
    return true;
}

bool Monitor::outputs_open() const
{
    for (const Rank& r : ranks_) {
        if ((r.out && r.out->open()) || (r.err && r.err->open())) {
            return true;
        }
    }
    return false;
}

void Monitor::judge_exit(int rank, int status)
{
    if (ending_) {
        return;
    }
    bool mpi = kv_->said_hello(rank);
    bool left_early = mpi && !kv_->finalized(rank);
    std::string when = left_early ? " before MPI_Finalize" : "";
    std::string detail;
    int code = 0;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char* desc = ::strsignal(sig);
        detail = "died from signal " + std::to_string(sig) + " (" + (desc ? desc : "?") + ")";
        code = exit_code::signal_base + sig;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        detail = "exited with status " + std::to_string(WEXITSTATUS(status));
        code = WEXITSTATUS(status);
    } else if (left_early) {
        detail = "exited with status 0";
        code = exit_code::failure;
    } else {
        return; // success
    }
    wire::Event ev;
    ev.kind = wire::EventKind::rank_failed;
    ev.rank = rank;
    ev.node = map_.rank(rank).node;
    ev.detail = detail;
    kv_->broadcast(ev);
    end_job(code, who(rank) + " " + detail + when + "; ending the job", kFailureGrace);
}

void Monitor::rank_lost(int rank, const std::string& reason)
{
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    if (r.reaped) {
        // Its exit has been judged already; if that was fine, the reason stands.
        end_job(exit_code::failure, who(rank) + " " + reason + "; ending the job", kFailureGrace);
        return;
    }
    // Most likely the process is dying and its exit status will say more:
    // wait a little for it.
    if (r.lost_deadline == 0) {
        r.lost_deadline = now_ns() + kLostGrace;
        r.lost_reason = reason;
    }
}

void Monitor::handle_notes(std::vector<KvServer::Note>& notes, bool deferred_part)
{
    using Kind = KvServer::Note::Kind;
    for (const KvServer::Note& n : notes) {
        bool deferred = n.kind == Kind::conn_lost || n.kind == Kind::fence_stuck;
        if (deferred != deferred_part) {
            continue;
        }
        switch (n.kind) {
        case Kind::hello:
            ULMPI_DEBUG("rank %d connected (pid %u)", n.rank, kv_->pid(n.rank));
            break;
        case Kind::finalize: ULMPI_DEBUG("rank %d finalized", n.rank); break;
        case Kind::abort: {
            std::string msg = "rank " + std::to_string(n.rank) + " called MPI_Abort with code " +
                              std::to_string(n.code);
            if (!n.text.empty()) {
                msg += " (" + n.text + ")";
            }
            end_job(wire::abort_exit_status(n.code), msg + "; ending the job", kFailureGrace);
            break;
        }
        case Kind::conn_lost:
            if (!ending_) {
                rank_lost(n.rank, "lost its connection to mpirun before MPI_Finalize");
            }
            break;
        case Kind::fence_stuck:
            if (!ending_) {
                rank_lost(n.rank, n.text);
            }
            break;
        }
    }
}

void Monitor::reap_children()
{
    for (;;) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR) {
            continue;
        }
        if (pid <= 0) {
            break;
        }
        auto it = rank_of_pid_.find(pid);
        if (it == rank_of_pid_.end()) {
            continue;
        }
        int r = it->second;
        ranks_[static_cast<std::size_t>(r)].reaped = true;
        ranks_[static_cast<std::size_t>(r)].lost_deadline = 0;
        if (r == opts_.stdin_rank) {
            stdin_.stop();
        }
        // Everything the rank sent is in its socket now: an ABORT or FINALIZE
        // there decides how its exit reads.
        listener_.drain_rank(r);
        std::vector<KvServer::Note> notes = kv_->take_notes();
        handle_notes(notes, false);
        judge_exit(r, status);
        kv_->rank_gone(r);
        std::vector<KvServer::Note> more = kv_->take_notes();
        notes.insert(notes.end(), more.begin(), more.end());
        handle_notes(notes, true);
    }
}

Nanos Monitor::next_deadline() const
{
    Nanos next = 0;
    auto consider = [&](Nanos t) {
        if (t != 0 && (next == 0 || t < next)) {
            next = t;
        }
    };
    if (!ending_) {
        consider(timeout_at_);
    }
    consider(kill_at_);
    consider(drain_until_);
    for (const Rank& r : ranks_) {
        consider(r.lost_deadline);
    }
    return next;
}

void Monitor::check_timers(Nanos now)
{
    if (!ending_ && timeout_at_ != 0 && now >= timeout_at_) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", opts_.timeout_s);
        end_job(exit_code::timeout,
                std::string("the job exceeded its time limit of ") + secs + " s; ending the job",
                kFailureGrace);
    }
    if (kill_at_ != 0 && now >= kill_at_) {
        ULMPI_DEBUG("grace period over: killing the ranks that are left");
        kill_all(SIGKILL);
        kill_at_ = 0;
    }
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        Rank& r = ranks_[i];
        if (r.lost_deadline != 0 && now >= r.lost_deadline) {
            r.lost_deadline = 0;
            if (!r.reaped) {
                end_job(exit_code::failure,
                        who(static_cast<int>(i)) + " " + r.lost_reason + "; ending the job",
                        kFailureGrace);
            }
        }
    }
}

void Monitor::loop()
{
    std::vector<pollfd> fds;
    for (;;) {
        Nanos now = now_ns();
        if (all_reaped()) {
            if (!outputs_open()) {
                return;
            }
            if (drain_until_ == 0) {
                drain_until_ = now + kDrainGrace;
            } else if (now >= drain_until_) {
                // Something the ranks started still holds their output open.
                ULMPI_DEBUG("output still open after every rank ended: killing stragglers");
                kill_all(SIGKILL);
                for (Rank& r : ranks_) {
                    if (r.out) {
                        r.out->close_now();
                    }
                    if (r.err) {
                        r.err->close_now();
                    }
                }
                return;
            }
        }

        fds.clear();
        fds.push_back(pollfd{sig_fd_, POLLIN, 0});
        std::size_t listener_begin = fds.size();
        listener_.add_fds(fds);
        std::size_t stdin_begin = fds.size();
        stdin_.add_fds(fds);
        std::size_t output_begin = fds.size();
        std::vector<OutputStream*> streams;
        for (Rank& r : ranks_) {
            for (OutputStream* s : {r.out.get(), r.err.get()}) {
                if (s != nullptr && s->open()) {
                    fds.push_back(pollfd{s->fd(), POLLIN, 0});
                    streams.push_back(s);
                }
            }
        }

        int timeout_ms = -1;
        if (Nanos next = next_deadline(); next != 0) {
            Nanos wait = next - now;
            timeout_ms = wait <= 0 ? 0 : static_cast<int>((wait + kMs - 1) / kMs);
        }
        int rc = ::poll(fds.data(), fds.size(), timeout_ms);
        if (rc < 0 && errno != EINTR) {
            report(std::string("poll: ") + std::strerror(errno));
            end_job(exit_code::failure, "", kFailureGrace);
        }
        if (rc > 0) {
            // Output first, so that a rank's last words come before the
            // consequences of its death.
            for (std::size_t i = 0; i < streams.size(); ++i) {
                if (fds[output_begin + i].revents != 0) {
                    streams[i]->on_ready();
                }
            }
            listener_.handle(fds.data() + listener_begin, stdin_begin - listener_begin);
            std::vector<KvServer::Note> notes = kv_->take_notes();
            handle_notes(notes, false);
            handle_notes(notes, true);
            stdin_.handle(fds.data() + stdin_begin, output_begin - stdin_begin);
            if (fds[0].revents != 0) {
                signalfd_siginfo si;
                bool child = false;
                while (::read(sig_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                    if (si.ssi_signo == SIGCHLD) {
                        child = true;
                    } else {
                        interrupted(static_cast<int>(si.ssi_signo));
                    }
                }
                if (child) {
                    reap_children();
                }
            }
        }
        check_timers(now_ns());
    }
}

int Monitor::run()
{
    if (!setup()) {
        return exit_code::failure;
    }
    launch_all();
    // Children reaped during the launch (a failed exec) are collected here too.
    reap_children();
    loop();
    listener_.shutdown();
    int removed = remove_job_shm_files(jobid_);
    if (removed > 0) {
        ULMPI_DEBUG("removed %d shared-memory file(s) of job %s", removed, jobid_.c_str());
    }
    if (kv_ && kv_->refused_count() > 0) {
        ULMPI_DEBUG("refused %u connection(s) without the job secret", kv_->refused_count());
    }
    return exit_code_;
}

} // namespace ulmpi::rt::mpirun
