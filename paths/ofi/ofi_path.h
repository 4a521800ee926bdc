// The ofi path: any libfabric provider with reliable datagram endpoints
// (FI_EP_RDM): tcp;ofi_rxm, udp;ofi_rxd, shm here; verbs, efa, psm3 or cxi
// where a cluster has them (docs/ofi.md).
//
// Wire-up. The factory chooses the provider (ofi_fabric.h) and opens the
// fabric, domain, one endpoint, its address vector (FI_AV_TABLE) and one
// completion queue for sends, reads and receives; a provider
// that cannot is skipped with a log line (the job goes on without the
// path). open() posts every receive buffer and publishes "ofi.addr" (the
// provider's name hash and the endpoint's name); connect() inserts each
// peer's address it reaches into the address vector. No connection is made
// at wire-up: connection-oriented providers (rxm) connect on first use.
//
// Fragments. Every message is [FragHeader][ULM fragment] (ofi_wire.h); the
// header names the sender, since an endpoint without FI_SOURCE does not.
// acquire() hands out a send buffer (a pool of `tx_bufs`, registered when
// the provider wants local registration); commit() sends it with
// fi_inject when it fits the provider's inject size (the buffer is free at
// once) and fi_send otherwise (free at its completion). A send the provider
// refuses for now (-FI_EAGAIN) waits in order in that peer's backlog, which
// progress() drains; acquire() answers `again` while the peer's backlog is
// not empty or no
// buffer is free. Receives: `rx_bufs` buffers of `buf_size` bytes are
// posted; each completion goes up whole and addressable and the buffer is
// posted again. The provider delivers reliably but not in order (messages
// above rxm's or rxd's own eager size complete after later small ones;
// PathInfo::order none); ULM's reliability stays on by default over it for
// its end-to-end checksum and its reordering (reliable_default).
//
// Rendezvous. With FI_RMA | FI_READ, make_rkey() registers each segment of
// the sender's buffer for remote reads (kept in a small cache by address
// and length for reuse). A read (start_get(), or get() which waits for it)
// is planned whole first, in pieces of at most `read_chunk` bytes (a key
// that does not cover it is refused before anything moves), and takes one
// of `kGetDepth` read slots; its pieces are posted by fi_read straight into
// the receiver's buffer, the reads of every slot in the order they were
// started, while fewer than `kMaxReads` are in flight (more are posted as
// completions free them, from progress()). So the link never waits for the
// receiver between the pieces of one message or between messages. A
// start_get() read ends with Sink::on_get_done from progress(). A read
// refused for its key (expired registration) ends with `protocol` without
// blaming the path; ULM then asks the sender to stream. Any other error
// completion, a refused fi_read, or a read not complete in 60 s, reports
// the path down and ends the read with an error (a piece still in flight
// then frees its slot at its completion and writes nothing it is asked).
//
// Failure evidence. An error completion of a send or read to a peer, a
// send the provider refuses outright, or a send not complete after
// `send_timeout_ms` (rxm queues sends to a peer whose connection is refused
// and never completes them; rxd resends to a closed endpoint without end)
// is reported once
// (Sink::on_path_down) from the next progress(); sends go on being tried
// (rxm connects again), and a later send to that peer completing without
// error is reported as on_path_up. The link's probes take the path back.
//
// Threads (concurrent(): ULM's fine mode, ulm/engine.h "Locking"). The
// provider is opened with FI_THREAD_DOMAIN (the cheapest level tcp;ofi_rxm
// and shm offer: the application serializes the calls into one domain), so
// the path serializes them itself with one lock, `dom_`, held only around
// each call into libfabric. Locks, outermost first; all rt::OptMutex or
// try-flags (nothing taken below MULTIPLE):
//   delivering_  one thread at a time hands the received fragments up
//                (try: a busy flag is skipped), in the order they left the
//                completion queue, and runs progress()'s chores (backlogs,
//                reposts, timers, down and up reports). Held across
//                on_frag(), which takes the sender's peer lock in ULM.
//   Peer::lock   the peer's backlog: acquire(), commit(), reset_peer();
//                progress() flushes a backlog with try_lock.
//   mrs_lock_    the registration cache for remote reads.
//   gets_lock_   the reads (reads_: paths/read_table.h): taken
//                to plan, post (fi_read under dom_ inside it), complete
//                (on_tx) and end them; never held across a sink call.
//   cq_busy_     one reader of the completion queue at a time (try: a
//                thread that finds it busy does not wait; the reader
//                completes everyone's sends and reads). Never held across
//                on_frag(): with locks on, receives wait in `arrived_` for
//                the deliverer, so a thread in get() waiting for its reads
//                (under its peer's lock in ULM) reads the queue while the
//                deliverer waits for that peer lock.
//   dom_         every call into libfabric (the provider's FI_THREAD_DOMAIN).
//   leaves       pool_ (free send buffers),
//                misc_ (the peers' down and up marks, backlogged_), rxq_
//                (arrived_, repost_).
// Counters are bumped with relaxed atomic adds when the locks are on.
#pragma once

#include "paths/ofi/ofi_fabric.h"
#include "paths/ofi/ofi_tx_credits.h"
#include "paths/ofi/ofi_wire.h"
#include "paths/path.h"
#include "paths/read_table.h"
#include "runtime/clock.h"
#include "runtime/opt_lock.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ulmpi::path::ofi {

struct OfiOptions {
    std::string provider;          // ULMPI_OFI_PROVIDER ("" any)
    std::string iface;             // ULMPI_OFI_IFACE ("" by rule)
    RmaWish rma = RmaWish::automatic;
    std::uint64_t eager_limit = 16384;
    std::uint32_t buf_size = 65536; // send / receive buffer, our header included
    std::uint32_t rx_bufs = 64;
    std::uint32_t tx_bufs = 64;
    std::uint32_t read_chunk = 64u << 20; // (at most the provider's max_msg_size)
    std::uint32_t rkey_cache = 256; // registrations kept for remote reads
    std::uint32_t send_timeout_ms = 10000; // a send not complete this long: the peer is down
    bool everywhere = true;         // also peers on this host (else shm's)
};

// ULMPI_OFI_* parameters as options.
OfiOptions ofi_options_from_params();

class OfiPath final : public Path {
public:
    // Opens the provider's resources; nullptr (with `why`) when it cannot.
    // Takes ownership of `info`.
    static std::unique_ptr<OfiPath> create(const rt::JobInfo& job, fi_info* info,
                                           const OfiOptions& opt, std::string& why);
    ~OfiPath() override;

    const PathInfo& info() const override { return info_; }
    Status open(rt::Bootstrap& boot) override;
    Status connect(rt::Bootstrap& boot) override;
    void close() override;
    bool can_reach(int peer) const override;
    bool acquire(int peer, std::size_t len, TxBuffer& out) override;
    SendResult commit(int peer, const TxBuffer& buf, std::size_t len) override;
    std::size_t make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap) override;
    Status get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
               const iovec* local, int nlocal) override;
    Status start_get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                     const iovec* local, int nlocal, std::uint64_t token) override;
    // Ends the peer's start_get() reads with io_error; their pieces still
    // posted are orphans until the provider completes them (rxm keeps a
    // connection whose address left the vector, and serves it when the
    // link comes back: nothing makes it forget a posted fi_read).
    bool abandon_gets(int peer) override;
    std::size_t orphan_reads() const override;
    int progress(Sink& sink) override;
    // FT-MPI REBUILD and spawn slots used again (path.h): forget the old
    // process (its backlog, its address; operations still in flight to it
    // complete without reporting anything about the peer), then insert the
    // new process's address from the key-value exchange.
    Status reset_peer(int peer, rt::Bootstrap& boot) override;
    Status connect_peer(int peer, rt::Bootstrap& boot) override;
    // Sends in flight or waiting, or memory handed to a peer to read in the
    // last kExposedNs (the provider serves those reads only in our calls).
    bool needs_polling() const override;
    const char* describe() const override { return describe_.c_str(); }
    // Several threads at once: see "Threads" above.
    bool concurrent() const override { return true; }

    // For tests and --stats.
    const char* provider() const;
    bool has_rma() const { return info_.has_get; }
    std::uint64_t error_completions() const { return error_cqes_; }
    std::uint64_t refused() const { return refused_; }
    std::size_t registrations() const { return mrs_.size(); }
    std::size_t backlog() const;
    std::size_t reads_in_flight() const; // fi_read pieces posted, not complete

private:
    // The context of every operation (first: what FI_CONTEXT2 asks for).
    struct Op {
        fi_context2 ctx;
        enum class Kind : std::uint8_t { send, recv, read } kind = Kind::send;
        std::uint32_t index = 0;
        int peer = -1;
        bool busy = false;    // send: posted, not complete
        rt::Nanos posted = 0;
    };
    // A read as planned (plan_get), before it takes a slot of reads_.
    struct Plan {
        std::vector<ReadPiece> pieces;
        std::vector<fid_mr*> locals; // the reader's registrations (FI_MR_LOCAL)
        std::uint64_t bytes = 0;
        int peer = -1;
    };
    struct Pending {
        std::uint32_t buf;
        std::size_t len; // with our header
        rt::Nanos since;
    };
    struct Peer {
        rt::OptMutex lock; // backlog
        fi_addr_t addr = FI_ADDR_UNSPEC;
        std::deque<Pending> backlog; // sends the provider refused for now, in order
        std::size_t queued = 0;      // backlog.size(), read without the lock (atomic_ref)
        bool reach = false;
        // misc_:
        bool down = false;      // reported down, not yet up again
        bool down_due = false;  // to report down at the next progress()
        bool up_due = false;
    };
    struct Arrived {
        std::uint32_t buf;
        std::size_t len;
    };
    struct Reg {
        std::uintptr_t addr;
        std::size_t len;
        fid_mr* mr;
        rt::Nanos used;
    };
    static constexpr std::size_t kHdr = sizeof(FragHeader);
    static constexpr std::uintptr_t kFailTok = ~std::uintptr_t{0};

    OfiPath(const rt::JobInfo& job, fi_info* info, const OfiOptions& opt);
    Status init_resources(std::string& why);
    std::byte* txb(std::uint32_t i) const { return tx_mem_ + std::size_t{i} * opt_.buf_size; }
    std::byte* rxb(std::uint32_t i) const { return rx_mem_ + std::size_t{i} * opt_.buf_size; }
    void* tx_desc() const;
    void* rx_desc() const;
    bool post_recv(std::uint32_t i);
    // fi_inject / fi_send of a send buffer: done, again (nothing sent), failed.
    SendResult send_now(std::uint32_t buf, int peer, std::size_t len);
    void flush_backlog(int peer);
    void flush_backlogs();
    // Reads the completion queue (and so drives the provider); receives go
    // to `sink`, or wait in `arrived_` for the next progress() without one.
    // With locks on, receives always wait in `arrived_` (see "Threads"), and
    // a thread that finds another reading the queue returns 0 at once.
    // `mine` (the deliverer, locks on): receives found while nothing waits
    // in arrived_ go there, handed up by the caller without queueing.
    // One loop in both modes: below MULTIPLE its guards take nothing.
    int poll_cq(Sink* sink, std::vector<Arrived>* mine = nullptr);
    // An error completion of the poll (a send's busy mark already cleared).
    void on_error_cqe(const fi_cq_err_entry& err);
    // The chores below MULTIPLE: the single-threaded code without a test
    // of a lock.
    void chores_plain(Sink& sink);
    void set_queued(Peer& p);
    static std::size_t queued(const Peer& p)
    {
        return std::atomic_ref<std::size_t>(const_cast<std::size_t&>(p.queued))
            .load(std::memory_order_acquire);
    }
    // Hands arrived_ up, in order (the deliverer only).
    int deliver_arrived(Sink& sink);
    // progress()'s work beside receiving (the deliverer only).
    void chores(Sink& sink);
    std::uint32_t take_free_tx();
    void give_free_tx(std::uint32_t i);
    static void bump(std::uint64_t& counter, std::uint64_t n = 1);
    void on_recv(std::uint32_t buf, std::size_t len, Sink& sink);
    void on_tx(Op& op, int err);
    void mark_down(int peer, const char* why);
    // Reads rank r's "ofi.addr" and inserts it: reached, skipped (another
    // provider, no ofi there, refused by the provider) or a protocol error.
    enum class Insert { reached, skipped, bad };
    // Whether this path is meant to reach rank r (not on this host when
    // ofi_everywhere is off; only on it for the shm provider).
    bool serves(int r) const;
    Insert insert_peer(int r, rt::Bootstrap& boot);
    Status register_mr(const void* addr, std::size_t len, std::uint64_t access, fid_mr*& out);
    // Reads (ofi_rma.cpp). plan_get: the pieces of a read, checked against
    // the key, and the reader's registrations (into `req`).
    Status plan_get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                    const iovec* local, int nlocal, Plan& req);
    void close_locals(std::vector<fid_mr*>& mrs);
    // Takes a slot for a planned read and posts what it can: the slot's
    // index, or ReadTable::kNone when no slot is free for it.
    std::uint32_t enqueue_get(Plan& planned, std::uint64_t token, bool sync);
    // Posts queued pieces while read slots are free (gets_lock_ held).
    void pump_gets_locked();
    void pump_gets();
    // A piece completed (on_tx), under gets_lock_.
    void on_read_done(Op& op, int err);
    // Read i ends (reads_' ending hook, gets_lock_ held): registrations
    // closed, counted.
    void read_ending(std::uint32_t i, ReadTable::Read& q);
    // Reads in flight past kReadLimit end with `timeout`, the path down.
    void check_reads(rt::Nanos now);
    // Hands ended start_get() reads to the sink.
    void report_gets(Sink& sink);
    fid_mr* cached_mr(const void* addr, std::size_t len);
    void expire_mrs(rt::Nanos now);
    void check_stuck(rt::Nanos now);

    const rt::JobInfo& job_;
    fi_info* fi_;
    OfiOptions opt_;
    PathInfo info_;
    std::string describe_;
    std::uint32_t job_tag_ = 0;
    std::size_t inject_max_ = 0; // whole messages up to this go by fi_inject

    fid_fabric* fabric_ = nullptr;
    fid_domain* domain_ = nullptr;
    fid_av* av_ = nullptr;
    fid_cq* cq_ = nullptr; // sends, reads and receives
    fid_ep* ep_ = nullptr;
    TxCredits credits_; // rxd's transmit entries (under dom_)
    fid_mr* tx_mr_ = nullptr;
    fid_mr* rx_mr_ = nullptr;
    std::byte* tx_mem_ = nullptr;
    std::byte* rx_mem_ = nullptr;
    std::size_t tx_len_ = 0;
    std::size_t rx_len_ = 0;
    std::vector<Op> tx_ops_;
    std::vector<Op> rx_ops_;
    std::vector<Op> read_ops_;
    // The reads (gets_lock_): kGetDepth + kSyncGets slots, a piece slot per
    // op of read_ops_ (its index).
    ReadTable reads_;
    std::vector<std::vector<fid_mr*>> locals_; // per read slot: the reader's registrations
    std::vector<std::pair<std::uint64_t, Status>> reports_; // report_gets()' own
    std::vector<std::uint32_t> free_tx_;
    std::vector<std::uint32_t> repost_;
    std::vector<Arrived> arrived_; // receives completed while no sink was at hand
    std::vector<Arrived> held_;    // arrived_ being delivered
    std::vector<Arrived> mine_;    // polled by the deliverer itself (locks on)
    int delivered_ = 0;
    int reported_ = 0; // on_get_done calls of this progress() (the deliverer's)
    std::vector<int> backlogged_; // peers whose backlog is not empty
    std::vector<Peer> peers_;
    std::vector<std::byte> scratch_;
    std::vector<Reg> mrs_;
    std::uint64_t next_key_ = 1; // under dom_
    std::atomic<rt::Nanos> exposed_at_{0}; // last make_rkey()
    std::uint32_t tick_ = 0;
    std::atomic<bool> any_news_{false};
    int downs_ = 0; // peers marked down (misc_)
    std::atomic<bool> downs_any_{false}; // downs_ > 0, read without misc_
    // Locks ("Threads").
    std::atomic<bool> delivering_{false};
    std::atomic<bool> cq_busy_{false};
    mutable rt::OptMutex dom_;
    mutable rt::OptMutex mrs_lock_;
    mutable rt::OptMutex pool_;
    mutable rt::OptMutex gets_lock_;
    mutable rt::OptMutex misc_;
    mutable rt::OptMutex rxq_;
    // What the idle passes of several threads test without a lock (each
    // written under the lock of what it describes).
    std::atomic<bool> arrived_hint_{false};      // arrived_ not empty (rxq_)
    std::atomic<bool> repost_hint_{false};       // repost_ not empty (rxq_)
    std::atomic<std::size_t> backlogged_n_{0};   // backlogged_.size() (misc_)
    std::atomic<std::size_t> free_n_{0};         // free_tx_.size() (pool_)
    std::uint64_t error_cqes_ = 0;
    std::uint64_t refused_ = 0;
    bool open_ = false;
};

std::vector<std::unique_ptr<Path>> make_ofi_paths(const rt::JobInfo& job);

} // namespace ulmpi::path::ofi
