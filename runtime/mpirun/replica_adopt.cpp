// Replica recovery (mpirun --replicas 2; docs/replication.md "Recovery"):
// a substitute forks a new process for its dead sibling, and mpirun adopts
// it as a new incarnation of the dead process. The protocol with the ranks:
//
//   substitute  REPLICA fork(d, k)  -> granted | busy | refused
//   new process HELLO as d (its own connection), REPLICA adopt(pid, fds)
//               -> granted;  later REPLICA back
//
// fork: d must have failed, its old process be reaped, the substitute's
// host be there (mpirun's own, or a host whose daemon is connected), and
// no other recovery be under way (one at a time: a new process must hear of
// every earlier one, docs/replication.md). The dead process may have run on
// any host: the new one runs on the substitute's, which becomes the rank's
// host for mpirun (Rank::node: messages, kills, the daemon that judges it,
// a lost host) and for the key-value service (where its HELLO comes from,
// KvServer::rank_placed); WELCOME keeps giving the job map. mpirun then
// makes sure it knows where the new process's stdout starts in the rank's
// merged output (the substitute flushed and waits for the answer: mpirun
// drains its pipe, or its daemon sends what it wrote before it relays the
// frame), makes the key-value service wait for d again, clears d's mark on
// the notice boards, tells the substitute's daemon to take d's HELLO (ADOPT
// expect, before the answer on the same connection) and answers granted.
// adopt: the new process is the substitute's grandchild. On mpirun's host,
// mpirun is a child subreaper (Monitor::run), so it becomes mpirun's child
// when its parent (the substitute's short-lived first child) exits, and its
// exit status is judged as any rank's; its stdout and stderr are pipes it
// made, whose read ends mpirun opens through /proc/<pid>/fd. On a daemon's
// host the daemon does the same (ADOPT take -> ADOPTED; runtime/daemon/
// daemon.h), and the new process is from then on one of its ranks: OUTPUT,
// EXITED, SIGNAL as for the others.
// A granted fork whose process has not said adopt (or whose daemon has not
// taken it) within kAdoptWait is a failure of d, announced as any.
#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/monitor.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace ulmpi::rt::mpirun {

namespace {
constexpr Nanos kAdoptWait = 10LL * 1000 * 1000 * 1000;

wire::Replica answer(wire::ReplicaOp op, std::string reason = {})
{
    wire::Replica a;
    a.op = op;
    a.reason = std::move(reason);
    return a;
}
} // namespace

void Monitor::on_replica(const KvServer::Note& n)
{
    const auto& q = std::get<wire::Replica>(n.msg.body);
    switch (q.op) {
    case wire::ReplicaOp::fork: replica_fork(n.rank, q.rank, q.incarnation); break;
    case wire::ReplicaOp::adopt: replica_adopt(n.rank, q); break;
    case wire::ReplicaOp::back:
        if (adopt_.rank == n.rank && !adopt_.back) {
            adopt_.back = true;
            const int nl = map_.size() / opts_.replicas;
            report("replica " + std::to_string(n.rank / nl) + " of rank " +
                   std::to_string(n.rank % nl) + " is back (process " + std::to_string(n.rank) +
                   ", pid " + std::to_string(ranks_[static_cast<std::size_t>(n.rank)].pid) +
                   ", incarnation " + std::to_string(adopt_.incarnation) + ")");
        }
        break;
    default: break;
    }
}

bool Monitor::recovery_busy() const
{
    if (adopt_.rank < 0 || adopt_.back) {
        return false;
    }
    // The process being adopted failed (it is judged as any rank): over.
    return !policy_.failed(adopt_.rank);
}

void Monitor::replica_fork(int from, int d, int incarnation)
{
    auto refuse = [&](const std::string& why) {
        kv_->send_to(from, answer(wire::ReplicaOp::refused, why));
    };
    const int size = map_.size();
    if (opts_.replicas != 2) {
        refuse("recovery is for jobs of two replicas (--replicas 2)");
        return;
    }
    const int nl = size / opts_.replicas;
    if (d < 0 || d >= size || d == from || d % nl != from % nl) {
        refuse("process " + std::to_string(d) + " is not a replica of the same rank");
        return;
    }
    if (ending_ || finishing_) {
        refuse("the job is ending");
        return;
    }
    if (kv_->fenced_count() > 0) {
        // The last fence (MPI_Finalize) has begun: a process that passed it
        // leaves once the fence completes, and stops answering then (ft/rep
        // keeps what a new replica asks for until then, not after).
        refuse("a process is finishing (MPI_Finalize)");
        return;
    }
    for (int p = 0; p < size; ++p) {
        if (kv_->finalized(p)) {
            // Its messages to the rank would no longer be kept for the new
            // process (ft/rep keeps them until its last fence only).
            refuse("process " + std::to_string(p) + " has finished already");
            return;
        }
    }
    Rank& r = ranks_[static_cast<std::size_t>(d)];
    const Rank& s = ranks_[static_cast<std::size_t>(from)];
    if (s.remote) {
        const Daemon& dm = daemons_[static_cast<std::size_t>(s.node)];
        if (dm.lost || dm.conn < 0) {
            refuse("the host of process " + std::to_string(from) + " is lost");
            return;
        }
    }
    if (!policy_.failed(d) || incarnation <= kv_->incarnation(d)) {
        refuse("process " + std::to_string(d) + " (incarnation " + std::to_string(incarnation) +
               ") is not a failed process");
        return;
    }
    if (!r.reaped || recovery_busy()) {
        kv_->send_to(from, answer(wire::ReplicaOp::busy));
        return;
    }
    // Everything the substitute printed before the fork is in its pipe
    // (it flushed, and waits for this answer): that is where the new
    // process's stdout starts. (A remote substitute's daemon sent it up
    // before the request.)
    if (s.out) {
        for (int i = 0; i < 64 && s.out->open(); ++i) {
            const std::uint64_t before = merged_seen(from);
            s.out->on_ready();
            if (merged_seen(from) == before) {
                break;
            }
        }
    }
    adopt_ = Adoption{};
    adopt_.rank = d;
    adopt_.incarnation = incarnation;
    adopt_.from = from;
    adopt_.node = s.node;
    adopt_.remote = s.remote;
    adopt_.out_offset = merged_seen(from);
    adopt_.deadline = now_ns() + kAdoptWait;
    r.incarnation = incarnation;
    kv_->rank_respawned(d, incarnation); // fences wait for the new process
    kv_->rank_placed(d, s.node);         // which says HELLO on the substitute's host
    clear_notice(d, incarnation);
    policy_.revive(d);
    if (s.remote) {
        // Before the answer, on the same connection: the daemon takes the
        // new process's HELLO.
        wire::Adopt a;
        a.step = wire::AdoptStep::expect;
        a.incarnation = incarnation;
        listener_.send(daemons_[static_cast<std::size_t>(s.node)].conn,
                       wire::encode(wire::Message{d, a}));
    }
    kv_->send_to(from, answer(wire::ReplicaOp::granted));
}

std::uint64_t Monitor::merged_seen(int process) const
{
    const int nl = map_.size() / opts_.replicas;
    const auto rank = static_cast<std::size_t>(process % nl);
    if (rank >= merged_out_.size() || !merged_out_[rank]) {
        return 0;
    }
    return merged_out_[rank]->seen(process / nl);
}

void Monitor::replica_adopt(int d, const wire::Replica& q)
{
    if (adopt_.rank != d || adopt_.adopted || adopt_.asked ||
        q.incarnation != adopt_.incarnation || q.pid == 0) {
        kv_->send_to(d, answer(wire::ReplicaOp::refused, "no recovery of this process is under way"));
        return;
    }
    if (adopt_.remote) {
        // Its host's daemon opens its pipes and makes it its child; the
        // answer waits for ADOPTED (on_adopted).
        const Daemon& dm = daemons_[static_cast<std::size_t>(adopt_.node)];
        if (dm.lost || dm.conn < 0) {
            kv_->send_to(d, answer(wire::ReplicaOp::refused, "its host is lost"));
            return;
        }
        wire::Adopt a;
        a.step = wire::AdoptStep::take;
        a.incarnation = adopt_.incarnation;
        a.pid = q.pid;
        a.out_fd = q.out_fd;
        a.err_fd = q.err_fd;
        listener_.send(dm.conn, wire::encode(wire::Message{d, a}));
        adopt_.asked = true;
        adopt_.pid = q.pid;
        return;
    }
    auto open_fd = [&](int fd) {
        const std::string path = "/proc/" + std::to_string(q.pid) + "/fd/" + std::to_string(fd);
        return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    };
    const int out = open_fd(q.out_fd);
    const int err = open_fd(q.err_fd);
    if (out < 0 || err < 0) {
        const std::string why = std::string("cannot open its output through /proc: ") + std::strerror(errno);
        if (out >= 0) {
            ::close(out);
        }
        if (err >= 0) {
            ::close(err);
        }
        kv_->send_to(d, answer(wire::ReplicaOp::refused, why));
        return;
    }
    replica_taken(d, static_cast<pid_t>(q.pid), out, err);
}

void Monitor::on_adopted(int node, int d, const wire::Adopted& a)
{
    if (adopt_.rank != d || !adopt_.asked || adopt_.adopted || node != adopt_.node) {
        // Its adoption was given up meanwhile (kAdoptWait): the process,
        // never answered, ends by itself, and its end is not judged.
        ULMPI_DEBUG("host %s: ADOPTED for process %d, whose adoption is over",
                    host_name(node).c_str(), d);
        return;
    }
    if (a.err != 0) {
        adopt_.asked = false;
        kv_->send_to(d, answer(wire::ReplicaOp::refused, a.reason));
        return;
    }
    replica_taken(d, static_cast<pid_t>(adopt_.pid), -1, -1);
}

void Monitor::replica_taken(int d, pid_t pid, int out_fd, int err_fd)
{
    Rank& r = ranks_[static_cast<std::size_t>(d)];
    // The dead process's last words: its pipes still drained (mpirun's
    // host), or the end of its streams (a daemon's host; its daemon ended
    // them before ADOPTED when it is the same host, and later frames of
    // another host about it are not taken, on_daemon_msg).
    for (auto* st : {&r.out, &r.err}) {
        if (*st) {
            retired_.push_back(std::move(*st));
        }
    }
    for (auto [lines, open] : {std::pair{r.rout.get(), &r.rout_open},
                               std::pair{r.rerr.get(), &r.rerr_open}}) {
        if (lines != nullptr && *open) {
            lines->finish();
            *open = false;
        }
    }
    const int nl = map_.size() / opts_.replicas;
    out_sink(d, STDOUT_FILENO); // makes the rank's merged output if it had none
    if (auto& m = merged_out_[static_cast<std::size_t>(d % nl)]) {
        m->restart(d / nl, adopt_.out_offset);
    }
    r.remote = adopt_.remote;
    r.node = adopt_.node;
    if (r.remote) {
        r.rout = std::make_unique<OutputSink>(out_sink(d, STDOUT_FILENO));
        r.rerr = std::make_unique<OutputSink>(out_sink(d, STDERR_FILENO));
        r.rout_open = r.rerr_open = true;
    } else {
        r.out = std::make_unique<OutputStream>(out_fd, out_sink(d, STDOUT_FILENO));
        r.err = std::make_unique<OutputStream>(err_fd, out_sink(d, STDERR_FILENO));
        rank_of_pid_[pid] = d;
    }
    r.pid = pid;
    r.reaped = false;
    r.lost_deadline = 0;
    adopt_.adopted = true;
    kv_->send_to(d, answer(wire::ReplicaOp::granted));
    report("replica " + std::to_string(d / nl) + " of rank " + std::to_string(d % nl) +
           " re-created: process " + std::to_string(d) + " is pid " + std::to_string(pid) +
           (r.remote ? " on host " + host_name(r.node) : std::string()) + " (incarnation " +
           std::to_string(adopt_.incarnation) + "), forked from process " +
           std::to_string(adopt_.from));
}

void Monitor::check_adoption(Nanos now)
{
    if (adopt_.rank < 0 || adopt_.adopted || now < adopt_.deadline) {
        return;
    }
    const int d = adopt_.rank;
    adopt_ = Adoption{};
    if (ending_ || policy_.failed(d)) {
        return;
    }
    Rank& r = ranks_[static_cast<std::size_t>(d)];
    r.reaped = true; // no process to wait for
    rank_lost(d, "(a forked replica) did not connect to mpirun");
}

Nanos Monitor::adoption_deadline() const
{
    return adopt_.rank >= 0 && !adopt_.adopted ? adopt_.deadline : 0;
}

} // namespace ulmpi::rt::mpirun
