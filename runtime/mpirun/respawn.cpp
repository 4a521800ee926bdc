// Respawn: starting a new process for a failed rank into the running job
// (FT-MPI REBUILD). The protocol with the ranks (mpi/ftmpi_rebuild.cpp):
//
//   survivors  RESPAWN(rank, k) ... FENCE ... FENCE
//   new rank   HELLO ... PUT addresses ... FENCE ... FENCE
//
// Every survivor asks, before it enters the first fence; the first request
// for incarnation k of a rank is carried out, the others are the same
// request again. From that request on (the frame itself, before the FENCE
// behind it on the same connection) the key-value service counts the rank
// in fences again, so the survivors' fence completes only once the new
// process has put its addresses and entered it (or it failed: then it is
// announced as any failed rank and the fence goes on without it).
//
// The old process must be gone first: if the survivors found a rank failed
// that mpirun still sees running (silent on every path), it is killed and
// announced now; the new process starts when the old one is reaped.
//
// A rank whose host is lost (its daemon died) starts on mpirun's host: it
// keeps its place in the job map and uses no shm (docs/ftmpi.md).
#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/monitor.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ulmpi::rt::mpirun {

namespace {
constexpr Nanos kRespawnFailGrace = 500LL * 1000 * 1000; // SIGTERM -> SIGKILL

// A rank started away from its host in the job map: its shm would attach
// to the ranks the map puts beside it, which do not count it as theirs.
void exclude_shm(std::vector<std::string>& env)
{
    constexpr std::string_view key = "ULMPI_PATH_EXCLUDE=";
    for (std::string& e : env) {
        if (std::string_view(e).starts_with(key)) {
            e += e.size() > key.size() ? ",shm" : "shm";
            return;
        }
    }
    env.push_back(std::string(key) + "shm");
}
} // namespace

void Monitor::on_respawn(int rank, int incarnation)
{
    if (ending_ || finishing_ || rank < 0 || rank >= map_.size()) {
        return;
    }
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    if (incarnation <= r.incarnation || incarnation <= r.respawn_pending) {
        return; // another survivor's request for the same process
    }
    if (!respawnable_) {
        end_job(exit_code::failure,
                "a rank asked for rank " + std::to_string(rank) +
                    " to be started again, but this job cannot respawn (it needs --ft-mode "
                    "rebuild); ending the job",
                kRespawnFailGrace);
        return;
    }
    if (r.restarts >= opts_.max_restarts) {
        end_job(exit_code::failure,
                "rank " + std::to_string(rank) + " failed again after " +
                    std::to_string(r.restarts) + " new process(es) (--max-restarts " +
                    std::to_string(opts_.max_restarts) + "); ending the job",
                kRespawnFailGrace);
        return;
    }
    ++r.restarts;
    if (r.remote) {
        const Daemon& d = daemons_[static_cast<std::size_t>(r.node)];
        if (d.lost || d.conn < 0) {
            // The rank's host is gone: the new process starts on mpirun's
            // host (which is there as long as the job is). It keeps its
            // place in the job map, so every rank, and it too, counts it on
            // the lost host: no shm with anyone, a network path to all.
            r.remote = false;
            r.moved = true;
            kv_->rank_moved(rank);
        }
    }
    if (!policy_.failed(rank)) {
        // The survivors agreed it failed while its process still runs (no
        // path reached it): fail-stop, as for any failure.
        policy_.on_lost(rank);
        report(who(rank) + " was found failed by the other ranks; replacing it");
        announce_rank(rank, "the other ranks found it failed", false);
    }
    r.respawn_pending = incarnation;
    clear_notice(rank, incarnation); // the key-value service waits for it already
    if (r.reaped) {
        start_again(rank);
    }
}

void Monitor::start_again(int rank)
{
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    if (ending_) {
        r.respawn_pending = 0;
        return;
    }
    r.incarnation = r.respawn_pending;
    r.respawn_pending = 0;
    for (auto* s : {&r.out, &r.err}) {
        if (*s) {
            retired_.push_back(std::move(*s)); // the old process's last words
        }
    }
    std::string peers;
    for (int p = 0; p < map_.size(); ++p) {
        // A rank whose new process is asked for but not started yet (its
        // old one is not reaped) is already in that incarnation for the
        // others.
        const Rank& other = ranks_[static_cast<std::size_t>(p)];
        const int k = std::max(other.incarnation, other.respawn_pending);
        if (p != rank && k > 0) {
            peers += (peers.empty() ? "" : ",") + std::to_string(p) + ":" + std::to_string(k);
        }
    }
    if (r.remote) {
        start_again_remote(rank, peers);
        return;
    }
    SpawnSpec spec = local_spec(rank);
    spec.stdin_pipe = false; // stdin went to the old process
    if (r.moved) {
        exclude_shm(spec.env);
    }
    spec.env.push_back(std::string(wire::env::incarnation) + "=" + std::to_string(r.incarnation));
    spec.env.push_back(std::string(wire::env::restarted) + "=1");
    spec.env.push_back(std::string(wire::env::peer_incarnations) + "=" + peers);

    Child child;
    SpawnFailure fail;
    Status st = spawn_rank(spec, child, fail);
    if (child.pid > 0) {
        r.pid = child.pid;
        r.reaped = false;
        r.lost_deadline = 0;
        rank_of_pid_[child.pid] = rank;
        std::string prefix = opts_.tag_output ? "[" + std::to_string(rank) + "] " : "";
        r.out = std::make_unique<OutputStream>(child.out_fd, STDOUT_FILENO, prefix);
        r.err = std::make_unique<OutputStream>(child.err_fd, STDERR_FILENO, prefix);
    }
    if (!st.ok()) {
        end_job(exit_code::failure,
                "cannot start rank " + std::to_string(rank) + " again (" + fail.step +
                    "): " + std::strerror(fail.err) + "; ending the job",
                kRespawnFailGrace);
        return;
    }
    policy_.revive(rank);
    report("rank " + std::to_string(rank) + " started again (pid " + std::to_string(child.pid) +
           ", incarnation " + std::to_string(r.incarnation) + ")" +
           (r.moved ? " on mpirun's host: its host " + host_name(map_.rank(rank).node) +
                          " is lost"
                    : ""));
}

// A rank of another host: its daemon starts the new process (a LAUNCH of
// that one rank, as incarnation k); SPAWNED and EXITED come back as for
// the host's first processes.
void Monitor::start_again_remote(int rank, const std::string& peers)
{
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    const int node = r.node;
    const Daemon& d = daemons_[static_cast<std::size_t>(node)];
    for (auto [lines, open] : {std::pair{r.rout.get(), &r.rout_open},
                               std::pair{r.rerr.get(), &r.rerr_open}}) {
        if (lines != nullptr && *open) {
            lines->finish(); // the old process's last words
            *open = false;
        }
    }
    if (d.lost || d.conn < 0) {
        kv_->rank_failed(rank); // the host went meanwhile: the fence goes on without it
        return;
    }
    wire::Launch l = launch_frame(node);
    l.bind = static_cast<std::uint8_t>(BindMode::none); // the CPU of a rank that is gone
    l.env.push_back(std::string(wire::env::restarted) + "=1");
    l.env.push_back(std::string(wire::env::peer_incarnations) + "=" + peers);
    wire::LaunchRank lr;
    lr.rank = rank;
    lr.local_rank = map_.rank(rank).local_rank;
    lr.app = map_.rank(rank).app;
    lr.incarnation = r.incarnation;
    l.ranks.push_back(lr);
    r.reaped = false; // until its daemon says how it ended
    r.pid = -1;
    r.lost_deadline = 0;
    listener_.send(d.conn, wire::encode(wire::Message{-1, std::move(l)}));
    policy_.revive(rank);
    report("rank " + std::to_string(rank) + " starting again on host " + host_name(node) +
           " (incarnation " + std::to_string(r.incarnation) + ")");
}

} // namespace ulmpi::rt::mpirun
