// ACKs and retransmission timers of the links (see reliability.h for the
// design, link_set.cpp for the sending side).
#include "ulm/link_set.h"

#include "runtime/log.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstring>

namespace ulmpi::ulm {
// ACKs are delayed: one is owed to the peer, and goes out (see flush_acks)
// when it is urgent, when ack_every fragments are owed, or ack_delay after it
// was first owed, unless a fragment to the peer carries it first.
void LinkSet::queue_ack(Link& l, std::uint64_t seq, bool urgent)
{
    if (seq > l.ack_latest) {
        l.ack_latest = seq;
    }
    ++l.ack_owed;
    l.ack_urgent = l.ack_urgent || urgent;
    if (!l.ack_due) {
        l.ack_due = true;
        l.ack_deadline = 0;
        list_ack_due(l, true); // nothing to do when still listed
    }
}

void LinkSet::ack_given(Link& l)
{
    l.ack_low = 0;
    l.ack_high = 0;
    l.ack_due = false;
    l.ack_urgent = false;
    l.ack_owed = 0;
    l.ack_seen = 0;
    // The link stays on the list of those that owe an ACK until the next
    // flush finds it owes none: a fragment that carries the ACK (the
    // reply of a ping-pong) then does not also update the list, and the
    // next ACK owed (the next message) finds it there.
}

void LinkSet::send_ack(Link& l, std::uint64_t seq, AckStatus status)
{
    AckHeader a{};
    fill_base(l, a.base, FragType::ack, 0, 0);
    a.ack_seq = seq;
    a.lirs = l.received.in_order();
    a.lids = l.delivered.in_order();
    a.sack = 0;
    const std::uint64_t base = std::max(l.ack_low, a.lids + 2);
    a.sack_off = static_cast<std::uint32_t>(std::min<std::uint64_t>(base - a.lids, UINT32_MAX));
    if (l.delivered.islands() != 0) {
        for (unsigned i = 0; i < 64; ++i) {
            if (l.delivered.contains(a.lids + a.sack_off + i)) {
                a.sack |= std::uint64_t{1} << i;
            }
        }
    }
    l.ack_low = 0;
    l.ack_high = 0;
    a.status = status;
    ++l.counters.acks_sent;
    // Back over the rail the last fragment came by: if another rail died,
    // the ACKs of what still arrives do not die with it.
    Rail* r = l.ack_rail != nullptr && l.ack_rail->up() ? l.ack_rail : l.control_rail();
    if (r != nullptr && l.ctrl_pending.empty() &&
        emit(l, *r, reinterpret_cast<std::byte*>(&a), sizeof a, Payload{}, nullptr)) {
        return;
    }
    send_ctrl(l, &a, sizeof a);
}

void LinkSet::flush_acks(bool all)
{
    if (rt::fine_locks()) [[unlikely]] {
        flush_acks_fine(all);
        return;
    }
    rt::Nanos now = 0;
    for (Link* p = ack_due_.front(), *next; p != nullptr; p = next) {
        next = ack_due_.next(p);
        if (!p->ack_due) {
            list_ack_due(*p, false); // paid since (ack_given)
            continue;
        }
        (void)flush_one(*p, all, now);
    }
}

// The ACK owed to one link, if it is due. True: sent (or queued).
bool LinkSet::flush_one(Link& l, bool all, rt::Nanos& now)
{
    if (!all && !l.ack_urgent && policy_.ack_delay > 0 && l.ack_owed < policy_.ack_every) {
        // A pass that queued it, or added fragments to it, does not read
        // the clock: most ACKs ride on the caller's next send before the
        // next pass (or, held for a line, on a later one: the clock would
        // be read on every message of an 8-byte ping-pong). The deadline
        // is checked in the passes between arrivals.
        // Nor does every quiet pass after it: a held ACK (8-byte
        // ping-pong) is owed while the rank waits for the reply, and a clock
        // read in each of those passes delayed noticing the reply. The
        // clock is read once in kAckClockPasses of them (a spinning pass is
        // well under a microsecond, ack_delay some ten: an ACK leaves a few
        // passes late at most; before the rank yields or sleeps
        // Engine::idle sends it anyway).
        if (l.ack_deadline == 0 || l.ack_owed != l.ack_seen) {
            if (l.ack_deadline == 0) {
                l.ack_deadline = -1;
            }
            l.ack_seen = l.ack_owed;
            l.ack_quiet = 0;
            return false;
        }
        if (++l.ack_quiet % kAckClockPasses != 0) {
            return false;
        }
        if (now == 0) {
            now = rt::now_ns();
        }
        if (l.ack_deadline < 0) {
            l.ack_deadline = now + policy_.ack_delay;
        }
        if (now < l.ack_deadline) {
            return false;
        }
    }
    const std::uint64_t seq = l.ack_latest;
    ack_given(l);
    send_ack(l, seq, AckStatus::good);
    return true;
}

// Fine locks (under the engine's read lock): the links that owe an ACK are
// read from the list under its lock, then each is answered under its own
// lock (the lock order: a link's lock, then the list's). A link that paid
// its ACK meanwhile (a fragment carried it) is skipped.
void LinkSet::flush_acks_fine(bool all)
{
    constexpr std::size_t kMax = 64; // more wait for the next pass
    Link* due[kMax];
    std::size_t n = 0;
    {
        rt::OptGuard g(lists_lock_);
        for (Link* p = ack_due_.front(); p != nullptr && n < kMax; p = ack_due_.next(p)) {
            due[n++] = p;
        }
    }
    rt::Nanos now = 0;
    for (std::size_t i = 0; i < n; ++i) {
        Link& l = *due[i];
        rt::OptGuard g(owner_->link_lock(l));
        if (l.ack_due) {
            (void)flush_one(l, all, now);
        } else {
            list_ack_due(l, false); // paid since (ack_given)
        }
    }
}

void LinkSet::on_ack(Link& l, const AckHeader& h)
{
    ++l.counters.acks_received;
    apply_ack(l, h);
}

// What the ACK shows missing: the fragment after LIDS, and those of the
// SACK map below the fragment it names (above it they may still be on their
// way). The rails they were sent on get evidence against them (check_rails).
void LinkSet::note_missing(Link& l, const AckHeader& h, std::uint64_t map_base, rt::Nanos now)
{
    auto mark = [&](std::uint64_t s) {
        if (SendFrag* g = l.unacked.find(s)) {
            Rail& r = *g->rail;
            if (r.missing_at <= r.progress_at) {
                r.missing_at = now;
            }
        }
    };
    mark(h.lids + 1);
    const std::uint64_t end = std::min(h.ack_seq, map_base + 64);
    for (std::uint64_t s = std::max(map_base, h.lids + 2); s < end; ++s) {
        if (!(h.sack & (std::uint64_t{1} << (s - map_base)))) {
            mark(s);
        }
    }
}

void LinkSet::apply_ack(Link& l, const AckHeader& h)
{
    const std::size_t before = l.unacked.live();
    // The SACK map's first sequence (an AckExt has none: sack 0).
    const std::uint64_t map_base = h.lids + std::max<std::uint32_t>(h.sack_off, 2);
    // Rails are told when their fragments are acknowledged (their rate and
    // evidence of life) only on links that measure them.
    const rt::Nanos now = l.measured() ? rt::now_ns() : 0;
    if (h.status == AckStatus::good && l.rtt_seq != 0) {
        if (l.rtt_seq == h.ack_seq) {
            // The ACK the timed fragment's arrival produced (it was sent
            // once: see resend()).
            l.rtt.sample(rt::now_ns() - l.rtt_sent, policy_);
            l.rtt_seq = 0;
            l.next_rtt_seq = l.next_frag_out.value() + kRttEvery;
        } else if (l.rtt_seq <= h.lids || l.rtt_seq < h.ack_seq) {
            // Known delivered, but not when: an ACK that names a later
            // fragment, or LIDS passing it after a hole below it was
            // repaired, would count the repair (a timeout) as round trip and
            // inflate the estimate. No sample; time the next fragment.
            l.rtt_seq = 0;
            l.next_rtt_seq = l.next_frag_out.value();
        }
    }
    if (h.status == AckStatus::corrupt) {
        ++l.counters.corrupt_acks_received;
        if (SendFrag* f = l.unacked.find(h.ack_seq)) {
            (void)resend_any(l, f, &LinkCounters::resent_corrupt);
        }
    } else if (SendFrag* f = l.unacked.take(h.ack_seq)) {
        if (f->sent_at != 0 && f->retries == 0 && !f->fast_resent) {
            // time_all: the fragment the ACK names.
            const rt::Nanos rtt = (now != 0 ? now : rt::now_ns()) - f->sent_at;
            l.rtt.sample(rtt, policy_);
            if (l.measured()) {
                rail_sample(l, *f->rail, rtt);
            }
        }
        // Older fragments that left before this one on the same rail and
        // that the ACK shows missing (lids + 1 and the clear bits of the
        // SACK map; beyond the map nothing is known) may have been lost. One
        // is resent, once, without waiting for the timer when enough
        // fragments above it are known delivered for the path's order: one
        // where the path keeps order (per lane: counted from the same lane
        // as the acknowledged one), three where fragments may overtake each
        // other (TCP's duplicate threshold, counted from the SACK map as in
        // RFC 6675).
        const std::uint64_t acked_order = f->tx_order;
        const Rail* acked_rail = f->rail;
        const path::Lane acked_lane = lane_of(f->hdr[1]);
        release_frag(l, f, now);
        const std::uint64_t map_end = map_base + 64;
        const std::uint64_t known_end = std::min(h.ack_seq, map_end);
        const std::uint64_t first = std::max(l.unacked.base(), h.lids + 1);
        const path::PathInfo::Order order = first >= known_end ? path::PathInfo::Order::none
                                                               : acked_rail->path->info().order;
        // Delivered fragments above s: the SACK bits above s, and the
        // acknowledged fragment itself when the map does not hold it.
        auto delivered_above = [&](std::uint64_t s) {
            const unsigned from = s < map_base ? 0 : static_cast<unsigned>(s - map_base + 1);
            const std::uint64_t bits = from >= 64 ? 0 : h.sack >> from;
            return std::popcount(bits) + (h.ack_seq >= map_end ? 1 : 0);
        };
        for (std::uint64_t s = first; s < known_end; ++s) {
            SendFrag* g = l.unacked.find(s);
            if (g == nullptr || g->fast_resent || g->tx_order > acked_order || g->rail != acked_rail) {
                continue;
            }
            if (s >= map_base && s < map_end && (h.sack & (std::uint64_t{1} << (s - map_base)))) {
                continue; // delivered: freed just below
            }
            const bool ordered = order == path::PathInfo::Order::total ||
                                 (order == path::PathInfo::Order::per_lane && lane_of(g->hdr[1]) == acked_lane);
            if (!ordered && delivered_above(s) < kReorderThreshold) {
                continue;
            }
            if (resend_any(l, g, &LinkCounters::resent_fast)) {
                ++g->retries;
                g->fast_resent = true;
            }
        }
    }
    if (l.multi() && h.status == AckStatus::good) {
        note_missing(l, h, map_base, now);
    }
    while (!l.unacked.empty() && l.unacked.base() <= h.lids) {
        if (SendFrag* f = l.unacked.take(l.unacked.base())) {
            release_frag(l, f, now);
        }
    }
    for (unsigned i = 0; h.sack != 0 && i < 64; ++i) {
        if (h.sack & (std::uint64_t{1} << i)) {
            if (SendFrag* f = l.unacked.take(map_base + i)) {
                release_frag(l, f, now);
            }
        }
    }
    if (l.unacked.empty()) {
        // The link stays on the list of those that keep fragments until
        // tick() finds it still empty: in a ping-pong the next message
        // refills it, and leaving and joining the list cost each message
        // two list updates. Its timer starts afresh with the next fragment.
        l.timer = 0;
        l.recover_seq = 0;
        l.backoff = 0;
        return;
    }
    if (l.unacked.live() < before) {
        // Progress: the peer is alive and a rail works. Restart the timer
        // (at the next tick()).
        l.backoff = 0;
        l.timer = 0;
        // In recovery after a timeout, a partial ACK (it did not cover what
        // was outstanding at the timeout) while the peer holds fragments
        // beyond the oldest one means that one was lost too: resend it now
        // rather than one timeout later. Without such evidence the timeout
        // was probably spurious (a peer descheduled for a while) and the
        // oldest fragment is still on its way: resending would only
        // duplicate what is in flight.
        SendFrag* oldest = l.unacked.oldest();
        if (l.recover_seq != 0) {
            const bool hole = h.sack != 0 || h.ack_seq > oldest->seq;
            if (oldest->seq <= l.recover_seq && hole) {
                if (resend_any(l, oldest, &LinkCounters::resent_recovery)) {
                    ++oldest->retries;
                }
            } else {
                l.recover_seq = 0;
            }
        }
    }
}

// One retransmission timer per link, as in TCP: it runs while fragments to
// the peer wait for an ACK and restarts whenever an ACK makes progress. When
// it expires, the oldest fragment is resent (a probe: the rest follow through
// ACK-driven recovery, never as a burst) — over another rail when the link
// has one, so that a rail that died silently costs one timeout, not the
// rail's deadline; expiries in a row without progress back the timer off,
// and too many of them make the peer unreachable. The rails' own evidence
// and probes run here too (link_rails.cpp). Fine locks: under the engine's
// write lock (nobody else is in ULM), so the lists are read without theirs.
int LinkSet::tick()
{
    const rt::Nanos now = rt::now_ns();
    int n = 0;
    for (Link* l = unacked_.front(), *next; l != nullptr; l = next) {
        next = unacked_.next(l);
        if (l->unacked.empty()) {
            list_unacked(*l, false); // emptied by an ACK since (apply_ack)
            continue;
        }
        retry_timer(*l, now, n);
        if (l->multi() && l->alive()) {
            n += check_rails(*l, now);
        }
    }
    for (Link* l = probing_.front(), *next; l != nullptr; l = next) {
        next = probing_.next(l);
        n += probe_rails(*l, now);
    }
    for (Link* l = reading_.front(), *next; l != nullptr; l = next) {
        next = reading_.next(l);
        n += watch_reads(*l, now);
    }
    return n;
}

void LinkSet::retry_timer(Link& l, rt::Nanos now, int& n)
{
    if (l.timer == 0) {
        l.timer = now + link_timeout(l);
        return;
    }
    if (now < l.timer) {
        return;
    }
    SendFrag* oldest = l.unacked.oldest();
    if (oldest == nullptr) {
        return;
    }
    // Two separate bounds: the number of resends in a row, and how long the
    // peer has been silent on every rail while we wait for it (the failure
    // suspicion timer: ulm_peer_timeout_s, long enough never to misfire on
    // a loaded machine).
    if (l.backoff >= policy_.max_retries ||
        (l.backoff > 0 && policy_.peer_timeout > 0 && now - l.silent_since > policy_.peer_timeout)) {
        give_up(l);
        return;
    }
    // Over its own rail while that is up: a rail is left only on its own
    // evidence (link_rails.cpp), never for one loss. But a silent peer may
    // be silent only on this rail while the others carry nothing to prove
    // it alive: ask them. When one answers and a later timeout finds the
    // fragment still unacknowledged, its rail is down: a sender of few fragments (a
    // receiver's CTS over a rail whose link died) gets no ACK map that shows
    // them missing, and resent them over the dead rail with its timer
    // doubling (udp + ofi: the stream stalled until the link came back).
    if (l.up_rails() > 1 && oldest->rail->up()) {
        // (and for the rail's deadline at least: a timeout is short while
        // the round trip is unknown, at start)
        const bool long_silent = l.backoff >= 1 && now - l.silent_since >= rail_timeout_;
        for (int i = 0; i < l.nrails && long_silent; ++i) {
            const Rail& other = l.rails[i];
            if (&other != oldest->rail && other.up() && other.acked_at > l.silent_since) {
                rail_down(l, *oldest->rail,
                          "a fragment went unacknowledged through two timeouts while the peer answered "
                          "over another path");
                break;
            }
        }
        for (int i = 0; i < l.nrails && oldest->rail->up(); ++i) {
            Rail& other = l.rails[i];
            if (&other != oldest->rail && other.up()) {
                send_probe(l, other, FragType::probe, 0, now);
            }
        }
    }
    Rail* r = oldest->rail->up() ? oldest->rail : l.control_rail();
    if (resend(l, oldest, r, &LinkCounters::resent_timer)) {
        ++oldest->retries;
        if (l.backoff++ == 0) {
            l.silent_since = now;
        }
        l.recover_seq = l.next_frag_out.value() - 1;
        ++n;
    }
    l.timer = now + link_timeout(l);
}

// The link's retransmission timeout, never shorter than twice the round
// trip of a rail with fragments in flight: the link's estimate follows the
// fastest rail (most samples), and over a slower one it fired for fragments
// merely queued — 500 + 250 Mbit rails resent a fifth of the slow rail's
// fragments in timeout recovery and striped at 0.81 of their sum.
rt::Nanos LinkSet::link_timeout(const Link& l) const
{
    rt::Nanos t = retry_timeout(policy_, l.rtt, l.backoff);
    if (l.multi()) {
        for (int i = 0; i < l.nrails; ++i) {
            const Rail& r = l.rails[i];
            if (r.inflight_frags != 0 && r.up()) {
                t = std::max(t, 2 * r.srtt);
            }
        }
    }
    return t;
}

void LinkSet::give_up(Link& l)
{
    const SendFrag* oldest = l.unacked.oldest();
    char head[200];
    std::snprintf(head, sizeof head,
                  "rank %d does not answer: %u retransmissions of fragment %" PRIu64
                  " went unacknowledged over %.1f s; paths:",
                  l.rank, l.backoff, oldest != nullptr ? oldest->seq : 0,
                  static_cast<double>(rt::now_ns() - l.silent_since) / 1e9);
    std::string why = head;
    for (int i = 0; i < l.nrails; ++i) {
        const Rail& r = l.rails[i];
        why += std::string(i == 0 ? " " : ", ") + r.path->info().name;
        why += r.up() ? " (silent)" : std::string(" (down: ") + r.down_reason + ")";
    }
    ULMPI_ERROR("%s", why.c_str());
    fail(l, rt::Errc::unreachable);
    owner_->link_unreachable(l, why);
}

} // namespace ulmpi::ulm
