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

std::uint32_t header_crc(const std::byte* hdr, std::uint32_t hlen)
{
    // hcrc is computed with its own field zero.
    alignas(8) std::byte copy[kMaxHeader];
    std::memcpy(copy, hdr, hlen);
    std::uint32_t zero = 0;
    std::memcpy(copy + offsetof(BaseHeader, hcrc), &zero, sizeof zero);
    return rt::crc32c(copy, hlen);
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
    path::TxBuffer buf;
    buf.lane = lane_of(hdr[1]);
    if (!path->acquire(p.rank, hlen + pl.len, buf)) {
        return false;
    }
    BaseHeader b = read_header<BaseHeader>(hdr);
    const bool sequenced = b.type != FragType::ack;
    if (sequenced) {
        b.frag_seq = p.next_frag_out.value();
        ++p.next_frag_out;
    }
    if (m.reliable && sequenced) {
        b.flags |= flag::reliable;
    }
    std::byte* out = buf.data + hlen;
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
        std::memcpy(hdr, &b, sizeof b);
        b.hcrc = header_crc(hdr, hlen);
    }
    std::memcpy(hdr, &b, sizeof b);
    std::memcpy(buf.data, hdr, hlen);

    if (m.reliable && sequenced) {
        SendFrag* f = frag_pool_.get();
        if (f == nullptr) {
            rt::fatal("out of memory keeping a fragment for retransmission to rank %d", p.rank);
        }
        f->seq = b.frag_seq;
        f->path = path;
        f->hdr_len = hlen;
        f->payload_len = pl.len;
        std::memcpy(f->hdr, hdr, hlen);
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
        f->sent_at = rt::now_ns();
        p.unacked.push(f);
        if (!p.unacked_hook.linked()) {
            unacked_peers_.push_back(&p);
            p.timer = f->sent_at + retry_timeout(policy_, p.rtt, 0);
            p.backoff = 0;
            p.recover_seq = 0;
        }
    }
    (void)path->commit(p.rank, buf, hlen + pl.len);
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
    std::memcpy(buf.data, f->hdr, f->hdr_len);
    std::byte* out = buf.data + f->hdr_len;
    if (f->owner != nullptr) {
        pack(f->owner->data, f->offset, out, f->payload_len);
    } else if (f->payload_len > 0) {
        std::memcpy(out, f->payload_copy(), f->payload_len);
    }
    (void)path->commit(p.rank, buf, f->hdr_len + f->payload_len);
    f->path = path;
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
// drop it (damaged, or a duplicate — answered here).
bool Engine::accept(Peer& p, path::Path& path, const BaseHeader& b, path::RxFrag& frag,
                    const std::byte* payload)
{
    const bool checksum = checksummed(&path);
    if (checksum) {
        const std::uint32_t hlen = header_size(b.type);
        if (!(b.flags & flag::crc) || header_crc(frag.data, hlen) != b.hcrc) {
            ++p.counters.crc_header_fail;
            return false; // nothing in it can be trusted, not even its sequence
        }
    }
    if (!track_seqs_) {
        return true;
    }
    p.last_heard = rt::now_ns();
    if (b.type == FragType::ack) {
        return true;
    }
    if (b.frag_seq == 0 || p.delivered.contains(b.frag_seq)) {
        ++p.counters.duplicates;
        if (b.flags & flag::reliable) {
            queue_ack(p, b.frag_seq); // its ACK was lost: say it again
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
    (void)p.delivered.insert(b.frag_seq);
    if (b.flags & flag::reliable) {
        queue_ack(p, b.frag_seq);
    }
}

void Engine::queue_ack(Peer& p, std::uint64_t seq)
{
    if (seq > p.ack_latest) {
        p.ack_latest = seq;
    }
    if (!p.ack_due) {
        p.ack_due = true;
        ack_due_.push_back(&p);
    }
}

void Engine::send_ack(Peer& p, std::uint64_t seq, AckStatus status)
{
    AckHeader a{};
    fill_base(p, a.base, FragType::ack, 0, 0);
    a.ack_seq = seq;
    a.lirs = p.received.in_order();
    a.lids = p.delivered.in_order();
    a.sack = 0;
    for (unsigned i = 0; i < 64; ++i) {
        if (p.delivered.contains(a.lids + 2 + i)) {
            a.sack |= std::uint64_t{1} << i;
        }
    }
    a.status = status;
    send_ctrl(p, &a, sizeof a);
    ++p.counters.acks_sent;
}

void Engine::flush_acks()
{
    while (Peer* p = ack_due_.pop_front()) {
        p->ack_due = false;
        send_ack(*p, p->ack_latest, AckStatus::good);
    }
}

void Engine::on_ack(Peer& p, const AckHeader& h)
{
    ++p.counters.acks_received;
    const rt::Nanos now = rt::now_ns();
    const std::size_t before = p.unacked.live();
    if (h.status == AckStatus::corrupt) {
        ++p.counters.corrupt_acks_received;
        if (SendFrag* f = p.unacked.find(h.ack_seq)) {
            if (resend(p, f, &PeerCounters::resent_corrupt)) {
                f->sent_at = now;
            }
        }
    } else if (SendFrag* f = p.unacked.take(h.ack_seq)) {
        if (f->retries == 0 && !f->fast_resent) {
            p.rtt.sample(now - f->sent_at, policy_);
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
        const rt::Nanos acked_sent = f->sent_at;
        const path::Path* acked_path = f->path;
        const path::Lane acked_lane = lane_of(f->hdr[1]);
        release_frag(p, f);
        const path::PathInfo::Order order =
            acked_path != nullptr ? acked_path->info().order : path::PathInfo::Order::none;
        const std::uint64_t map_end = h.lids + 2 + 64;
        const std::uint64_t known_end = std::min(h.ack_seq, map_end);
        // Delivered fragments above s: the SACK bits above s, and the
        // acknowledged fragment itself when the map does not hold it.
        auto delivered_above = [&](std::uint64_t s) {
            const unsigned from = s < h.lids + 2 ? 0 : static_cast<unsigned>(s - h.lids - 1);
            const std::uint64_t bits = from >= 64 ? 0 : h.sack >> from;
            return std::popcount(bits) + (h.ack_seq >= map_end ? 1 : 0);
        };
        for (std::uint64_t s = std::max(p.unacked.base(), h.lids + 1); s < known_end; ++s) {
            SendFrag* g = p.unacked.find(s);
            if (g == nullptr || g->fast_resent || g->sent_at > acked_sent || g->path != acked_path) {
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
                g->sent_at = now;
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
        // Progress: the peer is alive and the path works. Restart the timer.
        p.backoff = 0;
        p.timer = now + retry_timeout(policy_, p.rtt, 0);
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
                    oldest->sent_at = now;
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
            oldest->sent_at = now;
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
                " acks_received=%" PRIu64 " corrupt_acks=%" PRIu64 " unexpected=%" PRIu64
                " out_of_order=%" PRIu64 " bad=%" PRIu64 " srtt_us=%.1f rto_us=%.1f\n",
                rank_, p.rank, p.primary != nullptr ? p.primary->info().name : "-", c.msgs_sent,
                c.msgs_received, c.frags_sent, c.frags_received, c.bytes_sent, c.bytes_received,
                c.retransmits, c.resent_timer, c.resent_fast, c.resent_recovery, c.resent_corrupt, c.crc_header_fail, c.crc_payload_fail, c.duplicates, c.acks_sent,
                c.acks_received, c.corrupt_acks_received, c.unexpected, c.out_of_order, c.bad_frags,
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
