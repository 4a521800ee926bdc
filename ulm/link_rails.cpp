// The rails of a link: what ACKs teach about each (rate, round trip,
// evidence of life), declaring one down and sending its fragments over the
// others, probing it until it answers, and the paths' own reports. See
// rail.h and link.h for the design.
#include "ulm/link_set.h"

#include "runtime/log.h"

#include <algorithm>
#include <cinttypes>

namespace ulmpi::ulm {

void LinkSet::on_rail_acked(Link& l, Rail& r, std::uint32_t bytes, rt::Nanos now)
{
    (void)l;
    r.acked += bytes;
    r.progress_at = now;
    r.acked_at = now;
    if (r.inflight_frags == 0) {
        r.sample_busy = false; // it ran dry: this interval says little of its speed
    }
    if (r.sample_start == 0) {
        r.sample_start = now;
        r.sample_acked = r.acked;
        r.sample_busy = true;
        return;
    }
    // Sample the delivery rate over at least two round trips (2 ms at
    // least, so that a sample holds many fragments).
    const rt::Nanos span = now - r.sample_start;
    const rt::Nanos need = std::max<rt::Nanos>(2 * r.min_rtt, 2000000);
    if (span < need) {
        return;
    }
    const double rate = static_cast<double>(r.acked - r.sample_acked) / (static_cast<double>(span) / 1e3);
    if (r.sample_busy) {
        // Busy the whole interval: the sample is the rail's speed. Follow
        // it quickly (a rail slowed down by others' traffic, or sped up).
        r.rate = 0.5 * r.rate + 0.5 * rate;
    } else if (rate > r.rate) {
        r.rate = rate; // short of data, yet faster than thought
    }
    r.sample_start = now;
    r.sample_acked = r.acked;
    r.sample_busy = true;
}

void LinkSet::rail_sample(Link& l, Rail& r, rt::Nanos rtt)
{
    if (rtt <= 0) {
        return;
    }
    r.srtt = r.srtt == 0 ? rtt : (7 * r.srtt + rtt) / 8;
    if (r.min_rtt == 0 || rtt < r.min_rtt) {
        r.min_rtt = rtt;
    }
    if (l.multi()) {
        // Control follows the measured latencies, not the paths' claims at
        // start (udp + ofi: control stayed on ofi at 6 ms while udp answered
        // in 0.2 ms, and a receiver's CTS waited on ofi when its link died).
        l.choose();
    }
}

void LinkSet::rail_down(Link& l, Rail& r, const char* why)
{
    if (!r.up() || !l.alive()) {
        return;
    }
    const rt::Nanos now = rt::now_ns();
    r.state = Rail::State::down;
    r.down_reason = why;
    ++r.counters.downs;
    r.probe_interval = probe_min_;
    r.next_probe = now + r.probe_interval;
    r.sample_start = 0;
    l.choose();
    list_probing(l, true);
    const Rail* now_ctrl = l.control_rail();
    ULMPI_INFO("rank %d: path %s to rank %d is down (%s); %u fragments in flight go over %s", rank_,
               r.path->info().name, l.rank, why, r.inflight_frags,
               l.up_rails() > 0 && now_ctrl != nullptr ? now_ctrl->path->info().name : "no other path");
    if (r.inflight_frags != 0 && l.up_rails() > 0) {
        l.failover_due = true;
        owner_->link_has_work(l);
    }
    if (l.up_rails() > 0) {
        give_up_reads(l, r);
    }
}

// A down rail's reads would wait for it to come back: they fail over too
// (each receiver asks for a stream over the rails left), once another rail
// is up to carry it.
void LinkSet::give_up_reads(Link& l, Rail& r)
{
    if (r.reads == 0 || r.reads_lost) {
        return;
    }
    r.reads_lost = true;
    r.read_probe = 0;
    ++r.counters.reads_given_up;
    owner_->rail_reads_lost(l, r);
}

void LinkSet::rail_up(Link& l, Rail& r)
{
    if (r.up() || !l.alive()) {
        return;
    }
    const rt::Nanos now = rt::now_ns();
    r.state = Rail::State::up;
    r.down_reason = "";
    ++r.counters.ups;
    r.progress_at = now;
    r.sample_start = 0;
    l.choose();
    bool any_down = false;
    for (int i = 0; i < l.nrails; ++i) {
        any_down = any_down || !l.rails[i].up();
    }
    if (!any_down) {
        list_probing(l, false);
    }
    ULMPI_INFO("rank %d: path %s to rank %d answers again: back in use", rank_, r.path->info().name, l.rank);
}

// Sends the kept fragments of down rails over the up ones. Returns how many
// left; l.failover_due stays set while some could not (no room now).
int LinkSet::failover(Link& l)
{
    l.failover_due = false;
    if (l.up_rails() == 0) {
        return 0; // nowhere to go: the timer keeps trying, probes bring rails back
    }
    int n = 0;
    bool blocked = false;
    l.unacked.for_each([&](SendFrag* f) {
        // A fragment going in pieces goes on in pieces, whatever its rail
        // does now; once all of them left, they carry it.
        const bool splitting = f->pieced != 0 && f->pieced < f->payload_len;
        if (blocked || (f->rail->up() && !splitting) || (f->pieced != 0 && !splitting)) {
            return;
        }
        Rail* r = l.bulk_rail(f->wire_len());
        if (r == nullptr) {
            r = l.other_rail(f->rail);
        }
        if (r != nullptr && resend(l, f, r, &LinkCounters::resent_failover)) {
            ++n;
        } else {
            blocked = true;
        }
    });
    if (blocked) {
        l.failover_due = true;
    }
    return n;
}

// A rail whose fragments stay unacknowledged for its deadline while the
// peer is heard through another rail is down: its own evidence, not the
// peer's silence.
int LinkSet::check_rails(Link& l, rt::Nanos now)
{
    if (l.up_rails() < 2) {
        return 0;
    }
    int n = 0;
    for (int i = 0; i < l.nrails; ++i) {
        Rail& r = l.rails[i];
        if (!r.up() || r.inflight_frags == 0) {
            continue;
        }
        const rt::Nanos deadline = std::max<rt::Nanos>(rail_timeout_, 4 * r.srtt);
        if (now - r.progress_at <= deadline || r.missing_at <= r.progress_at) {
            continue; // progress within the deadline, or no ACK showed its fragments missing
        }
        const Rail* acked = nullptr;
        for (int k = 0; k < l.nrails; ++k) {
            const Rail& s = l.rails[k];
            if (&s != &r && s.up() && s.acked_at > r.progress_at) {
                acked = &s;
                break;
            }
        }
        if (acked == nullptr) {
            continue; // no ACK says this rail lost them: the retransmission timer's business
        }
        rail_down(l, r, "its fragments went unacknowledged while the peer acknowledged those sent over another path");
        ++n;
    }
    return n;
}

int LinkSet::probe_rails(Link& l, rt::Nanos now)
{
    int n = 0;
    bool any_down = false;
    for (int i = 0; i < l.nrails; ++i) {
        Rail& r = l.rails[i];
        if (r.up()) {
            continue;
        }
        any_down = true;
        if (now < r.next_probe) {
            continue;
        }
        r.probe_nonce = ++nonce_;
        send_probe(l, r, FragType::probe, r.probe_nonce, now);
        ++r.counters.probes;
        r.next_probe = now + r.probe_interval;
        r.probe_interval = std::min(2 * r.probe_interval, probe_max_);
        ++n;
    }
    if (!any_down) {
        list_probing(l, false);
    }
    return n;
}

void LinkSet::send_probe(Link& l, Rail& r, FragType type, std::uint64_t nonce, std::int64_t sent)
{
    ProbeHeader h{};
    fill_base(l, h.base, type, 0, 0);
    h.nonce = nonce;
    h.sent = sent;
    // No room now: this probe is skipped, the next one goes later.
    (void)emit(l, r, reinterpret_cast<std::byte*>(&h), sizeof h, Payload{}, nullptr);
}

void LinkSet::on_probe(Link& l, path::Path& path, const ProbeHeader& h)
{
    if (Rail* r = l.rail_of(&path)) {
        send_probe(l, *r, FragType::probe_ack, h.nonce, h.sent);
    }
}

void LinkSet::on_probe_ack(Link& l, path::Path& path, const ProbeHeader& h)
{
    Rail* r = l.rail_of(&path);
    if (r == nullptr) {
        return;
    }
    const rt::Nanos now = rt::now_ns();
    if (r->up()) {
        // The answer to a probe sent while another rail's fragments waited
        // (link_acks.cpp): this rail carries the peer's answers, the
        // evidence check_rails weighs against the waiting one.
        if (h.nonce == 0) {
            rail_sample(l, *r, now - h.sent);
            r->acked_at = now;
        } else if (h.nonce == r->read_probe) {
            // The rail of a stalled read answers: the read is slow, not lost.
            r->read_probe = 0;
            r->read_progress_at = now;
            r->acked_at = now;
        }
        return;
    }
    if (h.nonce != r->probe_nonce) {
        return; // an answer to an older probe: the next one will tell
    }
    rail_sample(l, *r, now - h.sent);
    rail_up(l, *r);
}

// Reads over a rail (the receiver's side of a single-copy rendezvous)
// send nothing the link could see go unacknowledged: when none of them has
// moved for ulm_read_stall_us, the rail is asked with a probe, and another
// rail with one too. The rail that does not answer within the stall time
// plus its reads' bytes at ulm_read_floor_mbs (its answer may queue behind
// them) while the other answered is down: rail_down() has its reads given
// up and failed over. A peer that answers nowhere is the retransmission
// timer's business, not this.
int LinkSet::watch_reads(Link& l, rt::Nanos now)
{
    int reading = 0;
    int n = 0;
    for (int i = 0; i < l.nrails; ++i) {
        Rail& r = l.rails[i];
        if (r.reads == 0) {
            continue;
        }
        ++reading;
        if (!l.multi() || !l.alive()) {
            continue;
        }
        if (!r.up()) {
            if (l.up_rails() > 0) {
                give_up_reads(l, r); // it went down while no other rail was up
            }
            continue;
        }
        // Another rail that is up (a standby one too) to hear the peer over.
        Rail* other = nullptr;
        for (int k = 0; k < l.nrails && other == nullptr; ++k) {
            other = k != i && l.rails[k].up() ? &l.rails[k] : nullptr;
        }
        if (other == nullptr || r.reads_lost) {
            continue;
        }
        if (r.read_probe == 0) {
            if (now - r.read_progress_at <= std::max<rt::Nanos>(read_stall_, 4 * r.srtt)) {
                continue;
            }
            r.read_probe = ++nonce_;
            r.read_probe_at = now;
            send_probe(l, r, FragType::probe, r.read_probe, now);
            send_probe(l, *other, FragType::probe, 0, now);
            ++n;
            continue;
        }
        const auto wait = std::max<rt::Nanos>(read_stall_, 4 * r.srtt) +
                          static_cast<rt::Nanos>(static_cast<double>(r.read_bytes) / read_floor_);
        if (now - r.read_probe_at <= wait) {
            continue;
        }
        bool heard = false;
        for (int k = 0; k < l.nrails; ++k) {
            heard = heard || (k != i && l.rails[k].up() && l.rails[k].acked_at > r.read_probe_at);
        }
        if (!heard) {
            r.read_probe = 0; // the peer answers nowhere: ask again later
            r.read_progress_at = now;
            continue;
        }
        rail_down(l, r, "a read over it moved nothing and it did not answer a probe the peer "
                        "answered over another path");
        ++n;
    }
    if (reading == 0) {
        list_reading(l, false);
    }
    return n;
}

void LinkSet::read_started(Link& l, const path::Path* via, std::uint64_t bytes)
{
    if (Rail* r = l.rail_of(via)) {
        if (r->reads++ == 0) {
            r->read_progress_at = rt::now_ns();
        }
        r->read_bytes += bytes;
        list_reading(l, true);
    }
}

void LinkSet::read_moved(Link& l, const path::Path* via)
{
    if (Rail* r = l.rail_of(via)) {
        r->read_progress_at = rt::now_ns();
    }
}

void LinkSet::read_ended(Link& l, const path::Path* via, std::uint64_t bytes)
{
    if (Rail* r = l.rail_of(via)) {
        r->reads -= r->reads > 0 ? 1 : 0;
        r->read_bytes -= std::min(r->read_bytes, bytes);
        r->read_progress_at = rt::now_ns();
        if (r->reads == 0) {
            r->read_probe = 0;
            r->reads_lost = false;
        }
    }
}

void LinkSet::path_down(path::Path& path, int peer, const char* why)
{
    for (int i = peer < 0 ? 0 : peer; i < (peer < 0 ? size() : peer + 1); ++i) {
        Link& l = links_[static_cast<std::size_t>(i)];
        if (Rail* r = l.rail_of(&path)) {
            rail_down(l, *r, why);
        }
    }
}

void LinkSet::path_up(path::Path& path, int peer)
{
    // The path believes it reaches the peer again: probe now, and take the
    // rail back when the peer answers over it.
    const rt::Nanos now = rt::now_ns();
    for (int i = peer < 0 ? 0 : peer; i < (peer < 0 ? size() : peer + 1); ++i) {
        Link& l = links_[static_cast<std::size_t>(i)];
        Rail* r = l.rail_of(&path);
        if (r != nullptr && !r->up()) {
            r->next_probe = now;
            r->probe_interval = probe_min_;
        }
    }
}

} // namespace ulmpi::ulm
