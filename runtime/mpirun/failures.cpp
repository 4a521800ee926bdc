// How ranks end and what follows: a rank's exit judged by the failure
// policy, a failure announced to the survivors, a lost connection, and the
// end of the job (first cause wins) with the signals that go with it.
#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/monitor.h"
#include "runtime/mpirun/monitor_timing.h"

#include <csignal>

namespace ulmpi::rt::mpirun {
namespace {

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
        ev.node = ranks_[static_cast<std::size_t>(rank)].node;
        ev.incarnation = ranks_[static_cast<std::size_t>(rank)].incarnation;
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
            int node = r.node;
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
    ev.node = r.node;
    ev.incarnation = r.incarnation;
    ev.detail = detail;
    kv_->broadcast(ev);
    announced_.push_back(ev);
    board_.mark_rank(rank, r.incarnation);
    if (fences) {
        kv_->rank_failed(rank);
    }
}

void Monitor::clear_notice(int rank, int incarnation)
{
    board_.clear_rank(rank);
    // Every daemon clears its board too (RESPAWN from mpirun), not only the
    // one that starts the new process: a survivor that has taken the new
    // process in reads its board again (Bootstrap::revived), and a mark
    // left there would be the new process's failure to it. This frame goes
    // before anything that completes the survivors' fence (the new process
    // is started after it), on the same connection, so the daemon clears
    // its board before it passes that FENCE_DONE down.
    wire::Respawn m;
    m.rank = rank;
    m.incarnation = incarnation;
    const wire::Bytes frame = wire::encode(wire::Message{-1, m});
    for (const Daemon& d : daemons_) {
        if (!d.lost && d.conn >= 0) {
            listener_.send(d.conn, frame);
        }
    }
    // A daemon that connects later need not show the dead process's failure.
    std::erase_if(announced_, [rank, incarnation](const wire::Event& ev) {
        return ev.kind == wire::EventKind::rank_failed && ev.rank == rank &&
               ev.incarnation < incarnation;
    });
}

void Monitor::announce_host(int node, const std::string& detail)
{
    if (respawnable_ || placement_changed(node)) {
        // REBUILD starts its ranks again elsewhere (respawn.cpp): a notice
        // per rank, which the new process's clears; a host mark would stay
        // and fail the new processes too (every rank counts them on it).
        // Likewise when re-created replicas run elsewhere than the job map
        // (which the ranks go by) says: a notice for each rank that ran there.
        for (int r : ranks_on(node)) {
            announce_rank(r, detail);
        }
        return;
    }
    wire::Event ev;
    ev.kind = wire::EventKind::host_failed;
    ev.node = node;
    ev.detail = detail;
    kv_->broadcast(ev);
    announced_.push_back(ev);
    board_.mark_node(node);
    for (int r : ranks_on(node)) {
        kv_->rank_failed(r);
    }
}

std::vector<int> Monitor::ranks_on(int node) const
{
    std::vector<int> out;
    for (int r = 0; r < map_.size(); ++r) {
        if (ranks_[static_cast<std::size_t>(r)].node == node) {
            out.push_back(r);
        }
    }
    return out;
}

bool Monitor::placement_changed(int node) const
{
    for (int r = 0; r < map_.size(); ++r) {
        if ((map_.rank(r).node == node) != (ranks_[static_cast<std::size_t>(r)].node == node)) {
            return true;
        }
    }
    return false;
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

} // namespace ulmpi::rt::mpirun
