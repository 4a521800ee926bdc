// LinkSet: the per-peer links of one process (link.h) and the machinery
// they share: descriptor pools for kept fragments, the lists of links that
// owe an ACK, keep fragments or probe a rail, and the reliability policy.
//
// Between the protocols and the paths:
//   send     the engine builds a fragment's header and names its payload;
//            emit() sends it over the rail the engine chose from the link
//            (control_rail / bulk_rail), stamps sequence number, epoch,
//            checksums and a piggy-backed ACK, and keeps it until
//            acknowledged when the link is reliable (reliability.h).
//   receive  the engine hands every fragment to accept() first (checksum,
//            epoch, duplicates, ACKs and probes, which stop here), processes
//            it, then calls delivered().
//   time     tick() runs the retransmission timers, the rails' evidence
//            (a rail whose fragments stay unacknowledged while the peer is
//            heard through another goes down; its fragments are resent over
//            the others) and the probes of down rails.
//   life     fail() ends a link (every kept fragment is freed, its owner
//            told); reset() starts it again for a new incarnation.
// Upward calls go through LinkOwner, which the engine implements.
#pragma once

#include "paths/path.h"
#include "runtime/intrusive_list.h"
#include "runtime/opt_lock.h"
#include "runtime/pool.h"
#include "runtime/status.h"
#include "ulm/link.h"
#include "ulm/message.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ulmpi::ulm {

// What a fragment carries after its header.
struct Payload {
    const DataRef* ref = nullptr;    // bytes [offset, offset + len) of a message
    std::uint64_t offset = 0;
    const std::byte* bytes = nullptr; // or these bytes
    std::uint32_t len = 0;
};

class LinkOwner {
public:
    // A kept fragment that pointed into `owner`'s buffer was acknowledged
    // (or freed by fail()): owner->unacked went down by one.
    virtual void frag_released(SendMsg* owner) = 0;
    // The link queued work (control fragments, fail-over resends) that
    // push() must send when the paths have room.
    virtual void link_has_work(Link& link) = 0;
    // `rail` went down with single-copy reads from the peer in flight over
    // it: the owner asks its path to give them up (they then fail over).
    virtual void rail_reads_lost(Link& link, Rail& rail) = 0;
    // No rail reaches the peer any more (every one down, retries exhausted).
    virtual void link_unreachable(Link& link, const std::string& why) = 0;
    // Fine locks (engine.h, "Locking"): the lock that guards the link (its
    // peer's), taken by flush_acks() for each link it answers.
    virtual rt::OptMutex& link_lock(Link& link) = 0;

protected:
    ~LinkOwner() = default;
};

class LinkSet {
public:
    LinkSet();
    ~LinkSet();
    LinkSet(const LinkSet&) = delete;
    LinkSet& operator=(const LinkSet&) = delete;

    // Binds every peer to the paths that reach it and sets reliability,
    // checksums and timers from the parameters. `why` says which peer no
    // path reaches. Peers from `first_slot` on (>= 0) are spawn slots that
    // may hold no process yet: no path to them is no error.
    rt::Status init(int rank, int size, int incarnation,
                    const std::vector<std::unique_ptr<path::Path>>& paths, LinkOwner& owner,
                    std::string& why, int first_slot = -1);

    Link& operator[](int rank) { return links_[static_cast<std::size_t>(rank)]; }
    const Link& operator[](int rank) const { return links_[static_cast<std::size_t>(rank)]; }
    int size() const { return static_cast<int>(links_.size()); }
    bool any_kernel_path() const { return any_kernel_; }
    const ReliabilityPolicy& policy() const { return policy_; }

    // --- sending
    // Writes one fragment into `rail`'s path and commits it (see link_set.cpp).
    // False: no room on the path; nothing was consumed.
    bool emit(Link& l, Rail& rail, std::byte* hdr, std::uint32_t hlen, const Payload& pl,
              SendMsg* owner);
    // A control fragment (header only) over the control rail, queued when
    // the path has no room.
    void send_ctrl(Link& l, const void* hdr, std::uint32_t len);
    // Sends what the link queued (control fragments, fail-over resends).
    // Returns fragments sent; *drained tells whether nothing is left.
    int push(Link& l, bool* drained);
    void fill_base(const Link& l, BaseHeader& b, FragType type, std::uint8_t flags,
                   std::uint32_t payload_len) const
    {
        b.version = kWireVersion;
        b.type = type;
        b.flags = flags;
        b.epoch = l.epoch;
        b.src = static_cast<std::uint32_t>(rank_);
        b.dst = static_cast<std::uint32_t>(l.rank);
        b.payload_len = payload_len;
        b.frag_seq = 0;
        b.hcrc = 0;
        b.pcrc = 0;
    }

    // --- receiving
    // Checks an arriving fragment. True: the engine processes it, then calls
    // delivered(). False: it was damaged, stale, a duplicate (answered here)
    // or a link-level fragment (ACK, probe) handled here.
    // The common case is inline: an unreliable link over one unchecked rail
    // (shm between two ranks of a host), and a fragment of the current
    // epoch, addressed right, that is not link-level; it is only counted.
    bool accept(Link& l, path::Path& path, const BaseHeader& b, std::uint32_t hlen,
                path::RxFrag& frag, const std::byte* payload)
    {
        if (l.nrails == 1 && !l.reliable) [[likely]] {
            Rail& r = l.rails[0];
            if (r.path == &path && !r.checksum && b.epoch == l.epoch && l.alive() &&
                b.src == static_cast<std::uint32_t>(frag.peer) &&
                b.dst == static_cast<std::uint32_t>(rank_) && !link_level(b.type)) [[likely]] {
                ++l.counters.frags_received;
                ++r.counters.frags_received;
                r.counters.bytes_received += frag.len;
                return true;
            }
        }
        return accept_any(l, path, b, hlen, frag, payload);
    }
    void delivered(Link& l, const BaseHeader& b)
    {
        if (l.reliable) {
            delivered_reliable(l, b);
        }
    }
    // After delivered(): a piece's bytes are in (the whole counts as
    // delivered once all of its pieces are).
    void piece_delivered(Link& l, const PieceHeader& h);
    // The payload of data fragment `b` failed its checksum while it was
    // copied out: answer corrupt, the sender resends it.
    void payload_corrupt(Link& l, const BaseHeader& b);
    bool checksummed(const Link& l, const path::Path& path) const;

    // --- time
    // Fine locks (engine.h, "Locking"): tick() runs under the engine's write
    // lock; flush_acks() under its read lock, taking each link's lock.
    bool needs_tick() const
    {
        return any_unacked_.load(std::memory_order_relaxed) ||
               any_probing_.load(std::memory_order_relaxed) ||
               any_reading_.load(std::memory_order_relaxed);
    }
    int tick();
    bool acks_due() const { return any_ack_due_.load(std::memory_order_relaxed); }
    // Sends the ACKs that are due (all: every one owed, e.g. before sleeping).
    void flush_acks(bool all);

    // --- single-copy reads from the peer over one of its rails (the
    // receiver's; ulm/direct_read.h): a message's read starts, moves (a
    // slice ended well), ends. Under the link's lock.
    void read_started(Link& l, const path::Path* via, std::uint64_t bytes);
    void read_moved(Link& l, const path::Path* via);
    void read_ended(Link& l, const path::Path* via, std::uint64_t bytes);

    // --- path evidence and lifetime
    void path_down(path::Path& path, int peer, const char* why);
    void path_up(path::Path& path, int peer);
    void fail(Link& l, rt::Errc why);
    void reset(Link& l, int peer_incarnation);
    // A fresh link (nothing sent yet) to a peer in a later incarnation.
    void set_peer_incarnation(Link& l, int peer_incarnation)
    {
        l.peer_incarnation = peer_incarnation;
        l.epoch = static_cast<std::uint8_t>(incarnation_ + peer_incarnation);
    }

    // --- introspection
    std::size_t kept_frags() const
    {
        rt::OptGuard g(pool_lock_);
        return frag_pool_.in_use();
    }
    void print_stats(std::FILE* out, int rank, int peer) const;

    // A link that had no path (a spawn slot without a process at the
    // wire-up) binds the paths that reach its peer now (MPI_Comm_spawn).
    void bind_new(Link& l, const std::vector<std::unique_ptr<path::Path>>& paths)
    {
        l.nrails = 0;
        bind(l, paths);
    }
    // A link just reset (nothing in flight) whose peer moved to another
    // host binds the paths that reach it there, in the same incarnation.
    // False: none does (or a reliable one would need larger kept copies
    // than the wire-up sized).
    bool rebind(Link& l, const std::vector<std::unique_ptr<path::Path>>& paths);

private:
    void bind(Link& l, const std::vector<std::unique_ptr<path::Path>>& paths);
    // Fragments the link handles itself (never handed to the engine).
    static bool link_level(FragType t)
    {
        return t == FragType::ack || t == FragType::probe || t == FragType::probe_ack;
    }
    bool accept_any(Link& l, path::Path& path, const BaseHeader& b, std::uint32_t hlen,
                    path::RxFrag& frag, const std::byte* payload);
    void delivered_reliable(Link& l, const BaseHeader& b);
    [[gnu::always_inline]] inline bool emit_plain(Link& l, Rail& rail, std::byte* hdr, std::uint32_t hlen,
                                                  const Payload& pl);
    // Hands a filled buffer (header hlen, payload plen bytes) to the rail's
    // path and counts it; a path that says it cannot send takes the rail down.
    [[gnu::always_inline]] inline void commit(Link& l, Rail& rail, path::TxBuffer& buf,
                                              std::uint32_t hlen, std::uint32_t plen);
    // Counts a fragment the path took (`res`: what its commit answered).
    [[gnu::always_inline]] inline void counted(Link& l, Rail& rail, path::SendResult res,
                                               std::uint32_t plen);
    bool resend(Link& l, SendFrag* f, Rail* rail, std::uint64_t LinkCounters::*why);
    bool resend_any(Link& l, SendFrag* f, std::uint64_t LinkCounters::*why);
    bool split(Link& l, SendFrag* f, Rail& rail, std::uint64_t LinkCounters::*why);
    bool accept_piece(Link& l, const BaseHeader& b, const path::RxFrag& frag);
    void release_frag(Link& l, SendFrag* f, rt::Nanos now);
    void keep(Link& l, Rail& rail, const BaseHeader& b, const std::byte* frame, std::uint32_t full,
              const std::byte* payload, const Payload& pl, SendMsg* owner);
    bool try_ctrl(Link& l, const void* hdr, std::uint32_t len);
    void queue_ack(Link& l, std::uint64_t seq, bool urgent);
    void ack_given(Link& l);
    bool flush_one(Link& l, bool all, rt::Nanos& now);
    void flush_acks_fine(bool all);
    // The lists of links that owe an ACK, keep fragments, probe a rail:
    // membership changes under lists_lock_ (fine locks).
    void list_ack_due(Link& l, bool on);
    void list_unacked(Link& l, bool on);
    void list_probing(Link& l, bool on);
    void list_reading(Link& l, bool on);
    SendFrag* get_frag();
    void put_frag(SendFrag* f);
    void send_ack(Link& l, std::uint64_t seq, AckStatus status);
    void on_ack(Link& l, const AckHeader& h);
    void apply_ack(Link& l, const AckHeader& h);
    void note_missing(Link& l, const AckHeader& h, std::uint64_t map_base, rt::Nanos now);
    rt::Nanos link_timeout(const Link& l) const;
    void on_probe(Link& l, path::Path& path, const ProbeHeader& h);
    void on_probe_ack(Link& l, path::Path& path, const ProbeHeader& h);
    void send_probe(Link& l, Rail& r, FragType type, std::uint64_t nonce, std::int64_t sent);

    // Rails (link_rails.cpp).
    void on_rail_acked(Link& l, Rail& r, std::uint32_t bytes, rt::Nanos now);
    void rail_sample(Link& l, Rail& r, rt::Nanos rtt);
    void rail_down(Link& l, Rail& r, const char* why);
    void rail_up(Link& l, Rail& r);
    int failover(Link& l);
    int check_rails(Link& l, rt::Nanos now);
    int probe_rails(Link& l, rt::Nanos now);
    int watch_reads(Link& l, rt::Nanos now);
    void give_up_reads(Link& l, Rail& r);
    void retry_timer(Link& l, rt::Nanos now, int& n);
    void give_up(Link& l);

    int rank_ = 0;
    int incarnation_ = 0;
    LinkOwner* owner_ = nullptr;
    std::vector<Link> links_;
    ReliabilityPolicy policy_{};
    bool any_kernel_ = false;
    rt::Nanos rail_timeout_ = 0;      // a rail silent this long while another is heard goes down
    rt::Nanos probe_min_ = 0;         // first probe interval of a down rail
    rt::Nanos probe_max_ = 0;
    rt::Nanos read_stall_ = 0;        // a read that moves nothing this long has its rail asked
    double read_floor_ = 0;           // bytes per ns a rail carries at least (the answer's deadline)
    rt::Pool<SendFrag> frag_pool_{256};
    rt::BlockPool copy_pool_;
    rt::Pool<CtrlFrag> ctrl_pool_{64};
    // Fine locks (engine.h): the pools serve several peers at once (a leaf).
    mutable rt::OptMutex pool_lock_;
    rt::IntrusiveList<Link, &Link::ack_hook> ack_due_;
    rt::IntrusiveList<Link, &Link::unacked_hook> unacked_;
    rt::IntrusiveList<Link, &Link::probe_hook> probing_;
    rt::IntrusiveList<Link, &Link::read_hook> reading_;
    // Fine locks: the three lists' membership (a leaf, taken under a link's
    // lock), and whether each is empty, read without it.
    rt::OptMutex lists_lock_;
    std::atomic<bool> any_ack_due_{false};
    std::atomic<bool> any_unacked_{false};
    std::atomic<bool> any_probing_{false};
    std::atomic<bool> any_reading_{false};
    std::uint64_t nonce_ = 0;
    std::vector<std::byte> scratch_;

    void forget_links();
};

} // namespace ulmpi::ulm
