// The ULM engine: one per process. It owns the paths, the per-peer links
// (link_set.h: rails, reliability, lifetime), the matcher and the message
// descriptor pools, and runs the protocols:
//
//   eager       msg <= path eager limit: one match fragment carries it all.
//   rendezvous  larger: the match fragment carries the first bytes (or a
//               remote key when the path can read the sender's memory); the
//               receiver, once matched, either reads the rest itself and
//               answers fin, or answers cts and the sender streams data
//               fragments, striped by the link over every path to the
//               peer, to the receiver's descriptor.
//   Ssend       eager ones carry the sync flag; the receiver answers cts on
//               match. Rendezvous ones complete on cts/fin anyway.
//
// Matching happens in message-sequence order per sender (see match.h).
// Everything is polled from progress(); no thread runs behind the caller.
//
// Locking (MPI_THREAD_MULTIPLE; docs/threads.md has the whole picture).
// Every caller holds the process's MPI lock (thread_lock.h) except a thread
// in wait_p2p() or in a progress pass of its own. Two modes, chosen at init:
//
//   coarse  some path cannot be driven by several threads at once (ofi,
//           verbs, lossy), or replication: the MPI lock alone guards the
//           engine, as below MULTIPLE; wait_p2p() is wait().
//   fine    MULTIPLE, every path concurrent() (shm, self, udp), with or
//           without reliability: rt::fine_locks() on, and the engine
//           guards itself with the locks below, so threads progress
//           different peers at once.
//
// Fine locks, outermost first (a thread takes them only in this order):
//   MPI lock   held by MPI calls, not by a thread waiting in wait_p2p().
//   elock_     reader-writer. Read: per-peer work (sends, receives,
//              probes, the ACKs owed, and the polling of concurrent paths,
//              each of which guards its own state). Write: what spans
//              peers (the active list's queued sends, failure notices, the
//              links' timers (LinkSet::tick, every tick_every_ at most),
//              fail_peer, interrupt_context, cancel, freeing a descriptor
//              that is not complete, finalize); only a thread holding the
//              MPI lock writes, so writers never wait for each other.
//   Peer::lock per peer: its Peer (message sequence numbers, held-back
//              matches, pending sends, counters), its Link (with
//              reliability: sequence numbers, kept fragments, range sets,
//              the ACK owed, RTT), and every fragment sent to it; taken
//              under read, one at a time (LinkSet::flush_acks takes each
//              link's through LinkOwner::link_lock).
//   match_lock_ the matcher's lists (posted receives, unexpected
//              messages): post + lookup and arrive + store are atomic, so
//              a receive and its message always meet. Never held while a
//              peer lock is taken; data is copied outside it.
//   path locks a path's own send side, taken by its acquire() ..
//              commit() and by progress() (udp: a socket's send side, then
//              the peer's flow-control marks; paths/udp/udp_path.h
//              "Threads"). A path's reader locks (a shm FIFO, a udp
//              socket) are taken by progress() under read, before the
//              peer lock of what it hands up, and only with try_lock.
//   leaves     the descriptor pools, the descriptor tables, the active
//              list, LinkSet's pools and link lists, a path's FIFOs and
//              free lists: nothing is taken under them.
// Progress hooks (the MPI layer's nonblocking collectives and idup) run
// under the MPI lock only, outside elock_; a thread in wait_p2p() runs them
// every few passes when it can take the MPI lock without waiting.
// Completion flags (DoneFlag) are read without locks; a descriptor that
// another thread may still complete is freed or withdrawn under write.
#pragma once

#include "paths/path.h"
#include "runtime/bootstrap.h"
#include "runtime/intrusive_list.h"
#include "runtime/opt_lock.h"
#include "runtime/pool.h"
#include "ulm/desc_table.h"
#include "ulm/direct_read.h"
#include "ulm/ft_hooks.h"
#include "ulm/link_set.h"
#include "ulm/match.h"
#include "ulm/message.h"
#include "ulm/peer.h"
#include "ulm/progress.h"
#include "ulm/reliability.h"
#include "ulm/replica_hooks.h"
#include "ulm/thread_lock.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ulmpi::ulm {

using rt::Status;

// Work that an upper layer needs polled with every progress pass (nonblocking
// collective schedules advance this way even while the caller waits on
// something else). ULM owns the interface; the MPI layer implements it.
class ProgressHook {
public:
    // Advances what it can; returns how many events happened.
    virtual int poll() = 0;

protected:
    ~ProgressHook() = default;
};

// A descriptor pool with a leaf lock (fine locks only).
template <class T> class LockedPool {
public:
    explicit LockedPool(std::size_t first_chunk) : pool_(first_chunk) {}
    [[gnu::always_inline]] T* get()
    {
        rt::OptGuard g(lock_);
        return pool_.get();
    }
    [[gnu::always_inline]] void put(T* obj)
    {
        rt::OptGuard g(lock_);
        pool_.put(obj);
    }
    std::size_t in_use() const { return pool_.in_use(); }

private:
    rt::Pool<T> pool_;
    rt::OptMutex lock_;
};

class Engine final : public path::Sink, private LinkOwner {
public:
    Engine();
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Wire-up: opens the paths, exchanges addresses through the bootstrap
    // (fences inside) and binds every peer to the paths that reach it.
    // `why` explains a failure in one line for the user.
    Status init(rt::Bootstrap& boot, std::vector<std::unique_ptr<path::Path>> paths,
                std::string& why);
    // Completes outstanding sends, then closes the paths (after a fence).
    Status finalize();

    // The rank, size and job its users see: the logical ones under
    // replication (replica_hooks.h), else the process's own.
    int rank() const { return rep_ != nullptr ? rep_->logical_job().rank : rank_; }
    int size() const { return rep_ != nullptr ? rep_->logical_job().size : size_; }
    const rt::JobInfo& job() const { return rep_ != nullptr ? rep_->logical_job() : boot_->job(); }
    // The process's own place among every process of the job.
    int phys_rank() const { return rank_; }
    int phys_size() const { return size_; }
    rt::Bootstrap& bootstrap() { return *boot_; }

    // Point-to-point. `dst`/`src` are world ranks; src may be kAnySource,
    // tag kAnyTag. On success *out is the descriptor (see message.h).
    Status isend(const DataRef& data, int dst, int tag, ContextId ctx, SendMode mode,
                 SendMsg** out);
    Status irecv(const DataRef& data, int src, int tag, ContextId ctx, RecvMsg** out);
    // A send to physical process `dst`, outside replication (rep/'s own
    // traffic); the same as isend() without replica hooks.
    Status isend_peer(const DataRef& data, int dst, int tag, ContextId ctx, SendMode mode,
                      SendMsg** out);
    // Replication: one completion a send waited for happened (see holds).
    void release_hold(SendMsg* s);
    // Replication: a receive handed over by on_recv_orphaned() is posted
    // again, first in line (its source names a logical rank).
    void repost(RecvMsg* r);
    void set_replica_hooks(ReplicaHooks* hooks) { rep_ = hooks; }
    bool replicated() const { return rep_ != nullptr; }
    // Fast path of a blocking standard send: an eager message leaves at once,
    // without a descriptor, when nothing waits for the peer and the path has
    // room. False: nothing was sent; use isend().
    bool send_now(const DataRef& data, int dst, int tag, ContextId ctx);
    // A receive into a descriptor the caller owns (a blocking receive keeps it
    // on its stack). The caller never releases it: once r.complete (or to
    // give up before) it calls withdraw(), which forgets every reference.
    // Inline for the common case (no fine locks, no replication, a valid
    // source that is alive or MPI_ANY_SOURCE): the fields, then the
    // matcher's post, which is inline too when nothing is stored on the
    // context; everything else in irecv_rest().
    Status irecv_into(RecvMsg& r, const DataRef& data, int src, int tag, ContextId ctx)
    {
        r.data = data;
        r.capacity = data.bytes();
        r.src = src;
        r.tag = tag;
        r.ctx = ctx;
        if (fine_ || rep_ != nullptr ||
            (src != kAnySource && (static_cast<unsigned>(src) >= static_cast<unsigned>(size_) ||
                                   !links_[src].alive()))) [[unlikely]] {
            return irecv_rest(r);
        }
        if (Unexpected* u = matcher_.post(&r)) {
            take_stored(r, u);
        }
        return Errc::ok;
    }
    void withdraw(RecvMsg& r)
    {
        // A completed eager receive has nothing left to forget.
        if (r.complete && !r.reading && r.id == 0) [[likely]] {
            return;
        }
        withdraw_any(r);
    }
    // First unexpected message matching, left in place.
    bool iprobe(int src, int tag, ContextId ctx, Envelope* env);
    // Matched probe: removes the message from matching (MPI_Improbe).
    Unexpected* improbe(int src, int tag, ContextId ctx, Envelope* env);
    // Receives a message removed by improbe.
    Status imrecv(Unexpected* msg, const DataRef& data, RecvMsg** out);
    // Cancels a receive not yet matched, or a send whose first fragment has
    // not left. Returns true when cancelled (the descriptor completes).
    bool cancel(RecvMsg* r);
    bool cancel(SendMsg* s);  // false also when it asked the receiver (see protocol.cpp)
    // A receive its owner gives up on (a collective that failed): unmatched,
    // it is withdrawn; matched with data still to come, it completes now
    // with `why` and what arrives for it later is dropped, so its buffer is
    // never written after it completed. Only a receive being filled at this
    // moment (its data copied from an unexpected message) stays incomplete:
    // wait for it. A send given up on is cancel()ed and waited for (its
    // data may be read from the buffer until it completes).
    void abandon(RecvMsg* r, Errc why);
    void release(SendMsg* s);
    void release(RecvMsg* r);

    // Polls every path once, pushes queued work. Returns events handled.
    int progress();
    // One progress pass for a polling call (MPI_Test, MPI_Iprobe): after many
    // fruitless polls in a row, each further one yields the CPU.
    int poll();
    // Progresses until done() holds, backing off while idle.
    template <class Pred> void wait(Pred&& done)
    {
        wait_loop(done);
    }
    // wait() for a predicate that reads only descriptors' completion flags
    // (a blocking send or receive): with fine locks the MPI lock is
    // released for the whole wait, so other threads' MPI calls never queue
    // behind it, and its passes run beside theirs (see "Locking").
    template <class Pred> void wait_p2p(Pred&& done)
    {
        if (!fine_) {
            wait_loop(done);
            return;
        }
        ThreadLock::Released unlocked(thread_lock());
        wait_loop(done);
    }
    template <class Pred> void wait_loop(Pred&& done)
    {
        Backoff backoff(backoff_policy_);
        HangClock hang;
        ThreadLock& lock = thread_lock();
        std::uint32_t polls = 0;
        while (!done()) {
            if (progress() > 0) {
                backoff.reset();
            } else {
                idle(backoff); // without the lock while it spins, yields or sleeps
            }
            if (lock.on()) [[unlikely]] {
                lock.let_others_in(); // between passes, to a thread that queues
            }
            if ((++polls & 1023) == 0 && hang_report_ns_ > 0) [[unlikely]] {
                check_hang(hang);
            }
        }
    }
    // Since when one wait() waits (each waiting thread has its own).
    struct HangClock {
        rt::Nanos start = 0; // stamped at the first check
        bool reported = false;
    };
    void idle(Backoff& backoff);
    void check_hang(HangClock& h);
    // Reads failure notices now. Every progress call also compares the
    // bootstrap's notice word (one load) with the value it last read and
    // reads the notices when it changed; a bootstrap without a word is
    // polled every few hundred progress calls when watch_events(true) (a
    // program that fault tolerance keeps alive must learn of failures while
    // it polls, not only while it idles).
    void check_events();
    void watch_events(bool on) { watch_events_ = on; }

    // Whether the engine guards itself with fine locks (see "Locking").
    bool fine() const { return fine_; }

    void set_failure_hooks(FailureHooks* hooks) { hooks_ = hooks; }
    // At most a few hooks; each is polled by every progress() call (fine
    // mode: by passes that hold the MPI lock, see "Locking"). Called under
    // the MPI lock.
    void add_progress_hook(ProgressHook* hook);
    void remove_progress_hook(ProgressHook* hook);
    // A hook for what may wait a little (a job without fault tolerance
    // keeps the revoke channel so): polled every 256th progress call, which
    // costs the other calls nothing. Removed by remove_progress_hook too.
    void add_slow_progress_hook(ProgressHook* hook);
    // Under MPI_THREAD_MULTIPLE, once the MPI lock is on: chooses the lock
    // mode (see "Locking"; parameter ulm_fine_locks).
    void enable_threads();

    // A peer's lifetime (link.h). fail_peer: every operation outstanding
    // with the peer completes with `why` (sends, receives naming it,
    // rendezvous in flight both ways), its held-back messages and kept
    // fragments are freed, and nothing is sent to or accepted from it until
    // reset_peer() starts a new incarnation of it (fresh sequence spaces).
    // Receives from MPI_ANY_SOURCE are the fault-tolerance policy's business.
    bool peer_failed(int peer) const { return !links_[peer].alive(); }
    void fail_peer(int peer, Errc why);
    void mark_peer_failed(int peer) { fail_peer(peer, Errc::peer_failed); }
    void reset_peer(int peer, int incarnation);
    // A failed peer replaced by a new process (FT-MPI REBUILD), in two steps
    // around the bootstrap fence that the new process joins:
    // replace_peer() resets the link (reset_peer) and every path that
    // reached the peer (path::Path::reset_peer); connect_replaced() connects
    // those paths to the new process. not_supported: a path cannot.
    // A new process on another host than the one the link's paths were
    // chosen for (a replica re-created by fork: Bootstrap::moved) has them
    // chosen again: connect_replaced() asks every path, and the link binds
    // those that reach it now (udp where shm was, and back).
    rt::Status replace_peer(int peer, int incarnation);
    // A process that joined a running job, before its first progress call:
    // the peer is in that incarnation (its link has carried nothing yet).
    void set_peer_incarnation(int peer, int incarnation);
    rt::Status connect_replaced(int peer);
    // Replica recovery (ft/rep, docs/replication.md "Recovery"). A process
    // forks a new process for its dead peer `peer` as `incarnation`:
    //   can_fork(): every path that reaches a peer can take part
    //     (path::Path::can_become).
    //   prepare_fork(): before the fork: the link is reset as for a replaced
    //     peer (replace_peer) and the paths clear the dead process's memory
    //     (Path::wipe_peer). After the fork, connect_replaced(peer).
    //   become(): in the new process: it is process `rank`, incarnation
    //     `incarnation`, from now on. Everything outstanding with any peer
    //     is handled as that peer's failure (the replica hooks get the
    //     receives whose message had not all come and the stored rendezvous
    //     messages; complete eager messages stay), every link starts afresh
    //     (the peers' incarnations are kept; `ready`, the forking process, is
    //     in `ready_incarnation`), and no peer but `ready` is reached until
    //     connect_replaced(peer). Paths that cannot become and reach no peer
    //     are closed.
    bool can_fork() const;
    // Whether the new process publishes addresses of its own (a path in use
    // whose become() put()s them): the forking process then waits until
    // they are stored before connect_replaced().
    bool fork_publishes() const;
    rt::Status prepare_fork(int peer, int incarnation);
    rt::Status become(int rank, int incarnation, int ready, int ready_incarnation);
    // A process spawned into a slot of the job after the wire-up
    // (MPI_Comm_spawn), once its addresses are in the bootstrap: the paths
    // that did not reach the slot read them, and its link binds them.
    // Nothing to do when a path reached the slot already (shm on one host).
    rt::Status connect_spawned(int peer);
    // Every operation outstanding on context `ctx` (posted receives, sends
    // waiting for the receiver or for path resources, rendezvous in flight
    // either way) completes with `why`; later ones are not affected.
    // Fault tolerance: a revoked communicator, a collective that cannot
    // complete because a member failed.
    // `spare`: operations whose tag it accepts are left alone (a
    // constructor among a group of the communicator that the failure
    // does not concern).
    void interrupt_context(ContextId ctx, Errc why, const std::function<bool(int tag)>& spare = {});

    const std::vector<std::unique_ptr<path::Path>>& paths() const { return paths_; }
    PeerCounters counters(int peer) const;
    const Link& link(int peer) const { return links_[peer]; }
    path::Path* primary_path(int peer) const { return links_[peer].control_path(); }
    std::size_t unexpected_count() const { return matcher_.unexpected_count(); }
    std::size_t live_sends() const { return send_pool_.in_use(); }
    // Reliability and checksums in force on a path (ULMPI_ULM_RELIABILITY /
    // ULMPI_ULM_CHECKSUM, or the path's default).
    bool reliable(const path::Path* p) const;
    bool checksummed(const path::Path* p) const;
    std::size_t unacked_frags() const { return links_.kept_frags(); }
    const ReliabilityPolicy& reliability_policy() const { return links_.policy(); }
    // How a waiting rank spins, yields and sleeps (set at init).
    const Backoff::Policy& backoff_policy() const { return backoff_policy_; }
    // One line per peer and path with every counter (--stats).
    void print_stats() const;
    // What this rank waits for: queued sends, unacknowledged fragments,
    // held-back messages, posted receives (ULMPI_ULM_HANG_REPORT_S).
    void print_state(const char* why) const;

    // path::Sink
    void on_frag(path::Path& path, path::RxFrag& frag) override;
    void on_path_down(path::Path& path, int peer) override;
    void on_path_up(path::Path& path, int peer) override;
    void on_get_done(path::Path& path, std::uint64_t token, Status st) override;

private:
    // LinkOwner
    void frag_released(SendMsg* owner) override { check_complete(owner); }
    void link_has_work(Link& link) override { mark_active(peers_[static_cast<std::size_t>(link.rank)]); }
    void link_unreachable(Link& link, const std::string& why) override;
    // Its path ends the reads with an error (on_get_done), and each one
    // asks the sender to stream its message (direct_read.cpp).
    void rail_reads_lost(Link& link, Rail& rail) override { rail.path->abandon_gets(link.rank); }
    rt::OptMutex& link_lock(Link& link) override { return peer(link.rank).lock; }

    Peer& peer(int rank) { return peers_[static_cast<std::size_t>(rank)]; }
    // Fine mode: the passes of a thread (see progress()).
    int progress_fine();
    // The bodies of send_now() and on_frag() once the locks they need are
    // held: inlined into them (no locks) and into the *_fine() variants
    // that take the locks first, so the common path pays no extra call.
    [[gnu::always_inline]] inline bool send_now_locked(const DataRef& data, int dst, int tag,
                                                       ContextId ctx);
    [[gnu::always_inline]] inline void on_frag_locked(path::Path& path, path::RxFrag& frag);
    [[gnu::noinline]] bool send_now_fine(const DataRef& data, int dst, int tag, ContextId ctx);
    [[gnu::noinline]] void on_frag_fine(path::Path& path, path::RxFrag& frag);
    int housekeeping();
    bool needs_housekeeping() const;
    bool tick_due() const;
    void flush_acks(bool all);
    int run_hooks();
    void pick_lock_mode();

    // send side (protocol.cpp)
    template <class Before>
    Status isend_peer(const DataRef& data, int dst, int tag, ContextId ctx, SendMode mode,
                      SendMsg** out, Before&& before);
    bool start_send(Peer& p, SendMsg* s);
    bool continue_send(Peer& p, SendMsg* s);
    void protocol_done(SendMsg* s);
    void check_complete(SendMsg* s);
    void maybe_free(SendMsg* s);
    int push_pending(Peer& p);
    void mark_active(Peer& p);
    std::size_t make_get_key(Peer& p, Rail& rail, SendMsg* s, std::byte* key, std::size_t cap);

    // receive side (protocol.cpp)
    [[gnu::always_inline]] inline bool eager_in_order(Peer& p, path::Path& via, const EagerHeader& e,
                                                      const std::byte* payload);
    void on_match(Peer& p, path::Path& via, const MatchHeader& h, const std::byte* payload,
                  std::uint32_t plen);
    void deliver_in_order(Peer& p, path::Path* via, const MatchHeader& h, const std::byte* payload,
                          std::uint32_t plen, Unexpected* stored);
    void deliver_matched(RecvMsg* r, path::Path* via, const MatchHeader& h, const std::byte* payload,
                         std::uint32_t plen, int src, int src_view, std::uint64_t rep_seq);
    void deliver_stored(RecvMsg* r, Unexpected* u)
    {
        deliver_matched(r, u->via, u->hdr, u->payload(), u->payload_len, u->peer, u->src, u->rep_seq);
    }
    bool read_direct(RecvMsg* r, path::Path* via, int src, const std::byte* key, std::uint32_t keylen);
    void ask_stream(Peer& p, RecvMsg* r, std::uint64_t send_id);
    // Reads that do not wait (direct_read.h, direct_read.cpp). start_direct:
    // false when the path cannot (the caller reads with get() or asks for a
    // stream); the others under the sender's peer lock.
    bool start_direct(RecvMsg* r, path::Path* via, int src, std::uint64_t send_id,
                      const std::byte* key, std::uint32_t keylen);
    void pump_direct(DirectRead* d);
    void finish_direct(DirectRead* d);
    void bury_reads(); // frees the bounce buffers no orphan piece targets any more
    // Starts again the reads the paths' depth held back; returns how many
    // went on.
    int retry_reads();
    bool on_data(Peer& p, const DataHeader& h, path::RxFrag& frag, bool checksum);
    void on_cts(Peer& p, const CtsHeader& h);
    void on_fin(Peer& p, const FinHeader& h);
    void on_cancel(Peer& p, const CancelHeader& h);
    void on_cancel_reply(Peer& p, const CancelHeader& h);
    void ask_cancel(Peer& p, const SendMsg& s);
    void complete_recv(RecvMsg* r);
    // irecv_into() past its inline case, with the descriptor's fields set.
    [[gnu::noinline]] Status irecv_rest(RecvMsg& r);
    // A receive posted without fine locks met the stored message `u`.
    [[gnu::noinline]] void take_stored(RecvMsg& r, Unexpected* u);
    void withdraw_matched(RecvMsg* r, Errc why); // under elock_ (write)
    void withdraw_any(RecvMsg& r);
    Unexpected* store_unexpected(int peer, path::Path* via, const MatchHeader& h,
                                 const std::byte* payload, std::uint32_t plen);
    void free_unexpected(Unexpected* u);
    void fill_base(const Peer& p, BaseHeader& b, FragType type, std::uint8_t flags,
                   std::uint32_t payload_len) const
    {
        links_.fill_base(links_[p.rank], b, type, flags, payload_len);
    }
    void send_ctrl(const Peer& p, const void* hdr, std::uint32_t len)
    {
        links_.send_ctrl(links_[p.rank], hdr, len);
    }

    rt::Bootstrap* boot_ = nullptr;
    int rank_ = 0;
    int size_ = 1;
    // Bounce buffers of reads given up (direct_read.cpp), kept until their
    // path has no orphan pieces left that could still write into them;
    // declared before paths_ so that they outlive the paths' endpoints.
    std::vector<std::pair<path::Path*, std::unique_ptr<std::byte[]>>> buried_reads_;
    std::vector<std::unique_ptr<path::Path>> paths_;
    LinkSet links_;
    // Per peer: the host it ran on when its link's paths were chosen.
    std::vector<int> rail_node_;
    int node_of(int peer) const;
    std::vector<Peer> peers_;
    rt::IntrusiveList<Peer, &Peer::active_hook> active_;
    Matcher matcher_;
    LockedPool<SendMsg> send_pool_{256};
    LockedPool<RecvMsg> recv_pool_{256};
    LockedPool<Unexpected> unexpected_pool_{256};
    // Fine locks (see "Locking").
    bool fine_ = false;
    rt::OptRwLock elock_;
    rt::OptMutex match_lock_;
    rt::OptMutex active_lock_;
    std::atomic<bool> active_hint_{false}; // some peer may be on active_
    // Reads waiting for a path's depth (direct_read.h), under reads_lock_
    // (a leaf); the hint is read without it.
    rt::IntrusiveList<DirectRead, &DirectRead::hook> reads_waiting_;
    rt::OptMutex reads_lock_;
    std::atomic<bool> reads_waiting_hint_{false};
    DescTable<SendMsg> sends_;
    DescTable<RecvMsg> recvs_;
    FailureHooks* hooks_ = nullptr;
    ReplicaHooks* rep_ = nullptr;
    std::vector<ProgressHook*> progress_hooks_;
    std::vector<ProgressHook*> slow_hooks_;
    Backoff::Policy backoff_policy_{};
    std::uint32_t tick_count_ = 0;
public:
    // One-lock mode: the links' timers (LinkSet::tick, which reads the
    // clock) run in one progress pass of this many, and in every pass of a
    // rank that waits past spinning (Engine::idle). A spinning pass is well
    // under a microsecond, the shortest retransmission timeout 200: every
    // fourth pass, as before, read the clock about once per message of a
    // ping-pong while the rank waited for the reply.
    static constexpr std::uint32_t kTickPasses = 32;
private:
    std::uint32_t event_count_ = 0;
    const std::atomic<std::uint64_t>* notice_word_ = nullptr; // boot_->notice_word()
    std::atomic<std::uint64_t> notice_seen_{0};
    std::atomic<bool> events_due_{false};  // fine mode: check_events() by the next chore pass
    std::atomic<rt::Nanos> next_tick_{0};  // fine mode: the links' timers run again then
    rt::Nanos tick_every_ = 100000;
    std::atomic<std::size_t> hook_count_{0};
    bool watch_events_ = false;
    rt::Nanos hang_report_ns_ = 0;
    std::uint64_t get_min_ = 0;
    bool initialized_ = false;
};

} // namespace ulmpi::ulm
