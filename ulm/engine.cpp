#include "ulm/engine.h"

#include "paths/lossy/lossy_path.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sched.h>
#include <unistd.h>

namespace ulmpi::ulm {
namespace {

const rt::IntParam spin_param{"ulm_spin_polls", 4000,
                              "idle polls a waiting rank spins before it yields the CPU"};
const rt::IntParam spin_oversub_param{
    "ulm_spin_polls_oversubscribed", 20,
    "idle polls before yielding when there are more local ranks than CPUs"};
const rt::IntParam yield_param{"ulm_yield_polls", 2000,
                               "idle polls that yield the CPU before a waiting rank sleeps"};
const rt::IntParam yield_oversub_param{
    "ulm_yield_polls_oversubscribed", 50,
    "idle polls that yield before sleeping when there are more local ranks than CPUs"};
const rt::IntParam sleep_param{"ulm_max_sleep_us", 200,
                               "longest sleep (microseconds) of a rank that waits for long"};
const rt::IntParam hang_param{"ulm_hang_report_s", 0,
                              "print what a rank waits for when one wait lasts longer (s; 0: never)"};
const rt::BoolParam stats_param{"ulm_stats", false,
                                "print per-peer and per-path counters at MPI_Finalize (mpirun --stats)"};
const rt::BoolParam fine_param{
    "ulm_fine_locks", true,
    "under MPI_THREAD_MULTIPLE, lock per peer when every path allows it (off: one lock)"};
const rt::SizeParam get_min_param{
    "ulm_single_copy_min", 16384,
    "smallest rendezvous message read directly from the sender's memory when the path can"};

// Tells the fault injector where a fragment's header ends (paths/ cannot
// read ULM's wire format).
std::size_t frag_header_length(const std::byte* data, std::size_t len)
{
    if (len < sizeof(BaseHeader)) {
        return 0;
    }
    std::uint16_t flags = 0;
    std::memcpy(&flags, data + offsetof(BaseHeader, flags), sizeof flags);
    std::uint32_t h = header_len(static_cast<FragType>(data[1]), flags);
    return h != 0 && h <= len ? h : 0;
}

static_assert(kMaxHeader <= path::kMaxFragHeader, "paths peek at most kMaxFragHeader bytes");

// Per-thread pass counts of the fine mode (engine.h, "Locking").
[[gnu::tls_model("initial-exec")]] thread_local std::uint32_t t_passes = 0;
[[gnu::tls_model("initial-exec")]] thread_local std::uint32_t t_fruitless = 0;
[[gnu::tls_model("initial-exec")]] thread_local std::uint32_t t_idle_events = 0;

int online_cpus()
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        return CPU_COUNT(&set);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<int>(n) : 1;
}

} // namespace

Engine::Engine() = default;

Engine::~Engine()
{
    matcher_.drain_unexpected([this](Unexpected* u) { free_unexpected(u); });
    for (Peer& p : peers_) {
        while (Unexpected* u = p.ahead.pop_front()) {
            free_unexpected(u);
        }
        while (p.pending.pop_front() != nullptr) {
        }
    }
}

Status Engine::init(rt::Bootstrap& boot, std::vector<std::unique_ptr<path::Path>> paths,
                    std::string& why)
{
    boot_ = &boot;
    notice_word_ = boot.notice_word();
    notice_seen_.store(0, std::memory_order_relaxed);
    path::set_lossy_header_length(&frag_header_length);
    path::set_frag_header_length(&frag_header_length);
    const rt::JobInfo& job = boot.job();
    rank_ = job.rank;
    size_ = job.size;
    paths_ = std::move(paths);
    peers_ = std::vector<Peer>(static_cast<std::size_t>(size_));
    for (int i = 0; i < size_; ++i) {
        peers_[static_cast<std::size_t>(i)].rank = i;
    }

    // Spin while we own a core; yield almost at once when ranks outnumber
    // CPUs. Count the CPUs the launcher had for this host's ranks: our own
    // affinity mask holds one CPU once we are bound to it.
    const int cpus = job.local_cpus > 0 ? job.local_cpus : online_cpus();
    bool oversubscribed = job.local_size > cpus;
    backoff_policy_.spin_polls = static_cast<std::uint32_t>(
        std::max<std::int64_t>(0, oversubscribed ? spin_oversub_param.get() : spin_param.get()));
    backoff_policy_.yield_polls = static_cast<std::uint32_t>(
        std::max<std::int64_t>(0, oversubscribed ? yield_oversub_param.get() : yield_param.get()));
    backoff_policy_.max_sleep_us = static_cast<std::uint32_t>(std::max<std::int64_t>(1, sleep_param.get()));
    get_min_ = get_min_param.get();
    hang_report_ns_ = std::max<std::int64_t>(0, hang_param.get()) * 1000000000;

    for (auto& p : paths_) {
        if (Status st = p->open(boot); !st.ok()) {
            why = std::string("path ") + p->info().name + " could not open: " + rt::errc_name(st.code());
            return st;
        }
    }
    if (Status st = boot.fence(); !st.ok()) {
        why = "bootstrap fence failed during wire-up";
        return st;
    }
    for (auto& p : paths_) {
        if (Status st = p->connect(boot); !st.ok()) {
            why = std::string("path ") + p->info().name + " could not connect: " + rt::errc_name(st.code());
            return st;
        }
    }
    if (Status st = boot.fence(); !st.ok()) {
        why = "bootstrap fence failed during wire-up";
        return st;
    }
    for (auto& p : paths_) {
        if (Status st = p->connected(boot); !st.ok()) {
            why = std::string("path ") + p->info().name + " failed to start: " + rt::errc_name(st.code());
            return st;
        }
    }

    // The per-peer links: which paths reach whom, reliability, checksums.
    if (Status st = links_.init(rank_, size_, job.incarnation, paths_, *this, why, job.first_slot);
        !st.ok()) {
        return st;
    }
    rail_node_.assign(static_cast<std::size_t>(size_), -1);
    for (int r = 0; r < size_; ++r) {
        rail_node_[static_cast<std::size_t>(r)] = node_of(r);
    }
    // A respawned process: peers replaced before it started are in later
    // incarnations too.
    for (std::size_t r = 0; r < job.incarnation_of_rank.size(); ++r) {
        if (static_cast<int>(r) != rank_ && job.incarnation_of_rank[r] > 0) {
            links_.set_peer_incarnation(links_[static_cast<int>(r)], job.incarnation_of_rank[r]);
        }
    }
    if (links_.any_kernel_path()) {
        // A pause loop starves the softirq work that moves datagrams
        // across veth and loopback on this machine (0-byte latency
        // between two namespaces: 420 us spinning, 17 us yielding).
        // Only when a peer is reached that way: a udp path that is open
        // but serves nobody (one host, shm between all) must not cost
        // the shm ranks their spinning.
        backoff_policy_.spin_polls = 0;
    }
    initialized_ = true;
    return Errc::ok;
}

Status Engine::finalize()
{
    if (!initialized_) {
        return Errc::ok;
    }
    // Every send we started must have left (and, with reliability, been
    // acknowledged) before the peers may go away. (No other thread is in
    // MPI any more: MPI_Finalize is the last call of every thread.)
    wait([this] {
        flush_acks(true); // nothing we send now could carry them
        return active_.empty() && sends_.live() == 0 && links_.kept_frags() == 0 && !links_.acks_due();
    });
    if (stats_param.get()) {
        print_stats();
    }
    // Keep answering while the others finish: a peer whose last fragment to
    // us lost its ACK resends it and must hear from us again.
    Status st = boot_->fence_begin();
    if (st.ok()) {
        wait([&] {
            st = boot_->fence_test();
            return st.code() != Errc::again;
        });
    }
    for (auto& p : paths_) {
        p->close();
    }
    initialized_ = false;
    return st;
}

void Engine::enable_threads()
{
    // Replication (ft/rep/) keeps the one lock: its hooks are not per-peer.
    bool fine = fine_param.get() && rep_ == nullptr;
    for (auto& p : paths_) {
        fine = fine && p->concurrent();
    }
    // Reliable links: their timers run under the engine's write lock, at
    // most every quarter of the shortest retransmission timeout.
    tick_every_ = std::clamp<rt::Nanos>(links_.policy().min_timeout / 4, 10000, 1000000);
    fine_ = fine;
    rt::set_fine_locks(fine);
    ULMPI_INFO("MPI_THREAD_MULTIPLE: %s", fine ? "per-peer locks (ulm/engine.h, Locking)"
                                                : "one lock for the engine (a path needs it, or "
                                                  "ulm_fine_locks is off)");
}

int Engine::progress()
{
    if (fine_) {
        return progress_fine();
    }
    int n = 0;
    for (auto& p : paths_) {
        n += p->progress(*this);
    }
    if (reads_waiting_hint_.load(std::memory_order_relaxed)) [[unlikely]] {
        n += retry_reads();
    }
    if (!active_.empty()) [[unlikely]] {
        for (Peer* p = active_.front(), *next; p != nullptr; p = next) {
            next = active_.next(p);
            n += push_pending(*p);
        }
    }
    for (std::size_t i = 0; i < progress_hooks_.size(); ++i) {
        n += progress_hooks_[i]->poll();
    }
    if (links_.acks_due()) {
        links_.flush_acks(false);
    }
    if (links_.needs_tick() && ++tick_count_ % kTickPasses == 0) {
        n += links_.tick();
    }
    if (notice_word_ != nullptr) {
        if (notice_word_->load(std::memory_order_acquire) !=
            notice_seen_.load(std::memory_order_relaxed)) [[unlikely]] {
            check_events();
        }
    }
    if ((++event_count_ & 255) == 0) [[unlikely]] {
        if (notice_word_ == nullptr && watch_events_) {
            check_events();
        }
        for (std::size_t i = 0; i < slow_hooks_.size(); ++i) {
            n += slow_hooks_[i]->poll();
        }
    }
    return n;
}

// A pass of the fine mode: the paths under read (several threads at once,
// each peer's fragments handled under its lock); then, when flagged, the
// work that spans peers under write, and the MPI layer's hooks under the
// MPI lock, both only by a thread that holds or can take the MPI lock
// without waiting (the lock order: MPI lock, then the engine).
int Engine::progress_fine()
{
    int n = 0;
    {
        rt::ReadGuard g(elock_);
        for (auto& p : paths_) {
            n += p->progress(*this);
        }
        if (reads_waiting_hint_.load(std::memory_order_acquire)) [[unlikely]] {
            n += retry_reads(); // each read under its sender's lock
        }
        if (links_.acks_due()) {
            links_.flush_acks(false); // each link under its peer's lock
        }
    }
    const bool held = ThreadLock::held();
    const bool chores = needs_housekeeping();
    const bool hooks = hook_count_.load(std::memory_order_relaxed) > 0 &&
                       (held || (++t_passes & 7) == 0);
    if (!chores && !hooks) {
        return n;
    }
    ThreadLock& l0 = thread_lock();
    if (!held && !l0.try_enter()) {
        return n; // someone in the MPI layer: it or a later pass does it
    }
    if (chores) {
        n += housekeeping();
    }
    if (hooks) {
        n += run_hooks();
    }
    if (!held) {
        l0.leave_quiet();
    }
    return n;
}

bool Engine::needs_housekeeping() const
{
    return active_hint_.load(std::memory_order_acquire) ||
           events_due_.load(std::memory_order_relaxed) ||
           (notice_word_ != nullptr &&
            notice_word_->load(std::memory_order_acquire) !=
                notice_seen_.load(std::memory_order_relaxed)) ||
           tick_due();
}

// Fine mode: the links' timers (retransmission, rail evidence, probes) span
// peers and may fail one: they run under write, every tick_every_.
bool Engine::tick_due() const
{
    return links_.needs_tick() && rt::now_ns() >= next_tick_.load(std::memory_order_relaxed);
}

// The ACKs owed (all: every one, before the caller yields or sleeps);
// fine mode: under read, each link under its peer's lock.
void Engine::flush_acks(bool all)
{
    if (!links_.acks_due()) {
        return;
    }
    rt::ReadGuard g(elock_);
    links_.flush_acks(all);
}

int Engine::housekeeping()
{
    rt::WriteGuard g(elock_);
    int n = 0;
    if (links_.needs_tick()) {
        const rt::Nanos now = rt::now_ns();
        if (now >= next_tick_.load(std::memory_order_relaxed)) {
            next_tick_.store(now + tick_every_, std::memory_order_relaxed);
            n += links_.tick();
        }
    }
    active_hint_.store(false, std::memory_order_relaxed);
    for (Peer* p = active_.front(), *next; p != nullptr; p = next) {
        next = active_.next(p);
        n += push_pending(*p);
    }
    if (!active_.empty()) {
        active_hint_.store(true, std::memory_order_relaxed);
    }
    if (events_due_.exchange(false, std::memory_order_relaxed) ||
        (notice_word_ != nullptr && notice_word_->load(std::memory_order_acquire) !=
                                        notice_seen_.load(std::memory_order_relaxed))) {
        check_events();
    }
    return n;
}

int Engine::run_hooks()
{
    int n = 0;
    for (std::size_t i = 0; i < progress_hooks_.size(); ++i) {
        n += progress_hooks_[i]->poll();
    }
    if ((++event_count_ & 255) == 0) [[unlikely]] {
        for (std::size_t i = 0; i < slow_hooks_.size(); ++i) {
            n += slow_hooks_[i]->poll();
        }
    }
    return n;
}

int Engine::poll()
{
    int n = progress();
    if (n > 0) {
        t_fruitless = 0;
    } else if (++t_fruitless > backoff_policy_.spin_polls) {
        // A program that polls (MPI_Test in a loop) hands the CPU over like a
        // waiting one, so the rank it waits for can run; it never sleeps here.
        flush_acks(true); // no send of ours will carry them soon
        ThreadLock::Released unlocked(thread_lock()); // others may run MPI meanwhile
        sched_yield();
    }
    return n;
}

void Engine::add_progress_hook(ProgressHook* hook)
{
    progress_hooks_.push_back(hook);
    hook_count_.store(progress_hooks_.size() + slow_hooks_.size(), std::memory_order_relaxed);
}

void Engine::remove_progress_hook(ProgressHook* hook)
{
    progress_hooks_.erase(std::remove(progress_hooks_.begin(), progress_hooks_.end(), hook),
                          progress_hooks_.end());
    slow_hooks_.erase(std::remove(slow_hooks_.begin(), slow_hooks_.end(), hook), slow_hooks_.end());
    hook_count_.store(progress_hooks_.size() + slow_hooks_.size(), std::memory_order_relaxed);
}

void Engine::add_slow_progress_hook(ProgressHook* hook)
{
    slow_hooks_.push_back(hook);
    hook_count_.store(progress_hooks_.size() + slow_hooks_.size(), std::memory_order_relaxed);
}

void Engine::idle(Backoff& backoff)
{
    if (links_.acks_due() && backoff.idle_polls() >= backoff_policy_.spin_polls) {
        // About to yield or sleep: no send of ours will carry the ACKs we
        // owe for a while, and a sleep could outlast the sender's timeout.
        flush_acks(true);
    }
    if (!fine_ && links_.needs_tick() && backoff.idle_polls() >= backoff_policy_.spin_polls) {
        // About to yield or sleep: the timers run now, not in one pass of
        // kTickPasses (each may take a time slice).
        if (links_.tick() > 0) {
            backoff.reset();
            return;
        }
    }
    bool may_sleep = true;
    if (backoff.sleeps_next()) {
        for (const auto& p : paths_) {
            may_sleep = may_sleep && !p->needs_polling();
        }
    }
    {
        ThreadLock::Released unlocked(thread_lock()); // nobody waits for a sleeper
        backoff.idle(may_sleep);
    }
    // Failure notices from the launcher, checked now and then while idle
    // (fine mode: by the next pass that can take the whole engine).
    if (++t_idle_events >= 1024) {
        t_idle_events = 0;
        if (fine_) {
            events_due_.store(true, std::memory_order_relaxed);
        } else {
            check_events();
        }
    }
}

// Reads the launcher's failure notices: a rank or a whole host died, or the
// job is ending.
void Engine::check_events()
{
    rt::WriteGuard g(elock_);
    if (notice_word_ != nullptr) {
        // Read before the notices: a change after this load is seen next time.
        notice_seen_.store(notice_word_->load(std::memory_order_acquire),
                           std::memory_order_relaxed);
    }
    rt::FailureEvent ev;
    while (boot_ != nullptr && boot_->poll_event(ev)) {
        switch (ev.kind) {
        case rt::FailureEvent::Kind::rank_failed:
            if (ev.rank >= 0 && ev.rank < size_ &&
                links_[ev.rank].life == Link::Lifetime::replacing) {
                break; // about the process being replaced, not its successor
            }
            if (rep_ != nullptr && ev.rank >= 0 && ev.rank < size_ && links_[ev.rank].alive() &&
                links_[ev.rank].peer_incarnation > 0 && !boot_->failed_now(ev.rank)) {
                break; // a re-created replica's old process (ft/rep recovery)
            }
            mark_peer_failed(ev.rank);
            if (hooks_ != nullptr) {
                hooks_->on_peer_failed(ev.rank, ev.detail.c_str());
            }
            break;
        case rt::FailureEvent::Kind::host_failed:
            for (int r = 0; r < size_; ++r) {
                if (job().node_of_rank[static_cast<std::size_t>(r)] == ev.node_id && r != rank_ &&
                    links_[r].life != Link::Lifetime::replacing) {
                    mark_peer_failed(r);
                    if (hooks_ != nullptr) {
                        hooks_->on_peer_failed(r, ev.detail.c_str());
                    }
                }
            }
            break;
        case rt::FailureEvent::Kind::job_ending:
            if (hooks_ != nullptr) {
                hooks_->on_job_ending(ev.detail.c_str());
            } else {
                ULMPI_ERROR("the launcher is ending the job (%s)", ev.detail.c_str());
                _exit(1);
            }
            break;
        }
    }
}

void Engine::check_hang(HangClock& h)
{
    if (h.reported || (fine_ && !ThreadLock::held())) {
        return; // fine mode: reported by waits that hold the MPI lock
    }
    rt::Nanos now = rt::now_ns();
    if (h.start == 0) {
        h.start = now;
    } else if (now - h.start > hang_report_ns_) {
        h.reported = true;
        rt::WriteGuard g(elock_);
        print_state("waiting for a long time");
    }
}

// From a path's progress(): fine mode, under read, so each link under its
// peer's lock.
void Engine::on_path_down(path::Path& path, int peer)
{
    for (int i = peer < 0 ? 0 : peer; i < (peer < 0 ? size_ : peer + 1); ++i) {
        rt::OptGuard g(this->peer(i).lock);
        links_.path_down(path, i, "the path reported it cannot reach the peer");
    }
}

void Engine::on_path_up(path::Path& path, int peer)
{
    for (int i = peer < 0 ? 0 : peer; i < (peer < 0 ? size_ : peer + 1); ++i) {
        rt::OptGuard g(this->peer(i).lock);
        links_.path_up(path, i);
    }
}

void Engine::link_unreachable(Link& link, const std::string& why)
{
    fail_peer(link.rank, Errc::unreachable);
    if (hooks_ != nullptr) {
        hooks_->on_peer_unreachable(link.rank, why.c_str());
    }
}

void Engine::fail_peer(int rank, Errc why)
{
    if (rank < 0 || rank >= size_) {
        return;
    }
    rt::WriteGuard g(elock_);
    Link& l = links_[rank];
    Peer& p = peer(rank);
    links_.fail(l, why); // kept fragments freed; their sends see `why`
    auto fail_send = [&](SendMsg* s) {
        if (s->error == Errc::ok && rep_ == nullptr) {
            s->error = why; // (replicated: the other replicas of the receiver still count)
        }
        protocol_done(s);
    };
    while (SendMsg* s = p.pending.pop_front()) {
        fail_send(s);
    }
    for (SendMsg* s : sends_.all()) {
        if (s->dst == rank && s->state != SendMsg::State::done) {
            fail_send(s); // waiting for the receiver's answer, or streaming
        }
    }
    std::vector<RecvMsg*> orphans;
    for (RecvMsg* r : recvs_.all()) {
        if (r->peer == rank && !r->complete) {
            recvs_.erase(r->id);
            r->id = 0;
            if (rep_ != nullptr) {
                orphans.push_back(r);
                continue;
            }
            r->error = why;
            complete_recv(r);
        }
    }
    while (Unexpected* u = p.ahead.pop_front()) {
        free_unexpected(u); // behind a gap that can never fill
    }
    if (rep_ != nullptr) {
        // Posted receives name logical ranks and stay; a stored rendezvous
        // message of the dead process can never be read: another replica
        // of its sender sends it again.
        for (Unexpected* u : matcher_.take_unexpected([&](const Unexpected& u) {
                 return u.peer == rank && !(u.hdr.base.flags & flag::eager);
             })) {
            rep_->on_unexpected_dropped(u->src, u->rep_seq);
            free_unexpected(u);
        }
        for (RecvMsg* r : orphans) {
            rep_->on_recv_orphaned(*r);
        }
    } else {
        for (RecvMsg* r : matcher_.take_posted([&](const RecvMsg& r) { return r.src == rank; })) {
            r->error = why;
            complete_recv(r);
        }
    }
    if (p.active_hook.linked()) {
        active_.remove(&p);
    }
}

void Engine::interrupt_context(ContextId ctx, Errc why, const std::function<bool(int tag)>& spare)
{
    rt::WriteGuard g(elock_);
    auto hit = [&](ContextId c, int tag) { return c == ctx && !(spare && spare(tag)); };
    for (RecvMsg* r : matcher_.take_posted([&](const RecvMsg& r) { return hit(r.ctx, r.tag); })) {
        r->error = why;
        complete_recv(r);
    }
    for (RecvMsg* r : recvs_.all()) {
        if (hit(r->ctx, r->tag)) {
            withdraw_matched(r, why);
        }
    }
    for (Peer& p : peers_) {
        for (SendMsg* s = p.pending.front(), *next; s != nullptr; s = next) {
            next = p.pending.next(s);
            if (hit(s->ctx, s->tag)) {
                p.pending.remove(s);
                s->error = why;
                protocol_done(s);
            }
        }
    }
    for (SendMsg* s : sends_.all()) {
        if (hit(s->ctx, s->tag) && s->state != SendMsg::State::done) {
            s->error = why;
            if (s->state == SendMsg::State::await_fin) {
                // Single copy: the receiver may be reading the buffer now,
                // or may take the message later. Handing the buffer back
                // before it answers would let it read memory the program
                // reuses; ask it (its fin, or the withdrawal of a message
                // nobody took, completes the send with `why`).
                ask_cancel(peer(s->dst), *s);
                continue;
            }
            protocol_done(s);
        }
    }
}

void Engine::reset_peer(int rank, int incarnation)
{
    if (rank < 0 || rank >= size_) {
        return;
    }
    rt::WriteGuard g(elock_);
    fail_peer(rank, Errc::peer_failed); // whatever was outstanding with the old one
    // Messages of the old one that arrived and were never received: nothing
    // of it reaches a receive meant for the new one. (Replicated: a whole
    // message of a dead replica is its rank's, numbered already; it stays.)
    for (Unexpected* u : matcher_.take_unexpected([&](const Unexpected& u) {
             return u.source() == rank && rep_ == nullptr;
         })) {
        free_unexpected(u);
    }
    links_.reset(links_[rank], incarnation);
    Peer& p = peer(rank);
    p.next_msg_out = MsgSeq(1);
    p.expected_in = MsgSeq(1);
}

rt::Status Engine::replace_peer(int rank, int incarnation)
{
    if (rank < 0 || rank >= size_ || rank == rank_) {
        return Errc::invalid_arg;
    }
    rt::WriteGuard g(elock_); // the link and the paths' state for the peer
    reset_peer(rank, incarnation);
    // What the old process published is stale: the paths read the new
    // process's (connect_replaced) from the launcher.
    boot_->forget(rank);
    Link& l = links_[rank];
    l.life = Link::Lifetime::replacing;
    for (int i = 0; i < l.nrails; ++i) {
        if (Status st = l.rails[i].path->reset_peer(rank, *boot_); !st.ok()) {
            ULMPI_ERROR("rank %d: path %s cannot take a new process for rank %d (%s)", rank_,
                        l.rails[i].path->info().name, rank, rt::errc_name(st.code()));
            return st;
        }
    }
    return Errc::ok;
}

void Engine::set_peer_incarnation(int rank, int incarnation)
{
    if (rank >= 0 && rank < size_ && rank != rank_ &&
        links_[rank].peer_incarnation != incarnation) {
        links_.set_peer_incarnation(links_[rank], incarnation);
    }
}

rt::Status Engine::connect_replaced(int rank)
{
    if (rank < 0 || rank >= size_ || rank == rank_) {
        return Errc::invalid_arg;
    }
    rt::WriteGuard g(elock_); // the link and the paths' state for the peer
    Link& l = links_[rank];
    const int node = node_of(rank);
    if (l.life == Link::Lifetime::replacing &&
        node != rail_node_[static_cast<std::size_t>(rank)]) {
        // The new process runs on another host than the one this link's
        // paths were chosen for (a replica re-created by fork): every path
        // reads what it needs, and the link takes those that reach it there.
        for (auto& p : paths_) {
            (void)p->connect_peer(rank, *boot_);
        }
        if (!links_.rebind(l, paths_)) {
            ULMPI_ERROR("rank %d: no path reaches the new process of rank %d on host %d", rank_,
                        rank, node);
            return Errc::unreachable;
        }
        rail_node_[static_cast<std::size_t>(rank)] = node;
        ULMPI_DEBUG("rank %d: the new process of rank %d runs on host %d: %d path(s), first %s",
                    rank_, rank, node, l.nrails, l.rails[0].path->info().name);
    }
    for (int i = 0; i < l.nrails; ++i) {
        if (Status st = l.rails[i].path->connect_peer(rank, *boot_); !st.ok()) {
            ULMPI_ERROR("rank %d: path %s cannot connect to the new process of rank %d (%s)",
                        rank_, l.rails[i].path->info().name, rank, rt::errc_name(st.code()));
            return st;
        }
    }
    if (l.life == Link::Lifetime::replacing) {
        l.life = Link::Lifetime::alive;
        l.choose();
    }
    return Errc::ok;
}

bool Engine::can_fork() const
{
    for (const auto& p : paths_) {
        if (p->can_become()) {
            continue;
        }
        for (int r = 0; r < size_; ++r) {
            const Link& l = links_[r];
            for (int i = 0; i < l.nrails; ++i) {
                if (l.rails[i].path == p.get()) {
                    return false;
                }
            }
        }
    }
    return true;
}

bool Engine::fork_publishes() const
{
    for (int r = 0; r < size_; ++r) {
        const Link& l = links_[r];
        for (int i = 0; i < l.nrails; ++i) {
            if (l.rails[i].path->become_publishes()) {
                return true;
            }
        }
    }
    return false;
}

int Engine::node_of(int rank) const
{
    const std::vector<int>& nodes = boot_->job().node_of_rank;
    return rank >= 0 && static_cast<std::size_t>(rank) < nodes.size()
               ? nodes[static_cast<std::size_t>(rank)]
               : -1;
}

rt::Status Engine::prepare_fork(int rank, int incarnation)
{
    if (Status st = replace_peer(rank, incarnation); !st.ok()) {
        return st;
    }
    // Every path the new process may use (also one that did not reach the
    // dead process: the new one runs here, maybe not where it ran).
    for (auto& p : paths_) {
        if (p->can_become()) {
            if (Status st = p->wipe_peer(rank); !st.ok()) {
                return st;
            }
        }
    }
    return Errc::ok;
}

rt::Status Engine::become(int rank, int incarnation, int ready, int ready_incarnation)
{
    if (rank < 0 || rank >= size_ || ready < 0 || ready >= size_ || rank == ready) {
        return Errc::invalid_arg;
    }
    std::vector<int> inc(static_cast<std::size_t>(size_), 0);
    for (int r = 0; r < size_; ++r) {
        inc[static_cast<std::size_t>(r)] = links_[r].peer_incarnation;
        fail_peer(r, Errc::peer_failed); // what was under way is the forking process's
    }
    inc[static_cast<std::size_t>(ready)] = ready_incarnation;
    std::vector<bool> used(paths_.size(), false);
    for (int r = 0; r < size_; ++r) {
        const Link& l = links_[r];
        for (int i = 0; i < l.nrails; ++i) {
            for (std::size_t k = 0; k < paths_.size(); ++k) {
                used[k] = used[k] || l.rails[i].path == paths_[k].get();
            }
        }
    }
    rank_ = rank;
    for (std::size_t k = 0; k < paths_.size(); ++k) {
        path::Path& p = *paths_[k];
        if (p.can_become()) {
            if (Status st = p.become(rank, ready, *boot_); !st.ok()) {
                return st;
            }
        } else if (!used[k]) {
            p.close(); // its sockets are the forking process's
        } else {
            return Errc::not_supported;
        }
    }
    for (Peer& p : peers_) {
        p.next_msg_out = MsgSeq(1);
        p.expected_in = MsgSeq(1);
    }
    std::string why;
    if (Status st = links_.init(rank_, size_, incarnation, paths_, *this, why, boot_->job().first_slot);
        !st.ok()) {
        ULMPI_ERROR("process %d (new): %s", rank_, why.c_str());
        return st;
    }
    for (int r = 0; r < size_; ++r) {
        if (r != rank_ && inc[static_cast<std::size_t>(r)] > 0) {
            links_.set_peer_incarnation(links_[r], inc[static_cast<std::size_t>(r)]);
        }
        rail_node_[static_cast<std::size_t>(r)] = node_of(r);
    }
    return Errc::ok;
}

rt::Status Engine::connect_spawned(int rank)
{
    if (rank < 0 || rank >= size_ || rank == rank_) {
        return Errc::invalid_arg;
    }
    rt::WriteGuard g(elock_); // the link and the paths' state for the peer
    Link& l = links_[rank];
    if (l.nrails > 0) {
        return Errc::ok;
    }
    bool any = false;
    for (auto& p : paths_) {
        if (p->connect_peer(rank, *boot_).ok() && p->can_reach(rank)) {
            any = true;
        }
    }
    if (!any) {
        ULMPI_ERROR("rank %d: no path reaches the spawned process of rank %d", rank_, rank);
        return Errc::unreachable;
    }
    links_.bind_new(l, paths_);
    return Errc::ok;
}

PeerCounters Engine::counters(int rank) const
{
    PeerCounters c;
    static_cast<MsgCounters&>(c) = peers_[static_cast<std::size_t>(rank)].counters;
    static_cast<LinkCounters&>(c) = links_[rank].counters;
    return c;
}

bool Engine::reliable(const path::Path* p) const
{
    for (int r = 0; r < links_.size(); ++r) {
        for (int i = 0; i < links_[r].nrails; ++i) {
            if (links_[r].rails[i].path == p) {
                return links_[r].rails[i].reliable;
            }
        }
    }
    return false;
}

bool Engine::checksummed(const path::Path* p) const
{
    for (int r = 0; r < links_.size(); ++r) {
        if (links_.checksummed(links_[r], *p)) {
            return true;
        }
    }
    return false;
}

} // namespace ulmpi::ulm
