#include "runtime/mpirun/monitor.h"

#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/launcher.h"
#include "runtime/mpirun/net.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <cmath>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace ulmpi::rt::mpirun {
namespace {

constexpr Nanos kMs = 1000 * 1000;
constexpr Nanos kSec = 1000 * kMs;
constexpr Nanos kFailureGrace = 500 * kMs;   // SIGTERM -> SIGKILL after a failure
constexpr Nanos kInterruptGrace = 2 * kSec;  // ... after Ctrl-C / SIGTERM of mpirun
constexpr Nanos kLostGrace = 1 * kSec;       // connection gone, process still there
constexpr Nanos kDrainGrace = 1 * kSec;      // output still open after every rank ended
constexpr Nanos kDaemonExitGrace = 5 * kSec; // SHUTDOWN -> the launch agents must have ended
constexpr Nanos kSilentHostGrace = 10 * kSec; // job ending -> a daemon must have reported its ranks
constexpr std::size_t kStdinQueue = 256 * 1024; // stdin bytes queued for a daemon at most

const char* signal_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

std::string describe_status(int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char* desc = ::strsignal(sig);
        return "was killed by signal " + std::to_string(sig) + " (" + (desc ? desc : "?") + ")";
    }
    return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// Words of a launch agent template, split at blanks; '...' and "..." group.
std::vector<std::string> split_words(const std::string& text)
{
    std::vector<std::string> out;
    std::string cur;
    bool in_word = false;
    char quote = 0;
    for (char c : text) {
        if (quote != 0) {
            if (c == quote) {
                quote = 0;
            } else {
                cur.push_back(c);
            }
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) {
                out.push_back(cur);
                cur.clear();
                in_word = false;
            }
        } else {
            cur.push_back(c);
            in_word = true;
        }
    }
    if (in_word) {
        out.push_back(cur);
    }
    return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to)
{
    for (std::size_t pos = s.find(from); pos != std::string::npos;
         pos = s.find(from, pos + to.size())) {
        s.replace(pos, from.size(), to);
    }
    return s;
}

// A word a remote shell (ssh) reads back as itself.
std::string shell_quote(const std::string& w)
{
    if (!w.empty() && w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_-+=/.,:@%") == std::string::npos) {
        return w;
    }
    return "'" + replace_all(w, "'", "'\\''") + "'";
}

bool is_executable(const std::string& path)
{
    return ::access(path.c_str(), X_OK) == 0;
}

// ulmpi_daemon: ULMPI_BOOT_DAEMON, else next to mpirun (installed: both in
// bindir), else where the build tree puts it (runtime/daemon/ beside
// runtime/mpirun/).
std::string find_daemon(std::string& why)
{
    const std::string& forced = boot::daemon_param();
    if (!forced.empty()) {
        return forced;
    }
    char self[PATH_MAX] = {};
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        why = "cannot find mpirun's own path to look for ulmpi_daemon next to it";
        return {};
    }
    std::string dir(self, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& candidate :
         {dir + "/ulmpi_daemon", dir + "/../daemon/ulmpi_daemon"}) {
        if (is_executable(candidate)) {
            char real[PATH_MAX] = {};
            return ::realpath(candidate.c_str(), real) != nullptr ? std::string(real) : candidate;
        }
    }
    why = "cannot find ulmpi_daemon in " + dir + " (set ULMPI_BOOT_DAEMON)";
    return {};
}

// A line about a failure the job lives on with: none under MPICH's rule
// (--disable-auto-cleanup), whose tests take any line as an error.
void report_ft(const FailurePolicy& policy, const std::string& text)
{
    if (!policy.mpich_rule()) {
        report(text);
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
    std::string where = r.remote ? " on " + host_name(map_.rank(rank).node) : "";
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
    }

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
        Status st = spawn_rank(spec, child, fail);
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
        if (r.pid < 0 && !r.remote) {
            r.reaped = true; // never started: nothing to wait for
        }
    }
    if (!respawnable_ && map_.total() == map_.size()) {
        board_.close_fd(); // every local rank has it; the mapping stays
    }
}

SpawnSpec Monitor::local_spec(int r) const
{
    const MapRank& mr = map_.rank(r);
    const MapHost& host = map_.host(mr.node);
    SpawnSpec spec;
    spec.argv = opts_.apps[static_cast<std::size_t>(mr.app)].argv;
    // --wdir must not change where a program given as ./prog is found.
    if (!opts_.wdir.empty() && !cwd_.empty() && spec.argv[0].find('/') != std::string::npos &&
        spec.argv[0][0] != '/') {
        spec.argv[0] = cwd_ + "/" + spec.argv[0];
    }
    spec.env = base_env_;
    auto set = [&](const char* name, const std::string& value) {
        spec.env.push_back(std::string(name) + "=" + value);
    };
    set(wire::env::rank, std::to_string(r));
    set(wire::env::size, std::to_string(map_.total()));
    set(wire::env::local_rank, std::to_string(mr.local_rank));
    set(wire::env::local_size, std::to_string(map_.local_size(mr.node)));
    set(wire::env::local_cpus, std::to_string(usable_cpus()));
    set(wire::env::node_id, std::to_string(mr.node));
    set(wire::env::num_nodes, std::to_string(map_.num_nodes()));
    set(wire::env::host, host.name);
    set(wire::env::jobid, jobid_);
    set(wire::env::boot_addr, wire::format_boot_addr(listener_.address()));
    set(wire::env::job_secret, wire::secret_to_hex(secret_));
    set(wire::env::universe_size, std::to_string(map_.universe_size()));
    set(wire::env::appnum, std::to_string(mr.app));
    if (board_.fd() >= 0) {
        set(wire::env::notice_fd, std::to_string(board_.fd()));
        spec.keep_fd = board_.fd();
    }
    spec.wdir = opts_.wdir;
    spec.stdin_pipe = stdin_usable_ && r == opts_.stdin_rank;
    spec.sigpipe_ignored = sigpipe_ignored_;
    if (!cpus_.empty()) {
        spec.bind = true;
        spec.cpus = cpus_[static_cast<std::size_t>(mr.local_rank)];
    }
    return spec;
}

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

void Monitor::send_launch(Daemon& d)
{
    wire::Launch l;
    l.jobid = jobid_;
    l.host = host_name(d.node);
    l.node = d.node;
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
        if (rank == nullptr || !rank->rout) {
            return;
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
        if (rank != nullptr && !rank->reaped) {
            remote_exit(r, e->status);
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
    judge_exit(r, status);
    kv_->rank_gone(r);
    std::vector<KvServer::Note> more = kv_->take_notes();
    handle_notes(more, false);
    handle_notes(more, true);
}

void Monitor::host_lost(int node, const std::string& reason)
{
    Daemon& d = daemons_[static_cast<std::size_t>(node)];
    bool first = !d.lost;
    d.lost = true;
    std::vector<int> lost; // ranks still running there: they are the failed ones
    for (int r : map_.host(node).ranks) {
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
    for (int r : map_.host(node).ranks) {
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
    stdin_remote_eof_ = true;
    kill_all(SIGTERM);
    kill_at_ = now_ns() + grace;
    give_up_at_ = kill_at_ + kSilentHostGrace;
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
        stdin_remote_eof_ = true;
        kill_all(sig);
        kill_at_ = now_ns() + kInterruptGrace;
        give_up_at_ = kill_at_ + kSilentHostGrace;
        return;
    }
    kill_all(SIGKILL);
    kill_at_ = 0;
}

void Monitor::kill_all(int sig)
{
    // Reaped ranks too: their process groups may still hold what they started.
    for (const Rank& r : ranks_) {
        if (r.pid > 0 && !r.remote) {
            signal_group(r.pid, sig);
        }
    }
    wire::Bytes order = wire::encode(wire::Message{-1, wire::Signal{sig}});
    for (Daemon& d : daemons_) {
        if (d.node < 0 || d.lost) {
            continue;
        }
        if (d.conn >= 0 && !d.bye) {
            listener_.send(d.conn, order);
        } else if (!d.connected) {
            // Not connected yet: it will not be given any rank to start.
            host_lost(d.node, "");
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

void Monitor::judge_exit(int rank, int status)
{
    if (ending_ || policy_.failed(rank)) {
        return; // a consequence, or announced already (its connection went first)
    }
    ExitReading e = read_exit(status, kv_->said_hello(rank), kv_->finalized(rank));
    if (e.success) {
        return;
    }
    switch (policy_.on_exit(rank, e)) {
    case FailurePolicy::Action::end_job: {
        wire::Event ev;
        ev.kind = wire::EventKind::rank_failed;
        ev.rank = rank;
        ev.node = map_.rank(rank).node;
        ev.detail = e.detail;
        kv_->broadcast(ev);
        end_job(e.code, who(rank) + " " + e.detail + e.when + "; ending the job", kFailureGrace);
        break;
    }
    case FailurePolicy::Action::announce:
        report_ft(policy_, who(rank) + " " + e.detail + e.when + "; the job goes on " + why_alive());
        announce_rank(rank, e.detail);
        break;
    case FailurePolicy::Action::remember:
        report_ft(policy_, who(rank) + " " + e.detail + " after MPI_Finalize");
        break;
    }
}

void Monitor::announce_rank(int rank, const std::string& detail, bool fences)
{
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    // Fail-stop: whatever is left of it goes (a rank that lost its
    // connection may still run).
    if (!r.reaped && r.pid > 0) {
        if (r.remote) {
            int node = map_.rank(rank).node;
            ConnId conn = daemons_[static_cast<std::size_t>(node)].conn;
            if (conn >= 0) {
                listener_.send(conn, wire::encode(wire::Message{rank, wire::Signal{SIGKILL}}));
            }
        } else {
            signal_group(r.pid, SIGKILL);
        }
    }
    r.lost_deadline = 0;
    // The frame first, then the board: a rank that sees the board change
    // finds the details in its socket.
    wire::Event ev;
    ev.kind = wire::EventKind::rank_failed;
    ev.rank = rank;
    ev.node = map_.rank(rank).node;
    ev.detail = detail;
    kv_->broadcast(ev);
    announced_.push_back(ev);
    board_.mark_rank(rank);
    if (fences) {
        kv_->rank_failed(rank);
    }
}

void Monitor::announce_host(int node, const std::string& detail)
{
    wire::Event ev;
    ev.kind = wire::EventKind::host_failed;
    ev.node = node;
    ev.detail = detail;
    kv_->broadcast(ev);
    announced_.push_back(ev);
    board_.mark_node(node);
    for (int r : map_.host(node).ranks) {
        kv_->rank_failed(r);
    }
}

void Monitor::rank_lost(int rank, const std::string& reason)
{
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    if (policy_.failed(rank)) {
        return; // announced already
    }
    if (r.reaped) {
        // Its exit has been judged already; if that was fine, the reason stands.
        if (policy_.on_lost(rank) == FailurePolicy::Action::announce) {
            report_ft(policy_, who(rank) + " " + reason + "; the job goes on " + why_alive());
            announce_rank(rank, reason);
            return;
        }
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
            if (!ending_ && !(r.remote && daemons_[static_cast<std::size_t>(
                                              map_.rank(n.rank).node)].lost)) {
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
        case Kind::spawn: on_spawn(n); break;
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
            for (int r : map_.host(d.node).ranks) {
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
    return OutputSink(m, r / n);
}

} // namespace ulmpi::rt::mpirun
