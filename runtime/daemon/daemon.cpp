#include "runtime/daemon/daemon.h"

#include "runtime/log.h"
#include "runtime/mpirun/launcher.h"
#include "runtime/mpirun/rank_env.h"
#include "runtime/mpirun/net.h"
#include "runtime/ft_mode.h"
#include "runtime/mpirun/options.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace ulmpi::rt::daemon {
namespace {

constexpr Nanos kMs = 1000 * 1000;
constexpr Nanos kDrainGrace = 1000 * kMs;   // output held open after every rank ended
constexpr int kReapWaitMs = 2000;           // after SIGKILL at the end
constexpr int kByeWaitMs = 3000;            // for BYE to leave
constexpr std::size_t kUpHighWater = 4u << 20;

// Variables that describe the host a process runs on: a rank takes the
// daemon's, not mpirun's.
constexpr const char* kHostLocal[] = {"HOSTNAME",   "PWD",            "OLDPWD", "SHLVL",
                                      "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "_"};

bool is_host_local(const std::string& entry)
{
    std::string name = entry.substr(0, entry.find('='));
    for (const char* n : kHostLocal) {
        if (name == n) {
            return true;
        }
    }
    return false;
}

bool is_dir(const std::string& path)
{
    struct stat st{};
    return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

Daemon::~Daemon()
{
    for (int fd : {up_fd_, sig_fd_}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

bool Daemon::setup_signals()
{
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) {
        sigaddset(&set, s);
    }
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
        return false;
    }
    sig_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    struct sigaction ign{};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ign, nullptr);
    return sig_fd_ >= 0;
}

bool Daemon::connect_up(std::string& why)
{
    sockaddr_storage ss{};
    unsigned len = wire::to_sockaddr(args_.boot, ss);
    int family = args_.boot.kind == wire::BootAddr::Kind::tcp ? AF_INET : AF_UNIX;
    up_fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (up_fd_ < 0 || len == 0) {
        why = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    std::string where = wire::format_boot_addr(args_.boot);
    if (::connect(up_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
        if (errno != EINPROGRESS) {
            why = "cannot connect to mpirun at " + where + ": " + std::strerror(errno);
            return false;
        }
        pollfd p{up_fd_, POLLOUT, 0};
        int ms = static_cast<int>(boot::launch_timeout_param() * 1000);
        int rc;
        do {
            rc = ::poll(&p, 1, ms);
        } while (rc < 0 && errno == EINTR);
        int err = 0;
        socklen_t elen = sizeof err;
        if (rc == 0) {
            why = "cannot connect to mpirun at " + where + ": timed out";
            return false;
        }
        if (::getsockopt(up_fd_, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
            why = "cannot connect to mpirun at " + where + ": " + std::strerror(err);
            return false;
        }
    }
    if (family == AF_INET) {
        mpirun::net::set_keepalive(up_fd_);
    }
    wire::DaemonHello h;
    h.secret = args_.secret;
    h.node = args_.node;
    h.pid = static_cast<std::uint32_t>(::getpid());
    h.host = args_.host;
    up(wire::encode(wire::Message{-1, h}));
    return !up_lost_;
}

void Daemon::up(wire::Bytes frame)
{
    if (up_lost_) {
        return;
    }
    if (up_pos_ == up_out_.size()) {
        up_out_ = std::move(frame);
        up_pos_ = 0;
    } else {
        up_out_.insert(up_out_.end(), frame.begin(), frame.end());
    }
    flush_up(0);
}

void Daemon::flush_up(bool block)
{
    Nanos until = now_ns() + (block ? kByeWaitMs * kMs : 0);
    while (!up_lost_ && up_pos_ < up_out_.size()) {
        ssize_t n = ::send(up_fd_, up_out_.data() + up_pos_, up_out_.size() - up_pos_,
                           MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            up_pos_ += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            Nanos left = until - now_ns();
            if (left <= 0) {
                break;
            }
            pollfd p{up_fd_, POLLOUT, 0};
            (void)::poll(&p, 1, static_cast<int>(left / kMs) + 1);
            continue;
        }
        up_lost_ = true;
        lost_reason_ = std::string("lost the connection to mpirun (send: ") +
                       std::strerror(errno) + ")";
    }
    if (up_pos_ == up_out_.size()) {
        up_out_.clear();
        up_pos_ = 0;
    } else if (up_pos_ > (1u << 20)) {
        up_out_.erase(up_out_.begin(), up_out_.begin() + static_cast<std::ptrdiff_t>(up_pos_));
        up_pos_ = 0;
    }
}

void Daemon::read_up()
{
    char buf[65536];
    for (int rounds = 0; rounds < 64 && !up_lost_; ++rounds) {
        ssize_t n = ::recv(up_fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            up_reader_.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        up_lost_ = true;
        lost_reason_ = n == 0 ? "mpirun closed the connection"
                              : std::string("lost the connection to mpirun (") +
                                    std::strerror(errno) + ")";
    }
    // Frames that arrived before a close still count (SHUTDOWN, SIGNAL).
    for (;;) {
        wire::Message m;
        std::string why;
        Status st = up_reader_.next(m, why);
        if (st.code() == Errc::again) {
            break;
        }
        if (!st.ok()) {
            up_lost_ = true;
            lost_reason_ = "bad frame from mpirun: " + why;
            break;
        }
        on_up_frame(m);
        if (done_) {
            break;
        }
    }
}

void Daemon::on_up_frame(wire::Message& m)
{
    switch (wire::type_of(m.body)) {
    case wire::MsgType::launch:
        launch(std::get<wire::Launch>(m.body)); // later ones: MPI_Comm_spawn
        return;
    case wire::MsgType::signal: signal_ranks(std::get<wire::Signal>(m.body).sig, m.rank); return;
    case wire::MsgType::respawn:
        // A failed rank gets a new process (on this host or another): its
        // mark goes, before the FENCE_DONE behind this frame reaches the
        // survivors here (Monitor::clear_notice).
        board_.clear_rank(std::get<wire::Respawn>(m.body).rank);
        return;
    case wire::MsgType::stdin_data:
        for (Rank& r : ranks_) {
            if (r.rank == m.rank && r.in_fd >= 0) {
                const wire::Bytes& d = std::get<wire::StdinData>(m.body).data;
                if (d.empty()) {
                    r.in_eof = true;
                } else {
                    r.in_buf.append(reinterpret_cast<const char*>(d.data()), d.size());
                }
                write_stdin(r);
            }
        }
        return;
    case wire::MsgType::shutdown:
        finish(true);
        done_ = true;
        exit_status_ = 0;
        return;
    case wire::MsgType::adopt: adopt(m.rank, std::get<wire::Adopt>(m.body)); return;
    case wire::MsgType::welcome:
    case wire::MsgType::refused:
    case wire::MsgType::replica:
    case wire::MsgType::value:
    case wire::MsgType::fence_done:
    case wire::MsgType::event:
        if (relay_) {
            relay_->from_up(m);
        }
        if (const auto* ev = std::get_if<wire::Event>(&m.body)) {
            on_event(*ev);
        }
        return;
    default:
        ULMPI_WARN("ignoring %s from mpirun", wire::msg_type_name(wire::type_of(m.body)));
        return;
    }
}

// A failure notice went down to the ranks' connections: now the board, so
// that a rank seeing the board change finds the frame in its socket.
void Daemon::on_event(const wire::Event& ev)
{
    if (ev.kind == wire::EventKind::rank_failed) {
        board_.mark_rank(ev.rank, ev.incarnation);
    } else if (ev.kind == wire::EventKind::host_failed) {
        board_.mark_node(ev.node);
    }
}

void Daemon::launch(const wire::Launch& l)
{
    // The first LAUNCH is the host's part of the job; a later one starts
    // processes of an MPI_Comm_spawn in spawn slots of this host, or the
    // new process of a failed rank (FT-MPI REBUILD; incarnation > 0).
    const bool spawn = launched_;
    launched_ = true;
    const std::size_t first = ranks_.size();
    std::vector<int> mine;
    for (const wire::LaunchRank& lr : l.ranks) {
        mine.push_back(lr.rank);
        Rank r;
        r.rank = lr.rank;
        ranks_.push_back(r);
    }
    // The ranks of this host connect here; the name is per network namespace.
    wire::BootAddr addr;
    addr.kind = wire::BootAddr::Kind::unix_abstract;
    addr.name = "ulmpi-" + l.jobid + "-n" + std::to_string(l.node);
    bool listening = true;
    if (spawn) {
        for (int r : mine) {
            relay_->add_rank(r);
        }
        for (const wire::LaunchRank& lr : l.ranks) {
            if (lr.incarnation > 0) {
                board_.clear_rank(lr.rank); // a new process: not failed
            }
        }
    } else {
        relay_ = std::make_unique<Relay>(args_.secret, mine, down_, *this);
        down_.attach(*relay_);
        std::string why;
        listening = down_.listen(addr, why).ok();
        if (!listening) {
            ULMPI_ERROR("%s", why.c_str());
        }
        listening_ = listening;
    }
    listening = listening && listening_;

    std::vector<std::string> base;
    for (const std::string& e : l.env) {
        if (!is_host_local(e)) {
            base.push_back(e);
        }
    }
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        if (is_host_local(*e)) {
            base.push_back(*e);
        }
    }
    auto nlocal = static_cast<int>(l.ranks.size());
    std::vector<cpu_set_t> cpus =
        mpirun::binding_sets(static_cast<mpirun::BindMode>(l.bind), nlocal);
    std::string wdir = !l.wdir.empty() ? l.wdir : is_dir(l.cwd) ? l.cwd : std::string();
    std::string boot = wire::format_boot_addr(addr);
    std::string secret = wire::secret_to_hex(args_.secret);
    bool stop = !listening;
    // A fault-tolerant job (the `ft` parameter in the job's environment, an
    // FT-MPI mode other than abort, which keeps the job alive as mpirun
    // does (options.cpp), or replication):
    // the ranks of this host read failure notices from a board kept here.
    FtMode ft = FtMode::none;
    bool replicated = false;
    // Spawn slots or respawn: keep the board for processes started later.
    bool slots = false;
    for (const std::string& e : l.env) {
        slots = slots || e.starts_with(std::string(wire::env::first_slot) + "=") ||
                e == std::string(wire::env::respawnable) + "=1";
        if (e.starts_with("ULMPI_FT=") && !parse_ft_mode(std::string_view(e).substr(9), ft)) {
            ft = FtMode::none; // the ranks refuse the bad value themselves
        }
        if (e.starts_with("ULMPI_FT_MODE=") && e != "ULMPI_FT_MODE=abort" &&
            e != "ULMPI_FT_MODE=" && ft == FtMode::none) {
            ft = FtMode::ulfm;
        }
        if (e.starts_with("ULMPI_REP_REPLICAS=") && e != "ULMPI_REP_REPLICAS=1") {
            replicated = true; // mpirun --replicas: the job lives on failures too
        }
    }
    if (replicated && !spawn && !subreaper_) {
        // A replica re-created by recovery is forked by its substitute; as an
        // orphan it becomes our child (adopt()).
        subreaper_ = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
        if (!subreaper_) {
            ULMPI_WARN("cannot be a child subreaper (%s): replicas of this host are not "
                       "re-created", std::strerror(errno));
        }
    }
    if ((ft != FtMode::none || replicated) && !stop && !spawn) {
        std::string bad;
        if (!board_.create(static_cast<int>(l.size), static_cast<int>(l.num_nodes), bad).ok()) {
            ULMPI_ERROR("cannot make the notice board of a fault-tolerant job: %s", bad.c_str());
        }
    }
    if (!stop && !spawn && shm_.fd() < 0) {
        std::string bad;
        if (!shm_.make(bad)) {
            ULMPI_DEBUG("no anonymous shared memory (%s): the ranks name a segment", bad.c_str());
        }
    }
    for (std::size_t i = 0; i < l.ranks.size(); ++i) {
        const wire::LaunchRank& lr = l.ranks[i];
        Rank& r = ranks_[first + i];
        if (stop || lr.app < 0 || static_cast<std::size_t>(lr.app) >= l.apps.size() ||
            l.apps[static_cast<std::size_t>(lr.app)].empty()) {
            r.reaped = true;
            wire::Spawned s{0, listening ? ECANCELED : EADDRINUSE,
                            listening ? "skipped" : "listen"};
            up(wire::encode(wire::Message{lr.rank, s}));
            stop = true;
            continue;
        }
        mpirun::SpawnSpec spec;
        spec.argv = l.apps[static_cast<std::size_t>(lr.app)];
        spec.env = base;
        mpirun::RankEnv e;
        e.rank = lr.rank;
        e.size = static_cast<int>(l.size);
        e.local_rank = lr.local_rank;
        e.local_size = static_cast<int>(spawn ? ranks_.size() : l.ranks.size());
        e.node = l.node;
        e.num_nodes = static_cast<int>(l.num_nodes);
        e.host = l.host;
        e.jobid = l.jobid;
        e.boot_addr = boot;
        e.secret = secret;
        e.universe_size = static_cast<int>(l.universe_size);
        e.appnum = lr.app;
        e.notice_fd = board_.fd();
        e.shm_fd = shm_.fd();
        mpirun::append_rank_env(spec.env, e);
        if (lr.incarnation > 0) {
            spec.env.push_back(std::string(wire::env::incarnation) + "=" +
                               std::to_string(lr.incarnation));
        }
        spec.keep_fds = {board_.fd(), shm_.fd()};
        spec.wdir = wdir;
        spec.stdin_pipe = lr.stdin_pipe;
        if (!cpus.empty() && !spawn) {
            spec.bind = true;
            spec.cpus = cpus[static_cast<std::size_t>(lr.local_rank) % cpus.size()];
        }
        mpirun::Child child;
        mpirun::SpawnFailure fail;
        Status st = mpirun::spawn_rank(spec, child, fail);
        wire::Spawned s;
        if (child.pid > 0) {
            r.pid = child.pid;
            r.out_fd = child.out_fd;
            r.err_fd = child.err_fd;
            r.in_fd = child.in_fd;
            if (r.in_fd >= 0) {
                (void)::fcntl(r.in_fd, F_SETFL, ::fcntl(r.in_fd, F_GETFL) | O_NONBLOCK);
            }
            s.pid = static_cast<std::uint32_t>(child.pid);
            ULMPI_DEBUG("started rank %d: pid %d", lr.rank, static_cast<int>(child.pid));
        } else {
            r.reaped = true;
        }
        if (!st.ok()) {
            s.err = fail.err;
            s.step = fail.step;
            stop = true;
        }
        up(wire::encode(wire::Message{lr.rank, s}));
    }
    if (!slots) {
        // Every rank has them; the mappings stay.
        board_.close_fd();
        shm_.close();
    }
}

void Daemon::drain_stdout(int rank)
{
    for (Rank& r : ranks_) {
        if (r.rank == rank && !r.reaped) {
            read_output(r, 1, true);
        }
    }
}

void Daemon::adopt(int rank, const wire::Adopt& a)
{
    if (!relay_) {
        return; // no LAUNCH yet: mpirun asks only for a rank of a launched host
    }
    if (a.step == wire::AdoptStep::expect) {
        // Its HELLO is taken here (a connection of an earlier process of the
        // rank no longer speaks for it).
        relay_->add_rank(rank);
        return;
    }
    wire::Adopted ans;
    int out = -1;
    int err = -1;
    if (!subreaper_) {
        ans.err = EPERM;
        ans.reason = "the daemon of its host is not a child subreaper";
    } else {
        auto open_fd = [&](int fd) {
            const std::string path = "/proc/" + std::to_string(a.pid) + "/fd/" + std::to_string(fd);
            return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        };
        out = open_fd(a.out_fd);
        err = out >= 0 ? open_fd(a.err_fd) : -1;
        if (out < 0 || err < 0) {
            ans.err = errno;
            ans.reason = std::string("cannot open its output through /proc on host ") +
                         args_.host + ": " + std::strerror(errno);
            if (out >= 0) {
                ::close(out);
            }
            out = -1;
        }
    }
    if (ans.err == 0) {
        // The rank's earlier process (ended, reaped) says its last words
        // first: mpirun ends its streams before it takes the new ones.
        for (Rank& r : ranks_) {
            if (r.rank == rank) {
                read_output(r, 1, true);
                read_output(r, 2, true);
                close_stream(r, 1);
                close_stream(r, 2);
            }
        }
        Rank r;
        r.rank = rank;
        r.pid = static_cast<pid_t>(a.pid);
        r.out_fd = out;
        r.err_fd = err;
        r.adopted = true;
        ranks_.push_back(r);
        drain_until_ = 0; // a rank runs again
        ULMPI_DEBUG("adopted rank %d (incarnation %d): pid %u", rank, a.incarnation, a.pid);
    }
    up(wire::encode(wire::Message{rank, std::move(ans)}));
}

void Daemon::close_stream(Rank& r, int stream)
{
    int& fd = stream == 1 ? r.out_fd : r.err_fd;
    if (fd < 0) {
        return;
    }
    ::close(fd);
    fd = -1;
    wire::Output o;
    o.stream = static_cast<std::uint8_t>(stream);
    up(wire::encode(wire::Message{r.rank, std::move(o)}));
}

void Daemon::read_output(Rank& r, int stream, bool drain)
{
    char buf[65536];
    for (int rounds = 0; drain || rounds < 16; ++rounds) {
        int fd = stream == 1 ? r.out_fd : r.err_fd;
        if (fd < 0 || (!drain && up_out_.size() - up_pos_ >= kUpHighWater)) {
            return;
        }
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            wire::Output o;
            o.stream = static_cast<std::uint8_t>(stream);
            const auto* b = reinterpret_cast<const std::byte*>(buf);
            o.data.assign(b, b + n);
            up(wire::encode(wire::Message{r.rank, std::move(o)}));
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        close_stream(r, stream);
        return;
    }
}

void Daemon::write_stdin(Rank& r)
{
    while (r.in_fd >= 0 && !r.in_buf.empty()) {
        ssize_t w = ::write(r.in_fd, r.in_buf.data(), r.in_buf.size());
        if (w > 0) {
            r.in_buf.erase(0, static_cast<std::size_t>(w));
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && errno == EAGAIN) {
            return;
        } else {
            r.in_buf.clear(); // the rank closed its stdin
            r.in_eof = true;
        }
    }
    if (r.in_fd >= 0 && r.in_eof && r.in_buf.empty()) {
        ::close(r.in_fd);
        r.in_fd = -1;
    }
}

void Daemon::reap()
{
    for (;;) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR) {
            continue;
        }
        if (pid <= 0) {
            return;
        }
        for (Rank& r : ranks_) {
            if (r.pid != pid || r.reaped) {
                continue;
            }
            r.reaped = true;
            // What it sent and wrote before it ended goes up before its end.
            if (relay_) {
                down_.drain(relay_->conn_of(r.rank));
            }
            read_output(r, 1, true);
            read_output(r, 2, true);
            if (r.in_fd >= 0) {
                ::close(r.in_fd);
                r.in_fd = -1;
            }
            up(wire::encode(wire::Message{r.rank, wire::Exited{status}}));
            ULMPI_DEBUG("rank %d (pid %d) ended: status 0x%x", r.rank, static_cast<int>(pid),
                        static_cast<unsigned>(status));
        }
    }
}

void Daemon::signal_ranks(int sig, int only_rank)
{
    // Reaped ranks too: their process groups may still hold what they started.
    for (const Rank& r : ranks_) {
        if (r.pid > 0 && (only_rank < 0 || r.rank == only_rank)) {
            mpirun::signal_group(r.pid, sig);
            if (r.adopted && !r.reaped) {
                (void)::kill(r.pid, sig); // (its own group since it took the rank over)
            }
        }
    }
}

bool Daemon::outputs_open() const
{
    for (const Rank& r : ranks_) {
        if (r.out_fd >= 0 || r.err_fd >= 0) {
            return true;
        }
    }
    return false;
}

void Daemon::finish(bool bye)
{
    signal_ranks(SIGKILL);
    Nanos until = now_ns() + kReapWaitMs * kMs;
    for (;;) {
        bool left = false;
        for (const Rank& r : ranks_) {
            left = left || (r.pid > 0 && !r.reaped);
        }
        if (!left || now_ns() >= until) {
            break;
        }
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (Rank& r : ranks_) {
                if (r.pid == pid) {
                    r.reaped = true;
                }
            }
            continue;
        }
        if (pid < 0 && errno == ECHILD) {
            break;
        }
        ::usleep(5000);
    }
    for (Rank& r : ranks_) {
        for (int* fd : {&r.out_fd, &r.err_fd, &r.in_fd}) {
            if (*fd >= 0) {
                ::close(*fd);
                *fd = -1;
            }
        }
    }
    down_.shutdown();
    int removed = mpirun::remove_job_shm_files(args_.jobid);
    if (removed > 0) {
        ULMPI_DEBUG("removed %d shared-memory file(s) of job %s", removed, args_.jobid.c_str());
    }
    if (bye) {
        wire::Bye b;
        b.refused = relay_ ? relay_->refused_count() : 0;
        b.shm_removed = static_cast<std::uint32_t>(removed);
        up(wire::encode(wire::Message{-1, b}));
        flush_up(true);
    }
}

void Daemon::loop()
{
    std::vector<pollfd> fds;
    while (!done_) {
        if (up_lost_) {
            ULMPI_WARN("%s; ending this host's ranks", lost_reason_.c_str());
            finish(false);
            exit_status_ = 1;
            return;
        }
        Nanos now = now_ns();
        bool all_reaped = true;
        for (const Rank& r : ranks_) {
            all_reaped = all_reaped && r.reaped;
        }
        if (launched_ && all_reaped && outputs_open()) {
            if (drain_until_ == 0) {
                drain_until_ = now + kDrainGrace;
            } else if (now >= drain_until_) {
                // Something the ranks started holds their output open.
                signal_ranks(SIGKILL);
                for (Rank& r : ranks_) {
                    read_output(r, 1, true);
                    read_output(r, 2, true);
                    close_stream(r, 1);
                    close_stream(r, 2);
                }
                continue;
            }
        }

        fds.clear();
        fds.push_back(pollfd{sig_fd_, POLLIN, 0});
        short up_events = POLLIN;
        if (up_pos_ < up_out_.size()) {
            up_events = static_cast<short>(up_events | POLLOUT);
        }
        fds.push_back(pollfd{up_fd_, up_events, 0});
        std::size_t down_begin = fds.size();
        down_.add_fds(fds);
        std::size_t rank_begin = fds.size();
        struct Slot {
            Rank* r;
            int what; // 1 stdout, 2 stderr, 0 stdin
        };
        std::vector<Slot> slots;
        bool room = up_out_.size() - up_pos_ < kUpHighWater;
        for (Rank& r : ranks_) {
            if (room && r.out_fd >= 0) {
                fds.push_back(pollfd{r.out_fd, POLLIN, 0});
                slots.push_back({&r, 1});
            }
            if (room && r.err_fd >= 0) {
                fds.push_back(pollfd{r.err_fd, POLLIN, 0});
                slots.push_back({&r, 2});
            }
            if (r.in_fd >= 0 && !r.in_buf.empty()) {
                fds.push_back(pollfd{r.in_fd, POLLOUT, 0});
                slots.push_back({&r, 0});
            }
        }
        int timeout_ms = -1;
        if (drain_until_ != 0) {
            Nanos wait = drain_until_ - now;
            timeout_ms = wait <= 0 ? 0 : static_cast<int>((wait + kMs - 1) / kMs);
        }
        int rc = ::poll(fds.data(), fds.size(), timeout_ms);
        if (rc < 0 && errno != EINTR) {
            up_lost_ = true;
            lost_reason_ = std::string("poll: ") + std::strerror(errno);
            continue;
        }
        if (rc <= 0) {
            continue;
        }
        for (std::size_t i = 0; i < slots.size(); ++i) {
            if (fds[rank_begin + i].revents == 0) {
                continue;
            }
            if (slots[i].what == 0) {
                write_stdin(*slots[i].r);
            } else {
                read_output(*slots[i].r, slots[i].what, false);
            }
        }
        down_.handle(fds.data() + down_begin, rank_begin - down_begin);
        if ((fds[1].revents & POLLOUT) != 0) {
            flush_up(false);
        }
        if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            read_up();
        }
        if (done_) {
            return;
        }
        if (fds[0].revents != 0) {
            signalfd_siginfo si;
            while (::read(sig_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                if (si.ssi_signo == SIGCHLD) {
                    reap();
                } else if (!up_lost_) {
                    up_lost_ = true;
                    int sig = static_cast<int>(si.ssi_signo);
                    lost_reason_ = std::string("got SIG") + ::sigabbrev_np(sig);
                }
            }
        }
    }
}

int Daemon::run()
{
    std::string why;
    if (!setup_signals()) {
        ULMPI_ERROR("cannot set up signals: %s", std::strerror(errno));
        return 1;
    }
    if (!connect_up(why)) {
        ULMPI_ERROR("%s", why.c_str());
        return 1;
    }
    loop();
    return exit_status_;
}

} // namespace ulmpi::rt::daemon
