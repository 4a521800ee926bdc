// Fragments on the wire: sequence numbers, checksums, retention for
// retransmission, ACKs and timers (see reliability.h for the design).
#include "ulm/engine.h"

#include "runtime/crc32c.h"
#include "runtime/log.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ulmpi::ulm {
namespace {

template <class H> H read_header(const std::byte* p)
{
    H h;
    std::memcpy(&h, p, sizeof h);
    return h;
}

// Headers are whole 8-byte words (wire.h), from 32 to kMaxHeader bytes: a
// copy of a known length is a few moves, not a memcpy call.
[[gnu::always_inline]] inline void copy_header(std::byte* dst, const std::byte* src, std::uint32_t hlen)
{
    switch (hlen) {
    case 40: std::memcpy(dst, src, 40); return;
    case 48: std::memcpy(dst, src, 48); return;
    case 56: std::memcpy(dst, src, 56); return;
    case 64: std::memcpy(dst, src, 64); return;
    case 72: std::memcpy(dst, src, 72); return;
    default: std::memcpy(dst, src, hlen); return;
    }
}

std::uint32_t header_crc(const std::byte* hdr, std::uint32_t hlen)
{
    // hcrc is computed with its own field zero.
    static_assert(offsetof(BaseHeader, hcrc) % 4 == 0);
    return rt::crc32c_words_hole(hdr, hlen / 8, offsetof(BaseHeader, hcrc));
}

// Data fragments of matched messages take the bulk lane, all others (match,
// control, ACK) the control lane. `type` is the header's second byte.
path::Lane lane_of(std::byte type)
{
    return type == static_cast<std::byte>(FragType::data) ? path::Lane::bulk : path::Lane::control;
}

} // namespace

// Writes one fragment into path memory and commits it. The header comes
// without its sequence number; control fragments (and ACKs) have no payload.
// On a reliable path the fragment is kept until acknowledged: its payload is
// copied unless `owner` is given (then it is re-read from owner's buffer,
// which stays untouched until the owner completes). False: the path had no
// room; nothing was consumed.
bool Engine::emit(Peer& p, path::Path* path, std::byte* hdr, std::uint32_t hlen, const Payload& pl,
                  SendMsg* owner)
{
    const PathMode& m = mode(path);
    BaseHeader b = read_header<BaseHeader>(hdr);
    const bool sequenced = b.type != FragType::ack;
    // The ACK this peer is owed rides along when everything it sent us so
    // far was delivered in order (then LIDS says it all) and the path has
    // room for the extra 8 bytes.
    const bool piggy = sequenced && p.ack_due && p.delivered.islands() == 0 &&
                       hlen + sizeof(AckExt) + pl.len <= path->info().max_frag;
    const std::uint32_t full = hlen + (piggy ? static_cast<std::uint32_t>(sizeof(AckExt)) : 0);
    path::TxBuffer buf;
    buf.lane = lane_of(hdr[1]);
    if (!path->acquire(p.rank, full + pl.len, buf)) {
        return false;
    }
    if (sequenced) {
        b.frag_seq = p.next_frag_out.value();
        ++p.next_frag_out;
    }
    if (m.reliable && sequenced) {
        b.flags |= flag::reliable;
        if (owner != nullptr && pl.ref != nullptr) {
            b.flags |= flag::ack_now; // the send completes only when this is acknowledged
        }
    }
    alignas(8) std::byte frame[kMaxHeader];
    copy_header(frame, hdr, hlen);
    if (piggy) {
        b.flags |= flag::ack_ext;
        const AckExt ext{p.delivered.in_order()};
        std::memcpy(frame + hlen, &ext, sizeof ext);
        ack_given(p);
        ++p.counters.piggy_acks_sent;
    }
    std::byte* out = buf.data + full;
    std::uint32_t pcrc = 0;
    if (pl.ref != nullptr) {
        if (m.checksum) {
            pcrc = pack_crc(*pl.ref, pl.offset, out, pl.len);
        } else {
            pack(*pl.ref, pl.offset, out, pl.len);
        }
    } else if (pl.len > 0) {
        if (m.checksum) {
            pcrc = rt::crc32c_copy(out, pl.bytes, pl.len);
        } else {
            std::memcpy(out, pl.bytes, pl.len);
        }
    }
    if (m.checksum) {
        b.flags |= flag::crc;
        b.pcrc = pcrc;
        b.hcrc = 0;
        std::memcpy(frame, &b, sizeof b);
        b.hcrc = header_crc(frame, full);
    }
    std::memcpy(frame, &b, sizeof b);
    std::memcpy(hdr, &b, sizeof b);
    copy_header(buf.data, frame, full);

    if (m.reliable && sequenced) {
        SendFrag* f = frag_pool_.get();
        if (f == nullptr) {
            rt::fatal("out of memory keeping a fragment for retransmission to rank %d", p.rank);
        }
        f->seq = b.frag_seq;
        f->path = path;
        f->hdr_len = full;
        f->payload_len = pl.len;
        copy_header(f->hdr, frame, full);
        if (owner != nullptr && pl.ref != nullptr) {
            f->owner = owner;
            f->offset = pl.offset;
            ++owner->unacked;
        } else if (pl.len > 0) {
            std::byte* dst = f->inline_copy;
            if (pl.len > SendFrag::kInlineCopy) {
                if (copy_pool_.block_size() < pl.len) {
                    rt::fatal("fragment of %u bytes exceeds the retransmission buffer size", pl.len);
                }
                f->copy = static_cast<std::byte*>(copy_pool_.get());
                if (f->copy == nullptr) {
                    rt::fatal("out of memory keeping a fragment for retransmission to rank %d", p.rank);
                }
                dst = f->copy;
            }
            std::memcpy(dst, out, pl.len);
        }
        f->tx_order = ++p.tx_count;
        if (p.time_all) {
            f->sent_at = rt::now_ns();
        } else if (p.rtt_seq == 0 && f->seq >= p.next_rtt_seq) {
            // Time this one (one timed fragment at a time, as TCP without
            // timestamps does): the clock is read for every few fragments only.
            p.rtt_seq = f->seq;
            p.rtt_sent = rt::now_ns();
        }
        p.unacked.push(f);
        if (!p.unacked_hook.linked()) {
            unacked_peers_.push_back(&p);
            p.timer = 0; // armed by the next reliability_tick()
            p.backoff = 0;
            p.recover_seq = 0;
        }
    }
    (void)path->commit(p.rank, buf, full + pl.len);
    ++p.counters.frags_sent;
    p.counters.bytes_sent += pl.len;
    return true;
}

bool Engine::resend(Peer& p, SendFrag* f, std::uint64_t PeerCounters::*why)
{
    path::Path* path = p.primary;
    if (path == nullptr) {
        return false;
    }
    path::TxBuffer buf;
    buf.lane = lane_of(f->hdr[1]);
    if (!path->acquire(p.rank, f->hdr_len + f->payload_len, buf)) {
        return false;
    }
    copy_header(buf.data, f->hdr, f->hdr_len);
    std::byte* out = buf.data + f->hdr_len;
    if (f->owner != nullptr) {
        pack(f->owner->data, f->offset, out, f->payload_len);
    } else if (f->payload_len > 0) {
        std::memcpy(out, f->payload_copy(), f->payload_len);
    }
    (void)path->commit(p.rank, buf, f->hdr_len + f->payload_len);
    f->path = path;
    f->tx_order = ++p.tx_count;
    if (f->seq == p.rtt_seq) {
        p.rtt_seq = 0; // Karn: an ACK could answer either transmission
    }
    ++p.counters.retransmits;
    ++(p.counters.*why);
    ++p.counters.frags_sent;
    return true;
}

void Engine::release_frag(Peer& p, SendFrag* f)
{
    (void)p;
    if (f->copy != nullptr) {
        copy_pool_.put(f->copy);
    }
    SendMsg* owner = f->owner;
    frag_pool_.put(f);
    if (owner != nullptr) {
        --owner->unacked;
        check_complete(owner);
    }
}

// Receiver: checks an arriving fragment before it is processed. False means
// drop it (damaged, or a duplicate — answered here). `hlen` is the whole
// header, AckExt included.
bool Engine::accept(Peer& p, path::Path& path, const BaseHeader& b, std::uint32_t hlen, path::RxFrag& frag,
                    const std::byte* payload)
{
    const bool checksum = checksummed(&path);
    if (checksum) {
        if (!(b.flags & flag::crc) || header_crc(frag.data, hlen) != b.hcrc) {
            ++p.counters.crc_header_fail;
            return false; // nothing in it can be trusted, not even its sequence
        }
    }
    if (!track_seqs_) {
        return true;
    }
    if (b.type == FragType::ack) {
        return true;
    }
    if (b.flags & flag::ack_ext) {
        // A piggy-backed ACK: valid even on a duplicate (its header is intact).
        AckExt ext;
        std::memcpy(&ext, frag.data + header_size(b.type), sizeof ext);
        AckHeader a{};
        a.ack_seq = ext.lids;
        a.lirs = ext.lids;
        a.lids = ext.lids;
        a.status = AckStatus::good;
        ++p.counters.piggy_acks_received;
        apply_ack(p, a);
    }
    if (b.frag_seq == 0 || p.delivered.contains(b.frag_seq)) {
        ++p.counters.duplicates;
        if (b.flags & flag::reliable) {
            queue_ack(p, b.frag_seq, true); // its ACK was lost: say it again, now
        }
        return false;
    }
    (void)p.received.insert(b.frag_seq);
    if (checksum && b.type != FragType::data && b.payload_len > 0 &&
        rt::crc32c(payload, b.payload_len) != b.pcrc) {
        ++p.counters.crc_payload_fail;
        send_ack(p, b.frag_seq, AckStatus::corrupt);
        return false;
    }
    return true;
}

void Engine::delivered(Peer& p, const BaseHeader& b)
{
    if (!track_seqs_) {
        return;
    }
    // A fragment out of order, or one that fills a hole, is acknowledged at
    // once: the sender learns of a loss (or its repair) without delay.
    const bool was_gap = p.delivered.islands() != 0;
    (void)p.delivered.insert(b.frag_seq);
    if (b.flags & flag::reliable) {
        queue_ack(p, b.frag_seq, was_gap || p.delivered.islands() != 0 || (b.flags & flag::ack_now));
    }
}

// ACKs are delayed: one is owed to the peer, and goes out (see flush_acks)
// when it is urgent, when ack_every fragments are owed, or ack_delay after it
// was first owed, unless a fragment to the peer carries it first.
void Engine::queue_ack(Peer& p, std::uint64_t seq, bool urgent)
{
    if (seq > p.ack_latest) {
        p.ack_latest = seq;
    }
    ++p.ack_owed;
    p.ack_urgent = p.ack_urgent || urgent;
    if (!p.ack_due) {
        p.ack_due = true;
        p.ack_deadline = 0;
        ack_due_.push_back(&p);
    }
}

void Engine::ack_given(Peer& p)
{
    p.ack_due = false;
    p.ack_urgent = false;
    p.ack_owed = 0;
    ack_due_.remove(&p);
}

void Engine::send_ack(Peer& p, std::uint64_t seq, AckStatus status)
{
    AckHeader a{};
    fill_base(p, a.base, FragType::ack, 0, 0);
    a.ack_seq = seq;
    a.lirs = p.received.in_order();
    a.lids = p.delivered.in_order();
    a.sack = 0;
    if (p.delivered.islands() != 0) {
        for (unsigned i = 0; i < 64; ++i) {
            if (p.delivered.contains(a.lids + 2 + i)) {
                a.sack |= std::uint64_t{1} << i;
            }
        }
    }
    a.status = status;
    send_ctrl(p, &a, sizeof a);
    ++p.counters.acks_sent;
}

void Engine::flush_acks(bool all)
{
    rt::Nanos now = 0;
    for (Peer* p = ack_due_.front(), *next; p != nullptr; p = next) {
        next = ack_due_.next(p);
        if (!all && !p->ack_urgent && policy_.ack_delay > 0 && p->ack_owed < policy_.ack_every) {
            // The pass that queued it does not read the clock: most ACKs
            // ride on the caller's next send before the next pass.
            if (p->ack_deadline == 0) {
                p->ack_deadline = -1;
                continue;
            }
            if (now == 0) {
                now = rt::now_ns();
            }
            if (p->ack_deadline < 0) {
                p->ack_deadline = now + policy_.ack_delay;
            }
            if (now < p->ack_deadline) {
                continue;
            }
        }
        const std::uint64_t seq = p->ack_latest;
        ack_given(*p);
        send_ack(*p, seq, AckStatus::good);
    }
}

void Engine::on_ack(Peer& p, const AckHeader& h)
{
    ++p.counters.acks_received;
    apply_ack(p, h);
}

void Engine::apply_ack(Peer& p, const AckHeader& h)
{
    const std::size_t before = p.unacked.live();
    if (h.status == AckStatus::good && p.rtt_seq != 0) {
        if (p.rtt_seq == h.ack_seq) {
            // The ACK the timed fragment's arrival produced (it was sent
            // once: see resend()).
            p.rtt.sample(rt::now_ns() - p.rtt_sent, policy_);
            p.rtt_seq = 0;
            p.next_rtt_seq = p.next_frag_out.value() + kRttEvery;
        } else if (p.rtt_seq <= h.lids || p.rtt_seq < h.ack_seq) {
            // Known delivered, but not when: an ACK that names a later
            // fragment, or LIDS passing it after a hole below it was
            // repaired, would count the repair (a timeout) as round trip and
            // inflate the estimate. No sample; time the next fragment.
            p.rtt_seq = 0;
            p.next_rtt_seq = p.next_frag_out.value();
        }
    }
    if (h.status == AckStatus::corrupt) {
        ++p.counters.corrupt_acks_received;
        if (SendFrag* f = p.unacked.find(h.ack_seq)) {
            (void)resend(p, f, &PeerCounters::resent_corrupt);
        }
    } else if (SendFrag* f = p.unacked.take(h.ack_seq)) {
        if (f->sent_at != 0 && f->retries == 0 && !f->fast_resent) {
            p.rtt.sample(rt::now_ns() - f->sent_at, policy_); // time_all: the fragment the ACK names
        }
        // Older fragments that left before this one on the same path and
        // that the ACK shows missing (lids + 1 and the clear bits of the
        // SACK map; beyond the map nothing is known) may have been lost. One
        // is resent, once, without waiting for the timer when enough
        // fragments above it are known delivered for the path's order: one
        // where the path keeps order (per lane: counted from the same lane
        // as the acknowledged one), three where fragments may overtake each
        // other (TCP's duplicate threshold, counted from the SACK map as in
        // RFC 6675).
        const std::uint64_t acked_order = f->tx_order;
        const path::Path* acked_path = f->path;
        const path::Lane acked_lane = lane_of(f->hdr[1]);
        release_frag(p, f);
        const std::uint64_t map_end = h.lids + 2 + 64;
        const std::uint64_t known_end = std::min(h.ack_seq, map_end);
        const std::uint64_t first = std::max(p.unacked.base(), h.lids + 1);
        const path::PathInfo::Order order = first >= known_end || acked_path == nullptr
                                                ? path::PathInfo::Order::none
                                                : acked_path->info().order;
        // Delivered fragments above s: the SACK bits above s, and the
        // acknowledged fragment itself when the map does not hold it.
        auto delivered_above = [&](std::uint64_t s) {
            const unsigned from = s < h.lids + 2 ? 0 : static_cast<unsigned>(s - h.lids - 1);
            const std::uint64_t bits = from >= 64 ? 0 : h.sack >> from;
            return std::popcount(bits) + (h.ack_seq >= map_end ? 1 : 0);
        };
        for (std::uint64_t s = first; s < known_end; ++s) {
            SendFrag* g = p.unacked.find(s);
            if (g == nullptr || g->fast_resent || g->tx_order > acked_order || g->path != acked_path) {
                continue;
            }
            if (s >= h.lids + 2 && (h.sack & (std::uint64_t{1} << (s - h.lids - 2)))) {
                continue; // delivered: freed just below
            }
            const bool ordered = order == path::PathInfo::Order::total ||
                                 (order == path::PathInfo::Order::per_lane && lane_of(g->hdr[1]) == acked_lane);
            if (!ordered && delivered_above(s) < kReorderThreshold) {
                continue;
            }
            if (resend(p, g, &PeerCounters::resent_fast)) {
                ++g->retries;
                g->fast_resent = true;
            }
        }
    }
    while (!p.unacked.empty() && p.unacked.base() <= h.lids) {
        if (SendFrag* f = p.unacked.take(p.unacked.base())) {
            release_frag(p, f);
        }
    }
    for (unsigned i = 0; h.sack != 0 && i < 64; ++i) {
        if (h.sack & (std::uint64_t{1} << i)) {
            if (SendFrag* f = p.unacked.take(h.lids + 2 + i)) {
                release_frag(p, f);
            }
        }
    }
    if (p.unacked.empty()) {
        if (p.unacked_hook.linked()) {
            unacked_peers_.remove(&p);
        }
        p.recover_seq = 0;
        p.backoff = 0;
        return;
    }
    if (p.unacked.live() < before) {
        // Progress: the peer is alive and the path works. Restart the timer
        // (at the next reliability_tick()).
        p.backoff = 0;
        p.timer = 0;
        // In recovery after a timeout, a partial ACK (it did not cover what
        // was outstanding at the timeout) while the peer holds fragments
        // beyond the oldest one means that one was lost too: resend it now
        // rather than one timeout later. Without such evidence the timeout
        // was probably spurious (a peer descheduled for a while) and the
        // oldest fragment is still on its way: resending would only
        // duplicate what is in flight.
        SendFrag* oldest = p.unacked.oldest();
        if (p.recover_seq != 0) {
            const bool hole = h.sack != 0 || h.ack_seq > oldest->seq;
            if (oldest->seq <= p.recover_seq && hole) {
                if (resend(p, oldest, &PeerCounters::resent_recovery)) {
                    ++oldest->retries;
                }
            } else {
                p.recover_seq = 0;
            }
        }
    }
}

// One retransmission timer per peer, as in TCP: it runs while fragments to
// the peer wait for an ACK and restarts whenever an ACK makes progress. When
// it expires, the oldest fragment is resent (a probe: the rest follow through
// ACK-driven recovery, never as a burst); expiries in a row without progress
// back the timer off, and too many of them make the peer unreachable.
int Engine::reliability_tick()
{
    const rt::Nanos now = rt::now_ns();
    int n = 0;
    for (Peer* p = unacked_peers_.front(), *next; p != nullptr; p = next) {
        next = unacked_peers_.next(p);
        if (p->timer == 0) {
            p->timer = now + retry_timeout(policy_, p->rtt, p->backoff);
            continue;
        }
        if (now < p->timer) {
            continue;
        }
        SendFrag* oldest = p->unacked.oldest();
        if (oldest == nullptr) {
            continue;
        }
        if (p->backoff >= policy_.max_retries) {
            give_up(*p, oldest->path != nullptr ? oldest->path->info().name : "?");
            continue;
        }
        if (resend(*p, oldest, &PeerCounters::resent_timer)) {
            ++oldest->retries;
            ++p->backoff;
            p->recover_seq = p->next_frag_out.value() - 1;
            ++n;
        }
        p->timer = now + retry_timeout(policy_, p->rtt, p->backoff);
    }
    return n;
}

void Engine::give_up(Peer& p, const char* path_name)
{
    ULMPI_ERROR("rank %d does not answer: %u retransmissions of fragment %" PRIu64 " over %s went unacknowledged",
                p.rank, policy_.max_retries, p.unacked.oldest() ? p.unacked.oldest()->seq : 0, path_name);
    p.failed = true;
    std::vector<SendFrag*> all;
    p.unacked.for_each([&](SendFrag* f) { all.push_back(f); });
    for (SendFrag* f : all) {
        (void)p.unacked.take(f->seq);
        if (f->owner != nullptr) {
            f->owner->error = Errc::unreachable;
        }
        release_frag(p, f);
    }
    if (p.unacked_hook.linked()) {
        unacked_peers_.remove(&p);
    }
    if (hooks_ != nullptr) {
        hooks_->on_peer_unreachable(p.rank, path_name);
    }
}

void Engine::print_stats() const
{
    for (const Peer& p : peers_) {
        const PeerCounters& c = p.counters;
        if (c.frags_sent == 0 && c.frags_received == 0) {
            continue;
        }
        std::fprintf(stderr,
                "ulmpi-stats rank=%d peer=%d path=%s msgs_sent=%" PRIu64 " msgs_received=%" PRIu64
                " frags_sent=%" PRIu64 " frags_received=%" PRIu64 " bytes_sent=%" PRIu64
                " bytes_received=%" PRIu64 " retransmits=%" PRIu64 " resent_timer=%" PRIu64
                " resent_fast=%" PRIu64 " resent_recovery=%" PRIu64 " resent_corrupt=%" PRIu64 " crc_header_fail=%" PRIu64
                " crc_payload_fail=%" PRIu64 " duplicates=%" PRIu64 " acks_sent=%" PRIu64
                " acks_received=%" PRIu64 " piggy_acks_sent=%" PRIu64 " piggy_acks_received=%" PRIu64
                " corrupt_acks=%" PRIu64 " unexpected=%" PRIu64
                " out_of_order=%" PRIu64 " bad=%" PRIu64 " srtt_us=%.1f rto_us=%.1f\n",
                rank_, p.rank, p.primary != nullptr ? p.primary->info().name : "-", c.msgs_sent,
                c.msgs_received, c.frags_sent, c.frags_received, c.bytes_sent, c.bytes_received,
                c.retransmits, c.resent_timer, c.resent_fast, c.resent_recovery, c.resent_corrupt, c.crc_header_fail, c.crc_payload_fail, c.duplicates, c.acks_sent,
                c.acks_received, c.piggy_acks_sent, c.piggy_acks_received, c.corrupt_acks_received, c.unexpected, c.out_of_order, c.bad_frags,
                static_cast<double>(p.rtt.srtt) / 1e3, static_cast<double>(p.rtt.rto) / 1e3);
    }
    for (const auto& path : paths_) {
        const path::PathCounters& c = path->counters();
        std::fprintf(stderr,
                "ulmpi-stats rank=%d path=%s frags_sent=%" PRIu64 " bytes_sent=%" PRIu64 " frags_received=%" PRIu64
                " bytes_received=%" PRIu64 " send_again=%" PRIu64 " gets=%" PRIu64 " get_bytes=%" PRIu64
                " (%s)\n",
                rank_, path->info().name, c.frags_sent, c.bytes_sent, c.frags_received, c.bytes_received,
                c.send_again, c.gets, c.get_bytes, path->describe());
    }
}

} // namespace ulmpi::ulm

namespace ulmpi::ulm {

void Engine::print_state(const char* why) const
{
    std::fprintf(stderr, "ulmpi-state rank=%d (%s): posted=%zu unexpected=%zu live_sends=%zu "
                 "send_ids=%zu recv_ids=%zu kept_frags=%zu\n",
                 rank_, why, matcher_.posted_count(), matcher_.unexpected_count(),
                 send_pool_.in_use(), sends_.live(), recvs_.live(), frag_pool_.in_use());
    for (const Peer& p : peers_) {
        if (p.pending.empty() && p.ctrl_pending.empty() && p.unacked.empty() && p.ahead.empty() &&
            p.counters.frags_received == 0 && p.counters.frags_sent == 0) {
            continue;
        }
        const SendFrag* o = p.unacked.oldest();
        const Unexpected* a = p.ahead.front();
        std::fprintf(stderr,
                     "ulmpi-state rank=%d peer=%d: pending_sends=%zu ctrl_queued=%zu unacked=%zu "
                     "oldest_seq=%" PRIu64 " oldest_retries=%u backoff=%u next_frag=%" PRIu64
                     " next_msg=%" PRIu64 " expected_msg=%" PRIu64 " ahead=%zu ahead_first=%" PRIu64
                     " received_inorder=%" PRIu64 " delivered_inorder=%" PRIu64 " ack_due=%d failed=%d\n",
                     rank_, p.rank, p.pending.size(), p.ctrl_pending.size(), p.unacked.live(),
                     o != nullptr ? o->seq : 0, o != nullptr ? o->retries : 0, p.backoff,
                     p.next_frag_out.value(), p.next_msg_out.value(), p.expected_in.value(), p.ahead.size(),
                     a != nullptr ? a->hdr.msg_seq : 0, p.received.in_order(), p.delivered.in_order(),
                     p.ack_due ? 1 : 0, p.failed ? 1 : 0);
    }
    print_stats();
}

} // namespace ulmpi::ulm
