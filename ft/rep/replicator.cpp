#include "ft/rep/replicator.h"

#include "ft/rep/control_msg.h"

#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/crc32c.h"
#include "runtime/log.h"
#include "ulm/packer.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

namespace ulmpi::rep {

namespace {

const rt::IntParam replicas_p{"rep_replicas", 1,
                              "replicas of every rank (mpirun --replicas sets it; 1: none)"};
const rt::SizeParam copy_limit_p{
    "rep_copy_limit", 65536,
    "replication: a standard send up to this size completes when it left and a copy waits for the "
    "other replicas' acknowledgements (0: every send waits for them, SDR-MPI's Algorithm 1)"};

const rt::BoolParam check_p{"rep_check", false,
                            "replication: replicas compare a CRC32C of every message they send "
                            "(mpirun --replica-check)"};

const rt::BoolParam recover_p{
    "rep_recover", true,
    "replication: the substitute of a dead replica re-creates it by forking (two replicas, "
    "processes on mpirun's host; docs/replication.md)"};

const rt::IntParam ack_delay_p{
    "rep_ack_delay_us", 100,
    "replication: an acknowledgement of a small copied message waits up to this long: to the "
    "process this one sends to, for a message of the program's to ride on; to the others, for "
    "more to share its control message (0: never waits)"};

constexpr std::size_t kMaxHoles = 4096;
// Deferred acknowledgements to one process beyond which they go at once.
constexpr std::size_t kMaxDeferred = 64;

} // namespace

int replicas_param()
{
    const std::int64_t r = replicas_p.get();
    return r < 1 ? 1 : static_cast<int>(std::min<std::int64_t>(r, 32));
}

std::unique_ptr<Replicator> Replicator::start(ulm::Engine& engine, rt::Bootstrap& boot,
                                              int replicas, ulm::FailureHooks* fallback,
                                              std::string& why)
{
    const int p = engine.phys_size();
    if (replicas < 2) {
        return nullptr;
    }
    if (replicas > 32 || p % replicas != 0) {
        why = "replication: " + std::to_string(p) + " processes cannot be " +
              std::to_string(replicas) + " replicas of each rank (rep_replicas must divide the " +
              "job's size and be at most 32)";
        return nullptr;
    }
    return std::make_unique<Replicator>(engine, boot, replicas, fallback);
}

Replicator::Replicator(ulm::Engine& engine, rt::Bootstrap& boot, int replicas,
                       ulm::FailureHooks* fallback)
    : eng_(engine), boot_(boot), fallback_(fallback),
      set_(engine.phys_size() / replicas, replicas), copy_limit_(copy_limit_p.get()),
      k_(set_.replica_of(engine.phys_rank())), me_(set_.logical_of(engine.phys_rank())),
      acks_(set_.logical_size())
{
    const int n = set_.logical_size();
    const auto nn = static_cast<std::size_t>(n);
    // The program sees the placement of replica 0 on every replica, so that
    // every replica makes the same communicators (MPI_Comm_split_type).
    const rt::JobInfo& pj = boot.job();
    job_ = pj;
    job_.rank = me_;
    job_.size = n;
    job_.universe_size = n;
    job_.node_of_rank.assign(nn, 0);
    for (int j = 0; j < n; ++j) {
        const auto p = static_cast<std::size_t>(set_.phys(0, j));
        job_.node_of_rank[static_cast<std::size_t>(j)] = p < pj.node_of_rank.size() ? pj.node_of_rank[p] : 0;
    }
    job_.node_id = job_.node_of_rank[static_cast<std::size_t>(me_)];
    job_.local_size = 0;
    for (int j = 0; j < n; ++j) {
        if (job_.node_of_rank[static_cast<std::size_t>(j)] == job_.node_id) {
            if (j == me_) {
                job_.local_rank = job_.local_size;
            }
            ++job_.local_size;
        }
    }
    send_next_.assign(nn, 0);
    recv_next_.assign(nn, 1);
    recv_holes_.resize(nn);
    open_.resize(nn);
    reasked_.resize(static_cast<std::size_t>(engine.phys_size()));
    marks_.assign(static_cast<std::size_t>(engine.phys_size()), 0);
    new_holes_.resize(nn);
    serve_.resize(nn);
    server_.resize(nn);
    check_ = check_p.get();
    if (check_) {
        digests_.resize(nn);
    }
    for (int x = 0; x < n; ++x) {
        server_[static_cast<std::size_t>(x)] = set_.phys(k_, x);
    }
    recover_ = recover_p.get() && replicas == 2;
    inc_.assign(static_cast<std::size_t>(engine.phys_size()), 0);
    for (std::size_t p = 0; p < inc_.size() && p < pj.incarnation_of_rank.size(); ++p) {
        inc_[p] = pj.incarnation_of_rank[p];
    }
    direct_.assign(nn, true);
    keep_.assign(nn, 0);
    stock_.resize(nn);
    unready_.assign(static_cast<std::size_t>(engine.phys_size()), false);
    rx_buf_.resize(sizeof(RequestMsg) + kMaxHoles * sizeof(std::uint64_t));
    deferred_.resize(static_cast<std::size_t>(engine.phys_size()));
    ack_delay_ = std::max<std::int64_t>(ack_delay_p.get(), 0) * 1000;
    eng_.set_replica_hooks(this);
    eng_.set_failure_hooks(this);
    eng_.watch_events(true); // a replica's death must be read while the program polls
    post_rx();
    post_mark_rx();
    eng_.add_progress_hook(this);
    hooked_ = true;
    ULMPI_DEBUG("replication: process %d is replica %d of rank %d (%d ranks x %d)",
                eng_.phys_rank(), k_, me_, n, set_.replicas());
}

Replicator::~Replicator()
{
    if (hooked_) {
        eng_.remove_progress_hook(this);
    }
}

void Replicator::post_rx()
{
    const ulm::DataRef ref{rx_buf_.data(), rx_buf_.size(), &ulm::bytes_layout()};
    if (!eng_.irecv(ref, ulm::kAnySource, ulm::kAnyTag, kRepContext, &rx_).ok()) {
        rt::fatal("replication: cannot post the control receive");
    }
}

void Replicator::post_mark_rx()
{
    const ulm::DataRef ref{nullptr, 0, &ulm::bytes_layout()};
    if (!eng_.irecv(ref, ulm::kAnySource, ulm::kAnyTag, kMarkContext, &rx_mark_).ok()) {
        rt::fatal("replication: cannot post the receive of marks");
    }
}

int Replicator::route(int dst) const
{
    return set_.alive(k_, dst) && direct_[static_cast<std::size_t>(dst)] ? set_.phys(k_, dst) : -1;
}

std::uint64_t Replicator::on_arrival(int phys, ulm::ContextId ctx)
{
    if (ctx == kMarkContext) {
        ++marks_[static_cast<std::size_t>(phys)];
        return 0;
    }
    if (ctx == kRepContext || ctx == kSiblingContext) {
        return 0;
    }
    const auto x = static_cast<std::size_t>(set_.logical_of(phys));
    if (phys != server_[x]) {
        ULMPI_DEBUG("replication: a message of rank %zu from process %d, served by %d", x, phys,
                    server_[x]);
    }
    std::uint64_t m = 0;
    auto& again = reasked_[static_cast<std::size_t>(phys)];
    int& marks = marks_[static_cast<std::size_t>(phys)];
    if (marks > 0 && !again.empty()) {
        // A message asked for again (a resend): its number, not the next.
        --marks;
        m = again.front();
        again.pop_front();
    } else if (!recv_holes_[x].empty()) {
        m = recv_holes_[x].front();
        recv_holes_[x].pop_front();
    } else {
        m = recv_next_[x]++;
    }
    if (recover_) {
        auto& open = open_[x];
        if (open.empty() || open.back() < m) {
            open.push_back(m);
        } else if (const auto it = std::lower_bound(open.begin(), open.end(), m);
                   it == open.end() || *it != m) {
            open.insert(it, m);
        }
    }
    return m;
}

void Replicator::on_send(ulm::SendMsg& s, int dst)
{
    const std::uint64_t m = ++send_next_[static_cast<std::size_t>(dst)];
    s.rep_seq = m;
    if (check_) {
        std::uint32_t crc = 0;
        ulm::for_each_segment(s.data, 0, s.total, [&](const std::byte* p, std::size_t n) {
            crc = rt::crc32c(p, n, crc);
        });
        for (int l = 0; l < set_.replicas(); ++l) {
            if (l != k_ && set_.alive(l, me_)) {
                std::vector<std::byte> b;
                append(b, DigestMsg{Kind::digest, {}, static_cast<std::uint32_t>(dst), m, s.tag, crc});
                outbox_.push_back(Out{set_.phys(l, me_), std::move(b), nullptr, nullptr});
            }
        }
        record_digest(k_, dst, m, s.tag, crc);
    }
    // With recovery, my own replica of the destination acknowledges too
    // (queue_acks): a process forked from it lacks what it had not received
    // at the fork, and asks me for it when my sibling is dead.
    const std::uint32_t mask = set_.live_mask(dst, recover_ ? -1 : k_);
    const auto& orphans = serve_[static_cast<std::size_t>(dst)];
    const bool parked = acks_.parked(dst); // a replica of it is being re-created
    if (mask == 0 && orphans.empty() && !parked) {
        return; // no other replica of the destination lives
    }
    // Completes as without replication (a program may count on standard
    // sends of small messages being buffered); the copy is what the
    // substitute would send.
    const bool copied = parked || (s.total <= copy_limit_ && s.mode != ulm::SendMode::synchronous);
    std::shared_ptr<HeldCopy> copy = copied ? copy_of(s) : nullptr;
    if (orphans.empty()) [[likely]] {
        // The table takes the copy (no reference count to move).
        const std::uint32_t want = acks_.post(dst, m, copied ? nullptr : &s, mask, std::move(copy));
        if (!copied) {
            s.holds += static_cast<std::uint32_t>(std::popcount(want));
        }
        return;
    }
    const std::uint32_t want = acks_.post(dst, m, copied ? nullptr : &s, mask, copy);
    if (!copied) {
        s.holds += static_cast<std::uint32_t>(std::popcount(want));
    }
    AckTable::Entry e{copied ? nullptr : &s, copy, want};
    for (const Orphan& o : orphans) {
        if (o.wants(m) && set_.alive(o.replica, dst)) {
            queue_copy(e, set_.phys(o.replica, dst));
        }
    }
}

bool Replicator::Orphan::wants(std::uint64_t m) const
{
    return m >= next || std::find(holes.begin(), holes.end(), m) != holes.end();
}

void Replicator::queue_copy(const AckTable::Entry& e, int to)
{
    if (e.copy) {
        outbox_.push_back(Out{to, {}, nullptr, e.copy});
        return;
    }
    ++e.send->holds; // the message stays until the copy has left
    outbox_.push_back(Out{to, {}, e.send, nullptr});
}

void Replicator::on_recv_complete(const ulm::RecvMsg& r)
{
    if (r.ctx == kRepContext || r.rep_seq == 0) {
        return;
    }
    if (recover_) {
        auto& open = open_[static_cast<std::size_t>(r.env.source)];
        if (const auto it = std::lower_bound(open.begin(), open.end(), r.rep_seq);
            it != open.end() && *it == r.rep_seq) {
            open.erase(it);
        }
    }
    // irecvComplete: acknowledge to every live replica of the sender but
    // mine (with recovery, to mine too: see on_send). Who lives is decided when the acknowledgement leaves (flush),
    // after the control messages that came before it: a replica re-created
    // (recovery) gets the acknowledgements of what comes after its notice.
    // A small eager message of standard mode (no descriptor to answer)
    // was copied by its sender, whose send completed: its acknowledgement
    // may wait a little for a message to carry it (queue_acks).
    const bool deferrable = r.send_id == 0 && r.env.msg_len <= copy_limit_;
    pending_acks_.push_back(PendingAck{r.env.source, r.rep_seq, deferrable});
}

bool Replicator::queued_for(int to) const
{
    for (const Out& o : outbox_) {
        if (o.to == to) {
            return true;
        }
    }
    return false;
}

std::uint64_t Replicator::piggy_ack(int phys)
{
    const Deferred& d = deferred_[static_cast<std::size_t>(phys)];
    return d.head < d.m.size() ? d.m[d.head] : 0;
}

void Replicator::piggy_sent(int phys)
{
    Deferred& d = deferred_[static_cast<std::size_t>(phys)];
    ++piggy_acks_;
    if (++d.head >= d.m.size()) {
        drop_deferred(phys);
    }
}

void Replicator::on_piggy_ack(int phys, std::uint64_t m)
{
    piggy_in_.push_back(PiggyIn{phys, inc_[static_cast<std::size_t>(phys)], m});
}

void Replicator::drop_deferred(int to)
{
    Deferred& d = deferred_[static_cast<std::size_t>(to)];
    if (d.m.empty()) {
        return;
    }
    d.m.clear();
    d.head = 0;
    std::erase(deferred_procs_, to);
}

void Replicator::send_acks(int to, const std::uint64_t* m, std::size_t n)
{
    // At most kMaxHoles numbers a message (the size of the receive buffer).
    for (std::size_t i = 0; i < n; i += kMaxHoles) {
        const std::size_t k = std::min(n - i, kMaxHoles);
        Out o{to, {}, nullptr, nullptr};
        if (!spare_bufs_.empty()) {
            o.ctrl = std::move(spare_bufs_.back());
            spare_bufs_.pop_back();
        }
        append(o.ctrl, AckMsg{Kind::ack, {}, static_cast<std::uint32_t>(k)});
        const auto* p = reinterpret_cast<const std::byte*>(m + i);
        o.ctrl.insert(o.ctrl.end(), p, p + k * sizeof(std::uint64_t));
        standalone_acks_ += k;
        outbox_.push_back(std::move(o));
    }
}

void Replicator::release_deferred(bool all)
{
    if (deferred_procs_.empty()) {
        return;
    }
    all = all || finishing_;
    const rt::Nanos now = all ? 0 : rt::now_ns();
    // They were queued before anything now in the outbox: they go first
    // (each process still gets everything in the order it was queued).
    const std::vector<Out>::difference_type queued = static_cast<std::ptrdiff_t>(outbox_.size());
    for (std::size_t i = 0; i < deferred_procs_.size();) {
        const int to = deferred_procs_[i];
        Deferred& d = deferred_[static_cast<std::size_t>(to)];
        if (!all && now - d.since < ack_delay_ && d.m.size() - d.head < kMaxDeferred &&
            !queued_for(to)) {
            ++i;
            continue;
        }
        if (!set_.dead(to)) {
            send_acks(to, d.m.data() + d.head, d.m.size() - d.head);
        }
        d.m.clear();
        d.head = 0;
        deferred_procs_[i] = deferred_procs_.back();
        deferred_procs_.pop_back();
    }
    if (static_cast<std::ptrdiff_t>(outbox_.size()) > queued && queued > 0) {
        std::rotate(outbox_.begin(), outbox_.begin() + queued, outbox_.end());
    }
}

void Replicator::queue_acks()
{
    // One control message per process for all the acknowledgements it gets
    // in this flush (in completion order; at most kMaxHoles, the size of
    // the receive buffer): they are the last things queued, so each
    // process still gets everything in the order it was queued.
    const std::size_t first = outbox_.size();
    for (const auto& [x, m, deferrable] : pending_acks_) {
        for (int l = 0; l < set_.replicas(); ++l) {
            if ((l == k_ && !recover_) || !set_.alive(l, x)) {
                continue;
            }
            const int to = set_.phys(l, x);
            if (deferrable && ack_delay_ > 0 && !finishing_ && !queued_for(to)) {
                // Deferred, and sent by release_deferred() once the delay is
                // over (or kMaxDeferred wait): to my replica of x it may ride
                // on my next message to it (piggy_ack); to the others, which
                // get none of my messages, the acknowledgements of that
                // while go in one control message instead of one each. Not
                // when something is queued for `to` already: it would
                // overtake that.
                Deferred& d = deferred_[static_cast<std::size_t>(to)];
                if (d.m.empty()) {
                    d.since = rt::now_ns();
                    deferred_procs_.push_back(to);
                }
                d.m.push_back(m);
                continue;
            }
            Out* open = nullptr;
            for (std::size_t i = outbox_.size(); i > first; --i) {
                if (outbox_[i - 1].to == to) {
                    open = &outbox_[i - 1];
                    break;
                }
            }
            AckMsg a{Kind::ack, {}, 1};
            if (open != nullptr) {
                std::memcpy(&a, open->ctrl.data(), sizeof a);
            }
            if (open == nullptr || a.count >= kMaxHoles) {
                send_acks(to, &m, 1);
            } else {
                ++a.count;
                std::memcpy(open->ctrl.data(), &a, sizeof a);
                append(open->ctrl, m);
                ++standalone_acks_;
            }
        }
    }
    pending_acks_.clear();
}

void Replicator::on_recv_orphaned(ulm::RecvMsg& r)
{
    if (r.ctx == kSiblingContext) {
        // The replica channel's user takes it back (cancel) once it knows of
        // the death; no other process sends the same message.
        if (failing_) {
            orphans_.push_back(&r);
        } else {
            eng_.repost(&r);
        }
        return;
    }
    // Its sender died before all its data came: another replica of the
    // sender sends the message again; the receive waits for it, first in line.
    new_holes_[static_cast<std::size_t>(r.env.source)].push_back(r.rep_seq);
    if (failing_ || !set_.dead(r.peer)) {
        // Reposted in message order once all are known (fail()). A death I
        // have not heard of yet: the engine heard first (the launcher's
        // notice, Engine::check_events), and tells me right after.
        orphans_.push_back(&r);
    } else {
        eng_.repost(&r);
    }
}

void Replicator::on_unexpected_dropped(int src, std::uint64_t rep_seq)
{
    if (rep_seq == 0) {
        return; // not a numbered message (replica channel, control)
    }
    new_holes_[static_cast<std::size_t>(src)].push_back(rep_seq);
}

void Replicator::on_peer_failed(int peer, const char* detail)
{
    fail(peer, detail);
}

void Replicator::on_peer_unreachable(int peer, const char* why)
{
    fail(peer, why);
}

void Replicator::on_job_ending(const char* detail)
{
    if (fallback_ != nullptr) {
        fallback_->on_job_ending(detail);
    }
}

void Replicator::fail(int d, const char* detail)
{
    if (d < 0 || d >= eng_.phys_size() || d == eng_.phys_rank() || !set_.mark_dead(d)) {
        return;
    }
    const int x = set_.logical_of(d);
    const int l = set_.replica_of(d);
    if (set_.all_dead(x)) {
        boot_.abort(1, "replication: every replica of rank " + std::to_string(x) +
                           " failed (the last, process " + std::to_string(d) + ", " +
                           (detail != nullptr ? detail : "failed") + ")");
    }
    ULMPI_DEBUG("replication: replica %d of rank %d (process %d) failed: %s", l, x, d,
                detail != nullptr ? detail : "");
    if (recovery_applies(d)) {
        if (x == me_) {
            fork_for_ = d; // my sibling: I re-create it (poll, try_fork)
            fork_retry_at_ = rt::now_ns() + fork_delay();
            if (finishing_) {
                // A finishing process re-creates nobody; the others stop
                // keeping for it (the notice of incarnation 0).
                give_up_fork("this process is finishing");
            }
        } else {
            // Kept for the new replica, which asks for what it lacks.
            keep_for(x, l);
        }
    }
    if (born_at_ != 0 && d == parent_) {
        // I am a new process that not every live process knows yet, and only
        // my substitute could tell me when they do: the job cannot go on
        // safely (docs/replication.md, "Recovery").
        boot_.abort(1, "replication: process " + std::to_string(d) + " (replica " +
                           std::to_string(set_.replica_of(d)) + " of rank " + std::to_string(me_) +
                           ") died while it re-created process " +
                           std::to_string(eng_.phys_rank()) + " (before every process knew it)");
    }
    if (unready_[static_cast<std::size_t>(d)]) {
        unready_[static_cast<std::size_t>(d)] = false; // a new process waits for it no more
        --unready_count_;
        if (unready_count_ == 0) {
            // It was the last one I waited for: I am back (else mpirun
            // would hold every later recovery until the job's end).
            on_ready(-1, 0);
        }
    }
    // `holes` and orphans_ are filled through the hooks by the engine's
    // fail_peer: now, or just before when the engine heard first (then this
    // call finds nothing more).
    auto& holes = new_holes_[static_cast<std::size_t>(x)];
    failing_ = true;
    eng_.fail_peer(d, rt::Errc::peer_failed);
    failing_ = false;
    // What I had asked it for again and not received is lost with it too.
    auto& again = reasked_[static_cast<std::size_t>(d)];
    holes.insert(holes.end(), again.begin(), again.end());
    again.clear();
    marks_[static_cast<std::size_t>(d)] = 0;
    // Each goes to the front of the posted receives: the last first, so that
    // they end up in the order they had matched in.
    std::sort(orphans_.begin(), orphans_.end(),
              [](const ulm::RecvMsg* a, const ulm::RecvMsg* b) { return a->rep_seq > b->rep_seq; });
    for (ulm::RecvMsg* r : orphans_) {
        eng_.repost(r);
    }
    orphans_.clear();
    // What I queued for it and have not handed to ULM yet goes with it. On a
    // notice it comes back as a new incarnation before my next flush (which
    // drops only what is queued for the dead), and copies meant for the dead
    // one (an orphan entry's, numbered from where the dead one stood) would
    // reach the new one, which numbers them as its next: a stream shifted.
    drop_deferred(d);
    std::erase_if(outbox_, [&](const Out& o) {
        if (o.to != d) {
            return false;
        }
        if (o.parent != nullptr) {
            eng_.release_hold(o.parent);
        }
        return true;
    });
    for (ulm::SendMsg* s : acks_.drop_replica(x, l)) {
        eng_.release_hold(s);
    }
    auto& orphans = serve_[static_cast<std::size_t>(x)];
    orphans.erase(std::remove_if(orphans.begin(), orphans.end(),
                                 [&](const Orphan& o) { return o.replica == l; }),
                  orphans.end());
    // Did rank x's messages to me come from the dead one? Then ask the
    // substitute for what I miss.
    const auto xi = static_cast<std::size_t>(x);
    if (server_[xi] == d) {
        const int s = set_.server(x, k_);
        server_[xi] = s;
        std::vector<std::uint64_t> want(recv_holes_[xi].begin(), recv_holes_[xi].end());
        want.insert(want.end(), holes.begin(), holes.end());
        std::sort(want.begin(), want.end());
        want.erase(std::unique(want.begin(), want.end()), want.end());
        if (want.size() > kMaxHoles) {
            boot_.abort(1, "replication: rank " + std::to_string(me_) + " lost " +
                               std::to_string(want.size()) + " messages in flight from rank " +
                               std::to_string(x) + " (at most " + std::to_string(kMaxHoles) + ")");
        }
        holes_ += holes.size();
        recv_holes_[xi].assign(want.begin(), want.end());
        const auto epoch =
            static_cast<std::uint32_t>(inc_[static_cast<std::size_t>(set_.phys(k_, x))]);
        std::vector<std::byte> b =
            request_bytes(Kind::request, recv_next_[xi], epoch, want, pending_of(x));
        ++takeovers_;
        ULMPI_DEBUG("replication: rank %d's messages now come from process %d (from %llu, %zu holes)",
                    x, s, static_cast<unsigned long long>(recv_next_[xi]), want.size());
        outbox_.push_back(Out{s, std::move(b), nullptr, nullptr});
    } else if (!holes.empty()) {
        // It had stopped serving me (a recovery gave me a new server) but
        // had not finished sending these: my server sends them again.
        ULMPI_DEBUG("replication: %zu lost messages of process %d, which no longer served me: "
                    "asked of process %d again",
                    holes.size(), d, server_[xi]);
        holes_ += holes.size();
        ask_again(x, std::move(holes));
    }
    holes.clear();
}

void Replicator::on_request(int from, int rank, std::uint64_t next, std::vector<std::uint64_t> holes,
                            const std::vector<std::uint64_t>& pending, int epoch)
{
    const int l = set_.replica_of(from);
    if (l != k_) {
        const int sib = set_.phys(l, me_);
        if (inc_[static_cast<std::size_t>(sib)] > epoch) {
            // About my sibling's previous process, which has been re-created
            // since: the new one serves the requester (recovery).
            return;
        }
        // The requester learned of my sibling's death first; so do I now.
        fail(sib, "reported by a replica it served");
    }
    // l == k_: the requester is a re-created replica (or I am one, and it
    // is the replica of its rank that I send to): it asks from where it stands.
    auto& orphans = serve_[static_cast<std::size_t>(rank)];
    orphans.erase(std::remove_if(orphans.begin(), orphans.end(),
                                 [&](const Orphan& o) { return o.replica == l; }),
                  orphans.end());
    Orphan o{l, next, std::move(holes)};
    auto& stock = stock_[static_cast<std::size_t>(rank)];
    if (recover_) {
        // It has every message before `next` but the holes: as an ack_upto
        // (with recovery my own replica of a rank acknowledges too, and a
        // new one never acknowledges what it got with its fork).
        std::vector<std::uint64_t> missing = o.holes;
        missing.insert(missing.end(), pending.begin(), pending.end());
        for (ulm::SendMsg* sm : acks_.ack_upto(rank, l, next - 1, missing)) {
            eng_.release_hold(sm);
        }
        keep_pending(rank, l, pending);
    }
    ULMPI_DEBUG("replication: process %d asks for my messages to rank %d from %llu (%zu holes; "
                "%zu held, %zu in stock, parked %d)",
                from, rank, static_cast<unsigned long long>(next), o.holes.size(),
                acks_.held(rank).size(), stock.size(), static_cast<int>(acks_.parked(rank)));
    // What it asks for, held or in stock, leaves in message order (it numbers
    // what it receives in arrival order). With recovery each is kept until
    // the requester acknowledged it: a process forked from the requester
    // before it had it asks for it again.
    std::vector<std::uint64_t> wanted;
    for (const auto& [m, e] : acks_.held(rank)) {
        if (o.wants(m)) {
            wanted.push_back(m);
        }
    }
    for (const auto& [m, c] : stock) {
        if (o.wants(m) && acks_.held(rank).count(m) == 0) {
            wanted.push_back(m);
        }
    }
    std::sort(wanted.begin(), wanted.end());
    for (std::uint64_t m : wanted) {
        const auto st = stock.find(m);
        send_again(rank, l, m, from, st != stock.end() ? st->second : nullptr);
    }
    // Everything it asks for that I sent must still be here; else it would
    // number my later messages wrong.
    std::vector<std::uint64_t> asked = o.holes;
    for (std::uint64_t m = o.next; m <= send_next_[static_cast<std::size_t>(rank)]; ++m) {
        asked.push_back(m);
    }
    int lost = 0;
    for (std::uint64_t h : asked) {
        if (acks_.held(rank).count(h) == 0 && stock.count(h) == 0 && ++lost <= 4) {
            rt::log(rt::LogLevel::error,
                    "replication: process %d asks for message %llu to rank %d, which is no longer held",
                    from, static_cast<unsigned long long>(h), rank);
        }
    }
    ++takeovers_;
    orphans.push_back(std::move(o));
    // Kept for this replica (a re-created one) until now: what it asked for
    // is queued. A request of another replica (an orphan of my dead sibling)
    // leaves what is kept for a replica still to come (and the stock).
    stop_keeping(rank, l);
}

void Replicator::record_digest(int replica, int dst, std::uint64_t m, int tag, std::uint32_t crc)
{
    auto& table = digests_[static_cast<std::size_t>(dst)];
    Digests& d = table[m];
    if (d.crc.empty()) {
        d.crc.assign(static_cast<std::size_t>(set_.replicas()), 0);
        d.tag = tag;
    }
    d.have |= 1u << replica;
    d.crc[static_cast<std::size_t>(replica)] = crc;
    // Compared once every live replica's digest is here (mine included).
    const std::uint32_t live = set_.live_mask(me_, -1);
    if (!(d.have & (1u << k_)) || (d.have & live) != live) {
        return;
    }
    ++checked_;
    int agree = 0; // replicas whose digest equals mine
    for (int l = 0; l < set_.replicas(); ++l) {
        if ((live & (1u << l)) && d.crc[static_cast<std::size_t>(l)] == d.crc[static_cast<std::size_t>(k_)]) {
            ++agree;
        }
    }
    const int nlive = std::popcount(live);
    if (agree != nlive) {
        ++mismatches_;
        std::string all;
        for (int l = 0; l < set_.replicas(); ++l) {
            if (live & (1u << l)) {
                char buf[48];
                std::snprintf(buf, sizeof buf, " replica %d %08x", l, d.crc[static_cast<std::size_t>(l)]);
                all += buf;
            }
        }
        rt::log(rt::LogLevel::error,
                "replica check: rank %d's message %llu to rank %d (tag %d) differs between "
                "replicas:%s (seen by replica %d)",
                me_, static_cast<unsigned long long>(m), dst, d.tag, all.c_str(), k_);
        // With three or more, the majority wins: a replica that disagrees
        // with every other one, which all agree, leaves the job.
        if (nlive >= 3 && agree == 1) {
            bool others_agree = true;
            bool seen = false;
            std::uint32_t first = 0;
            for (int l = 0; l < set_.replicas(); ++l) {
                if (l == k_ || !(live & (1u << l))) {
                    continue;
                }
                const std::uint32_t c = d.crc[static_cast<std::size_t>(l)];
                others_agree = others_agree && (!seen || c == first);
                first = c;
                seen = true;
            }
            if (others_agree) {
                rt::log(rt::LogLevel::error,
                        "replica check: replica %d of rank %d is outvoted and leaves the job", k_,
                        me_);
                std::fflush(nullptr);
                ::_exit(3);
            }
        }
    }
    table.erase(m);
}

void Replicator::on_ack(int from, int rank, std::uint64_t m)
{
    if (ulm::SendMsg* s = acks_.ack(rank, set_.replica_of(from), m)) {
        eng_.release_hold(s);
    }
}


int Replicator::flush()
{
    int n = 0;
    queue_acks();
    release_deferred(false);
    for (std::size_t i = 0; i < outbox_.size(); ++i) {
        Out o = std::move(outbox_[i]);
        if (set_.dead(o.to)) {
            if (o.parent != nullptr) {
                eng_.release_hold(o.parent);
            }
            continue;
        }
        ulm::SendMsg* s = nullptr;
        Tx t{nullptr, std::move(o.ctrl), o.parent, o.held};
        rt::Status st;
        if (o.mark) {
            const ulm::DataRef ref{nullptr, 0, &ulm::bytes_layout()};
            st = eng_.isend_peer(ref, o.to, 0, kMarkContext, ulm::SendMode::standard, &s);
        } else if (o.parent != nullptr) {
            st = eng_.isend_peer(o.parent->data, o.to, o.parent->tag, o.parent->ctx,
                                 ulm::SendMode::standard, &s);
        } else if (o.held) {
            const ulm::DataRef ref{o.held->data(), o.held->size(), &ulm::bytes_layout()};
            st = eng_.isend_peer(ref, o.to, o.held->tag, o.held->ctx, ulm::SendMode::standard, &s);
        } else {
            const ulm::DataRef ref{t.bytes.data(), t.bytes.size(), &ulm::bytes_layout()};
            st = eng_.isend_peer(ref, o.to, 0, kRepContext, ulm::SendMode::standard, &s);
        }
        ++n;
        if (!st.ok()) {
            if (o.parent != nullptr) {
                eng_.release_hold(o.parent);
            }
            continue;
        }
        t.send = s;
        tx_.push_back(std::move(t));
    }
    outbox_.clear();
    for (std::size_t i = 0; i < tx_.size();) {
        if (tx_[i].send->complete) {
            eng_.release(tx_[i].send);
            if (tx_[i].parent != nullptr) {
                eng_.release_hold(tx_[i].parent);
            }
            if (tx_[i].bytes.capacity() != 0 && tx_[i].bytes.capacity() <= 4096 &&
                spare_bufs_.size() < 64) {
                tx_[i].bytes.clear();
                spare_bufs_.push_back(std::move(tx_[i].bytes));
            }
            tx_[i] = std::move(tx_.back());
            tx_.pop_back();
            ++n;
        } else {
            ++i;
        }
    }
    return n;
}

int Replicator::poll()
{
    if (polling_) {
        return 0; // a handler's send progressed the engine
    }
    // Every progress pass of a waiting process comes here (about 25 a
    // replicated 1-byte round trip on 2 busy cores): nothing to do is
    // found in a few loads.
    if (piggy_in_.empty() && (rx_mark_ == nullptr || !rx_mark_->complete) &&
        (rx_ == nullptr || !rx_->complete) && fork_for_ < 0 && pending_acks_.empty() &&
        deferred_procs_.empty() && outbox_.empty() && tx_.empty()) [[likely]] {
        return 0;
    }
    polling_ = true;
    int n = 0;
    // Acknowledgements that came on the program's messages (on_piggy_ack),
    // from a process that still is the one that gave them.
    for (std::size_t i = 0; i < piggy_in_.size(); ++i) {
        const PiggyIn a = piggy_in_[i];
        if (!set_.dead(a.from) && inc_[static_cast<std::size_t>(a.from)] == a.incarnation) {
            on_ack(a.from, set_.logical_of(a.from), a.m);
        }
    }
    piggy_in_.clear();
    while (rx_mark_ != nullptr && rx_mark_->complete) {
        eng_.release(rx_mark_); // counted on arrival (on_arrival)
        rx_mark_ = nullptr;
        post_mark_rx();
        ++n;
    }
    while (rx_ != nullptr && rx_->complete) {
        ulm::RecvMsg* r = rx_;
        rx_ = nullptr;
        const int from = r->peer;
        const std::size_t len = r->error == rt::Errc::ok ? r->received : 0;
        msg_.assign(rx_buf_.begin(), rx_buf_.begin() + static_cast<std::ptrdiff_t>(len));
        const std::vector<std::byte>& msg = msg_; // poll does not nest (polling_)
        eng_.release(r);
        post_rx();
        ++n;
        if (from < 0 || len < 1) {
            continue;
        }
        if (set_.dead(from)) {
            // It came in before the engine told me of its sender's death (a
            // notice in the same progress pass): a process that is gone asks
            // or acknowledges nothing any more. Served, a request of a dead
            // replica would take over the keeping meant for its new process
            // (stop_keeping), and a later copy to that new process would go
            // out under the dead one's numbers. (A new process reaches me
            // only after I took in its notice: never dead here.)
            ULMPI_DEBUG("replication: control message %u from process %d, dead: ignored",
                        static_cast<unsigned>(msg[0]), from);
            continue;
        }
        const int rank = set_.logical_of(from);
        if (msg[0] == std::byte{static_cast<std::uint8_t>(Kind::ack)} && len >= sizeof(AckMsg)) {
            AckMsg a;
            std::memcpy(&a, msg.data(), sizeof a);
            for (std::uint32_t i = 0; i < a.count && sizeof a + (i + 1) * 8 <= len; ++i) {
                std::uint64_t m;
                std::memcpy(&m, msg.data() + sizeof a + i * 8, 8);
                on_ack(from, rank, m);
            }
        } else if (msg[0] == std::byte{static_cast<std::uint8_t>(Kind::digest)} &&
                   len >= sizeof(DigestMsg) && check_) {
            DigestMsg d;
            std::memcpy(&d, msg.data(), sizeof d);
            if (rank == me_ && d.dst < static_cast<std::uint32_t>(set_.logical_size())) {
                record_digest(set_.replica_of(from), static_cast<int>(d.dst), d.m, d.tag, d.crc);
            }
        } else if ((msg[0] == std::byte{static_cast<std::uint8_t>(Kind::request)} ||
                    msg[0] == std::byte{static_cast<std::uint8_t>(Kind::ack_upto)} ||
                    msg[0] == std::byte{static_cast<std::uint8_t>(Kind::resend)}) &&
                   len >= sizeof(RequestMsg)) {
            std::vector<std::uint64_t> numbers;
            std::vector<std::uint64_t> pending;
            const RequestMsg q = read_request(msg.data(), len, numbers, pending);
            if (q.kind == Kind::resend) {
                on_resend(from, rank, numbers);
            } else if (q.kind == Kind::request) {
                on_request(from, rank, q.next, std::move(numbers), pending,
                           static_cast<int>(q.epoch));
            } else {
                // A re-created replica has every message up to `next` but
                // those listed.
                const int l = set_.replica_of(from);
                std::vector<std::uint64_t> missing = numbers;
                missing.insert(missing.end(), pending.begin(), pending.end());
                for (ulm::SendMsg* sm : acks_.ack_upto(rank, l, q.next, missing)) {
                    eng_.release_hold(sm);
                }
                keep_pending(rank, l, pending);
            }
        } else if (len >= sizeof(NoticeMsg) &&
                   (msg[0] == std::byte{static_cast<std::uint8_t>(Kind::notice)} ||
                    msg[0] == std::byte{static_cast<std::uint8_t>(Kind::welcome)} ||
                    msg[0] == std::byte{static_cast<std::uint8_t>(Kind::ready)})) {
            NoticeMsg q;
            std::memcpy(&q, msg.data(), sizeof q);
            const int p = static_cast<int>(q.phys);
            const int k = static_cast<int>(q.incarnation);
            if (p < 0 || p >= eng_.phys_size()) {
                continue;
            }
            if (q.kind == Kind::notice) {
                on_notice(from, p, k);
            } else if (q.kind == Kind::welcome) {
                on_welcome(from, p, k);
            } else {
                on_ready(p, k);
            }
        }
    }
    if (fork_for_ >= 0 && rt::now_ns() >= fork_retry_at_) {
        try_fork();
    }
    n += flush();
    polling_ = false;
    return n;
}

void Replicator::report_waiting(const char* why) const
{
    std::string list;
    int shown = 0;
    for (int j = 0; j < set_.logical_size(); ++j) {
        for (const auto& [m, e] : acks_.held(j)) {
            if (e.waiting == 0) {
                continue; // kept for a replica being re-created, acknowledged
            }
            if (++shown > 8) {
                break;
            }
            list += " message " + std::to_string(m) + " to rank " + std::to_string(j) + " (tag " +
                    std::to_string(e.copy ? e.copy->tag : e.send->tag) + ", context " +
                    std::to_string(e.copy ? e.copy->ctx.value() : e.send->ctx.value()) +
                    ", replicas mask " + std::to_string(e.waiting) + ");";
        }
    }
    rt::log(rt::LogLevel::warn,
            "replication: process %d (rank %d, replica %d) %s for %zu acknowledgement(s):%s "
            "(%zu control messages queued, %zu in flight)",
            eng_.phys_rank(), me_, k_, why, acks_.waiting(), list.c_str(), outbox_.size(), tx_.size());
}

void Replicator::finalize()
{
    // Everything this process sent has been acknowledged by the live
    // replicas of its receivers before it may go: a later death of a
    // sibling must not leave them without a message.
    finishing_ = true;
    if (fork_for_ >= 0) {
        give_up_fork("this process is finishing");
    }
    // What is kept for a replica being re-created stays kept, and answered,
    // until the engine's last fence (detach): mpirun grants a re-creation
    // until a process's last fence reaches it, and the new process then
    // asks this one for what it lacks. The wait below is for the live
    // replicas' acknowledgements only.
    const rt::Nanos start = rt::now_ns();
    bool told = false;
    eng_.wait([&] {
        poll();
        const bool done = !acks_.any_waiting() && outbox_.empty() && tx_.empty() &&
                          pending_acks_.empty() && deferred_procs_.empty();
        if (!done && !told && rt::now_ns() - start > 10'000'000'000) {
            told = true; // a program that is not send-deterministic, most likely
            report_waiting("still waiting at MPI_Finalize");
        }
        return done;
    });
}

void Replicator::detach()
{
    // Until now (the engine's last fence) this process answered the control
    // messages of the others: a notice of a replica re-created meanwhile.
    eng_.remove_progress_hook(this);
    hooked_ = false;
    if (rx_ != nullptr) {
        if (!eng_.cancel(rx_) && !rx_->complete) {
            eng_.withdraw(*rx_);
        }
        eng_.release(rx_);
        rx_ = nullptr;
    }
    if (rx_mark_ != nullptr) {
        if (!eng_.cancel(rx_mark_) && !rx_mark_->complete) {
            eng_.withdraw(*rx_mark_);
        }
        eng_.release(rx_mark_);
        rx_mark_ = nullptr;
    }
}

} // namespace ulmpi::rep
