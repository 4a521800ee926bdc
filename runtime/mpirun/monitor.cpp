#include "runtime/mpirun/monitor.h"

#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/launcher.h"
#include "runtime/mpirun/monitor_timing.h"
#include "runtime/mpirun/net.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace ulmpi::rt::mpirun {
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

void report_ft(const FailurePolicy& policy, const std::string& text)
{
    if (!policy.mpich_rule()) {
        report(text);
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
    std::string where = r.remote ? " on " + host_name(r.node) : "";
    if (opts_.replicas > 1) {
        const int n = map_.size() / opts_.replicas;
        return "process " + std::to_string(rank) + " (rank " + std::to_string(rank % n) +
               ", replica " + std::to_string(rank / n) + "; pid " + std::to_string(r.pid) + where +
               ")";
    }
    return "rank " + std::to_string(rank) + " (pid " + std::to_string(r.pid) + where + ")";
}

std::string Monitor::why_alive() const
{
    return opts_.replicas > 1 ? "(--replicas)" : "(--with-ft)";
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
    // Address 0: this machine's ranks. Address 1: the daemons of other hosts.
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
    std::vector<std::string> host_of_node(static_cast<std::size_t>(map_.num_nodes()));
    daemons_.resize(static_cast<std::size_t>(map_.num_nodes()));
    if (map_.has_remote()) {
        std::vector<std::string> remote;
        for (int n = 0; n < map_.num_nodes(); ++n) {
            if (!map_.host(n).local) {
                remote.push_back(map_.host(n).name);
                host_of_node[static_cast<std::size_t>(n)] = map_.host(n).name;
                daemons_[static_cast<std::size_t>(n)].node = n;
            }
        }
        std::string ip;
        std::string spec = opts_.boot_if.empty() ? boot::if_param() : opts_.boot_if;
        if (!net::choose_boot_ip(spec, remote, ip, why)) {
            report(why);
            return false;
        }
        wire::BootAddr tcp;
        tcp.kind = wire::BootAddr::Kind::tcp;
        tcp.ip = ip;
        if (!listener_.listen(tcp, why).ok()) {
            report(why);
            return false;
        }
        boot_tcp_ = wire::format_boot_addr(listener_.address(1));
    }
    kv_ = std::make_unique<KvServer>(secret_, map_.node_of_rank(),
                                     static_cast<std::uint32_t>(map_.universe_size()), listener_);
    kv_->expect_daemons(std::move(host_of_node));
    listener_.attach(*kv_);
    ranks_.resize(static_cast<std::size_t>(map_.total()));
    for (int r = 0; r < map_.total(); ++r) {
        ranks_[static_cast<std::size_t>(r)].node = map_.rank(r).node;
    }
    if (map_.total() > map_.size()) {
        kv_->reserve_slots(map_.size());
        policy_.set_unborn(map_.size());
    }
    if (policy_.tolerant() && !board_.create(map_.total(), map_.num_nodes(), why).ok()) {
        report("cannot make the notice board of a fault-tolerant job: " + why);
        return false;
    }
    char buf[PATH_MAX];
    if (::getcwd(buf, sizeof buf) != nullptr) {
        cwd_ = buf;
    }
    if (opts_.timeout_s > 0) {
        timeout_at_ = now_ns() + static_cast<Nanos>(opts_.timeout_s * 1e9);
    }
    return true;
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
    for (const auto& s : retired_) {
        if (s->open()) {
            return true;
        }
    }
    return remote_outputs_open();
}

bool Monitor::remote_outputs_open() const
{
    for (const Rank& r : ranks_) {
        if (r.rout_open || r.rerr_open) {
            return true;
        }
    }
    return false;
}

void Monitor::close_outputs(bool remote)
{
    for (Rank& r : ranks_) {
        if (!remote) {
            if (r.out) {
                r.out->close_now();
            }
            if (r.err) {
                r.err->close_now();
            }
            continue;
        }
        if (r.rout_open) {
            r.rout->finish();
            r.rout_open = false;
        }
        if (r.rerr_open) {
            r.rerr->finish();
            r.rerr_open = false;
        }
    }
    if (!remote) {
        for (auto& s : retired_) {
            s->close_now();
        }
    }
}

void Monitor::handle_notes(std::vector<KvServer::Note>& notes, bool deferred_part)
{
    using Kind = KvServer::Note::Kind;
    for (const KvServer::Note& n : notes) {
        bool deferred = n.kind == Kind::conn_lost || n.kind == Kind::fence_stuck ||
                        n.kind == Kind::daemon_lost;
        if (deferred != deferred_part) {
            continue;
        }
        if ((n.kind == Kind::conn_lost || n.kind == Kind::fence_stuck) &&
            (n.code != kv_->incarnation(n.rank) ||
             ranks_[static_cast<std::size_t>(n.rank)].discarded)) {
            continue; // about a process that has been replaced, or discarded
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
        case Kind::conn_lost: {
            const Rank& r = ranks_[static_cast<std::size_t>(n.rank)];
            // A host that is gone has said what there is to say.
            if (!ending_ && !(r.remote && daemons_[static_cast<std::size_t>(r.node)].lost)) {
                rank_lost(n.rank, "lost its connection to mpirun before MPI_Finalize");
            }
            break;
        }
        case Kind::fence_stuck:
            // A fault-tolerant job waits for the verdict on a rank that is
            // gone but not judged yet: once failed, fences skip it.
            if (!ending_ && !policy_.failed(n.rank) &&
                !(policy_.tolerant() && !ranks_[static_cast<std::size_t>(n.rank)].reaped &&
                  !kv_->finalized(n.rank))) {
                rank_lost(n.rank, n.text);
            }
            break;
        case Kind::daemon_hello: {
            Daemon& d = daemons_[static_cast<std::size_t>(n.node)];
            d.conn = n.conn;
            d.connected = true;
            d.daemon_pid = static_cast<std::uint32_t>(n.code);
            ULMPI_DEBUG("host %s: daemon connected (pid %d)", n.text.c_str(), n.code);
            if (d.lost || ending_) {
                listener_.send(d.conn, wire::encode(wire::Message{-1, wire::Shutdown{}}));
            } else {
                send_launch(d);
            }
            break;
        }
        case Kind::daemon_msg: on_daemon_msg(n); break;
        case Kind::respawn: on_respawn(n.rank, n.code); break;
        case Kind::spawn: on_spawn(n, now_ns() + kSpawnSlotWait); break;
        case Kind::replica: on_replica(n); break;
        case Kind::daemon_lost: {
            Daemon& d = daemons_[static_cast<std::size_t>(n.node)];
            d.conn = -1;
            if (d.bye || d.lost) {
                break;
            }
            if (d.agent_reaped || ending_ || finishing_) {
                host_lost(n.node, "the connection to its daemon closed");
            } else {
                d.closed_deadline = now_ns() + kLostGrace / 2;
            }
            break;
        }
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
        if (auto a = node_of_agent_.find(pid); a != node_of_agent_.end()) {
            Daemon& d = daemons_[static_cast<std::size_t>(a->second)];
            // What the daemon sent before it ended decides how its end reads.
            if (d.conn >= 0) {
                listener_.drain(d.conn);
                std::vector<KvServer::Note> notes = kv_->take_notes();
                handle_notes(notes, false);
                handle_notes(notes, true);
            }
            agent_ended(d, status);
            continue;
        }
        auto it = rank_of_pid_.find(pid);
        if (it == rank_of_pid_.end()) {
            continue;
        }
        int r = it->second;
        rank_of_pid_.erase(it);
        if (ranks_[static_cast<std::size_t>(r)].discarded) {
            ranks_[static_cast<std::size_t>(r)].reaped = true;
            kv_->rank_gone(r);
            continue;
        }
        if (ranks_[static_cast<std::size_t>(r)].respawn_pending > 0) {
            // The old process of a rank being replaced: judged already.
            ranks_[static_cast<std::size_t>(r)].reaped = true;
            start_again(r);
            continue;
        }
        ranks_[static_cast<std::size_t>(r)].reaped = true;
        ranks_[static_cast<std::size_t>(r)].lost_deadline = 0;
        if (r == opts_.stdin_rank) {
            stdin_.stop();
        }
        // Everything the rank sent is in its socket now: an ABORT or FINALIZE
        // there decides how its exit reads.
        listener_.drain(kv_->conn_of(r));
        std::vector<KvServer::Note> notes = kv_->take_notes();
        handle_notes(notes, false);
        judge_exit(r, status);
        kv_->rank_gone(r);
        std::vector<KvServer::Note> more = kv_->take_notes();
        notes.insert(notes.end(), more.begin(), more.end());
        handle_notes(notes, true);
    }
    if (!waiting_spawns_.empty()) {
        retry_spawns(now_ns()); // a slot may be free now
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
    for (const Daemon& d : daemons_) {
        consider(d.closed_deadline);
    }
    if (!ending_) {
        consider(timeout_at_);
        for (const Daemon& d : daemons_) {
            if (d.node >= 0 && !d.connected && !d.lost) {
                consider(d.connect_deadline);
            }
        }
    }
    consider(kill_at_);
    consider(give_up_at_);
    consider(adoption_deadline());
    consider(drain_until_);
    if (drain_until_ != 0) {
        consider(drain_until_ + kDrainGrace);
    }
    for (const Rank& r : ranks_) {
        consider(r.lost_deadline);
    }
    for (const WaitingSpawn& w : waiting_spawns_) {
        consider(w.until);
    }
    return next;
}

void Monitor::check_timers(Nanos now)
{
    check_adoption(now);
    if (!ending_ && timeout_at_ != 0 && now >= timeout_at_) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", opts_.timeout_s);
        end_job(exit_code::timeout,
                std::string("the job exceeded its time limit of ") + secs + " s; ending the job",
                kFailureGrace);
    }
    for (Daemon& d : daemons_) {
        if (d.closed_deadline != 0 && now >= d.closed_deadline) {
            d.closed_deadline = 0;
            if (!d.lost) {
                host_lost(d.node, "the connection to its daemon closed");
            }
        }
        if (!ending_ && d.node >= 0 && !d.connected && !d.lost && now >= d.connect_deadline) {
            char secs[32];
            std::snprintf(secs, sizeof secs, "%g", boot::launch_timeout_param());
            host_lost(d.node, std::string("its daemon did not connect within ") + secs +
                                  " s (launch agent: " + d.agent_cmd + ")");
        }
    }
    if (kill_at_ != 0 && now >= kill_at_) {
        ULMPI_DEBUG("grace period over: killing the ranks that are left");
        kill_all(SIGKILL);
        kill_at_ = 0;
    }
    if (give_up_at_ != 0 && now >= give_up_at_) {
        // A host whose daemon is still connected but has not reported its
        // ranks' end (its link is down, say, and the keepalive is long): the
        // job does not wait for it any longer.
        give_up_at_ = 0;
        for (Daemon& d : daemons_) {
            if (d.node < 0 || d.lost) {
                continue;
            }
            bool waiting = false;
            for (int r : ranks_on(d.node)) {
                waiting = waiting || !ranks_[static_cast<std::size_t>(r)].reaped;
            }
            if (waiting) {
                report("host '" + host_name(d.node) + "' did not report the end of its ranks within " +
                       std::to_string(kSilentHostGrace / kSec) +
                       " s of the job's end; not waiting for it (processes may be left there)");
                host_lost(d.node, "");
            }
        }
    }
    for (const WaitingSpawn& w : waiting_spawns_) {
        if (now >= w.until || ending_) {
            retry_spawns(now); // its answer (no free slot, or the job ends) is due
            break;
        }
    }
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
        Rank& r = ranks_[i];
        if (r.lost_deadline != 0 && now >= r.lost_deadline) {
            r.lost_deadline = 0;
            auto rank = static_cast<int>(i);
            if (!r.reaped && !ending_ && !policy_.failed(rank)) {
                if (policy_.on_lost(rank) == FailurePolicy::Action::announce) {
                    report_ft(policy_, who(rank) + " " + r.lost_reason +
                           "; it is failed and killed, the job goes on " + why_alive());
                    announce_rank(rank, r.lost_reason);
                } else {
                    end_job(exit_code::failure, who(rank) + " " + r.lost_reason + "; ending the job",
                            kFailureGrace);
                }
            }
        }
    }
}

void Monitor::poll_once(int timeout_ms, bool stdin_too)
{
    std::vector<pollfd> fds;
    fds.push_back(pollfd{sig_fd_, POLLIN, 0});
    std::size_t listener_begin = fds.size();
    listener_.add_fds(fds);
    std::size_t stdin_begin = fds.size();
    if (stdin_too) {
        stdin_.add_fds(fds);
    }
    std::size_t remote_stdin = fds.size();
    bool want_stdin = false;
    if (stdin_too && stdin_remote_rank_ >= 0 && !stdin_remote_eof_) {
        ConnId conn = daemons_[static_cast<std::size_t>(map_.rank(stdin_remote_rank_).node)].conn;
        if (conn >= 0 && listener_.pending(conn) < kStdinQueue) {
            fds.push_back(pollfd{STDIN_FILENO, POLLIN, 0});
            want_stdin = true;
        }
    } else if (stdin_remote_rank_ >= 0 && stdin_remote_eof_) {
        pump_remote_stdin(false); // say end of file
    }
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
    for (Daemon& d : daemons_) {
        for (OutputStream* s : {d.agent_out.get(), d.agent_err.get()}) {
            if (s != nullptr && s->open()) {
                fds.push_back(pollfd{s->fd(), POLLIN, 0});
                streams.push_back(s);
            }
        }
    }
    for (auto& s : retired_) {
        if (s->open()) {
            fds.push_back(pollfd{s->fd(), POLLIN, 0});
            streams.push_back(s.get());
        }
    }

    int rc = ::poll(fds.data(), fds.size(), timeout_ms);
    if (rc < 0 && errno != EINTR) {
        report(std::string("poll: ") + std::strerror(errno));
        end_job(exit_code::failure, "", kFailureGrace);
    }
    if (rc <= 0) {
        return;
    }
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
    if (stdin_too) {
        stdin_.handle(fds.data() + stdin_begin, remote_stdin - stdin_begin);
    }
    if (want_stdin && fds[remote_stdin].revents != 0) {
        pump_remote_stdin(true);
    }
    if (fds[0].revents != 0) {
        signalfd_siginfo si;
        bool child = false;
        while (::read(sig_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
            if (si.ssi_signo == SIGCHLD) {
                child = true;
            } else if (finishing_) {
                // Every rank has ended: only the daemons are left to stop.
                for (Daemon& d : daemons_) {
                    if (!d.agent_reaped) {
                        signal_group(d.agent_pid, SIGKILL);
                    }
                }
                if (!ending_) {
                    ending_ = true;
                    exit_code_ = exit_code::signal_base + static_cast<int>(si.ssi_signo);
                }
            } else {
                interrupted(static_cast<int>(si.ssi_signo));
            }
        }
        if (child) {
            reap_children();
        }
    }
}

void Monitor::loop()
{
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
                // (A daemon does the same on its host and then ends the stream;
                // its streams get one more grace period.)
                ULMPI_DEBUG("output still open after every rank ended: killing stragglers");
                kill_all(SIGKILL);
                close_outputs(false);
                if (now >= drain_until_ + kDrainGrace) {
                    close_outputs(true);
                }
                if (!outputs_open()) {
                    return;
                }
            }
        }

        int timeout_ms = -1;
        if (Nanos next = next_deadline(); next != 0) {
            Nanos wait = next - now;
            timeout_ms = wait <= 0 ? 0 : static_cast<int>((wait + kMs - 1) / kMs);
        }
        poll_once(timeout_ms, true);
        check_timers(now_ns());
    }
}

int Monitor::run()
{
    policy_.set_mpich_rule(opts_.mpich_ft);
    policy_.set_replicated(opts_.replicas > 1);
    if (!setup()) {
        return exit_code::failure;
    }
    if (opts_.replicas > 1) {
        // A replica re-created by recovery is forked by its substitute; as
        // an orphan it becomes our child, so that its exit is judged as any
        // rank's (replica_adopt.cpp).
        ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    }
    launch_all();
    // Children reaped during the launch (a failed exec) are collected here too.
    reap_children();
    loop();
    if (!ending_) {
        std::string summary;
        exit_code_ = policy_.final_status(summary);
        if (!summary.empty()) {
            report_ft(policy_, summary);
        }
    }
    finish_daemons();
    listener_.shutdown();
    int removed = remove_job_shm_files(jobid_);
    if (removed > 0) {
        ULMPI_DEBUG("removed %d shared-memory file(s) of job %s", removed, jobid_.c_str());
    }
    unsigned refused = (kv_ ? kv_->refused_count() : 0) + daemon_refused_;
    if (refused > 0) {
        ULMPI_DEBUG("refused %u connection(s) without the job secret", refused);
    }
    return exit_code_;
}

OutputSink Monitor::out_sink(int r, int fd)
{
    // Replication: the program's rank, and its replicas' stdout written once;
    // stderr stays each process's own (its messages name the process).
    const int n = opts_.replicas > 1 ? map_.size() / opts_.replicas : map_.size();
    const int rank = opts_.replicas > 1 ? r % n : r;
    std::string prefix = opts_.tag_output ? "[" + std::to_string(rank) + "] " : "";
    if (opts_.replicas <= 1 || fd != STDOUT_FILENO) {
        return OutputSink(fd, std::move(prefix));
    }
    if (merged_out_.empty()) {
        merged_out_.resize(static_cast<std::size_t>(n));
    }
    auto& m = merged_out_[static_cast<std::size_t>(rank)];
    if (!m) {
        m = std::make_shared<ReplicaOutput>(fd, prefix, opts_.replicas);
    }
    return OutputSink(m, m->stream(r / n));
}

} // namespace ulmpi::rt::mpirun
