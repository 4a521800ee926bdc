// The verbs path: InfiniBand and RoCE through rdma-core's libibverbs (every
// call through verbs_device.h, so a software device can stand in for tests).
//
// One path per active port (a rail: verbs0, verbs1, ...); rail k of one
// rank talks to rail k of the others.
//
// Wire-up. open() makes a send and a receive completion queue, one shared
// receive queue (SRQ) with every receive buffer posted, and one reliable
// connected (RC) queue pair per peer, and publishes "verbs.<rail>": LID,
// GID, MTU, a PSN base, the credits it grants each peer, where peers write
// credit returns, and the number of the queue pair it made for every rank
// (verbs_wire.h). connect() reads each peer's record and moves the queue
// pair to RTR (the peer's queue pair number for us, its LID or, on RoCE and
// across subnets, its GID; its PSN) and RTS. Nothing is sent before the
// fence that follows.
//
// Flow control. The SRQ holds `srq_depth` buffers of `buf_size` bytes; each
// peer is granted an equal share C (at least 1) and may have at most that
// many fragments unconsumed at this rank: a sender counts what it sent, a
// receiver counts what it granted (C plus every buffer it re-posted after a
// fragment of that peer), and acquire() answers `again` while sent ==
// granted. Grants travel back piggy-backed in the 8-byte header of every
// fragment to that peer and, when half a share is owed, explicitly: an RDMA
// write of the cumulative count into the peer's Grant slot for us (no
// receive buffer is consumed, so credit returns never need credit). The SRQ
// never runs dry: an RNR NAK cannot happen by construction (tests count).
//
// Sending. Fragments up to the device's inline limit go inline from a
// scratch buffer (the device copies at post time); others from registered
// bounce buffers (a pool of `send_bufs`), freed when their completion
// arrives. A send is signaled when it holds a bounce buffer or half the
// send queue has passed unsignaled; completions of one queue pair come in
// order, so one signaled completion frees everything before it.
//
// Rendezvous (verbs_reads.cpp). make_rkey() registers the sender's buffer
// (through the registration cache, verbs_regcache.h) and puts (address,
// length, rkey) per segment in the key. A read is planned whole first:
// the receiver's segments registered (the cache again), cut in pieces of
// at most `read_chunk` bytes checked against the key (a key that does not
// cover the read is refused before anything is posted). get() posts its
// pieces by IBV_WR_RDMA_READ straight into the receiver's buffer and waits
// for their completions. start_get() takes one of kGetDepth read slots
// (PathInfo::get_depth) and returns; its pieces are posted, in the order
// reads were started, while one of kMaxPieces piece slots is free and the
// peer's send queue has room beyond a quarter kept for sends and credit
// writes (more are posted by progress() as completions free them). The
// read ends once its last piece completed (or at its first error
// completion: the rest is not posted) and is reported by
// Sink::on_get_done from progress(). A remote access error ends it with
// `protocol` (the sender's registration is gone), any other error with
// `io_error`; either breaks the queue pair (the verbs specification moves
// it to error), which reports the path down. abandon_gets(peer) ends the
// peer's reads at once with `io_error` (ULM's link saw them stall while
// the peer answered over another rail); a queue pair cannot take back a
// posted request, so their posted pieces are orphans (orphan_reads())
// until the device completes them: they may still write into the reader's
// memory until then (ULM reads into a bounce buffer where reads can be
// given up: ulm/direct_read.h). A peer replaced by a new process
// (reset_peer) has its reads ended the same way; the pieces of its old
// queue pair are freed when that queue pair is destroyed.
//
// Failure evidence. An error completion (retry exceeded, remote access
// error, ...) or a fatal queue-pair event breaks the queue pair to that
// peer: Sink::on_path_down(path, peer) from the next progress(), can_reach()
// false, sends answer `failed`. A port going down (async event): every
// peer down (peer -1), sends answer `failed`; the port coming back: every
// peer whose queue pair is still in RTS is up again (on_path_up). A broken
// queue pair is not re-connected (that needs a new exchange with the peer,
// which the bootstrap no longer offers): the path stays down to that peer.
//
// Threads (concurrent(): ULM's fine mode, ulm/engine.h "Locking"). The
// device's calls are thread-safe (libibverbs guards each queue pair and
// completion queue itself; the software device serializes on its fabric
// lock), so the path guards only its own state. Locks, outermost first; all
// rt::OptMutex or try-flags (nothing taken below MULTIPLE):
//   rcq_busy_    one thread at a time reads the receive completion queue and
//                hands the fragments up (try: a busy flag is skipped), in
//                the order the queue gives them, and runs progress()'s
//                chores (events, owed credit writes, down and up reports).
//                Held across on_frag(), which takes the sender's peer lock
//                in ULM.
//   Peer::lock   one per queue pair: its credits, send queue slots and ring,
//                `broken`, its inline staging bytes. A sender holds it from
//                acquire() to commit() (ULM sends to one peer at a time), so
//                a credit write from the receive side cannot take the slot
//                acquire() counted on; get() holds it while it posts.
//                Released before polling the send queue.
//   scq_busy_    one reader of the send completion queue (try: a thread
//                that finds it busy does not wait; the reader completes
//                everyone's sends and reads, taking each peer's lock).
//   reads_lock_  the start_get() reads (reads_, their queue, the piece
//                slots, orphans_): taken inside a peer's lock to post or
//                complete pieces, alone to report ended reads (the sink is
//                called with no lock held).
//   leaves       pool_ (free bounce buffers), misc_ (down_due_, owed_).
// The registration cache has its own mutex (verbs_regcache.h). Counters are
// bumped with relaxed atomic adds when the locks are on.
// reset_peer() and connect_peer() run under ULM's engine write lock (no
// other thread is in the path meanwhile), so they take none of these.
//
// A peer replaced by a new process (FT-MPI REBUILD; path.h). reset_peer():
// a new queue pair for the peer's slot is made and taken to INIT, and the
// record "verbs.<rail>" is put again with its number (LID, GID, PSN base,
// credits and the grant slot stay what they were), before the fence the new
// process joins; the new process's wire-up is the usual one and reads it.
// The old queue pair goes to error (its sends complete flushed) and is kept,
// out of the table of queue pair numbers, until connect_peer(): the new one
// was made while the old one existed, so the device cannot have given it the
// old number, and completions of the old one that the completion queues
// still hold are recognised by their number and never taken for the new
// process's (receive buffers they used are posted again; send completions
// free nothing twice). Its bounce buffers go back to the pool when it is
// destroyed, in connect_peer() (after the fence, whose progress drained the
// completion queues) or close(). The grant slot the old process wrote is
// cleared, and every count with the peer starts again as at the wire-up.
// connect_peer() reads the new process's record and takes the queue pair to
// RTR and RTS, as connect() does. connect_peer() alone connects a process
// spawned into a slot that held none (its queue pair is the one open()
// made for the slot).
#pragma once

#include "paths/path.h"
#include "paths/read_table.h"
#include "paths/verbs/verbs_device.h"
#include "paths/verbs/verbs_regcache.h"
#include "paths/verbs/verbs_wire.h"
#include "runtime/opt_lock.h"

#include <atomic>

#include <memory>
#include <string>
#include <vector>

namespace ulmpi::path::verbs {

struct VerbsOptions {
    std::uint64_t eager_limit = 8192;
    std::uint32_t buf_size = 16384;  // receive / bounce buffer, our header included
    std::uint32_t srq_depth = 512;   // at least one per peer (raised when less)
    std::uint32_t send_bufs = 256;
    std::uint32_t qp_depth = 128;    // send queue per queue pair
    std::uint32_t read_chunk = 1u << 20;
    std::uint8_t timeout = 14;       // 4.096 us * 2^timeout per transport try
    std::uint8_t retry_cnt = 7;
    int gid_index = -1;
    bool reg_cache = true;
    std::uint64_t reg_budget = 0;    // 0: no limit
    std::uint32_t max_inline = 128;  // asked of the device (it may grant less)
    bool everywhere = true;          // also peers on this host (else shm's)
};

// ULMPI_VERBS_* parameters as options.
VerbsOptions verbs_options_from_params();

class VerbsPath final : public Path {
public:
    VerbsPath(const rt::JobInfo& job, std::shared_ptr<Device> dev, int port, int rail,
              const VerbsOptions& opt);
    ~VerbsPath() override;

    const PathInfo& info() const override { return info_; }
    Status open(rt::Bootstrap& boot) override;
    Status connect(rt::Bootstrap& boot) override;
    void close() override;
    Status reset_peer(int peer, rt::Bootstrap& boot) override;
    Status connect_peer(int peer, rt::Bootstrap& boot) override;
    bool can_reach(int peer) const override;
    bool acquire(int peer, std::size_t len, TxBuffer& out) override;
    SendResult commit(int peer, const TxBuffer& buf, std::size_t len) override;
    std::size_t make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap) override;
    Status get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
               const iovec* local, int nlocal) override;
    Status start_get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                     const iovec* local, int nlocal, std::uint64_t token) override;
    bool abandon_gets(int peer) override;
    std::size_t orphan_reads() const override;
    int progress(Sink& sink) override;
    const char* describe() const override { return describe_.c_str(); }
    // Several threads at once: see "Threads" above.
    bool concurrent() const override { return true; }

    // For tests and --stats.
    std::uint32_t credits(int peer); // fragments the path may still send to `peer`
    std::uint32_t share() const { return share_; }
    std::uint32_t qpn(int peer) const;
    RegCache* reg_cache() { return cache_.get(); }
    std::uint64_t credit_stalls() const { return credit_stalls_; }
    std::uint64_t credit_writes() const { return credit_writes_; }
    std::uint64_t error_completions() const { return error_wcs_; }
    bool port_up() const { return port_up_.load(std::memory_order_relaxed); }
    std::size_t pieces_in_flight() const; // RDMA reads of start_get() posted, not complete

    static constexpr std::uint32_t kGetDepth = 64;   // start_get() reads under way
    static constexpr std::uint32_t kMaxPieces = 64;  // their RDMA reads posted at once

private:
    struct Peer {
        rt::OptMutex lock;        // "Threads"
        Qp* qp = nullptr;
        bool reach = false;       // connected at wire-up
        bool broken = false;      // queue pair in error: down for good (read unlocked: atomic_ref)
        bool told_down = false;   // on_path_down reported (the rcq_busy_ holder)
        std::uint32_t sent = 0;    // fragments sent
        std::uint32_t granted = 0; // what the peer granted us (its cumulative count)
        std::uint32_t grant = 0;   // what we granted the peer
        std::uint32_t told = 0;    // `grant` as last carried to the peer
        std::uint64_t posted = 0;  // send work requests posted
        std::uint64_t done = 0;    // of them, completed
        std::uint64_t last_signaled = 0;
        std::vector<std::uint32_t> ring; // per work request: bounce buffer + 1, kReadTok, or 0
        std::uint64_t grant_addr = 0;    // the peer's Grant slot for us
        std::uint32_t grant_rkey = 0;
        std::vector<std::byte> inl; // an inline fragment, from acquire() to commit()
        // Every field but `lock` as a new Peer has them, with queue pair
        // `q` (reset_peer; the lock stays: the struct cannot be assigned).
        void restart(Qp* q, std::uint32_t depth)
        {
            qp = q;
            reach = false;
            broken = false;
            told_down = false;
            sent = granted = grant = told = 0;
            posted = done = last_signaled = 0;
            ring.assign(depth, 0);
            grant_addr = 0;
            grant_rkey = 0;
            inl.clear();
        }
    };
    // Tokens of send queue entries (Peer::ring): a bounce buffer + 1, a
    // piece of get() (kReadTok), a piece of a start_get() read (kPieceTok +
    // its slot of pieces_), or 0.
    static constexpr std::uint32_t kReadTok = 0xffffffffu;
    static constexpr std::uint32_t kPieceTok = 0x80000000u;
    static bool is_piece(std::uint32_t t) { return t >= kPieceTok && t != kReadTok; }
    static constexpr std::uintptr_t kInlineTok = ~std::uintptr_t{0};
    static constexpr std::uintptr_t kFailTok = ~std::uintptr_t{0} - 1;
    static constexpr std::size_t kHdr = sizeof(FragHeader);

    // A queue pair of a replaced process, in error, until it is destroyed.
    struct Retired {
        int peer = -1;
        Qp* qp = nullptr;
        std::vector<std::uint32_t> ring; // its work requests' tokens (bounce buffers)
    };

    std::byte* buf(std::uint32_t i) const { return bufs_ + static_cast<std::size_t>(i) * opt_.buf_size; }
    std::byte* rbuf(std::uint32_t i) const { return rbufs_ + static_cast<std::size_t>(i) * opt_.buf_size; }
    // Makes a queue pair for rank `r` and takes it to INIT.
    Status make_qp(int r, Qp*& out);
    void index_qpn(std::uint32_t qpn, int r);
    void unindex_qpn(std::uint32_t qpn);
    // Reads rank r's record and connects the queue pair to it (RTR, RTS);
    // `reached` false: the path does not serve that rank (no such rail
    // there, another link layer, a peer on this host left to shm).
    Status connect_one(int r, rt::Bootstrap& boot, bool& reached);
    void destroy_retired(int peer); // -1: all
    void refresh_grant(int peer);
    // The receive side and the chores (the rcq_busy_ holder, or the only thread).
    int progress_rx(Sink& sink);
    bool pool_empty() const;
    static void bump(std::uint64_t& counter, std::uint64_t n = 1);
    bool broken(const Peer& p) const
    {
        return std::atomic_ref<bool>(const_cast<bool&>(p.broken)).load(std::memory_order_relaxed);
    }
    bool has_slot(Peer& p) const { return p.posted - p.done < opt_.qp_depth; }
    // Posts on the peer's queue pair; false (peer broken) on a post error.
    bool post(int peer, SendWr& wr, std::uint32_t token);
    void write_grant(int peer);
    int poll_send();
    void on_send_wc(const Wc& wc);
    // Under the peer's lock.
    void break_peer(int peer, const char* why);
    // Takes each reached peer's lock in turn.
    void break_all(const char* why);
    void handle_event(const AsyncEvent& ev);
    Peer* peer_of_qpn(std::uint32_t qpn, int& rank);
    // Reads (verbs_reads.cpp). plan_read: the pieces of a read, checked
    // against the key, the receiver's segments registered.
    Status plan_read(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                     const iovec* local, int nlocal, std::vector<ReadPiece>& out, std::uint64_t& bytes);
    // One RDMA read work request (the peer's lock held): false when the
    // queue pair broke.
    bool post_read(int peer, const ReadPiece& pc, std::uint32_t tok);
    // Posts what it can of the peer's queued reads (its lock and
    // reads_lock_ held).
    void pump_peer_locked(int peer);
    // Posts queued pieces of every peer (progress()).
    void pump_reads();
    // A piece's completion (on_send_wc, the peer's lock held).
    void on_piece_done(std::uint32_t slot, WcStatus st);
    void piece_done_locked(std::uint32_t slot, WcStatus st);
    // A read ends (reads_' ending hook, reads_lock_ held): counted.
    void read_ending(ReadTable::Read& q);
    // Hands ended reads to the sink (the rcq_busy_ holder).
    void report_reads(Sink& sink);
    // Frees the piece slots of a destroyed queue pair's ring.
    void free_pieces(const std::vector<std::uint32_t>& ring);

    const rt::JobInfo& job_;
    std::shared_ptr<Device> dev_;
    int port_;
    int rail_;
    VerbsOptions opt_;
    PathInfo info_;
    std::string name_;
    std::string describe_;
    PortAttr pattr_;
    std::uint32_t psn_base_ = 0;
    std::uint32_t share_ = 1;
    std::uint32_t depth_ = 0; // receive buffers posted

    Cq* scq_ = nullptr;
    Cq* rcq_ = nullptr;
    Srq* srq_ = nullptr;
    std::byte* bufs_ = nullptr;  // send bounce buffers
    std::byte* rbufs_ = nullptr; // receive buffers
    std::size_t bufs_len_ = 0;
    std::size_t rbufs_len_ = 0;
    Mr* bufs_mr_ = nullptr;
    Mr* rbufs_mr_ = nullptr;
    Grant* grants_in_ = nullptr;  // peers write here
    Grant* grants_out_ = nullptr; // the source of our writes
    std::size_t grants_len_ = 0;
    Mr* grants_in_mr_ = nullptr;
    Mr* grants_out_mr_ = nullptr;
    std::vector<std::uint32_t> free_bufs_;
    std::vector<std::byte> scratch_;
    std::uint32_t max_inline_ = 0;
    std::vector<Peer> peers_;
    std::vector<std::pair<std::uint32_t, int>> qpn_rank_; // sorted
    std::vector<std::byte> record_; // "verbs.<rail>" as published
    std::vector<Retired> retired_;
    std::unique_ptr<RegCache> cache_;
    std::vector<int> down_due_;  // peers to report down
    std::vector<int> owed_;      // peers whose credit write found no send slot
    std::atomic<bool> port_up_{true};
    std::atomic<bool> port_news_{false}; // port state changed, not yet reported
    std::atomic<bool> rcq_busy_{false};
    std::atomic<bool> scq_busy_{false};
    mutable rt::OptMutex pool_;
    mutable rt::OptMutex misc_;
    mutable rt::OptMutex reads_lock_;
    ReadTable reads_;                          // kGetDepth reads, kMaxPieces pieces (reads_lock_)
    std::vector<int> pump_peers_;                 // pump_reads()' own (the rcq_busy_ holder)
    std::uint32_t event_tick_ = 0;
    std::uint64_t credit_stalls_ = 0;
    std::uint64_t credit_writes_ = 0;
    std::uint64_t error_wcs_ = 0;
    bool open_ = false;
};

std::vector<std::unique_ptr<Path>> make_verbs_paths(const rt::JobInfo& job);

} // namespace ulmpi::path::verbs
