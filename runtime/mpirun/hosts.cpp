// The other hosts of the job: their daemons (started through the launch
// agent, given their part of the job, stand-ins for their ranks), what the
// daemons report, a host that is lost, and the daemons' shutdown at the end.
#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/monitor.h"
#include "runtime/mpirun/monitor_timing.h"
#include "runtime/mpirun/launch_agent.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace ulmpi::rt::mpirun {

void Monitor::start_daemons()
{
    if (!map_.has_remote()) {
        return;
    }
    std::string why;
    std::string daemon = find_daemon(why);
    if (daemon.empty()) {
        end_job(exit_code::failure, why, kFailureGrace);
        return;
    }
    std::string tmpl = opts_.launch_agent.empty() ? boot::launch_agent_param() : opts_.launch_agent;
    std::vector<std::string> agent = split_words(tmpl);
    if (agent.empty()) {
        end_job(exit_code::failure, "the launch agent is empty (--launch-agent)", kFailureGrace);
        return;
    }
    for (Daemon& d : daemons_) {
        if (d.node >= 0 && !ending_) {
            start_daemon(d, daemon, agent);
        }
    }
}

void Monitor::start_daemon(Daemon& d, const std::string& daemon_path,
                           const std::vector<std::string>& agent)
{
    const std::string& host = host_name(d.node);
    SpawnSpec spec;
    bool has_host = false;
    for (const std::string& w : agent) {
        has_host = has_host || w.find("{host}") != std::string::npos;
        spec.argv.push_back(replace_all(w, "{host}", host));
    }
    if (!has_host) {
        spec.argv.push_back(host);
    }
    // A remote shell (ssh, rsh) reads the command back as a line: quote it.
    std::string agent0 = spec.argv[0].substr(spec.argv[0].rfind('/') + 1);
    bool shell = agent0 == "ssh" || agent0 == "rsh";
    std::vector<std::string> cmd = {daemon_path, "--boot",  boot_tcp_, "--node",
                                    std::to_string(d.node), "--host", host, "--jobid", jobid_};
    // Over ssh the daemon does not see mpirun's environment: pass what it needs.
    char keepalive[32];
    std::snprintf(keepalive, sizeof keepalive, "%g", boot::keepalive_param());
    cmd.insert(cmd.end(), {"--keepalive", keepalive});
    if (opts_.verbose) {
        cmd.push_back("--verbose");
    }
    for (const std::string& w : cmd) {
        spec.argv.push_back(shell ? shell_quote(w) : w);
    }
    for (const std::string& w : spec.argv) {
        d.agent_cmd += (d.agent_cmd.empty() ? "" : " ") + w;
    }
    std::vector<std::string> warnings;
    spec.env = base_environment(opts_, warnings);
    spec.stdin_pipe = true; // the secret
    spec.sigpipe_ignored = sigpipe_ignored_;
    spec.death_signal = SIGTERM; // the daemon cleans up its host, then exits
    Child child;
    SpawnFailure fail;
    Status st = spawn_rank(spec, child, fail);
    if (child.pid > 0) {
        d.agent_pid = child.pid;
        d.agent_reaped = false;
        node_of_agent_[child.pid] = d.node;
        d.agent_out = std::make_unique<OutputStream>(child.out_fd, STDERR_FILENO, "");
        d.agent_err = std::make_unique<OutputStream>(child.err_fd, STDERR_FILENO, "");
        d.connect_deadline = now_ns() + static_cast<Nanos>(boot::launch_timeout_param() * 1e9);
        ULMPI_DEBUG("host %s: started its daemon: %s (pid %d)", host.c_str(), d.agent_cmd.c_str(),
                    static_cast<int>(child.pid));
    }
    if (child.in_fd >= 0) {
        std::string line = wire::secret_to_hex(secret_) + "\n";
        ssize_t n = ::write(child.in_fd, line.data(), line.size()); // fits in the pipe
        (void)n;
        ::close(child.in_fd);
    }
    if (!st.ok()) {
        std::string what = "cannot start the daemon of host '" + host + "': cannot run '" +
                           spec.argv[0] + "': " + std::strerror(fail.err);
        d.lost = true;
        end_job(child.pid > 0 ? spawn_exit_status(fail) : exit_code::failure, what,
                kFailureGrace);
    }
}

wire::Launch Monitor::launch_frame(int node) const
{
    wire::Launch l;
    l.jobid = jobid_;
    l.host = host_name(node);
    l.node = node;
    l.size = static_cast<std::uint32_t>(map_.total());
    l.num_nodes = static_cast<std::uint32_t>(map_.num_nodes());
    l.universe_size = static_cast<std::uint32_t>(map_.universe_size());
    l.bind = static_cast<std::uint8_t>(opts_.bind);
    l.cwd = cwd_;
    l.wdir = opts_.wdir;
    for (const AppContext& app : opts_.apps) {
        std::vector<std::string> argv = app.argv;
        // ./prog is found from mpirun's directory, whatever --wdir says.
        if (!cwd_.empty() && argv[0].find('/') != std::string::npos && argv[0][0] != '/') {
            argv[0] = cwd_ + "/" + argv[0];
        }
        l.apps.push_back(std::move(argv));
    }
    std::vector<std::string> warnings;
    l.env = base_environment(opts_, warnings);
    if (map_.total() > map_.size()) {
        l.env.push_back(std::string(wire::env::first_slot) + "=" + std::to_string(map_.size()));
    }
    if (respawnable_) {
        // Failed ranks may be started again there (FT-MPI REBUILD): the
        // daemon keeps the notice board open, shm its segment's name.
        l.env.push_back(std::string(wire::env::respawnable) + "=1");
    }
    return l;
}

void Monitor::send_launch(Daemon& d)
{
    wire::Launch l = launch_frame(d.node);
    for (int r : map_.host(d.node).ranks) {
        wire::LaunchRank lr;
        lr.rank = r;
        lr.local_rank = map_.rank(r).local_rank;
        lr.app = map_.rank(r).app;
        lr.stdin_pipe = r == stdin_remote_rank_;
        l.ranks.push_back(lr);
    }
    listener_.send(d.conn, wire::encode(wire::Message{-1, std::move(l)}));
    // Failures announced before this daemon connected: its board must show
    // them to the ranks it starts.
    for (const wire::Event& ev : announced_) {
        listener_.send(d.conn, wire::encode(wire::Message{-1, ev}));
    }
}

void Monitor::on_daemon_msg(const KvServer::Note& n)
{
    const wire::Message& m = n.msg;
    int r = m.rank;
    Rank* rank = r >= 0 && r < map_.total() ? &ranks_[static_cast<std::size_t>(r)] : nullptr;
    if (const auto* s = std::get_if<wire::Spawned>(&m.body)) {
        if (rank == nullptr) {
            return;
        }
        if (s->pid > 0) {
            rank->pid = static_cast<pid_t>(s->pid);
            rank->rout_open = rank->rerr_open = true;
            ULMPI_DEBUG("host %s started rank %d: pid %u", host_name(n.node).c_str(), r, s->pid);
        } else {
            rank->reaped = true; // no EXITED will come
        }
        if (s->err != 0) {
            const int app = map_.rank(r).app; // -1: a spawned process
            const std::string& prog = app < 0 ? rank->spawn_cmd
                                              : opts_.apps[static_cast<std::size_t>(app)].argv[0];
            std::string what;
            SpawnFailure fail{s->err, s->step == "exec" ? "exec" : "other"};
            if (s->step == "exec") {
                what = "cannot run '" + prog + "' on host " + host_name(n.node) + ": " +
                       (s->err == ENOENT && prog.find('/') == std::string::npos
                            ? std::string("not found in PATH")
                            : std::string(std::strerror(s->err)));
            } else if (s->step == "chdir") {
                what = "cannot change to directory '" + (app < 0 ? rank->spawn_wdir : opts_.wdir) +
                       "' on host " +
                       host_name(n.node) + ": " + std::strerror(s->err);
            } else {
                what = "cannot start rank " + std::to_string(r) + " on host " +
                       host_name(n.node) + " (" + s->step + "): " + std::strerror(s->err);
            }
            end_job(s->pid > 0 ? spawn_exit_status(fail) : exit_code::failure,
                    what + "; ending the job", kFailureGrace);
        }
        return;
    }
    if (const auto* o = std::get_if<wire::Output>(&m.body)) {
        if (rank == nullptr || !rank->rout || n.node != rank->node) {
            return; // (an earlier process of a rank re-created on another host)
        }
        bool& open = o->stream == 1 ? rank->rout_open : rank->rerr_open;
        OutputSink& lines = o->stream == 1 ? *rank->rout : *rank->rerr;
        if (o->data.empty()) {
            if (open) {
                lines.finish();
                open = false;
            }
        } else {
            lines.feed(reinterpret_cast<const char*>(o->data.data()), o->data.size());
        }
        return;
    }
    if (const auto* e = std::get_if<wire::Exited>(&m.body)) {
        if (rank != nullptr && !rank->reaped && rank->remote && n.node == rank->node) {
            remote_exit(r, e->status);
        }
        return;
    }
    if (const auto* a = std::get_if<wire::Adopted>(&m.body)) {
        if (rank != nullptr) {
            on_adopted(n.node, r, *a);
        }
        return;
    }
    if (const auto* b = std::get_if<wire::Bye>(&m.body)) {
        Daemon& d = daemons_[static_cast<std::size_t>(n.node)];
        d.bye = true;
        daemon_refused_ += b->refused;
        ULMPI_DEBUG("host %s: daemon done (%u shared-memory file(s) removed, %u refused)",
                    host_name(n.node).c_str(), b->shm_removed, b->refused);
    }
}

// A remote rank's process ended: the same steps as reap_children() for a
// local one (its frames before EXITED have been handled already).
void Monitor::remote_exit(int r, int status)
{
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    rank.reaped = true;
    rank.lost_deadline = 0;
    if (r == stdin_remote_rank_) {
        stdin_remote_eof_ = true;
    }
    if (rank.respawn_pending > 0) {
        // The old process of a rank being replaced: judged already.
        start_again(r);
        return;
    }
    judge_exit(r, status);
    kv_->rank_gone(r);
    std::vector<KvServer::Note> more = kv_->take_notes();
    handle_notes(more, false);
    handle_notes(more, true);
    if (!waiting_spawns_.empty()) {
        retry_spawns(now_ns()); // a slot may be free now
    }
}

void Monitor::host_lost(int node, const std::string& reason)
{
    Daemon& d = daemons_[static_cast<std::size_t>(node)];
    bool first = !d.lost;
    d.lost = true;
    std::vector<int> lost; // ranks still running there: they are the failed ones
    const std::vector<int> here = ranks_on(node);
    for (int r : here) {
        Rank& rank = ranks_[static_cast<std::size_t>(r)];
        if (!rank.reaped && !policy_.failed(r)) {
            lost.push_back(r);
        }
        rank.reaped = true; // its process is gone with the daemon (or soon will be)
        rank.lost_deadline = 0;
        for (auto [lines, open] : {std::pair{rank.rout.get(), &rank.rout_open},
                                   std::pair{rank.rerr.get(), &rank.rerr_open}}) {
            if (lines != nullptr && *open) {
                lines->finish();
                *open = false;
            }
        }
        if (r == stdin_remote_rank_) {
            stdin_remote_eof_ = true;
        }
    }
    if (d.conn >= 0) {
        listener_.close(d.conn);
    }
    if (!d.agent_reaped) {
        signal_group(d.agent_pid, SIGTERM);
    }
    if (first && !reason.empty() && !ending_ && !finishing_) {
        if (policy_.on_host_lost(lost, d.connected) == FailurePolicy::Action::announce) {
            std::string which = lost.empty() ? std::string("no rank was running there")
                                : (lost.size() == 1 ? "rank " : "ranks ") + rank_list(lost) +
                                      " failed";
            report_ft(policy_, "host '" + host_name(node) + "' lost: " + reason + "; " + which +
                   "; the job goes on " + why_alive());
            announce_host(node, "host " + host_name(node) + " " + reason);
        } else {
            wire::Event ev;
            ev.kind = wire::EventKind::host_failed;
            ev.node = node;
            ev.detail = "host " + host_name(node) + " " + reason;
            kv_->broadcast(ev);
            end_job(exit_code::failure,
                    "host '" + host_name(node) + "' lost: " + reason + "; ending the job",
                    kFailureGrace);
        }
    }
    for (int r : here) {
        kv_->rank_gone(r);
    }
}

void Monitor::agent_ended(Daemon& d, int status)
{
    d.agent_reaped = true;
    d.closed_deadline = 0;
    if (d.bye || d.lost) {
        return;
    }
    std::string reason;
    if (!d.connected) {
        reason = "its daemon never connected: the launch agent (" + d.agent_cmd + ") " +
                 describe_status(status);
    } else if (d.daemon_pid == static_cast<std::uint32_t>(d.agent_pid)) {
        reason = "its daemon (pid " + std::to_string(d.agent_pid) + ") " + describe_status(status);
    } else {
        reason = "the launch agent of its daemon (pid " + std::to_string(d.agent_pid) + ") " +
                 describe_status(status);
    }
    host_lost(d.node, reason);
}

// Copies mpirun's stdin to the remote stdin rank, a bounded amount at a time.
void Monitor::pump_remote_stdin(bool readable)
{
    if (stdin_remote_rank_ < 0) {
        return;
    }
    int node = map_.rank(stdin_remote_rank_).node;
    ConnId conn = daemons_[static_cast<std::size_t>(node)].conn;
    if (conn < 0) {
        return;
    }
    wire::StdinData data;
    if (!stdin_remote_eof_ && readable) {
        char buf[16384];
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n > 0) {
            const auto* b = reinterpret_cast<const std::byte*>(buf);
            data.data.assign(b, b + n);
        } else if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            return;
        } else {
            stdin_remote_eof_ = true;
        }
    } else if (!stdin_remote_eof_) {
        return;
    }
    listener_.send(conn, wire::encode(wire::Message{stdin_remote_rank_, std::move(data)}));
    if (stdin_remote_eof_) {
        stdin_remote_rank_ = -1; // end of file sent: done
    }
}

// Every rank has ended: each daemon removes the job's files on its host,
// says BYE and exits; then its launch agent ends.
void Monitor::finish_daemons()
{
    finishing_ = true;
    bool any = false;
    for (Daemon& d : daemons_) {
        if (d.node < 0) {
            continue;
        }
        if (d.conn >= 0 && !d.bye) {
            listener_.send(d.conn, wire::encode(wire::Message{-1, wire::Shutdown{}}));
        }
        any = any || !d.agent_reaped;
    }
    if (!any) {
        return;
    }
    Nanos deadline = now_ns() + kDaemonExitGrace;
    bool killed = false;
    for (;;) {
        bool waiting = false;
        for (const Daemon& d : daemons_) {
            waiting = waiting || !d.agent_reaped ||
                      (d.agent_out && d.agent_out->open()) || (d.agent_err && d.agent_err->open());
        }
        if (!waiting) {
            return;
        }
        Nanos now = now_ns();
        if (now >= deadline) {
            if (killed) {
                // Agents that do not die even from SIGKILL are not waited for.
                ULMPI_WARN("launch agents still running after SIGKILL");
                return;
            }
            for (Daemon& d : daemons_) {
                if (!d.agent_reaped) {
                    ULMPI_DEBUG("host %s: daemon still running; killing its launch agent",
                                host_name(d.node).c_str());
                    signal_group(d.agent_pid, SIGKILL);
                }
                for (OutputStream* s : {d.agent_out.get(), d.agent_err.get()}) {
                    if (s != nullptr && d.agent_reaped) {
                        s->close_now();
                    }
                }
            }
            killed = true;
            deadline = now + kDaemonExitGrace;
        }
        Nanos wait = deadline - now;
        poll_once(static_cast<int>((wait + kMs - 1) / kMs), false);
    }
}

} // namespace ulmpi::rt::mpirun
