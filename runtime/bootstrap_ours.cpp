// OurBootstrap: the client of mpirun's key-value service.
//
// One stream socket to the address in ULMPI_BOOT_ADDR, opened by a HELLO that
// carries the job secret. Calls are blocking and the rank is single-threaded
// here: put() sends and returns, fence() and get() send and then read frames
// until their answer arrives. The server may push EVENT frames at any time;
// whatever arrives while we wait for an answer is queued for poll_event(),
// never dropped. Values of FENCE_DONE land in a local cache, so get() after a
// fence costs no round trip.
//
// If the connection closes before finalize(), mpirun is gone or ending the
// job: the calls fail with peer_failed and poll_event() reports job_ending.
//
// event_fd() is the socket itself. Events queued during a fence or get are
// already off the socket, so a caller drains poll_event() until it returns
// false before it waits on event_fd().
//
// Fault-tolerant jobs: the launcher also hands us its host's notice board
// (ULMPI_NOTICE_FD, runtime/notice_board.h). notice_word() is the board's
// generation. When poll_event() finds a generation it has not read yet, it
// drains the socket (the EVENT frames carry the details) and then reports
// every rank or host the board marks failed that no frame has named yet:
// a notice is never missed even when its frame is still on its way.
#include "runtime/boot_wire.h"
#include "runtime/bootstrap.h"
#include "runtime/log.h"
#include "runtime/notice_board.h"
#include "runtime/notice_filter.h"
#include "runtime/stream_io.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace ulmpi::rt {
namespace {

constexpr int kHandshakeTimeoutMs = 60000;
// mpirun answers a fork at once on its host, and after a round trip to the
// daemon on another (it has the daemon expect the new process first); a
// loaded machine can take seconds. Without an answer the substitute gives
// the re-creation up (a lost answer must not stop the job); an answer
// that comes later is dropped. The whole job waits for it meanwhile.
constexpr int kReplicaAnswerMs = 15000;
constexpr int kAbortWaitMs = 2000;

bool env_int(const char* name, int& out, bool required, std::string& why)
{
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
        if (required) {
            why = std::string(name) + " is not set";
        }
        return !required;
    }
    char* end = nullptr;
    errno = 0;
    long x = std::strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < 0 || x > 0x7fffffff) {
        why = std::string(name) + "='" + v + "' is not a non-negative integer";
        return false;
    }
    out = static_cast<int>(x);
    return true;
}

std::string env_text(const char* name)
{
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
}

// "3:1,5:2" -> inc[3] = 1, inc[5] = 2. Empty is fine.
bool parse_incarnations(const std::string& text, std::vector<int>& inc)
{
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find(',', pos);
        if (end == std::string::npos) {
            end = text.size();
        }
        const std::string item = text.substr(pos, end - pos);
        const std::size_t colon = item.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == item.size() ||
            item.find_first_not_of("0123456789:") != std::string::npos) {
            return false;
        }
        const long r = std::strtol(item.c_str(), nullptr, 10);
        const long k = std::strtol(item.c_str() + colon + 1, nullptr, 10);
        if (r < 0 || static_cast<std::size_t>(r) >= inc.size() || k < 0 || k > 0x7fffffff) {
            return false;
        }
        inc[static_cast<std::size_t>(r)] = static_cast<int>(k);
        pos = end + 1;
    }
    return true;
}

// "3,5,7" -> {3, 5, 7}: distinct ranks below `size`, at least one.
bool parse_rank_list(const std::string& text, int size, std::vector<int>& out)
{
    out.clear();
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t end = text.find(',', pos);
        if (end == std::string::npos) {
            end = text.size();
        }
        const std::string item = text.substr(pos, end - pos);
        if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos) {
            return false;
        }
        const int r = std::atoi(item.c_str());
        if (r >= size || std::find(out.begin(), out.end(), r) != out.end()) {
            return false;
        }
        out.push_back(r);
        pos = end + 1;
    }
    return !out.empty();
}

// A spawned process's ULMPI_WORLD_RANKS, ULMPI_SPAWN_GROUPS and ULMPI_PARENT.
bool parse_spawned(JobInfo& job, std::string& why)
{
    const std::string world = env_text(wire::env::world_ranks);
    const std::string groups = env_text(wire::env::spawn_groups);
    const std::string parent = env_text(wire::env::parent);
    if (world.empty() && groups.empty() && parent.empty()) {
        return true;
    }
    if (!parse_rank_list(world, job.size, job.world) ||
        std::find(job.world.begin(), job.world.end(), job.rank) == job.world.end()) {
        why = std::string(wire::env::world_ranks) + "='" + world +
              "' is not a list of ranks of this job with mine in it";
        return false;
    }
    // Not sorted: the children's ranks follow the order of the commands.
    if (std::sscanf(groups.c_str(), "%d:%d", &job.spawn_group, &job.world_group) != 2 ||
        job.spawn_group < 0 || job.world_group < 0) {
        why = std::string(wire::env::spawn_groups) + "='" + groups + "' is not group:group";
        return false;
    }
    const std::size_t c1 = parent.find(':');
    const std::size_t c2 = c1 == std::string::npos ? c1 : parent.find(':', c1 + 1);
    if (c2 == std::string::npos ||
        std::sscanf(parent.c_str(), "%d:%d:", &job.parent_pair, &job.parent_root) != 2 ||
        !parse_rank_list(parent.substr(c2 + 1), job.size, job.parents) || job.parent_pair < 2 ||
        job.parent_root < 0 || job.parent_root >= static_cast<int>(job.parents.size())) {
        why = std::string(wire::env::parent) + "='" + parent + "' is not pair:root:ranks";
        return false;
    }
    job.spawned = true;
    return true;
}

class OurBootstrap final : public Bootstrap {
public:
    ~OurBootstrap() override
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        if (job_.shm_fd >= 0) {
            ::close(job_.shm_fd);
        }
    }

    Status start(std::string& why);

    const JobInfo& job() const override { return job_; }
    Status put(std::string_view key, const void* data, std::size_t len) override;
    Status fence() override;
    Status fence_begin() override;
    Status fence_test() override;
    Status get(int rank, std::string_view key, std::vector<std::byte>& out) override;
    Status publish_name(std::string_view service, std::string_view port) override;
    Status unpublish_name(std::string_view service) override;
    Status lookup_name(std::string_view service, std::string& port) override;
    Status ask(wire::Body question, wire::Value& answer);
    [[noreturn]] void abort(int code, std::string_view msg) override;
    Status finalize() override;
    bool poll_event(FailureEvent& ev) override;
    int event_fd() const override { return fd_; }
    const std::atomic<std::uint64_t>* notice_word() const override
    {
        return board_.generation_word();
    }
    const char* name() const override { return "ulmpi"; }
    Status respawn(int rank, int incarnation) override;
    void revived(int rank, int incarnation) override;
    Status spawn(const SpawnRequest& req, SpawnReply& out) override;
    Status replica_fork(int rank, int incarnation, std::string& why) override;
    Status become_replica(int rank, int incarnation, std::string& why) override;
    Status replica_back() override;
    void forget(int rank) override
    {
        std::erase_if(cache_, [rank](const auto& kv) { return kv.first.first == rank; });
    }
    void moved(int rank, int node) override;
    Status sync() override;
    bool failed_now(int rank) const override
    {
        return !board_.valid() || board_.failed_incarnation(rank) >= notices_.known(rank);
    }
    void set_fence_group(int group) override { fence_group_ = group; }

private:
    // Connects to mpirun and says HELLO as job_.rank (start, become_replica).
    Status connect_hello(std::string& why);
    Status send(wire::Body body);
    // Reads until a frame of type `want` arrives; events are queued on the way.
    Status wait_for(wire::MsgType want, wire::Message& out, int timeout_ms);
    // One recv into the reader. ok: got bytes; again: nothing (non-blocking or
    // timeout); peer_failed: connection closed or broken.
    Status read_some(int timeout_ms);
    void connection_lost(const std::string& why);
    void queue_event(const wire::Event& e);
    Status open_board(std::string& why);
    // The host's shared-memory descriptor (ULMPI_SHM_FD), if the launcher gave one.
    Status take_shm_fd(std::string& why);
    // Events for what the board marks and no frame has named yet.
    void read_board();

    JobInfo job_;
    wire::Secret secret_{};
    int fd_ = -1;
    // The process that started us (mpirun, or a host's daemon): a forked
    // replica (become_replica) is adopted by it and must die with it, as the
    // processes it started do (PR_SET_PDEATHSIG).
    pid_t launcher_ = 0;
    wire::FrameReader reader_;
    std::deque<FailureEvent> events_;
    std::deque<wire::FenceDone> fence_done_; // arrived while polling for events
    std::map<std::pair<int, std::string>, std::vector<std::byte>, std::less<>> cache_;
    bool finalized_ = false;
    bool lost_ = false;
    bool replica_late_ = false; // a REPLICA fork's answer did not come in time
    NoticeBoard board_;
    std::uint64_t board_seen_ = 0;
    NoticeFilter notices_;        // which rank_failed notices are news
    std::vector<bool> node_told_; // a host_failed event was queued for it
    bool muted_ = false;          // a respawned process before its first fence
    int fence_group_ = -1;        // >= 0: fences are GROUP_FENCEs of that group
    std::uint32_t spawn_id_ = 0;  // of the last SPAWN asked
    wire::Body fence_frame() const
    {
        if (fence_group_ >= 0) {
            return wire::GroupFence{fence_group_};
        }
        return wire::Fence{};
    }
};

Status OurBootstrap::spawn(const SpawnRequest& req, SpawnReply& out)
{
    wire::Spawn m;
    m.id = ++spawn_id_;
    m.pair = req.pair;
    m.root = req.root;
    m.parents.assign(req.parents.begin(), req.parents.end());
    for (const SpawnCommand& c : req.commands) {
        wire::SpawnApp a;
        a.argv = c.argv;
        a.maxprocs = c.maxprocs;
        a.host = c.host;
        a.wdir = c.wdir;
        m.apps.push_back(std::move(a));
    }
    if (Status st = send(std::move(m)); !st.ok()) {
        return st;
    }
    wire::Message reply;
    if (Status st = wait_for(wire::MsgType::spawn_result, reply, -1); !st.ok()) {
        return st;
    }
    const auto& r = std::get<wire::SpawnResult>(reply.body);
    if (r.id != spawn_id_) {
        ULMPI_ERROR("bootstrap: SPAWN_RESULT %u answers no SPAWN (the last was %u)", r.id,
                    spawn_id_);
        return Errc::protocol;
    }
    out.group = r.group;
    out.reason = r.reason;
    out.ranks.clear();
    out.errs.clear();
    out.incarnations.clear();
    for (const wire::SpawnedRank& p : r.procs) {
        out.ranks.push_back(p.rank);
        out.errs.push_back(p.err);
        out.incarnations.push_back(p.incarnation);
        if (p.rank >= 0) {
            // A spawn slot used before held another process: its values go.
            std::erase_if(cache_, [&](const auto& kv) { return kv.first.first == p.rank; });
        }
    }
    return Errc::ok;
}

Status OurBootstrap::take_shm_fd(std::string& why)
{
    const char* v = std::getenv(wire::env::shm_fd);
    if (v == nullptr || *v == '\0') {
        return Errc::ok; // an older launcher, or a test: shm names its segment
    }
    int fd = -1;
    if (!env_int(wire::env::shm_fd, fd, true, why)) {
        return Errc::invalid_arg;
    }
    // Programs this rank starts do not inherit it, nor see the variable.
    ::unsetenv(wire::env::shm_fd);
    if (fd <= STDERR_FILENO || ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        why = std::string(wire::env::shm_fd) + "=" + std::to_string(fd) +
              " is not an open descriptor";
        return Errc::invalid_arg;
    }
    job_.shm_fd = fd;
    return Errc::ok;
}

Status OurBootstrap::open_board(std::string& why)
{
    const char* v = std::getenv(wire::env::notice_fd);
    if (v == nullptr || *v == '\0') {
        return Errc::ok; // not a fault-tolerant job
    }
    int fd = -1;
    if (!env_int(wire::env::notice_fd, fd, true, why)) {
        return Errc::invalid_arg;
    }
    int nodes = std::max(job_.num_nodes, 1);
    std::string bad;
    Status st = board_.open(fd, job_.size, nodes, bad);
    ::close(fd); // the mapping stays; programs this rank starts do not inherit it
    ::unsetenv(wire::env::notice_fd);
    if (!st.ok()) {
        why = std::string(wire::env::notice_fd) + "=" + std::to_string(fd) + ": " + bad;
        return st;
    }
    node_told_.assign(static_cast<std::size_t>(nodes), false);
    // A respawned process: until its first fence (the one the survivors
    // enter after asking for every process they replace), notices may be
    // about processes being replaced along with it (their old deaths, a
    // mark the launcher has not cleared yet). After that fence the board
    // says exactly who is failed now: it is read then, in full.
    muted_ = job_.incarnation > 0 && !job_.spawned; // REBUILD, not a slot used again
    return Errc::ok;
}

Status OurBootstrap::respawn(int rank, int incarnation)
{
    if (rank < 0 || rank >= job_.size || rank == job_.rank || incarnation < 1) {
        return Errc::invalid_arg;
    }
    // Its values from before are stale: the new process puts its own (the
    // next fence brings them).
    std::erase_if(cache_, [rank](const auto& kv) { return kv.first.first == rank; });
    wire::Respawn m;
    m.rank = rank;
    m.incarnation = incarnation;
    return send(m);
}

void OurBootstrap::revived(int rank, int incarnation)
{
    notices_.revived(rank, incarnation);
    board_seen_ = 0; // read the board again: the new process may have failed already
    // Notices still queued about the dead process are stale now; one about
    // the new process is told again by the board.
    std::erase_if(events_, [rank](const FailureEvent& e) {
        return e.kind == FailureEvent::Kind::rank_failed && e.rank == rank;
    });
}

void OurBootstrap::read_board()
{
    std::uint64_t gen = board_.generation();
    if (gen == board_seen_) {
        return;
    }
    board_seen_ = gen;
    for (int n = 0; n < board_.nodes(); ++n) {
        if (board_.node_failed(n) && !node_told_[static_cast<std::size_t>(n)]) {
            node_told_[static_cast<std::size_t>(n)] = true;
            FailureEvent ev;
            ev.kind = FailureEvent::Kind::host_failed;
            ev.node_id = n;
            ev.detail = "its host failed (the launcher's notice board)";
            events_.push_back(std::move(ev));
        }
    }
    for (int r = 0; r < board_.size(); ++r) {
        const int k = board_.failed_incarnation(r);
        if (k >= 0 && notices_.news(r, k)) {
            FailureEvent ev;
            ev.kind = FailureEvent::Kind::rank_failed;
            ev.rank = r;
            ev.incarnation = k;
            ev.detail = "it failed (the launcher's notice board)";
            events_.push_back(std::move(ev));
        }
    }
}

Status OurBootstrap::start(std::string& why)
{
    launcher_ = ::getppid();
    // Who we are, from the environment mpirun gave us.
    if (!env_int(wire::env::rank, job_.rank, true, why) ||
        !env_int(wire::env::size, job_.size, true, why)) {
        return Errc::invalid_arg;
    }
    if (job_.size < 1 || job_.rank >= job_.size) {
        why = "rank " + std::to_string(job_.rank) + " is outside a job of size " +
              std::to_string(job_.size);
        return Errc::invalid_arg;
    }
    job_.local_size = job_.size;
    job_.local_rank = job_.rank;
    job_.universe_size = job_.size;
    if (!env_int(wire::env::local_rank, job_.local_rank, false, why) ||
        !env_int(wire::env::local_size, job_.local_size, false, why) ||
        !env_int(wire::env::local_cpus, job_.local_cpus, false, why) ||
        !env_int(wire::env::node_id, job_.node_id, false, why) ||
        !env_int(wire::env::num_nodes, job_.num_nodes, false, why) ||
        !env_int(wire::env::universe_size, job_.universe_size, false, why) ||
        !env_int(wire::env::appnum, job_.appnum, false, why) ||
        !env_int(wire::env::incarnation, job_.incarnation, false, why)) {
        return Errc::invalid_arg;
    }
    job_.respawnable = env_text(wire::env::respawnable) == "1";
    job_.incarnation_of_rank.assign(static_cast<std::size_t>(job_.size), 0);
    job_.incarnation_of_rank[static_cast<std::size_t>(job_.rank)] = job_.incarnation;
    if (!parse_incarnations(env_text(wire::env::peer_incarnations), job_.incarnation_of_rank)) {
        why = std::string(wire::env::peer_incarnations) + "='" +
              env_text(wire::env::peer_incarnations) + "' is not a list of rank:incarnation";
        return Errc::invalid_arg;
    }
    notices_.reset(job_.incarnation_of_rank);
    int first_slot = -1;
    if (!env_int(wire::env::first_slot, first_slot, false, why)) {
        return Errc::invalid_arg;
    }
    if (std::getenv(wire::env::first_slot) != nullptr) {
        if (first_slot < 1 || first_slot > job_.size) {
            why = std::string(wire::env::first_slot) + " is outside the job";
            return Errc::invalid_arg;
        }
        job_.first_slot = first_slot;
        for (int r = 0; r < first_slot; ++r) {
            job_.world.push_back(r);
        }
    }
    if (!parse_spawned(job_, why)) {
        return Errc::invalid_arg;
    }
    if (job_.spawned) {
        fence_group_ = job_.spawn_group; // the wire-up is with the parents
    }
    job_.host = env_text(wire::env::host);
    job_.jobid = env_text(wire::env::jobid);
    if (job_.jobid.empty()) {
        why = std::string(wire::env::jobid) + " is not set";
        return Errc::invalid_arg;
    }
    if (!wire::secret_from_hex(env_text(wire::env::job_secret), secret_)) {
        why = std::string(wire::env::job_secret) + " is missing or not 32 hex digits";
        return Errc::invalid_arg;
    }

    if (Status st = take_shm_fd(why); !st.ok()) {
        return st;
    }
    if (Status st = connect_hello(why); !st.ok()) {
        return st;
    }
    return open_board(why);
}

Status OurBootstrap::connect_hello(std::string& why)
{
    // Connect.
    wire::BootAddr addr;
    std::string addr_text = env_text(wire::env::boot_addr);
    std::string bad;
    if (!wire::parse_boot_addr(addr_text, addr, bad)) {
        why = std::string(wire::env::boot_addr) + "='" + addr_text + "': " + bad;
        return Errc::invalid_arg;
    }
    sockaddr_storage ss{};
    unsigned len = wire::to_sockaddr(addr, ss);
    int family = addr.kind == wire::BootAddr::Kind::tcp ? AF_INET : AF_UNIX;
    fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || len == 0) {
        why = std::string("socket: ") + std::strerror(errno);
        return Errc::io_error;
    }
    int rc;
    do {
        rc = ::connect(fd_, reinterpret_cast<sockaddr*>(&ss), len);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        why = "cannot connect to mpirun at " + addr_text + ": " + std::strerror(errno);
        return Errc::unreachable;
    }

    // HELLO -> WELCOME | REFUSED.
    wire::Hello hello;
    hello.secret = secret_;
    hello.rank = job_.rank;
    hello.pid = static_cast<std::uint32_t>(::getpid());
    if (Status st = send(hello); !st.ok()) {
        why = "cannot send HELLO to mpirun";
        return st;
    }
    wire::Message reply;
    Status st = wait_for(wire::MsgType::welcome, reply, kHandshakeTimeoutMs);
    if (!st.ok()) {
        if (const auto* r = std::get_if<wire::Refused>(&reply.body)) {
            why = "mpirun refused the connection: " + r->reason;
        } else {
            why = std::string("no welcome from mpirun: ") + errc_name(st.code());
        }
        return st;
    }
    const auto& w = std::get<wire::Welcome>(reply.body);
    if (w.node_of_rank.size() != static_cast<std::size_t>(job_.size)) {
        why = "mpirun's job map has " + std::to_string(w.node_of_rank.size()) +
              " ranks, the environment says " + std::to_string(job_.size);
        return Errc::protocol;
    }
    job_.node_of_rank.assign(w.node_of_rank.begin(), w.node_of_rank.end());
    job_.universe_size = static_cast<int>(w.universe_size);
    return Errc::ok;
}

Status OurBootstrap::replica_fork(int rank, int incarnation, std::string& why)
{
    if (rank < 0 || rank >= job_.size || rank == job_.rank || incarnation < 1) {
        why = "no such process to re-create";
        return Errc::invalid_arg;
    }
    std::fflush(stdout); // what the program printed so far is the substitute's alone
    wire::Replica q;
    q.op = wire::ReplicaOp::fork;
    q.rank = rank;
    q.incarnation = incarnation;
    if (Status st = send(q); !st.ok()) {
        why = "cannot ask mpirun";
        return st;
    }
    wire::Message reply;
    if (Status st = wait_for(wire::MsgType::replica, reply, kReplicaAnswerMs); !st.ok()) {
        replica_late_ = st.code() == Errc::timeout;
        why = st.code() == Errc::timeout
                  ? "no answer from mpirun within " + std::to_string(kReplicaAnswerMs / 1000) +
                        " s"
                  : "no answer from mpirun";
        return st.code() == Errc::timeout ? Errc::not_supported : st;
    }
    const auto& a = std::get<wire::Replica>(reply.body);
    if (a.op == wire::ReplicaOp::granted) {
        // Its values from before are stale: the new process puts its own.
        std::erase_if(cache_, [rank](const auto& kv) { return kv.first.first == rank; });
        return Errc::ok;
    }
    why = a.reason;
    return a.op == wire::ReplicaOp::busy ? Errc::again : Errc::not_supported;
}

Status OurBootstrap::become_replica(int rank, int incarnation, std::string& why)
{
    // A process group of its own, as every process the launcher starts: the
    // launcher (mpirun, or the daemon of this host) signals a rank's group
    // by the rank's pid (its failure, the job's end), and the substitute's
    // group is the substitute's (its failure must not take this one along).
    (void)::setpgid(0, 0);
    // The substitute's connection is its own: this copy of it only goes.
    ::close(fd_);
    fd_ = -1;
    reader_ = wire::FrameReader{};
    events_.clear();
    fence_done_.clear();
    lost_ = false;
    job_.rank = rank;
    job_.incarnation = incarnation;
    if (static_cast<std::size_t>(rank) < job_.incarnation_of_rank.size()) {
        job_.incarnation_of_rank[static_cast<std::size_t>(rank)] = incarnation;
    }
    notices_.revived(rank, incarnation);
    // Where every process runs is what the substitute knew (the moves of
    // earlier re-creations, which mpirun's job map may not hold); and I run
    // on its host.
    const std::vector<int> nodes = job_.node_of_rank;
    if (Status st = connect_hello(why); !st.ok()) {
        return st;
    }
    job_.node_of_rank = nodes;
    moved(rank, job_.node_id);
    // Standard output and error of its own: pipes whose read ends mpirun
    // opens through /proc (it answers once it has them).
    int out[2] = {-1, -1};
    int err[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
        why = std::string("pipe: ") + std::strerror(errno);
        return Errc::io_error;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    if (::dup2(out[1], STDOUT_FILENO) < 0 || ::dup2(err[1], STDERR_FILENO) < 0) {
        why = std::string("dup2: ") + std::strerror(errno);
        return Errc::io_error;
    }
    ::close(out[1]);
    ::close(err[1]);
    wire::Replica q;
    q.op = wire::ReplicaOp::adopt;
    q.rank = rank;
    q.incarnation = incarnation;
    q.pid = static_cast<std::uint32_t>(::getpid());
    q.out_fd = out[0];
    q.err_fd = err[0];
    Status st = send(q);
    wire::Message reply;
    if (st.ok()) {
        st = wait_for(wire::MsgType::replica, reply, kHandshakeTimeoutMs);
    }
    ::close(out[0]);
    ::close(err[0]);
    if (!st.ok()) {
        why = "mpirun did not take the new process's output";
        return st;
    }
    const auto& a = std::get<wire::Replica>(reply.body);
    if (a.op != wire::ReplicaOp::granted) {
        why = "mpirun refused the new process: " + a.reason;
        return Errc::not_supported;
    }
    // The launcher (mpirun, or the daemon of this host; a child subreaper)
    // becomes our parent when the short-lived process between the
    // substitute and us exits; from then on we die with it, as the
    // processes it forked do (a watchdog that kills mpirun
    // must not leave a new replica running).
    for (int i = 0; i < 2000 && ::getppid() != launcher_; ++i) {
        ::usleep(500);
    }
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != launcher_) {
        why = "the new process was not adopted by its launcher (mpirun or its host's daemon, pid " +
              std::to_string(launcher_) + ")";
        return Errc::not_supported;
    }
    // Notices the substitute had queued but not handed out are gone with its
    // connection: the board says again who is failed (the caller ignores
    // what it knew already).
    notices_.forget_told();
    node_told_.assign(node_told_.size(), false);
    board_seen_ = 0;
    return Errc::ok;
}

Status OurBootstrap::replica_back()
{
    wire::Replica q;
    q.op = wire::ReplicaOp::back;
    q.rank = job_.rank;
    q.incarnation = job_.incarnation;
    return send(q);
}

Status OurBootstrap::send(wire::Body body)
{
    if (lost_) {
        return Errc::peer_failed;
    }
    wire::Bytes frame = wire::encode(wire::Message{job_.rank, std::move(body)});
    if (int err = stream_io::send_all(fd_, frame.data(), frame.size()); err != 0) {
        connection_lost(stream_io::describe("send", err));
        return Errc::peer_failed;
    }
    return Errc::ok;
}

Status OurBootstrap::read_some(int timeout_ms)
{
    if (lost_) {
        return Errc::peer_failed;
    }
    return stream_io::read_into(fd_, timeout_ms, reader_, "mpirun closed the connection",
                                [this](const std::string& why) { connection_lost(why); });
}

void OurBootstrap::connection_lost(const std::string& why)
{
    if (lost_) {
        return;
    }
    lost_ = true;
    if (!finalized_) {
        ULMPI_DEBUG("bootstrap: %s", why.c_str());
        FailureEvent ev;
        ev.kind = FailureEvent::Kind::job_ending;
        ev.detail = "lost the connection to mpirun (" + why + ")";
        events_.push_back(std::move(ev));
    }
}

void OurBootstrap::queue_event(const wire::Event& e)
{
    FailureEvent ev;
    switch (e.kind) {
    case wire::EventKind::rank_failed: ev.kind = FailureEvent::Kind::rank_failed; break;
    case wire::EventKind::host_failed: ev.kind = FailureEvent::Kind::host_failed; break;
    case wire::EventKind::job_ending: ev.kind = FailureEvent::Kind::job_ending; break;
    }
    ev.rank = e.rank;
    ev.node_id = e.node;
    ev.incarnation = e.incarnation;
    ev.detail = e.detail;
    if (muted_ && ev.kind != FailureEvent::Kind::job_ending) {
        return; // the board tells after the first fence
    }
    if (ev.kind == FailureEvent::Kind::rank_failed) {
        // Once per process (the board may have told it already), and never
        // about a process already replaced here.
        if (!notices_.news(ev.rank, ev.incarnation)) {
            ULMPI_DEBUG("bootstrap: notice about rank %d (incarnation %d) is %s", ev.rank,
                        ev.incarnation,
                        notices_.stale(ev.rank, ev.incarnation) ? "about a replaced process"
                                                                : "told already");
            return;
        }
    } else if (ev.kind == FailureEvent::Kind::host_failed && board_.valid()) {
        // Once per host: the board may have reported it already.
        const auto n = static_cast<std::size_t>(ev.node_id);
        if (ev.node_id >= 0 && n < node_told_.size()) {
            if (node_told_[n]) {
                return;
            }
            node_told_[n] = true;
        }
    }
    events_.push_back(std::move(ev));
}

Status OurBootstrap::wait_for(wire::MsgType want, wire::Message& out, int timeout_ms)
{
    for (;;) {
        std::string why;
        Status st = reader_.next(out, why);
        if (st.ok()) {
            wire::MsgType got = wire::type_of(out.body);
            if (got == want) {
                return Errc::ok;
            }
            if (const auto* e = std::get_if<wire::Event>(&out.body)) {
                queue_event(*e);
                continue;
            }
            if (got == wire::MsgType::replica && replica_late_) {
                replica_late_ = false; // the answer to a fork given up on (replica_fork)
                continue;
            }
            if (got == wire::MsgType::refused) {
                return Errc::peer_failed;
            }
            ULMPI_ERROR("bootstrap: mpirun sent %s while %s was expected",
                        wire::msg_type_name(got), wire::msg_type_name(want));
            return Errc::protocol;
        }
        if (st.code() == Errc::protocol) {
            ULMPI_ERROR("bootstrap: bad frame from mpirun: %s", why.c_str());
            connection_lost("bad frame: " + why);
            return Errc::protocol;
        }
        st = read_some(timeout_ms);
        if (st.code() == Errc::peer_failed || st.code() == Errc::timeout) {
            return st;
        }
    }
}

void OurBootstrap::moved(int rank, int node)
{
    const auto n = job_.node_of_rank.size();
    if (rank < 0 || static_cast<std::size_t>(rank) >= n || node < 0) {
        return;
    }
    if (job_.placed_node_of_rank.size() != n) {
        job_.placed_node_of_rank = job_.node_of_rank;
    }
    job_.node_of_rank[static_cast<std::size_t>(rank)] = node;
}

Status OurBootstrap::sync()
{
    // mpirun handles one connection's frames in order: once it answered a
    // GET sent after them, it holds every PUT before (the key is never put).
    wire::Get g;
    g.rank = job_.rank;
    g.key = "ulmpi.sync";
    if (Status st = send(std::move(g)); !st.ok()) {
        return st;
    }
    wire::Message m;
    return wait_for(wire::MsgType::value, m, -1);
}

Status OurBootstrap::put(std::string_view key, const void* data, std::size_t len)
{
    if (key.empty() || key.size() > wire::kMaxKey) {
        return Errc::invalid_arg;
    }
    const auto* b = static_cast<const std::byte*>(data);
    wire::Put p;
    p.key = key;
    p.value.assign(b, b + len);
    cache_[{job_.rank, std::string(key)}] = p.value;
    return send(std::move(p));
}

Status OurBootstrap::fence()
{
    if (Status st = send(fence_frame()); !st.ok()) {
        return st;
    }
    wire::Message m;
    if (Status st = wait_for(wire::MsgType::fence_done, m, -1); !st.ok()) {
        return st;
    }
    for (wire::KeyValue& kv : std::get<wire::FenceDone>(m.body).entries) {
        cache_[{kv.rank, std::move(kv.key)}] = std::move(kv.value);
    }
    muted_ = false;
    return Errc::ok;
}

Status OurBootstrap::fence_begin() { return send(fence_frame()); }

Status OurBootstrap::fence_test()
{
    if (!fence_done_.empty()) {
        for (wire::KeyValue& kv : fence_done_.front().entries) {
            cache_[{kv.rank, std::move(kv.key)}] = std::move(kv.value);
        }
        fence_done_.pop_front();
        return Errc::ok;
    }
    for (;;) {
        wire::Message m;
        std::string why;
        Status st = reader_.next(m, why);
        if (st.ok()) {
            if (auto* done = std::get_if<wire::FenceDone>(&m.body)) {
                for (wire::KeyValue& kv : done->entries) {
                    cache_[{kv.rank, std::move(kv.key)}] = std::move(kv.value);
                }
                return Errc::ok;
            }
            if (const auto* e = std::get_if<wire::Event>(&m.body)) {
                queue_event(*e);
                continue;
            }
            ULMPI_ERROR("bootstrap: mpirun sent %s during a fence",
                        wire::msg_type_name(wire::type_of(m.body)));
            return Errc::protocol;
        }
        if (st.code() == Errc::protocol) {
            connection_lost("bad frame: " + why);
            return Errc::protocol;
        }
        st = read_some(0);
        if (st.code() == Errc::peer_failed) {
            return st;
        }
        if (!st.ok()) {
            return Errc::again; // nothing more has arrived yet
        }
    }
}

Status OurBootstrap::get(int rank, std::string_view key, std::vector<std::byte>& out)
{
    if (rank < 0 || rank >= job_.size || key.empty() || key.size() > wire::kMaxKey) {
        return Errc::invalid_arg;
    }
    auto it = cache_.find(std::pair<int, std::string>(rank, key));
    if (it != cache_.end()) {
        out = it->second;
        return Errc::ok;
    }
    wire::Get g;
    g.rank = rank;
    g.key = key;
    if (Status st = send(std::move(g)); !st.ok()) {
        return st;
    }
    wire::Message m;
    if (Status st = wait_for(wire::MsgType::value, m, -1); !st.ok()) {
        return st;
    }
    auto& v = std::get<wire::Value>(m.body);
    if (!v.found) {
        return Errc::invalid_arg;
    }
    out = v.value;
    cache_[{rank, std::string(key)}] = std::move(v.value);
    return Errc::ok;
}

// The name service (boot_wire.h, GET / VALUE): one question, one VALUE.
namespace {
std::string name_key(std::string_view prefix, std::string_view service)
{
    std::string k(prefix);
    k += service;
    return k;
}
} // namespace

// Sends one frame of the name service and reads mpirun's VALUE.
Status OurBootstrap::ask(wire::Body question, wire::Value& answer)
{
    if (Status st = send(std::move(question)); !st.ok()) {
        return st;
    }
    wire::Message m;
    if (Status st = wait_for(wire::MsgType::value, m, -1); !st.ok()) {
        return st;
    }
    answer = std::move(std::get<wire::Value>(m.body));
    return Errc::ok;
}

Status OurBootstrap::publish_name(std::string_view service, std::string_view port)
{
    std::string key = name_key(wire::kNamePublish, service);
    if (service.empty() || key.size() > wire::kMaxKey) {
        return Errc::invalid_arg;
    }
    wire::Put p;
    p.key = std::move(key);
    const auto* b = reinterpret_cast<const std::byte*>(port.data());
    p.value.assign(b, b + port.size());
    wire::Value v;
    if (Status st = ask(std::move(p), v); !st.ok()) {
        return st;
    }
    return v.found ? Errc::ok : Errc::again;
}

Status OurBootstrap::unpublish_name(std::string_view service)
{
    std::string key = name_key(wire::kNameUnpublish, service);
    if (service.empty() || key.size() > wire::kMaxKey) {
        return Errc::invalid_arg;
    }
    wire::Put p;
    p.key = std::move(key);
    wire::Value v;
    if (Status st = ask(std::move(p), v); !st.ok()) {
        return st;
    }
    return v.found ? Errc::ok : Errc::invalid_arg;
}

Status OurBootstrap::lookup_name(std::string_view service, std::string& port)
{
    std::string key = name_key(wire::kNameLookup, service);
    if (service.empty() || key.size() > wire::kMaxKey) {
        return Errc::invalid_arg;
    }
    wire::Get g;
    g.rank = -1;
    g.key = std::move(key);
    wire::Value v;
    if (Status st = ask(std::move(g), v); !st.ok()) {
        return st;
    }
    if (!v.found) {
        return Errc::invalid_arg;
    }
    port.assign(reinterpret_cast<const char*>(v.value.data()), v.value.size());
    return Errc::ok;
}

void OurBootstrap::abort(int code, std::string_view msg)
{
    wire::Abort a;
    a.code = code;
    a.message = msg;
    if (send(std::move(a)).ok()) {
        // mpirun now ends every rank, this one included; give it the time.
        timespec step{0, 10 * 1000 * 1000};
        for (int waited = 0; waited < kAbortWaitMs; waited += 10) {
            ::nanosleep(&step, nullptr);
        }
    } else {
        ULMPI_ERROR("MPI_Abort with code %d (%.*s), but mpirun is unreachable", code,
                    static_cast<int>(msg.size()), msg.data());
    }
    ::_exit(wire::abort_exit_status(code));
}

Status OurBootstrap::finalize()
{
    if (finalized_) {
        return Errc::ok;
    }
    Status st = send(wire::Finalize{});
    finalized_ = true;
    return st;
}

bool OurBootstrap::poll_event(FailureEvent& ev)
{
    if (events_.empty() && !lost_) {
        // Take whatever has arrived, without blocking.
        for (;;) {
            wire::Message m;
            std::string why;
            Status st = reader_.next(m, why);
            if (st.ok()) {
                if (const auto* e = std::get_if<wire::Event>(&m.body)) {
                    queue_event(*e);
                } else if (auto* done = std::get_if<wire::FenceDone>(&m.body)) {
                    // The answer to a fence_begin(): keep it for fence_test().
                    fence_done_.push_back(std::move(*done));
                } else {
                    ULMPI_ERROR("bootstrap: unexpected %s from mpirun",
                                wire::msg_type_name(wire::type_of(m.body)));
                }
                continue;
            }
            if (st.code() == Errc::protocol) {
                connection_lost("bad frame: " + why);
                break;
            }
            if (!read_some(0).ok()) {
                break;
            }
        }
    }
    if (board_.valid() && events_.empty() && !muted_) {
        read_board();
    }
    if (events_.empty()) {
        return false;
    }
    ev = std::move(events_.front());
    events_.pop_front();
    return true;
}

} // namespace

std::unique_ptr<Bootstrap> make_our_bootstrap(std::string& why)
{
    auto b = std::make_unique<OurBootstrap>();
    if (!b->start(why).ok()) {
        return nullptr;
    }
    return b;
}

} // namespace ulmpi::rt
