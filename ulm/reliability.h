// Reliability: every fragment arrives intact, once, even when a path drops,
// duplicates, reorders or corrupts it (docs/wire_protocol.md).
//
// Sender. Each fragment sent over a reliable path is kept as a SendFrag in
// the peer's window (indexed by its 64-bit fragment sequence number) until
// acknowledged. Its payload is either a private copy (eager data, keys,
// control fragments: the MPI request may complete at once) or a reference
// into the message's user buffer (rendezvous data: the request completes
// only when those fragments are acknowledged).
//
// Retransmission works as in TCP. One timer per peer runs while fragments
// wait for an ACK and restarts whenever an ACK makes progress; its timeout
// adapts to the measured round trip. When it expires, only the oldest
// fragment is resent (a probe), so a peer busy computing is never flooded;
// expiries in a row without progress back the timer off (truncated
// exponential back-off, from the third on) and after max_retries of them the
// peer is reported unreachable through the failure hooks. Losses are
// repaired by ACKs: a fragment older than one the peer reports delivered is
// resent at once (fast retransmission), and after a timeout each partial
// ACK resends the next missing fragment (recovery).
//
// Receiver. Per peer two range sets: `received` (the header arrived intact)
// and `delivered` (the payload was intact too and the fragment was
// processed). A fragment already delivered is a duplicate: dropped and
// acknowledged again (so a lost ACK costs nothing). A fragment whose header
// checksum fails is dropped silently (none of its fields can be trusted);
// one whose payload checksum fails is answered with a `corrupt` ACK and the
// sender resends it at once.
//
// ACKs are batched and delayed. An ACK carries the latest delivered
// sequence, LIRS and LIDS (largest in-order received / delivered) and a
// bitmap of the 64 sequences after LIDS + 1 that were delivered. The sender
// frees everything at or below LIDS, plus the fragments named by the bitmap,
// even when earlier ACKs were lost. When everything from a peer arrived in
// order, the ACK owed to it rides on the next fragment we send it (an AckExt
// after the header, 8 bytes: the LIDS), so a ping-pong or any two-way
// exchange sends no ACK fragments at all (unless those 8 bytes would cost
// the fragment another cache line of the path, Rail::costs_a_line: then a
// non-urgent ACK waits for a later fragment, up to ack_every - 1 of them).
// An ACK fragment goes out at the
// end of a progress pass when no fragment took it along: at once when it is
// urgent (a duplicate, a fragment out of order or filling a hole, a fragment
// whose sender waits for its ACK to complete a send: flag::ack_now, on the
// last data fragment of a message where no rail paces by ACKs), else
// when it covers ack_every fragments or has waited ack_delay (well below the
// sender's smallest retransmission timeout), or before the rank yields the
// CPU or sleeps while it waits.
#pragma once

#include "paths/path.h"
#include "runtime/clock.h"
#include "ulm/rail.h"
#include "runtime/intrusive_list.h"
#include "ulm/message.h"
#include "ulm/wire.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ulmpi::ulm {

// Fragments sent after one and known delivered that make it count as lost
// on a path that may reorder (see Engine::on_ack).
constexpr int kReorderThreshold = 3;
// A delayed ACK's deadline is checked (the clock read) once in this many
// progress passes that brought nothing new (LinkSet::flush_one).
constexpr std::uint32_t kAckClockPasses = 8;
// The round trip is timed on one fragment at a time, at most one in this many.
constexpr std::uint64_t kRttEvery = 8;

struct SendFrag {
    static constexpr std::uint32_t kInlineCopy = 192;

    std::uint64_t seq = 0;
    Rail* rail = nullptr;        // rail of the last transmission (counts in its inflight)
    SendMsg* owner = nullptr;    // payload = owner->data at `offset` (no copy)
    std::uint64_t offset = 0;
    std::uint32_t hdr_len = 0;
    std::uint32_t payload_len = 0;
    std::uint32_t retries = 0;   // times sent again (any reason)
    bool fast_resent = false;    // already resent because later fragments got through
    std::uint32_t pieced = 0;    // payload bytes sent again as pieces (LinkSet::split)
    std::uint64_t tx_order = 0;  // of its last transmission among all to the peer (Peer::tx_count)
    rt::Nanos sent_at = 0;       // first transmission, when every fragment is timed (Peer::time_all)
    std::byte* copy = nullptr;   // private payload copy (BlockPool) when larger than inline
    alignas(8) std::byte hdr[kMaxHeader];
    alignas(8) std::byte inline_copy[kInlineCopy];

    const std::byte* payload_copy() const { return copy != nullptr ? copy : inline_copy; }
    std::uint32_t wire_len() const { return hdr_len + payload_len; }
};

// The sender's unacknowledged fragments of one peer, by sequence number.
// Sequences are dense (every fragment to the peer takes the next one), so a
// ring indexed by seq modulo its power-of-two size gives O(1) lookup;
// unreliable fragments and acknowledged ones leave null holes, and the
// window's base moves past those at the front.
class SeqWindow {
public:
    void push(SendFrag* f)
    {
        if (live_ == 0) {
            base_ = f->seq; // nothing kept: start afresh (the ring holds only nulls)
            end_ = f->seq;
        }
        if (f->seq + 1 - base_ > ring_.size()) [[unlikely]] {
            grow(f->seq + 1 - base_);
        }
        ring_[f->seq & mask_] = f;
        end_ = f->seq + 1;
        ++live_;
    }
    SendFrag* find(std::uint64_t seq) const
    {
        if (seq < base_ || seq >= end_) {
            return nullptr;
        }
        return ring_[seq & mask_];
    }
    // Removes and returns the fragment `seq` (nullptr if absent).
    SendFrag* take(std::uint64_t seq)
    {
        if (seq < base_ || seq >= end_) {
            return nullptr;
        }
        SendFrag*& slot = ring_[seq & mask_];
        SendFrag* f = slot;
        if (f != nullptr) {
            slot = nullptr;
            --live_;
            while (base_ < end_ && ring_[base_ & mask_] == nullptr) {
                ++base_;
            }
        }
        return f;
    }
    SendFrag* oldest() const { return live_ == 0 ? nullptr : ring_[base_ & mask_]; }
    std::uint64_t base() const { return base_; }
    std::size_t live() const { return live_; }
    bool empty() const { return live_ == 0; }
    template <class Fn> void for_each(Fn&& fn) const
    {
        for (std::uint64_t s = base_; s < end_; ++s) {
            if (SendFrag* f = ring_[s & mask_]) {
                fn(f);
            }
        }
    }

private:
    [[gnu::noinline, gnu::cold]] void grow(std::uint64_t span)
    {
        std::size_t n = ring_.empty() ? 64 : ring_.size();
        while (n < span) {
            n *= 2;
        }
        std::vector<SendFrag*> bigger(n, nullptr);
        for (std::uint64_t s = base_; s < end_; ++s) {
            bigger[s & (n - 1)] = ring_[s & mask_];
        }
        ring_.swap(bigger);
        mask_ = n - 1;
    }
    std::vector<SendFrag*> ring_;
    std::uint64_t mask_ = 0;
    std::uint64_t base_ = 1; // oldest kept sequence (when live_ > 0)
    std::uint64_t end_ = 1;  // one past the newest pushed
    std::size_t live_ = 0;
};

struct ReliabilityPolicy {
    rt::Nanos initial_timeout = 0; // before the first round-trip sample
    rt::Nanos min_timeout = 0;     // floor of the adaptive timeout
    rt::Nanos max_timeout = 0;     // cap of the doubling
    std::uint32_t max_retries = 0;
    rt::Nanos peer_timeout = 0;    // silent this long while we wait for it: unreachable (0: never)
    rt::Nanos ack_delay = 0;       // an ACK waits this long for a fragment to ride on (0: never)
    std::uint32_t ack_every = 1;   // ... or until it covers this many fragments
};

// Round-trip estimate of one peer (Jacobson/Karels, as TCP does): samples
// come only from fragments acknowledged after a single transmission (Karn),
// and the base timeout is srtt + 4 * rttvar, never below the floor.
struct RttEstimate {
    rt::Nanos srtt = 0;
    rt::Nanos rttvar = 0;
    rt::Nanos rto = 0; // 0: no sample yet, use the policy's initial timeout

    void sample(rt::Nanos rtt, const ReliabilityPolicy& p)
    {
        if (rto == 0) {
            srtt = rtt;
            rttvar = rtt / 2;
        } else {
            rt::Nanos err = rtt > srtt ? rtt - srtt : srtt - rtt;
            rttvar = (3 * rttvar + err) / 4;
            srtt = (7 * srtt + rtt) / 8;
        }
        rto = srtt + 4 * rttvar;
        if (rto < p.min_timeout) {
            rto = p.min_timeout;
        }
        if (rto > ceiling(p)) {
            rto = ceiling(p);
        }
    }
    // The policy's largest timeout, unless the path's round trip itself is
    // longer (a deep queue in front of a slow link): a timeout shorter than
    // the round trip fires for every fragment and resends what is merely
    // queued, which deepens the queue further (seen at 250 Mbit/s: 8 MB/s
    // with a quarter of all fragments resent, instead of the link's rate).
    rt::Nanos ceiling(const ReliabilityPolicy& p) const
    {
        return std::max<rt::Nanos>(p.max_timeout, srtt + srtt / 2);
    }
};

// Timeout of a fragment resent `retries` times in a row to a silent peer:
// base, then base * 2^(retries - 2) from the third silent resend on, capped
// (truncated exponential back-off). The first resends keep the base timeout:
// a peer that waits for this very fragment says nothing either, and random
// losses should not make it wait longer.
inline rt::Nanos retry_timeout(const ReliabilityPolicy& p, const RttEstimate& e, std::uint32_t retries)
{
    rt::Nanos t = e.rto != 0 ? e.rto : p.initial_timeout;
    const rt::Nanos most = e.ceiling(p);
    for (std::uint32_t i = 2; i < retries && t < most; ++i) {
        t *= 2;
    }
    return t < most ? t : most;
}

} // namespace ulmpi::ulm
