// Pmi2Bootstrap: a client of the PMI-2 wire protocol (bootstrap_pmi2_wire.h)
// over the socket a launcher hands us in PMI_FD: Slurm's `srun --mpi=pmi2`,
// MPICH's hydra.
//
// Start: the PMI-1 style init line, then fullinit (rank, size, appnum), then
// job-getid (the job id, unique per Slurm step: it names our shared-memory
// files) and info-getjobattr PMI_process_mapping (the node of every rank,
// from which local rank and size follow) and universeSize.
//
// Values: put() writes hex chunks under keys that carry the rank
// (pmi2::kvs_key); they travel at the next kvs-fence; get() reads them back
// with kvs-get and keeps them. Our own values never leave this process.
//
// Every call is a blocking request and its answer, except fence_begin(),
// which sends kvs-fence and lets fence_test() look for the answer without
// blocking.
//
// Failures: PMI-2 carries no notices, and Slurm lets the other ranks of a
// step run on when one dies (unless srun --kill-on-bad-exit). So every rank
// publishes its pid ("boot.pid") and, after the first fence, watches the
// other ranks of its node through pidfds. A rank whose process ends is a
// failure at once, except while a fence is open: a rank leaves as soon as
// it has the answer of the last fence (in MPI_Finalize), maybe before we
// read ours, so then it is judged only if finalize() has not come within
// kExitGraceMs. A failure is queued as a rank_failed event and, unless
// ULMPI_BOOT_PMI2_END_STEP=off (fault tolerance that goes on without the
// rank), ends the step with a message naming the rank. A rank alone on its
// node is seen by nobody here: ULM's retransmission gives up on it, or
// Slurm ends the step (docs/slurm.md). The launcher going away closes the
// socket: a job_ending event. event_fd() is an epoll descriptor over the
// socket and the pidfds.
#include "runtime/bootstrap.h"
#include "runtime/bootstrap_env.h"
#include "runtime/bootstrap_pmi2_wire.h"
#include "runtime/boot_wire.h"
#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/stream_io.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fcntl.h>
#include <map>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ulmpi::rt {
namespace {

constexpr int kAnswerTimeoutMs = 120000; // for anything but a fence
constexpr int kAbortWaitMs = 3000;
constexpr std::int64_t kExitGraceMs = 10000;
constexpr const char* kPidKey = "boot.pid";

const BoolParam end_step_param{
    "boot_pmi2_end_step", true,
    "under srun --mpi=pmi2, end the job step when a rank of this node ends before MPI_Finalize "
    "(off: only report it to the MPI layer)"};

// A rank of this node whose process we watch.
struct Peer {
    int rank = -1;
    int pid = -1;
    int pidfd = -1;
    bool ended = false;
    std::int64_t deadline_ms = 0; // ended during a fence: judged at this time
};

using Fields = std::vector<std::pair<std::string, std::string>>;

class Pmi2Bootstrap final : public Bootstrap {
public:
    ~Pmi2Bootstrap() override
    {
        stop_watch();
        if (fd_ >= 0) {
            ::close(fd_);
        }
        if (epfd_ >= 0) {
            ::close(epfd_);
        }
    }

    Status start(std::string& why);

    const JobInfo& job() const override { return job_; }
    Status put(std::string_view key, const void* data, std::size_t len) override;
    Status fence() override;
    Status fence_begin() override;
    Status fence_test() override;
    Status get(int rank, std::string_view key, std::vector<std::byte>& out) override;
    [[noreturn]] void abort(int code, std::string_view msg) override;
    Status finalize() override;
    bool poll_event(FailureEvent& ev) override;
    int event_fd() const override { return epfd_; }
    const char* name() const override { return "pmi2"; }
    Status publish_name(std::string_view service, std::string_view port) override;
    Status unpublish_name(std::string_view service) override;
    Status lookup_name(std::string_view service, std::string& port) override;

private:
    Status send_all(const std::string& bytes);
    // One read into the reader. ok: got bytes; timeout / again: none;
    // peer_failed: the launcher closed the socket.
    Status read_some(int timeout_ms);
    // Sends a request and waits for the frame whose cmd is `want`.
    Status call(std::string_view cmd, const Fields& fields, std::string_view want,
                pmi2::Message& answer, int timeout_ms);
    // Parses every whole frame into inbox_ (a kvs-fence-response sets
    // fence_answered_ instead); protocol when a frame is malformed.
    Status pump();
    // Takes the first frame of inbox_ whose cmd is `want`.
    bool take(std::string_view want, pmi2::Message& out);
    // The barrier after kvs-fence (see fence_test()): again until done.
    Status barrier_step();
    void lost(const std::string& why);
    Status job_attr(const char* key, std::string& value, bool& found);
    // A name-service request (`port` only for name-publish); invalid_arg
    // when the name or port is too long for one field.
    Status name_call(const char* cmd, std::string_view service, const char* port,
                     pmi2::Message& answer);
    Status get_chunk(const std::string& kvs_key, std::string& value, bool& found);
    // After the first fence: the pids of the other ranks of this node.
    void start_watch();
    // Looks at the watched processes; judges those that ended.
    void check_peers();
    void peer_failed(Peer& p);
    void stop_watch();
    static std::int64_t now_ms() { return now_ns() / 1000000; }

    JobInfo job_;
    int fd_ = -1;
    pmi2::FrameReader reader_;
    std::string pmi_jobid_;
    std::map<std::pair<int, std::string>, std::vector<std::byte>, std::less<>> cache_;
    std::deque<FailureEvent> events_;
    std::deque<pmi2::Message> inbox_; // answers that arrived before they were asked for
    bool fence_open_ = false;     // from fence_begin() until fence_test() says ok
    bool fence_pending_ = false;  // kvs-fence sent, its answer not read yet
    bool fence_answered_ = false; // its answer read
    int fence_rc_ = 0;
    int epoch_ = 0;               // fences begun
    int barrier_next_ = 0;        // next rank whose fence key we wait for
    bool barrier_asked_ = false;  // a kvs-get for it is out
    bool finalized_ = false;
    bool lost_ = false;
    int epfd_ = -1;
    bool watching_ = false;
    std::vector<Peer> peers_;
};

Status Pmi2Bootstrap::start(std::string& why)
{
    std::string bad;
    if (!bootenv::env_int("PMI_FD", fd_, bad)) {
        why = bad.empty() ? "PMI_RANK is set but PMI_FD is not: ulmpi speaks PMI-2 only over the "
                            "socket the launcher passes in PMI_FD (with Slurm: srun --mpi=pmi2)"
                          : bad;
        fd_ = -1;
        return Errc::invalid_arg;
    }
    if (::fcntl(fd_, F_GETFD) < 0) {
        why = "PMI_FD=" + std::to_string(fd_) + " is not an open descriptor in this process (" +
              std::strerror(errno) + ")";
        fd_ = -1;
        return Errc::invalid_arg;
    }
    int type = 0;
    socklen_t tlen = sizeof type;
    if (::getsockopt(fd_, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM) {
        why = "PMI_FD=" + std::to_string(fd_) + " is not a stream socket";
        fd_ = -1;
        return Errc::invalid_arg;
    }
    (void)::fcntl(fd_, F_SETFD, FD_CLOEXEC); // programs we exec must not inherit it

    // PMI-1 style greeting: one line each way.
    if (Status st = send_all(pmi2::init_line()); !st.ok()) {
        why = "PMI_FD=" + std::to_string(fd_) + ": cannot send the PMI init: " + std::strerror(errno);
        return st;
    }
    std::string line;
    for (;;) {
        pollfd p{fd_, POLLIN, 0};
        int rc = ::poll(&p, 1, kAnswerTimeoutMs);
        if (rc == 0) {
            why = "no answer to the PMI init on PMI_FD within " +
                  std::to_string(kAnswerTimeoutMs / 1000) + " s";
            return Errc::timeout;
        }
        char c;
        ssize_t n = ::recv(fd_, &c, 1, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            why = "the launcher closed PMI_FD during the PMI init";
            return Errc::peer_failed;
        }
        if (c == '\n') {
            break;
        }
        line += c;
        if (line.size() > 1024) {
            why = "the answer to the PMI init on PMI_FD is not a line";
            return Errc::protocol;
        }
    }
    if (!pmi2::check_init_response(line, why)) {
        return Errc::protocol;
    }

    // fullinit: who we are.
    int env_rank = -1;
    if (!bootenv::env_int("PMI_RANK", env_rank, bad) && !bad.empty()) {
        why = bad;
        return Errc::invalid_arg;
    }
    const char* env_jobid = std::getenv("PMI_JOBID");
    pmi2::Message m;
    Fields init = {{"pmijobid", env_jobid != nullptr && *env_jobid ? env_jobid : "0"},
                   {"pmirank", std::to_string(env_rank < 0 ? 0 : env_rank)},
                   {"threaded", "FALSE"}};
    if (Status st = call("fullinit", init, "fullinit-response", m, kAnswerTimeoutMs); !st.ok()) {
        why = "PMI-2 fullinit failed (" + std::string(errc_name(st.code())) + ")";
        return st;
    }
    const std::string* rank = m.find("rank");
    const std::string* size = m.find("size");
    if (m.rc() != 0 || rank == nullptr || size == nullptr) {
        why = "the launcher refused PMI-2 fullinit (rc=" + std::to_string(m.rc()) + ")";
        return Errc::protocol;
    }
    job_.rank = std::atoi(rank->c_str());
    job_.size = std::atoi(size->c_str());
    if (job_.size < 1 || job_.rank < 0 || job_.rank >= job_.size) {
        why = "PMI-2 fullinit gave rank " + *rank + " in a job of size " + *size;
        return Errc::protocol;
    }
    if (env_rank >= 0 && env_rank != job_.rank) {
        why = "PMI_RANK=" + std::to_string(env_rank) + " but the launcher says rank " + *rank;
        return Errc::protocol;
    }
    if (const std::string* app = m.find("appnum"); app != nullptr) {
        job_.appnum = std::max(0, std::atoi(app->c_str())); // Slurm says -1
    }

    // The job id: unique per Slurm step.
    if (Status st = call("job-getid", {}, "job-getid-response", m, kAnswerTimeoutMs);
        !st.ok() || m.rc() != 0 || m.find("jobid") == nullptr) {
        why = "PMI-2 job-getid failed";
        return st.ok() ? Status(Errc::protocol) : st;
    }
    pmi_jobid_ = *m.find("jobid");
    job_.jobid = bootenv::safe_jobid("pmi2-", pmi_jobid_);

    // Where every rank runs.
    std::string mapping;
    bool found = false;
    if (Status st = job_attr("PMI_process_mapping", mapping, found); !st.ok()) {
        why = "PMI-2 info-getjobattr PMI_process_mapping failed";
        return st;
    }
    if (!found) {
        // Without it every rank is assumed on one node; only right for one node.
        ULMPI_WARN("the launcher gives no PMI_process_mapping: every rank is taken to share a node");
        job_.node_of_rank.assign(static_cast<std::size_t>(job_.size), 0);
    } else if (!pmi2::parse_process_mapping(mapping, job_.size, job_.node_of_rank, why)) {
        return Errc::protocol;
    }
    if (!bootenv::fill_locality(job_, why)) {
        return Errc::protocol;
    }
    int slurm_node = -1;
    if (bootenv::env_int("SLURM_NODEID", slurm_node, bad) && slurm_node != job_.node_id) {
        ULMPI_DEBUG("PMI_process_mapping puts rank %d on node %d, SLURM_NODEID says %d", job_.rank,
                    job_.node_id, slurm_node);
    }
    std::string univ;
    job_.universe_size = job_.size;
    if (job_attr("universeSize", univ, found).ok() && found && std::atoi(univ.c_str()) > 0) {
        job_.universe_size = std::atoi(univ.c_str());
    }
    job_.local_cpus = bootenv::slurm_local_cpus();
    job_.host = bootenv::node_name();

    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP;
    e.data.fd = fd_;
    if (epfd_ < 0 || ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd_, &e) != 0) {
        why = std::string("epoll: ") + std::strerror(errno);
        return Errc::io_error;
    }
    std::int32_t pid = static_cast<std::int32_t>(::getpid());
    if (Status st = put(kPidKey, &pid, sizeof pid); !st.ok()) {
        why = "PMI-2 kvs-put of this rank's pid failed";
        return st;
    }
    return Errc::ok;
}

void Pmi2Bootstrap::start_watch()
{
    watching_ = true;
    for (int r = 0; r < job_.size; ++r) {
        if (r == job_.rank || job_.node_of_rank[static_cast<std::size_t>(r)] != job_.node_id) {
            continue;
        }
        std::vector<std::byte> v;
        std::int32_t pid = 0;
        if (!get(r, kPidKey, v).ok() || v.size() != sizeof pid) {
            ULMPI_DEBUG("bootstrap: rank %d published no pid; its end goes unnoticed here", r);
            continue;
        }
        std::memcpy(&pid, v.data(), sizeof pid);
        Peer p;
        p.rank = r;
        p.pid = pid;
        p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (p.pidfd < 0) {
            if (errno != ESRCH) {
                ULMPI_DEBUG("bootstrap: pidfd_open(%d): %s; rank %d is not watched", pid,
                            std::strerror(errno), r);
                continue;
            }
            p.ended = true; // gone already: judged at the next check
        } else {
            epoll_event e{};
            e.events = EPOLLIN;
            e.data.fd = p.pidfd;
            (void)::epoll_ctl(epfd_, EPOLL_CTL_ADD, p.pidfd, &e);
        }
        peers_.push_back(p);
    }
}

void Pmi2Bootstrap::stop_watch()
{
    for (Peer& p : peers_) {
        if (p.pidfd >= 0) {
            ::close(p.pidfd); // leaves the epoll set with it
            p.pidfd = -1;
        }
    }
    peers_.clear();
}

void Pmi2Bootstrap::check_peers()
{
    for (Peer& p : peers_) {
        if (p.deadline_ms < 0) {
            continue; // judged
        }
        if (!p.ended && p.pidfd >= 0) {
            pollfd q{p.pidfd, POLLIN, 0};
            if (::poll(&q, 1, 0) == 1) {
                p.ended = true;
            }
        }
        if (!p.ended) {
            continue;
        }
        if (p.pidfd >= 0) {
            ::close(p.pidfd); // a pidfd stays readable: out of the epoll set
            p.pidfd = -1;
        }
        // A fence is open until fence_test() has handed its answer over.
        if (p.deadline_ms == 0 && fence_open_) {
            p.deadline_ms = now_ms() + kExitGraceMs;
            ULMPI_DEBUG("bootstrap: rank %d (pid %d) ended during a fence", p.rank, p.pid);
        }
        if (p.deadline_ms == 0 || now_ms() >= p.deadline_ms) {
            p.deadline_ms = -1;
            peer_failed(p);
        }
    }
}

void Pmi2Bootstrap::peer_failed(Peer& p)
{
    FailureEvent ev;
    ev.kind = FailureEvent::Kind::rank_failed;
    ev.rank = p.rank;
    ev.node_id = job_.node_id;
    ev.detail = "its process (pid " + std::to_string(p.pid) + " on " + job_.host +
                ") ended before MPI_Finalize";
    if (!end_step_param.get()) {
        events_.push_back(std::move(ev));
        return;
    }
    std::string msg = "rank " + std::to_string(p.rank) + " (pid " + std::to_string(p.pid) + " on " +
                      job_.host + ") ended before MPI_Finalize; rank " +
                      std::to_string(job_.rank) + " ends the job step";
    ULMPI_ERROR("%s", msg.c_str());
    for (char& c : msg) {
        if (c == ';') {
            c = ',';
        }
    }
    bootenv::let_output_drain();
    if (send_all(pmi2::encode("abort", {{"isworld", "TRUE"}, {"msg", msg}})).ok()) {
        timespec step{0, 10 * 1000 * 1000};
        for (int waited = 0; waited < kAbortWaitMs; waited += 10) {
            ::nanosleep(&step, nullptr);
        }
    }
    ::_exit(1);
}

Status Pmi2Bootstrap::send_all(const std::string& bytes)
{
    if (lost_) {
        return Errc::peer_failed;
    }
    if (int err = stream_io::send_all(fd_, bytes.data(), bytes.size()); err != 0) {
        lost(stream_io::describe("send", err));
        return Errc::peer_failed;
    }
    return Errc::ok;
}

Status Pmi2Bootstrap::read_some(int timeout_ms)
{
    if (lost_) {
        return Errc::peer_failed;
    }
    return stream_io::read_into(fd_, timeout_ms, reader_, "the launcher closed PMI_FD",
                                [this](const std::string& why) { lost(why); });
}

void Pmi2Bootstrap::lost(const std::string& why)
{
    if (lost_) {
        return;
    }
    lost_ = true;
    if (!finalized_) {
        ULMPI_DEBUG("bootstrap: %s", why.c_str());
        FailureEvent ev;
        ev.kind = FailureEvent::Kind::job_ending;
        ev.detail = "lost the PMI-2 connection to the launcher (" + why + ")";
        events_.push_back(std::move(ev));
    }
}

Status Pmi2Bootstrap::pump()
{
    for (;;) {
        std::string body, why;
        int r = reader_.next(body, why);
        if (r == 0) {
            return Errc::ok;
        }
        pmi2::Message m;
        if (r < 0 || !pmi2::parse_body(body, m, why)) {
            ULMPI_ERROR("bootstrap: bad PMI-2 message from the launcher: %s", why.c_str());
            lost("bad message: " + why);
            return Errc::protocol;
        }
        if (m.cmd == "kvs-fence-response" && fence_pending_) {
            fence_pending_ = false;
            fence_answered_ = true;
            fence_rc_ = m.rc();
            continue;
        }
        inbox_.push_back(std::move(m));
    }
}

bool Pmi2Bootstrap::take(std::string_view want, pmi2::Message& out)
{
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
        if (it->cmd == want) {
            out = std::move(*it);
            inbox_.erase(it);
            return true;
        }
    }
    return false;
}

Status Pmi2Bootstrap::call(std::string_view cmd, const Fields& fields, std::string_view want,
                           pmi2::Message& answer, int timeout_ms)
{
    if (Status st = send_all(pmi2::encode(cmd, fields)); !st.ok()) {
        return st;
    }
    for (;;) {
        if (Status st = pump(); !st.ok()) {
            return st;
        }
        if (take(want, answer)) {
            return Errc::ok;
        }
        Status st = read_some(timeout_ms);
        if (st.code() == Errc::peer_failed || st.code() == Errc::timeout) {
            if (st.code() == Errc::timeout) {
                ULMPI_ERROR("bootstrap: no PMI-2 '%.*s' from the launcher within %d s",
                            static_cast<int>(want.size()), want.data(), timeout_ms / 1000);
            }
            return st;
        }
    }
}

Status Pmi2Bootstrap::job_attr(const char* key, std::string& value, bool& found)
{
    pmi2::Message m;
    if (Status st = call("info-getjobattr", {{"key", key}}, "info-getjobattr-response", m,
                         kAnswerTimeoutMs);
        !st.ok()) {
        return st;
    }
    const std::string* f = m.find("found");
    const std::string* v = m.find("value");
    found = m.rc() == 0 && f != nullptr && *f == "TRUE" && v != nullptr;
    if (found) {
        value = *v;
    }
    return Errc::ok;
}

Status Pmi2Bootstrap::put(std::string_view key, const void* data, std::size_t len)
{
    if (key.empty() || pmi2::kvs_key(job_.rank, key, 99999).size() > pmi2::kMaxKey ||
        key.find_first_of(";=") != std::string_view::npos) {
        return Errc::invalid_arg;
    }
    std::vector<std::string> chunks = pmi2::encode_value(data, len);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        pmi2::Message m;
        Status st = call("kvs-put", {{"key", pmi2::kvs_key(job_.rank, key, i)}, {"value", chunks[i]}},
                         "kvs-put-response", m, kAnswerTimeoutMs);
        if (!st.ok()) {
            return st;
        }
        if (m.rc() != 0) {
            ULMPI_ERROR("bootstrap: the launcher refused PMI-2 kvs-put of %.*s (rc=%d)",
                        static_cast<int>(key.size()), key.data(), m.rc());
            return Errc::io_error;
        }
    }
    const auto* b = static_cast<const std::byte*>(data);
    cache_[{job_.rank, std::string(key)}].assign(b, b + len);
    return Errc::ok;
}

Status Pmi2Bootstrap::fence()
{
    if (Status st = fence_begin(); !st.ok()) {
        return st;
    }
    for (;;) {
        Status st = fence_test();
        if (st.code() != Errc::again) {
            return st;
        }
        st = read_some(peers_.empty() ? -1 : 500);
        if (st.code() == Errc::peer_failed) {
            return st;
        }
        check_peers();
    }
}

// A fence is a barrier only with some launchers: Slurm answers kvs-fence
// once every task has sent it, hydra at once (its kvs-get waits instead
// until the key's owner has fenced). So every rank puts a key of this fence
// before kvs-fence and, once answered, reads every other rank's: then
// every rank has entered the fence, whatever the launcher.
Status Pmi2Bootstrap::fence_begin()
{
    if (fence_open_) {
        return Errc::internal;
    }
    ++epoch_;
    std::string key = "fence." + std::to_string(epoch_);
    if (Status st = put(key, nullptr, 0); !st.ok()) {
        return st;
    }
    fence_answered_ = false;
    if (Status st = send_all(pmi2::encode("kvs-fence", {})); !st.ok()) {
        return st;
    }
    fence_open_ = true;
    fence_pending_ = true;
    barrier_next_ = 0;
    barrier_asked_ = false;
    return Errc::ok;
}

Status Pmi2Bootstrap::barrier_step()
{
    const std::string key = "fence." + std::to_string(epoch_);
    while (barrier_next_ < job_.size) {
        if (barrier_next_ == job_.rank) {
            ++barrier_next_;
            continue;
        }
        if (!barrier_asked_) {
            Fields f = {{"jobid", pmi_jobid_},
                        {"srcid", "-1"},
                        {"key", pmi2::kvs_key(barrier_next_, key, 0)}};
            if (Status st = send_all(pmi2::encode("kvs-get", f)); !st.ok()) {
                return st;
            }
            barrier_asked_ = true;
        }
        pmi2::Message m;
        if (!take("kvs-get-response", m)) {
            return Errc::again;
        }
        barrier_asked_ = false;
        const std::string* found = m.find("found");
        if (m.rc() == 0 && found != nullptr && *found == "TRUE") {
            ++barrier_next_;
        }
        // Not there yet (a launcher that answers at once): ask again.
    }
    return Errc::ok;
}

Status Pmi2Bootstrap::fence_test()
{
    if (!fence_open_) {
        return Errc::internal;
    }
    if (Status st = pump(); !st.ok()) {
        return st;
    }
    if (!fence_answered_ || barrier_asked_) {
        Status st = read_some(0);
        if (st.code() == Errc::peer_failed) {
            return st;
        }
        if (Status t = pump(); !t.ok()) {
            return t;
        }
        if (!fence_answered_) {
            return Errc::again;
        }
    }
    if (fence_rc_ != 0) {
        ULMPI_ERROR("bootstrap: the launcher failed the PMI-2 kvs-fence (rc=%d)", fence_rc_);
        fence_open_ = false;
        return Errc::io_error;
    }
    if (Status st = barrier_step(); !st.ok()) {
        return st; // again, or the launcher is gone
    }
    fence_open_ = false;
    fence_answered_ = false;
    if (!watching_) {
        start_watch();
    }
    return Errc::ok;
}

Status Pmi2Bootstrap::get_chunk(const std::string& kvs_key, std::string& value, bool& found)
{
    pmi2::Message m;
    Status st = call("kvs-get", {{"jobid", pmi_jobid_}, {"srcid", "-1"}, {"key", kvs_key}},
                     "kvs-get-response", m, kAnswerTimeoutMs);
    if (!st.ok()) {
        return st;
    }
    const std::string* f = m.find("found");
    const std::string* v = m.find("value");
    found = m.rc() == 0 && f != nullptr && *f == "TRUE" && v != nullptr;
    if (found) {
        value = *v;
    }
    return Errc::ok;
}

// The name service of PMI-2 (name-publish, name-unpublish, name-lookup), kept
// by the launcher: Slurm's stepd and srun, hydra's mpiexec. A name and a
// port are one field each (no chunks): at most kMaxValue characters.
Status Pmi2Bootstrap::name_call(const char* cmd, std::string_view service, const char* port,
                                pmi2::Message& answer)
{
    if (service.empty() || service.size() > pmi2::kMaxValue ||
        (port != nullptr && std::strlen(port) > pmi2::kMaxValue)) {
        return Errc::invalid_arg;
    }
    Fields f{{"name", std::string(service)}};
    if (port != nullptr) {
        f.emplace_back("port", port);
    }
    f.emplace_back("infokeycount", "0");
    return call(cmd, f, std::string(cmd) + "-response", answer, kAnswerTimeoutMs);
}

Status Pmi2Bootstrap::publish_name(std::string_view service, std::string_view port)
{
    pmi2::Message m;
    const std::string p(port);
    if (Status st = name_call("name-publish", service, p.c_str(), m); !st.ok()) {
        return st;
    }
    return m.rc() == 0 ? Errc::ok : Errc::protocol;
}

Status Pmi2Bootstrap::unpublish_name(std::string_view service)
{
    pmi2::Message m;
    if (Status st = name_call("name-unpublish", service, nullptr, m); !st.ok()) {
        return st;
    }
    return m.rc() == 0 ? Errc::ok : Errc::invalid_arg;
}

Status Pmi2Bootstrap::lookup_name(std::string_view service, std::string& port)
{
    pmi2::Message m;
    if (Status st = name_call("name-lookup", service, nullptr, m); !st.ok()) {
        return st;
    }
    // Hydra answers the port in "port" (older ones in "value"), Slurm in
    // "value"; found=FALSE or rc != 0 when the name is not published.
    const std::string* f = m.find("found");
    const std::string* v = m.find("port");
    if (v == nullptr) {
        v = m.find("value");
    }
    if (m.rc() != 0 || (f != nullptr && *f != "TRUE") || v == nullptr) {
        return Errc::invalid_arg;
    }
    port = *v;
    return Errc::ok;
}

Status Pmi2Bootstrap::get(int rank, std::string_view key, std::vector<std::byte>& out)
{
    if (rank < 0 || rank >= job_.size || key.empty() ||
        pmi2::kvs_key(rank, key, 99999).size() > pmi2::kMaxKey) {
        return Errc::invalid_arg;
    }
    auto it = cache_.find(std::pair<int, std::string>(rank, key));
    if (it != cache_.end()) {
        out = it->second;
        return Errc::ok;
    }
    std::string first;
    bool found = false;
    if (Status st = get_chunk(pmi2::kvs_key(rank, key, 0), first, found); !st.ok()) {
        return st;
    }
    if (!found) {
        return Errc::invalid_arg;
    }
    std::size_t count = 0;
    std::string_view hex;
    std::vector<std::byte> value;
    if (!pmi2::parse_first_chunk(first, count, hex) || !pmi2::hex_decode(hex, value)) {
        ULMPI_ERROR("bootstrap: rank %d's PMI-2 value for %.*s is not ours", rank,
                    static_cast<int>(key.size()), key.data());
        return Errc::protocol;
    }
    for (std::size_t i = 1; i < count; ++i) {
        std::string more;
        if (Status st = get_chunk(pmi2::kvs_key(rank, key, i), more, found); !st.ok()) {
            return st;
        }
        if (!found || !pmi2::hex_decode(more, value)) {
            ULMPI_ERROR("bootstrap: chunk %zu of rank %d's PMI-2 value %.*s is missing", i, rank,
                        static_cast<int>(key.size()), key.data());
            return Errc::protocol;
        }
    }
    out = value;
    cache_[{rank, std::string(key)}] = std::move(value);
    return Errc::ok;
}

void Pmi2Bootstrap::abort(int code, std::string_view msg)
{
    bootenv::print_abort(job_.rank, code, msg);
    // No ';' in the message: Slurm does not take ";;" apart.
    std::string text(msg.substr(0, 512));
    for (char& c : text) {
        if (c == ';' || c == '\n') {
            c = ',';
        }
    }
    bootenv::let_output_drain();
    if (send_all(pmi2::encode("abort", {{"isworld", "TRUE"}, {"msg", text}})).ok()) {
        // The launcher now kills the step, this rank included; give it the time.
        timespec step{0, 10 * 1000 * 1000};
        for (int waited = 0; waited < kAbortWaitMs; waited += 10) {
            ::nanosleep(&step, nullptr);
        }
    }
    ::_exit(wire::abort_exit_status(code));
}

Status Pmi2Bootstrap::finalize()
{
    if (finalized_) {
        return Errc::ok;
    }
    finalized_ = true;
    stop_watch(); // from now on the others may leave
    pmi2::Message m;
    Status st = call("finalize", {}, "finalize-response", m, kAnswerTimeoutMs);
    if (st.ok() && m.rc() != 0) {
        st = Errc::io_error;
    }
    ::close(fd_);
    fd_ = -1;
    lost_ = true; // nothing more to say to the launcher
    return st;
}

bool Pmi2Bootstrap::poll_event(FailureEvent& ev)
{
    if (events_.empty() && !lost_ && !finalized_) {
        // Nothing but a fence answer is expected; a closed socket means the
        // launcher is gone.
        while (read_some(0).ok()) {
            if (!pump().ok()) {
                break;
            }
        }
        if (lost_ && fd_ >= 0) {
            (void)::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd_, nullptr); // EOF stays readable
        }
        check_peers();
    }
    if (events_.empty()) {
        return false;
    }
    ev = std::move(events_.front());
    events_.pop_front();
    return true;
}

} // namespace

std::unique_ptr<Bootstrap> make_pmi2_bootstrap(std::string& why)
{
    auto b = std::make_unique<Pmi2Bootstrap>();
    if (!b->start(why).ok()) {
        return nullptr;
    }
    return b;
}

} // namespace ulmpi::rt
