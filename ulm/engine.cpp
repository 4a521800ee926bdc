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
    notice_seen_ = 0;
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
    if (Status st = links_.init(rank_, size_, job.incarnation, paths_, *this, why); !st.ok()) {
        return st;
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
    // acknowledged) before the peers may go away.
    wait([this] {
        links_.flush_acks(true); // nothing we send now could carry them
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

int Engine::progress()
{
    int n = 0;
    for (auto& p : paths_) {
        n += p->progress(*this);
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
    if (links_.needs_tick() && (++tick_count_ & 3) == 0) {
        n += links_.tick();
    }
    if (notice_word_ != nullptr) {
        if (notice_word_->load(std::memory_order_acquire) != notice_seen_) [[unlikely]] {
            check_events();
        }
    } else if ((++event_count_ & 255) == 0 && watch_events_) [[unlikely]] {
        check_events();
    }
    return n;
}

int Engine::poll()
{
    int n = progress();
    if (n > 0) {
        fruitless_polls_ = 0;
    } else if (++fruitless_polls_ > backoff_policy_.spin_polls) {
        // A program that polls (MPI_Test in a loop) hands the CPU over like a
        // waiting one, so the rank it waits for can run; it never sleeps here.
        if (links_.acks_due()) {
            links_.flush_acks(true); // no send of ours will carry them soon
        }
        ThreadLock::Released unlocked(thread_lock()); // others may run MPI meanwhile
        sched_yield();
    }
    return n;
}

void Engine::remove_progress_hook(ProgressHook* hook)
{
    progress_hooks_.erase(std::remove(progress_hooks_.begin(), progress_hooks_.end(), hook),
                          progress_hooks_.end());
}

void Engine::idle(Backoff& backoff)
{
    if (links_.acks_due() && backoff.idle_polls() >= backoff_policy_.spin_polls) {
        // About to yield or sleep: no send of ours will carry the ACKs we
        // owe for a while, and a sleep could outlast the sender's timeout.
        links_.flush_acks(true);
    }
    {
        ThreadLock::Released unlocked(thread_lock()); // nobody waits for a sleeper
        backoff.idle();
    }
    // Failure notices from the launcher, checked now and then while idle.
    if (++idle_events_ >= 1024) {
        idle_events_ = 0;
        check_events();
    }
}

// Reads the launcher's failure notices: a rank or a whole host died, or the
// job is ending.
void Engine::check_events()
{
    if (notice_word_ != nullptr) {
        // Read before the notices: a change after this load is seen next time.
        notice_seen_ = notice_word_->load(std::memory_order_acquire);
    }
    rt::FailureEvent ev;
    while (boot_ != nullptr && boot_->poll_event(ev)) {
        switch (ev.kind) {
        case rt::FailureEvent::Kind::rank_failed:
            mark_peer_failed(ev.rank);
            if (hooks_ != nullptr) {
                hooks_->on_peer_failed(ev.rank, ev.detail.c_str());
            }
            break;
        case rt::FailureEvent::Kind::host_failed:
            for (int r = 0; r < size_; ++r) {
                if (job().node_of_rank[static_cast<std::size_t>(r)] == ev.node_id && r != rank_) {
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
    if (h.reported) {
        return;
    }
    rt::Nanos now = rt::now_ns();
    if (h.start == 0) {
        h.start = now;
    } else if (now - h.start > hang_report_ns_) {
        h.reported = true;
        print_state("waiting for a long time");
    }
}

void Engine::on_path_down(path::Path& path, int peer)
{
    links_.path_down(path, peer, "the path reported it cannot reach the peer");
}

void Engine::on_path_up(path::Path& path, int peer)
{
    links_.path_up(path, peer);
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

void Engine::interrupt_context(ContextId ctx, Errc why)
{
    for (RecvMsg* r : matcher_.take_posted([&](const RecvMsg& r) { return r.ctx == ctx; })) {
        r->error = why;
        complete_recv(r);
    }
    for (RecvMsg* r : recvs_.all()) {
        if (r->ctx == ctx && !r->complete) {
            recvs_.erase(r->id);
            r->id = 0;
            r->error = why;
            complete_recv(r);
        }
    }
    for (Peer& p : peers_) {
        for (SendMsg* s = p.pending.front(), *next; s != nullptr; s = next) {
            next = p.pending.next(s);
            if (s->ctx == ctx) {
                p.pending.remove(s);
                s->error = why;
                protocol_done(s);
            }
        }
    }
    for (SendMsg* s : sends_.all()) {
        if (s->ctx == ctx && s->state != SendMsg::State::done) {
            s->error = why;
            protocol_done(s);
        }
    }
}

void Engine::reset_peer(int rank, int incarnation)
{
    if (rank < 0 || rank >= size_) {
        return;
    }
    fail_peer(rank, Errc::peer_failed); // whatever was outstanding with the old one
    links_.reset(links_[rank], incarnation);
    Peer& p = peer(rank);
    p.next_msg_out = MsgSeq(1);
    p.expected_in = MsgSeq(1);
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
