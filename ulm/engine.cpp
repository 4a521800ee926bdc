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
const rt::ChoiceParam reliability_param{
    "ulm_reliability", "auto",
    "acknowledge and retransmit fragments: auto (on for network paths, off for shm/self), on, off",
    "auto|on|off"};
const rt::ChoiceParam checksum_param{
    "ulm_checksum", "auto",
    "CRC32C over every fragment: auto (where reliability is on), crc32c, none", "auto|crc32c|none"};
const rt::IntParam retry_param{"ulm_retry_timeout_us", 1000,
                               "retransmission timeout before a peer's round trip is measured (us)"};
const rt::IntParam retry_min_param{"ulm_retry_min_timeout_us", 200,
                                   "floor of the adaptive retransmission timeout (us)"};
const rt::IntParam retry_max_param{"ulm_retry_max_timeout_us", 100000,
                                   "cap of the doubling retransmission timeout (us)"};
const rt::IntParam retries_param{
    "ulm_max_retries", 1200,
    "resends in a row to a silent peer before it is declared unreachable (with the 100 ms cap: ~2 min)"};
const rt::IntParam hang_param{"ulm_hang_report_s", 0,
                              "print what a rank waits for when one wait lasts longer (s; 0: never)"};
const rt::IntParam ack_delay_param{
    "ulm_ack_delay_us", 20,
    "longest wait (us) of an ACK for a fragment to the peer to ride on (0: send ACKs at once)"};
const rt::IntParam ack_every_param{"ulm_ack_every", 16,
                                   "fragments one delayed ACK may cover before it is sent"};
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
        while (CtrlFrag* c = p.ctrl_pending.pop_front()) {
            ctrl_pool_.put(c);
        }
        while (p.pending.pop_front() != nullptr) {
        }
    }
}

Status Engine::init(rt::Bootstrap& boot, std::vector<std::unique_ptr<path::Path>> paths,
                    std::string& why)
{
    boot_ = &boot;
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

    // Reliability and checksums per path.
    const std::string& rel = reliability_param.get();
    const std::string& sum = checksum_param.get();
    std::size_t copy_block = SendFrag::kInlineCopy;
    modes_.clear();
    for (auto& p : paths_) {
        PathMode m{p.get(), false, false};
        m.reliable = rel == "on" || (rel == "auto" && p->info().reliable_default);
        m.checksum = sum == "crc32c" || (sum == "auto" && m.reliable);
        track_seqs_ = track_seqs_ || m.reliable;
        if (m.reliable) {
            copy_block = std::max<std::size_t>(copy_block, p->info().eager_limit);
            copy_block = std::max<std::size_t>(copy_block, 256);
        }
        modes_.push_back(m);
    }
    copy_pool_.set_block_size(copy_block);
    policy_.initial_timeout = std::max<std::int64_t>(1, retry_param.get()) * 1000;
    policy_.min_timeout = std::max<std::int64_t>(1, retry_min_param.get()) * 1000;
    policy_.max_timeout = std::max<std::int64_t>(retry_max_param.get(), retry_param.get()) * 1000;
    policy_.max_retries = static_cast<std::uint32_t>(std::max<std::int64_t>(1, retries_param.get()));
    policy_.ack_delay = std::max<std::int64_t>(0, ack_delay_param.get()) * 1000;
    policy_.ack_every = static_cast<std::uint32_t>(std::max<std::int64_t>(1, ack_every_param.get()));

    for (Peer& peer : peers_) {
        for (auto& p : paths_) {
            if (p->can_reach(peer.rank) && peer.npaths < Peer::kMaxPaths) {
                peer.paths[peer.npaths++] = p.get();
            }
        }
        if (peer.npaths == 0) {
            why = "no path reaches rank " + std::to_string(peer.rank) + " (paths in use:";
            for (auto& p : paths_) {
                why += std::string(" ") + p->info().name;
            }
            why += "; see ULMPI_PATH_INCLUDE)";
            return Errc::unreachable;
        }
        peer.primary = peer.paths[0];
        // Over a kernel path a fragment may wait in socket and window queues
        // before it leaves, so timing one fragment in eight (what shm does,
        // to keep the clock off the fast path) picks biased samples: under
        // the lossy decorator on udp srtt rose from 4 to 20 ms and a 64 MiB
        // transfer took 4x as long. There every fragment is timed (one clock
        // read is nothing next to a datagram's system call).
        peer.time_all = peer.primary->info().kernel_delivery;
        if (peer.primary->info().kernel_delivery) {
            // A pause loop starves the softirq work that moves datagrams
            // across veth and loopback on this machine (0-byte latency
            // between two namespaces: 420 us spinning, 17 us yielding).
            // Only when a peer is reached that way: a udp path that is open
            // but serves nobody (one host, shm between all) must not cost
            // the shm ranks their spinning.
            backoff_policy_.spin_polls = 0;
        }
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
        flush_acks(true); // nothing we send now could carry them
        return active_.empty() && sends_.live() == 0 && unacked_peers_.empty() && ack_due_.empty();
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
    if (!ack_due_.empty()) {
        flush_acks(false);
    }
    if (!unacked_peers_.empty() && (++tick_count_ & 3) == 0) {
        n += reliability_tick();
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
        if (!ack_due_.empty()) {
            flush_acks(true); // no send of ours will carry them soon
        }
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
    if (!ack_due_.empty() && backoff.idle_polls() >= backoff_policy_.spin_polls) {
        // About to yield or sleep: no send of ours will carry the ACKs we
        // owe for a while, and a sleep could outlast the sender's timeout.
        flush_acks(true);
    }
    backoff.idle();
    // Failure notices from the launcher, checked now and then while idle.
    if (++idle_events_ >= 1024) {
        idle_events_ = 0;
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
                    if (job().node_of_rank[static_cast<std::size_t>(r)] == ev.node_id) {
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
}

void Engine::check_hang()
{
    if (hang_reported_) {
        return;
    }
    rt::Nanos now = rt::now_ns();
    if (wait_start_ == 0) {
        wait_start_ = now;
    } else if (now - wait_start_ > hang_report_ns_) {
        hang_reported_ = true;
        print_state("waiting for a long time");
    }
}

void Engine::mark_peer_failed(int peer)
{
    if (peer < 0 || peer >= size_) {
        return;
    }
    peers_[static_cast<std::size_t>(peer)].failed = true;
}

void Engine::on_path_up(path::Path& path, int peer)
{
    for (int r = peer < 0 ? 0 : peer; r < (peer < 0 ? size_ : peer + 1); ++r) {
        Peer& p = peers_[static_cast<std::size_t>(r)];
        if (p.failed || !path.can_reach(r) || p.npaths >= Peer::kMaxPaths ||
            std::find(p.paths, p.paths + p.npaths, &path) != p.paths + p.npaths) {
            continue;
        }
        p.paths[p.npaths++] = &path;
        p.primary = p.paths[0];
    }
}

void Engine::on_path_down(path::Path& path, int peer)
{
    if (peer < 0) {
        for (int r = 0; r < size_; ++r) {
            on_path_down(path, r);
        }
        return;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    // Drop the path from the peer's list; rebind to the next one.
    int j = 0;
    for (int i = 0; i < p.npaths; ++i) {
        if (p.paths[i] != &path) {
            p.paths[j++] = p.paths[i];
        }
    }
    p.npaths = j;
    p.primary = j > 0 ? p.paths[0] : nullptr;
    if (j == 0) {
        p.failed = true;
        if (hooks_ != nullptr) {
            hooks_->on_peer_unreachable(peer, path.info().name);
        }
    }
}

} // namespace ulmpi::ulm
