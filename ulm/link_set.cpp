// Links: binding peers to rails, fragments on the wire (sequence numbers,
// epochs, checksums, retention for retransmission), the receive-side checks
// and the links' lifetime. ACKs and timers are in link_acks.cpp, rail
// evidence, fail-over and probes in link_rails.cpp. See link.h and
// reliability.h for the design.
#include "ulm/link_set.h"

#include "runtime/config.h"
#include "runtime/crc32c.h"
#include "runtime/log.h"
#include "ulm/packer.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>

namespace ulmpi::ulm {
namespace {

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
const rt::IntParam peer_timeout_param{
    "ulm_peer_timeout_s", 60,
    "a peer silent on every path this long while fragments wait for its acknowledgement is "
    "unreachable (failed under fault tolerance; the job ends otherwise); 0: only ulm_max_retries"};
const rt::IntParam ack_delay_param{
    "ulm_ack_delay_us", 20,
    "longest wait (us) of an ACK for a fragment to the peer to ride on (0: send ACKs at once)"};
const rt::IntParam ack_every_param{"ulm_ack_every", 16,
                                   "fragments one delayed ACK may cover before it is sent"};
const rt::IntParam rail_timeout_param{
    "ulm_rail_timeout_us", 20000,
    "a path whose fragments stay unacknowledged this long (or 4 round trips) while the peer is "
    "heard through another path is declared down and its fragments resent over the others (us)"};
const rt::IntParam probe_param{"ulm_rail_probe_us", 20000,
                               "first interval (us) between probes of a path declared down "
                               "(doubling up to ulm_rail_probe_max_us)"};
const rt::IntParam probe_max_param{"ulm_rail_probe_max_us", 500000,
                                   "longest interval (us) between probes of a path declared down"};
const rt::IntParam read_stall_param{
    "ulm_read_stall_us", 250000,
    "a single-copy read over one of several paths to a peer that moves nothing this long has its "
    "path probed; unanswered for as long again (plus its bytes at ulm_read_floor_mbs) while the "
    "peer answers over another path, the path is declared down and its reads fail over (us)"};
const rt::IntParam read_floor_param{
    "ulm_read_floor_mbs", 10,
    "the slowest rate (MB/s) a path is expected to read at: the bytes of its reads in flight at "
    "this rate lengthen the wait for its probe's answer (ulm_read_stall_us)"};
const rt::IntParam standby_param{
    "ulm_rail_standby_pct", 10,
    "a path whose nominal bandwidth is below this percentage of the fastest path to the same "
    "peer stands by: used only when no faster path is up (0: every path is used)"};
const rt::ChoiceParam stripe_param{
    "ulm_stripe", "on",
    "spread the data of large messages over every path to a peer (on), or keep it on the path "
    "of lowest latency (off: the others only take over when it goes down)",
    "on|off"};
const rt::ChoiceParam pace_param{
    "ulm_pace", "on",
    "keep the data in flight over a network path under twice its measured bandwidth-delay "
    "product even when it is the only path to the peer (off: only the window of the path bounds "
    "it, and a slow link's queue overflows); never over a path with flow control of its own (ofi)",
    "on|off"};

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
    case 80: std::memcpy(dst, src, 80); return;
    default: std::memcpy(dst, src, hlen); return;
    }
}

// Smallest payload written with non-temporal stores (Rail::streamed): where
// rt::crc32c_copy_stream starts streaming (below, it copies in place).
constexpr std::uint32_t kStreamMin = 2048;

std::uint32_t header_crc(const std::byte* hdr, std::uint32_t hlen)
{
    // hcrc is computed with its own field zero.
    static_assert(offsetof(BaseHeader, hcrc) % 4 == 0);
    return rt::crc32c_words_hole(hdr, hlen / 8, offsetof(BaseHeader, hcrc));
}


} // namespace

LinkSet::LinkSet() = default;

LinkSet::~LinkSet()
{
    forget_links();
}

// Before links_ is replaced (init again: a replica re-created by fork,
// Engine::become) or freed: no list may keep a link of the old vector (a
// link stays on ack_due_ / unacked_ until the next flush or tick finds it
// done), and the control fragments still queued go back to their pool.
void LinkSet::forget_links()
{
    while (ack_due_.pop_front() != nullptr) {
    }
    while (unacked_.pop_front() != nullptr) {
    }
    while (probing_.pop_front() != nullptr) {
    }
    while (reading_.pop_front() != nullptr) {
    }
    any_ack_due_.store(false, std::memory_order_relaxed);
    any_unacked_.store(false, std::memory_order_relaxed);
    any_probing_.store(false, std::memory_order_relaxed);
    any_reading_.store(false, std::memory_order_relaxed);
    for (Link& l : links_) {
        while (CtrlFrag* c = l.ctrl_pending.pop_front()) {
            ctrl_pool_.put(c);
        }
    }
}

rt::Status LinkSet::init(int rank, int size, int incarnation,
                         const std::vector<std::unique_ptr<path::Path>>& paths, LinkOwner& owner,
                         std::string& why, int first_slot)
{
    rank_ = rank;
    incarnation_ = incarnation;
    owner_ = &owner;
    forget_links();
    links_ = std::vector<Link>(static_cast<std::size_t>(size));
    policy_.initial_timeout = std::max<std::int64_t>(1, retry_param.get()) * 1000;
    policy_.min_timeout = std::max<std::int64_t>(1, retry_min_param.get()) * 1000;
    policy_.max_timeout = std::max<std::int64_t>(retry_max_param.get(), retry_param.get()) * 1000;
    policy_.max_retries = static_cast<std::uint32_t>(std::max<std::int64_t>(1, retries_param.get()));
    policy_.peer_timeout = std::max<std::int64_t>(0, peer_timeout_param.get()) * 1000000000;
    policy_.ack_delay = std::max<std::int64_t>(0, ack_delay_param.get()) * 1000;
    policy_.ack_every = static_cast<std::uint32_t>(std::max<std::int64_t>(1, ack_every_param.get()));
    rail_timeout_ = std::max<std::int64_t>(1, rail_timeout_param.get()) * 1000;
    probe_min_ = std::max<std::int64_t>(1, probe_param.get()) * 1000;
    probe_max_ = std::max<std::int64_t>(probe_param.get(), probe_max_param.get()) * 1000;
    read_stall_ = std::max<std::int64_t>(1, read_stall_param.get()) * 1000;
    read_floor_ = static_cast<double>(std::max<std::int64_t>(1, read_floor_param.get())) / 1e3;

    std::size_t copy_block = SendFrag::kInlineCopy;
    for (int i = 0; i < size; ++i) {
        Link& l = links_[static_cast<std::size_t>(i)];
        l.rank = i;
        bind(l, paths);
        if (l.nrails == 0 && !(first_slot >= 0 && i >= first_slot)) {
            why = "no path reaches rank " + std::to_string(i) + " (paths in use:";
            for (auto& p : paths) {
                why += std::string(" ") + p->info().name;
            }
            why += "; see ULMPI_PATH_INCLUDE)";
            return rt::Errc::unreachable;
        }
        for (int k = 0; k < l.nrails; ++k) {
            if (l.rails[k].reliable) {
                copy_block = std::max<std::size_t>(copy_block, l.rails[k].path->info().eager_limit);
                copy_block = std::max<std::size_t>(copy_block, 256);
            }
        }
    }
    copy_pool_.set_block_size(copy_block);
    return rt::Errc::ok;
}

void LinkSet::bind(Link& l, const std::vector<std::unique_ptr<path::Path>>& paths)
{
    const std::string& rel = reliability_param.get();
    const std::string& sum = checksum_param.get();
    const bool stripe = stripe_param.get() == "on";
    int reach = 0;
    for (const auto& p : paths) {
        reach += p->can_reach(l.rank) ? 1 : 0;
    }
    reach = std::min(reach, Link::kMaxRails);
    l.rails = reach > 0 ? std::make_unique<Rail[]>(static_cast<std::size_t>(reach)) : nullptr;
    for (const auto& p : paths) {
        if (!p->can_reach(l.rank) || l.nrails >= reach) {
            continue;
        }
        const path::PathInfo& info = p->info();
        Rail& r = l.rails[l.nrails++];
        r.path = p.get();
        const bool reliable = rel == "on" || (rel == "auto" && info.reliable_default);
        r.reliable = reliable;
        r.checksum = sum == "crc32c" || (sum == "auto" && reliable);
        r.max_frag = info.max_frag;
        r.inline_max = info.inline_max;
        r.line_bytes = info.line_bytes;
        r.line_skew = info.line_skew;
        r.streamed = info.streamed_tx;
        r.rate = info.bandwidth_mbs > 0 ? info.bandwidth_mbs : 1000;
        l.reliable = l.reliable || reliable;
        // Over a kernel path a fragment may wait in socket and window
        // queues before it leaves, so timing one fragment in eight (what
        // shm does, to keep the clock off the fast path) picks biased
        // samples: under the lossy decorator on udp srtt rose from 4 to
        // 20 ms and a 64 MiB transfer took 4x as long. There every fragment
        // is timed (one clock read is nothing next to a system call).
        l.time_all = l.time_all || info.kernel_delivery;
        any_kernel_ = any_kernel_ || info.kernel_delivery;
    }
    l.stripe = stripe; // off: one rail carries everything while it is up, the others stand by
    // A network rail is paced even alone: an unbounded window overflows the
    // queue before a slower link (a 250 Mbit link behind a 3 MB queue took
    // 43,000 drops and fell to 2 MB/s; capped, nothing is dropped).
    // Not over a transport with flow control of its own (PathInfo::lossless:
    // libfabric's rxm over TCP): there ULM's cap only stalled it (ofi with
    // ofi_rma=off, 4 MiB streaming on loopback: 240 MB/s paced, 400 not).
    bool any_lossy = false;
    for (int k = 0; k < l.nrails; ++k) {
        any_lossy = any_lossy || !l.rails[k].path->info().lossless;
    }
    l.paced = l.time_all && l.reliable && any_lossy && pace_param.get() == "on";
    double fastest = 0;
    for (int k = 0; k < l.nrails; ++k) {
        fastest = std::max(fastest, l.rails[k].path->info().bandwidth_mbs);
    }
    const double floor = fastest * static_cast<double>(std::clamp<std::int64_t>(standby_param.get(), 0, 100)) / 100;
    for (int k = 0; k < l.nrails; ++k) {
        l.rails[k].standby = l.rails[k].path->info().bandwidth_mbs < floor;
    }
    // Fail-over resends what a dead rail had in flight: with several rails
    // that can fail, each of them keeps its fragments until acknowledged,
    // even over a path that is reliable by itself (verbs' RC), unless
    // reliability was turned off explicitly.
    int can_fail = 0;
    for (int k = 0; k < l.nrails; ++k) {
        can_fail += l.rails[k].path->info().can_fail ? 1 : 0;
    }
    if (can_fail > 1 && rel == "auto") {
        for (int k = 0; k < l.nrails; ++k) {
            if (l.rails[k].path->info().can_fail) {
                l.rails[k].reliable = true;
                l.reliable = true;
            }
        }
    }
    l.peer_incarnation = 0;
    l.epoch = static_cast<std::uint8_t>(incarnation_);
    l.choose();
}

bool LinkSet::rebind(Link& l, const std::vector<std::unique_ptr<path::Path>>& paths)
{
    const int peer_incarnation = l.peer_incarnation;
    const std::uint8_t epoch = l.epoch;
    l.drop_rails(); // choose() in bind() must not read the old control rail
    l.reliable = false;
    l.time_all = false;
    bind(l, paths);
    l.peer_incarnation = peer_incarnation;
    l.epoch = epoch;
    std::size_t need = 0;
    for (int k = 0; k < l.nrails; ++k) {
        if (l.rails[k].reliable) {
            need = std::max<std::size_t>({need, l.rails[k].path->info().eager_limit, 256});
        }
    }
    return l.nrails > 0 && need <= copy_pool_.block_size();
}

bool LinkSet::checksummed(const Link& l, const path::Path& path) const
{
    for (int i = 0; i < l.nrails; ++i) {
        if (l.rails[i].path == &path) {
            return l.rails[i].checksum;
        }
    }
    return false;
}

// A filled buffer to the rail's path, counted (link_set.h).
void LinkSet::commit(Link& l, Rail& rail, path::TxBuffer& buf, std::uint32_t hlen,
                     std::uint32_t plen)
{
    counted(l, rail, rail.path->commit(l.rank, buf, hlen + plen), plen);
}

void LinkSet::counted(Link& l, Rail& rail, path::SendResult res, std::uint32_t plen)
{
    ++l.counters.frags_sent;
    l.counters.bytes_sent += plen;
    ++rail.counters.frags_sent;
    rail.counters.bytes_sent += plen;
    if (res == path::SendResult::failed) [[unlikely]] {
        rail_down(l, rail, "the path could not send");
    }
}

// emit() over an unreliable, unchecked rail with no ACK to carry (shm
// between two ranks of a host): the header goes straight into the path's
// buffer, behind it the payload, and nothing is kept.
bool LinkSet::emit_plain(Link& l, Rail& rail, std::byte* hdr, std::uint32_t hlen, const Payload& pl)
{
    path::Path* path = rail.path;
    path::TxBuffer buf;
    buf.lane = lane_of(hdr[1]);
    if (!path->acquire(l.rank, hlen + pl.len, buf)) {
        return false;
    }
    if (sequenced(static_cast<FragType>(hdr[1]))) {
        const std::uint64_t seq = l.next_frag_out.value();
        ++l.next_frag_out;
        std::memcpy(hdr + offsetof(BaseHeader, frag_seq), &seq, sizeof seq);
    }
    copy_header(buf.data, hdr, hlen);
    std::byte* out = buf.data + hlen;
    if (pl.ref != nullptr) {
        pack(*pl.ref, pl.offset, out, pl.len);
    } else if (pl.len > 0) {
        std::memcpy(out, pl.bytes, pl.len);
    }
    commit(l, rail, buf, hlen, pl.len);
    return true;
}

// Writes one fragment into path memory and commits it. The header comes
// without its sequence number; control fragments (and ACKs) have no payload.
// On a reliable link the fragment is kept until acknowledged: its payload is
// copied unless `owner` is given (then it is re-read from owner's buffer,
// which stays untouched until the owner completes). False: the path had no
// room; nothing was consumed.
bool LinkSet::emit(Link& l, Rail& rail, std::byte* hdr, std::uint32_t hlen, const Payload& pl,
                   SendMsg* owner)
{
    if (!l.reliable && !l.ack_due && !rail.checksum) [[likely]] {
        return emit_plain(l, rail, hdr, hlen, pl);
    }
    path::Path* path = rail.path;
    BaseHeader b = read_header<BaseHeader>(hdr);
    const bool seq = sequenced(b.type);
    // The ACK this peer is owed rides along when everything it sent us so
    // far was delivered in order (then LIDS says it all) and the path has
    // room for the extra 8 bytes. Unless those bytes would cost the fragment
    // a line (an 8-byte message over shm: 56 bytes fill a FIFO slot's first
    // line, 64 take two, about 100 ns more between two cores) while the ACK
    // can wait: then it rides on a later fragment, before it covers
    // ack_every fragments (flush_one would send it alone then), or goes
    // alone after ack_delay as any delayed ACK does.
    bool piggy = seq && l.ack_due && l.delivered.islands() == 0 &&
                 hlen + sizeof(AckExt) + pl.len <= rail.max_frag;
    if (piggy && !l.ack_urgent && l.ack_owed + 1 < policy_.ack_every &&
        rail.costs_a_line(hlen + pl.len, sizeof(AckExt))) {
        piggy = false;
        ++l.counters.piggy_acks_held;
    }
    const std::uint32_t full = hlen + (piggy ? static_cast<std::uint32_t>(sizeof(AckExt)) : 0);
    path::TxBuffer buf;
    buf.lane = lane_of(hdr[1]);
    if (!path->acquire(l.rank, full + pl.len, buf)) {
        return false;
    }
    if (seq) {
        b.frag_seq = l.next_frag_out.value();
        ++l.next_frag_out;
    }
    const bool kept = rail.reliable && seq;
    if (kept) {
        b.flags |= flag::reliable;
        // The send completes only when its fragments are acknowledged: the
        // last data fragment of a message asks for its ACK at once, which
        // (in order) covers the others; those before it are acknowledged as
        // any fragment is, once per ack_every (a 4 MiB message over shm:
        // 5 ACKs, not 64). Rails that measure their rate and pace their data
        // by ACKs (several rails, a network path) have every one answered.
        if (owner != nullptr && pl.ref != nullptr &&
            (b.type != FragType::data || pl.offset + pl.len >= owner->limit || l.measured())) {
            b.flags |= flag::ack_now;
        }
    }
    alignas(8) std::byte frame[kMaxHeader];
    copy_header(frame, hdr, hlen);
    if (piggy) {
        b.flags |= flag::ack_ext;
        const AckExt ext{l.delivered.in_order()};
        std::memcpy(frame + hlen, &ext, sizeof ext);
        ack_given(l);
        ++l.counters.piggy_acks_sent;
    }
    std::byte* out = buf.data + full;
    std::uint32_t pcrc = 0;
    // A checksummed payload into memory the peer reads next (shm) goes past
    // our caches. Copied in place with the CRC, every line was first
    // fetched from the receiver's cache, where the previous fragment in
    // that buffer left it (with reliability on, 2 vCPU AMD EPYC: 4 KiB
    // eager bandwidth 3.0 GB/s in place, 6.9 streamed; 4 MiB ping-pong
    // 530 µs, 225 streamed).
    // The data of a long message goes in place but copied first and
    // checksummed after (pack_crc_cached, kCachedCopyMin): in a stream of
    // many fragments through the same few buffers.
    const bool cached = rail.checksum && rail.streamed && owner != nullptr && b.type == FragType::data &&
                        owner->total >= kCachedCopyMin;
    const bool stream = rail.checksum && rail.streamed && pl.len >= kStreamMin && !cached;
    if (pl.ref != nullptr) {
        if (cached) {
            pcrc = pack_crc_cached(*pl.ref, pl.offset, out, pl.len);
        } else if (stream) {
            pcrc = pack_crc_stream(*pl.ref, pl.offset, out, pl.len);
        } else if (rail.checksum) {
            pcrc = pack_crc(*pl.ref, pl.offset, out, pl.len);
        } else {
            pack(*pl.ref, pl.offset, out, pl.len);
        }
    } else if (pl.len > 0) {
        if (stream) {
            pcrc = rt::crc32c_copy_stream(out, pl.bytes, pl.len);
        } else if (rail.checksum) {
            pcrc = rt::crc32c_copy(out, pl.bytes, pl.len);
        } else {
            std::memcpy(out, pl.bytes, pl.len);
        }
    }
    if (rail.checksum) {
        b.flags |= flag::crc;
        b.pcrc = pcrc;
        b.hcrc = 0;
        std::memcpy(frame, &b, sizeof b);
        b.hcrc = header_crc(frame, full);
    }
    std::memcpy(frame, &b, sizeof b);
    std::memcpy(hdr, &b, sizeof b);
    copy_header(buf.data, frame, full);
    // The fragment leaves first, then it is kept: the peer starts on it
    // while we take the retransmission copy (from the source, which is in
    // our cache, not from the fragment, whose lines the peer is fetching
    // now) and do the bookkeeping. Nothing of ours can act on its ACK in
    // between: ACKs from the peer are handled under the same lock.
    if (kept) {
        const path::SendResult res = path->commit(l.rank, buf, full + pl.len);
        keep(l, rail, b, frame, full, nullptr, pl, owner);
        counted(l, rail, res, pl.len);
        return true;
    }
    commit(l, rail, buf, full, pl.len);
    return true;
}

// Keeps a fragment just sent until it is acknowledged. `payload`: its bytes
// as written into the fragment, to copy unless `owner` holds them; nullptr:
// the copy is taken from `pl` (emit: the fragment is the peer's already).
void LinkSet::keep(Link& l, Rail& rail, const BaseHeader& b, const std::byte* frame,
                   std::uint32_t full, const std::byte* payload, const Payload& pl, SendMsg* owner)
{
    SendFrag* f = get_frag();
    if (f == nullptr) {
        rt::fatal("out of memory keeping a fragment for retransmission to rank %d", l.rank);
    }
    f->seq = b.frag_seq;
    f->rail = &rail;
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
            {
                rt::OptGuard g(pool_lock_);
                f->copy = static_cast<std::byte*>(copy_pool_.get());
            }
            if (f->copy == nullptr) {
                rt::fatal("out of memory keeping a fragment for retransmission to rank %d", l.rank);
            }
            dst = f->copy;
        }
        if (payload != nullptr) {
            std::memcpy(dst, payload, pl.len);
        } else if (pl.ref != nullptr) {
            pack(*pl.ref, pl.offset, dst, pl.len); // the fragment went past our caches
        } else {
            std::memcpy(dst, pl.bytes, pl.len);
        }
    }
    f->tx_order = ++l.tx_count;
    rt::Nanos now = 0;
    if (l.time_all) {
        now = rt::now_ns();
        f->sent_at = now;
    } else if (l.rtt_seq == 0 && f->seq >= l.next_rtt_seq) {
        // Time this one (one timed fragment at a time, as TCP without
        // timestamps does): the clock is read for every few fragments only.
        now = rt::now_ns();
        l.rtt_seq = f->seq;
        l.rtt_sent = now;
    }
    if (rail.inflight_frags++ == 0 && l.measured()) {
        rail.progress_at = now != 0 ? now : rt::now_ns();
    }
    rail.inflight += f->wire_len();
    l.unacked.push(f);
    if (!l.on_unacked_list) {
        list_unacked(l, true);
        l.timer = 0; // armed by the next tick()
        l.backoff = 0;
        l.recover_seq = 0;
    }
}

// Sends a kept fragment again over `rail` (its own, or another when its
// rail went down or a timeout suggests trying elsewhere).
bool LinkSet::resend(Link& l, SendFrag* f, Rail* rail, std::uint64_t LinkCounters::*why)
{
    if (rail == nullptr) {
        return false;
    }
    path::TxBuffer buf;
    buf.lane = lane_of(f->hdr[1]);
    const std::uint32_t len = f->wire_len();
    if (f->pieced != 0 || len > rail->max_frag) [[unlikely]] {
        // Striped over a rail with larger fragments than this one takes, or
        // already on its way in pieces: data goes in pieces, anything else
        // waits for its own rail to come back.
        return split(l, f, *rail, why);
    }
    if (!rail->path->acquire(l.rank, len, buf)) {
        return false;
    }
    copy_header(buf.data, f->hdr, f->hdr_len);
    std::byte* out = buf.data + f->hdr_len;
    if (f->owner != nullptr) {
        pack(f->owner->data, f->offset, out, f->payload_len);
    } else if (f->payload_len > 0) {
        std::memcpy(out, f->payload_copy(), f->payload_len);
    }
    if (f->rail != rail) {
        f->rail->inflight -= len;
        --f->rail->inflight_frags;
        if (rail->inflight_frags++ == 0 && l.measured()) {
            rail->progress_at = rt::now_ns();
        }
        rail->inflight += len;
        f->rail = rail;
    }
    const path::SendResult res = rail->path->commit(l.rank, buf, len);
    f->tx_order = ++l.tx_count;
    // Karn: an ACK could answer either transmission, so a resent fragment
    // is never timed (a fragment failed over to another rail, once timed
    // from its first transmission, gave rail round trips of seconds).
    f->sent_at = 0;
    if (f->seq == l.rtt_seq) {
        l.rtt_seq = 0;
    }
    ++l.counters.retransmits;
    ++(l.counters.*why);
    ++l.counters.frags_sent;
    ++rail->counters.frags_sent;
    ++rail->counters.resends;
    if (res == path::SendResult::failed) [[unlikely]] {
        rail_down(l, *rail, "the path could not send");
    }
    return true;
}

// Sends a data fragment again as pieces that every rail takes (wire.h,
// piece), over `rail`: what a dead rail of large fragments left when the
// others take only small ones (udp + ofi). The fragment stays kept until
// the peer acknowledges it, which it does once every piece arrived; the
// pieces are kept fragments of their own. A fragment split already has its
// oldest unacknowledged piece sent again instead.
bool LinkSet::split(Link& l, SendFrag* f, Rail& rail, std::uint64_t LinkCounters::*why)
{
    const BaseHeader b = read_header<BaseHeader>(f->hdr);
    if (b.type != FragType::data || f->owner == nullptr) {
        return false;
    }
    if (f->pieced == f->payload_len) {
        SendFrag* piece = nullptr;
        l.unacked.for_each([&](SendFrag* g) {
            if (piece == nullptr && g->seq > f->seq && static_cast<FragType>(g->hdr[1]) == FragType::piece &&
                read_header<PieceHeader>(g->hdr).whole == f->seq) {
                piece = g;
            }
        });
        return piece != nullptr && resend(l, piece, &rail, why);
    }
    const DataHeader d = read_header<DataHeader>(f->hdr);
    constexpr auto kPieceHeader = static_cast<std::uint32_t>(sizeof(PieceHeader) + sizeof(AckExt));
    if (l.frag_floor() <= kPieceHeader) {
        return false; // a rail with no room for a piece's payload
    }
    const std::uint32_t room = l.frag_floor() - kPieceHeader;
    bool any = false;
    while (f->pieced < f->payload_len) {
        const std::uint32_t chunk = std::min(room, f->payload_len - f->pieced);
        PieceHeader h{};
        fill_base(l, h.base, FragType::piece, 0, chunk);
        h.recv_id = d.recv_id;
        h.offset = d.offset + f->pieced;
        h.whole = f->seq;
        h.whole_len = f->payload_len;
        Payload pl;
        pl.ref = &f->owner->data;
        pl.offset = f->offset + f->pieced;
        pl.len = chunk;
        if (!emit(l, rail, reinterpret_cast<std::byte*>(&h), sizeof h, pl, f->owner)) {
            break;
        }
        if (f->pieced == 0) {
            ++l.counters.split;
            ++l.counters.retransmits;
            ++(l.counters.*why);
        }
        f->pieced += chunk;
        any = true;
    }
    if (f->pieced < f->payload_len) {
        // No room for the rest now: failover() goes on with it (it must all
        // go in pieces: the peer takes the whole no more once one arrived).
        l.failover_due = true;
        owner_->link_has_work(l);
    }
    return any;
}

// Receiver: a piece, or the whole of a fragment that is arriving in pieces.
// False: drop it (its bytes are in already, or will be by the pieces).
bool LinkSet::accept_piece(Link& l, const BaseHeader& b, const path::RxFrag& frag)
{
    if (b.type == FragType::data) {
        for (const Link::Pieces& p : l.pieces) {
            if (p.whole == b.frag_seq) {
                ++l.counters.duplicates; // acknowledged once its pieces are in
                return false;
            }
        }
        return true;
    }
    const PieceHeader h = read_header<PieceHeader>(frag.data);
    for (const Link::Pieces& p : l.pieces) {
        if (p.whole == h.whole) {
            return true;
        }
    }
    if (l.delivered.contains(h.whole)) {
        // The whole arrived before its pieces: their bytes are in.
        ++l.counters.pieces_dropped;
        (void)l.received.insert(b.frag_seq);
        delivered(l, b);
        return false;
    }
    l.pieces.push_back(Link::Pieces{h.whole, h.whole_len});
    return true;
}

void LinkSet::piece_delivered(Link& l, const PieceHeader& h)
{
    for (std::size_t i = 0; i < l.pieces.size(); ++i) {
        Link::Pieces& p = l.pieces[i];
        if (p.whole != h.whole) {
            continue;
        }
        p.left -= std::min(p.left, h.base.payload_len);
        if (p.left == 0) {
            // Every piece is in: so is the whole, for the sender's ACK.
            l.pieces.erase(l.pieces.begin() + static_cast<std::ptrdiff_t>(i));
            BaseHeader w = h.base;
            w.frag_seq = h.whole;
            w.flags = flag::reliable;
            (void)l.received.insert(h.whole);
            delivered(l, w);
        }
        return;
    }
}

// A resend after a loss: over the fragment's own rail while it is up,
// otherwise over another one.
bool LinkSet::resend_any(Link& l, SendFrag* f, std::uint64_t LinkCounters::*why)
{
    Rail* r = f->rail;
    if (!r->up()) {
        Rail* o = l.other_rail(r);
        r = o != nullptr ? o : l.control_rail();
    }
    return resend(l, f, r, why);
}

void LinkSet::release_frag(Link& l, SendFrag* f, rt::Nanos now)
{
    Rail& r = *f->rail;
    const std::uint32_t len = f->wire_len();
    r.inflight -= len;
    --r.inflight_frags;
    if (now != 0) {
        on_rail_acked(l, r, len, now);
    }
    SendMsg* owner = f->owner;
    put_frag(f);
    if (owner != nullptr) {
        --owner->unacked;
        owner_->frag_released(owner);
    }
}

bool LinkSet::try_ctrl(Link& l, const void* hdr, std::uint32_t len)
{
    Rail* r = l.control_rail();
    if (r == nullptr) {
        return true; // nobody to tell; the peer is gone
    }
    alignas(8) std::byte copy[kMaxHeader];
    std::memcpy(copy, hdr, len);
    return emit(l, *r, copy, len, Payload{}, nullptr);
}

void LinkSet::send_ctrl(Link& l, const void* hdr, std::uint32_t len)
{
    if (l.ctrl_pending.empty() && try_ctrl(l, hdr, len)) {
        return;
    }
    CtrlFrag* c = nullptr;
    {
        rt::OptGuard g(pool_lock_); // fine locks: several peers at once
        c = ctrl_pool_.get();
    }
    if (c == nullptr) {
        rt::fatal("out of memory queueing a control fragment for rank %d", l.rank);
    }
    c->len = len;
    std::memcpy(c->bytes, hdr, len);
    l.ctrl_pending.push_back(c);
    owner_->link_has_work(l);
}

int LinkSet::push(Link& l, bool* drained)
{
    int n = 0;
    *drained = false;
    while (CtrlFrag* c = l.ctrl_pending.front()) {
        if (!try_ctrl(l, c->bytes, c->len)) {
            return n;
        }
        l.ctrl_pending.remove(c);
        {
            rt::OptGuard g(pool_lock_);
            ctrl_pool_.put(c);
        }
        ++n;
    }
    if (l.failover_due) {
        n += failover(l);
        if (l.failover_due) {
            return n;
        }
    }
    *drained = true;
    return n;
}

// Receiver: checks an arriving fragment before it is processed. False means
// drop it (damaged, stale, a duplicate — answered here — or a link-level
// fragment handled here). `hlen` is the whole header, AckExt included.
bool LinkSet::accept_any(Link& l, path::Path& path, const BaseHeader& b, std::uint32_t hlen,
                         path::RxFrag& frag, const std::byte* payload)
{
    Rail* r = l.nrails == 1 && l.rails[0].path == &path ? &l.rails[0] : l.rail_of(&path);
    if (r == nullptr) [[unlikely]] {
        ULMPI_DEBUG("dropped a fragment from rank %d over %s, which does not reach it", l.rank,
                    path.info().name);
        return false;
    }
    if (r->checksum) {
        if (!(b.flags & flag::crc) || header_crc(frag.data, hlen) != b.hcrc) {
            ++l.counters.crc_header_fail;
            return false; // nothing in it can be trusted, not even its sequence
        }
    }
    if (b.src != static_cast<std::uint32_t>(frag.peer) || b.dst != static_cast<std::uint32_t>(rank_))
        [[unlikely]] {
        ++l.counters.bad_frags;
        ULMPI_DEBUG("dropped a fragment from rank %d addressed %u -> %u", frag.peer, b.src, b.dst);
        return false;
    }
    if (b.epoch != l.epoch || !l.alive()) [[unlikely]] {
        ++l.counters.stale; // a dead incarnation's, or for one
        return false;
    }
    ++l.counters.frags_received;
    ++r->counters.frags_received;
    r->counters.bytes_received += frag.len;
    switch (b.type) {
    case FragType::ack:
        on_ack(l, read_header<AckHeader>(frag.data));
        return false;
    case FragType::probe:
        on_probe(l, path, read_header<ProbeHeader>(frag.data));
        return false;
    case FragType::probe_ack:
        on_probe_ack(l, path, read_header<ProbeHeader>(frag.data));
        return false;
    default:
        break;
    }
    if (!l.reliable) {
        return true;
    }
    if (b.flags & flag::ack_ext) {
        // A piggy-backed ACK: valid even on a duplicate (its header is intact).
        AckExt ext;
        // After the RepExt when there is one (wire.h).
        const std::uint32_t at = header_size(b.type) + rep_ext_len(b.flags);
        std::memcpy(&ext, frag.data + at, sizeof ext);
        AckHeader a{};
        a.ack_seq = ext.lids;
        a.lirs = ext.lids;
        a.lids = ext.lids;
        a.status = AckStatus::good;
        ++l.counters.piggy_acks_received;
        apply_ack(l, a);
    }
    if (b.frag_seq == 0 || l.delivered.contains(b.frag_seq)) {
        ++l.counters.duplicates;
        if (b.flags & flag::reliable) {
            l.ack_rail = r;
            queue_ack(l, b.frag_seq, true); // its ACK was lost: say it again, now
        }
        return false;
    }
    if ((b.type == FragType::piece || !l.pieces.empty()) && !accept_piece(l, b, frag)) [[unlikely]] {
        return false;
    }
    (void)l.received.insert(b.frag_seq);
    if (b.flags & flag::reliable) {
        l.ack_rail = r;
    }
    if (r->checksum && !carries_data(b.type) && b.payload_len > 0 &&
        rt::crc32c(payload, b.payload_len) != b.pcrc) {
        ++l.counters.crc_payload_fail;
        send_ack(l, b.frag_seq, AckStatus::corrupt);
        return false;
    }
    return true;
}

void LinkSet::delivered_reliable(Link& l, const BaseHeader& b)
{
    // A fragment out of order, or one that fills a hole, is acknowledged at
    // once: the sender learns of a loss (or its repair) without delay.
    const bool was_gap = l.delivered.islands() != 0;
    (void)l.delivered.insert(b.frag_seq);
    const std::uint64_t s = b.frag_seq;
    if (s > l.delivered.in_order()) {
        // Out of order: the next ACK's map must show it. When it would not
        // fit one map with the others since the last ACK, those go now.
        if (l.ack_low == 0) {
            l.ack_low = l.ack_high = s;
        } else if (std::max(l.ack_high, s) - std::min(l.ack_low, s) >= 64) {
            if (l.ack_due) {
                const std::uint64_t seq = l.ack_latest;
                ack_given(l);
                send_ack(l, seq, AckStatus::good);
            }
            l.ack_low = l.ack_high = s;
        } else {
            l.ack_low = std::min(l.ack_low, s);
            l.ack_high = std::max(l.ack_high, s);
        }
    }
    if (b.flags & flag::reliable) {
        queue_ack(l, b.frag_seq, was_gap || l.delivered.islands() != 0 || (b.flags & flag::ack_now));
    }
}

void LinkSet::payload_corrupt(Link& l, const BaseHeader& b)
{
    ++l.counters.crc_payload_fail;
    send_ack(l, b.frag_seq, AckStatus::corrupt);
}

void LinkSet::fail(Link& l, rt::Errc why)
{
    if (l.life == Link::Lifetime::failed) {
        return;
    }
    l.life = Link::Lifetime::failed;
    std::vector<SendFrag*> all;
    l.unacked.for_each([&](SendFrag* f) { all.push_back(f); });
    for (SendFrag* f : all) {
        (void)l.unacked.take(f->seq);
        if (f->owner != nullptr && f->owner->error == rt::Errc::ok) {
            f->owner->error = why;
        }
        release_frag(l, f, 0);
    }
    while (CtrlFrag* c = l.ctrl_pending.pop_front()) {
        rt::OptGuard g(pool_lock_);
        ctrl_pool_.put(c);
    }
    list_unacked(l, false);
    list_probing(l, false);
    if (l.ack_due) {
        ack_given(l);
    }
    l.failover_due = false;
    l.choose();
}

void LinkSet::reset(Link& l, int peer_incarnation)
{
    fail(l, rt::Errc::peer_failed);
    l.peer_incarnation = peer_incarnation;
    l.epoch = static_cast<std::uint8_t>(incarnation_ + peer_incarnation);
    l.next_frag_out = FragSeq(1);
    l.unacked = SeqWindow{};
    l.rtt = RttEstimate{};
    l.timer = 0;
    l.tx_count = 0;
    l.rtt_seq = 0;
    l.rtt_sent = 0;
    l.next_rtt_seq = 1;
    l.backoff = 0;
    l.recover_seq = 0;
    l.received = RangeSet{};
    l.delivered = RangeSet{};
    l.pieces.clear();
    l.ack_latest = 0;
    l.ack_low = l.ack_high = 0;
    l.ack_owed = 0;
    l.ack_seen = 0;
    l.ack_deadline = 0;
    l.ack_rail = nullptr;
    for (int i = 0; i < l.nrails; ++i) {
        Rail& r = l.rails[i];
        const Rail fresh{};
        r.state = fresh.state;
        r.inflight = 0;
        r.inflight_frags = 0;
        r.progress_at = r.acked_at = r.missing_at = 0;
        r.next_probe = 0;
        r.probe_interval = 0;
        r.down_reason = "";
    }
    l.life = Link::Lifetime::alive;
    l.choose();
}

void LinkSet::print_stats(std::FILE* out, int rank, int peer) const
{
    const Link& l = links_[static_cast<std::size_t>(peer)];
    const LinkCounters& c = l.counters;
    if (c.frags_sent == 0 && c.frags_received == 0) {
        return;
    }
    std::fprintf(out,
                 "ulmpi-stats rank=%d peer=%d link=%s epoch=%u frags_sent=%" PRIu64 " frags_received=%" PRIu64
                 " bytes_sent=%" PRIu64 " retransmits=%" PRIu64 " resent_timer=%" PRIu64
                 " resent_fast=%" PRIu64 " resent_recovery=%" PRIu64 " resent_corrupt=%" PRIu64
                 " resent_failover=%" PRIu64 " split=%" PRIu64 " pieces_dropped=%" PRIu64 " crc_header_fail=%" PRIu64 " crc_payload_fail=%" PRIu64
                 " duplicates=%" PRIu64 " stale=%" PRIu64 " bad=%" PRIu64 " acks_sent=%" PRIu64 " acks_received=%" PRIu64
                 " piggy_acks_sent=%" PRIu64 " piggy_acks_received=%" PRIu64 " piggy_acks_held=%" PRIu64
                 " corrupt_acks=%" PRIu64
                 " srtt_us=%.1f rto_us=%.1f\n",
                 rank, peer, l.alive() ? "alive" : "failed", l.epoch, c.frags_sent, c.frags_received,
                 c.bytes_sent, c.retransmits, c.resent_timer, c.resent_fast, c.resent_recovery,
                 c.resent_corrupt, c.resent_failover, c.split, c.pieces_dropped, c.crc_header_fail, c.crc_payload_fail,
                 c.duplicates, c.stale, c.bad_frags, c.acks_sent, c.acks_received, c.piggy_acks_sent,
                 c.piggy_acks_received, c.piggy_acks_held, c.corrupt_acks_received, static_cast<double>(l.rtt.srtt) / 1e3,
                 static_cast<double>(l.rtt.rto) / 1e3);
    for (int i = 0; i < l.nrails; ++i) {
        const Rail& r = l.rails[i];
        const RailCounters& rc = r.counters;
        std::fprintf(out,
                     "ulmpi-stats rank=%d peer=%d rail=%s state=%s frags_sent=%" PRIu64
                     " bytes_sent=%" PRIu64 " resends=%" PRIu64 " frags_received=%" PRIu64
                     " bytes_received=%" PRIu64 " downs=%" PRIu64 " ups=%" PRIu64 " probes=%" PRIu64
                     " reads_given_up=%" PRIu64 " rate_mbs=%.1f srtt_us=%.1f\n",
                     rank, peer, r.path->info().name, r.up() ? "up" : "down", rc.frags_sent,
                     rc.bytes_sent, rc.resends, rc.frags_received, rc.bytes_received, rc.downs, rc.ups,
                     rc.probes, rc.reads_given_up, r.rate, static_cast<double>(r.srtt) / 1e3);
    }
}

SendFrag* LinkSet::get_frag()
{
    rt::OptGuard g(pool_lock_);
    return frag_pool_.get_default(); // hdr and inline_copy are written before they are read
}

void LinkSet::put_frag(SendFrag* f)
{
    rt::OptGuard g(pool_lock_);
    if (f->copy != nullptr) {
        copy_pool_.put(f->copy);
    }
    frag_pool_.put(f);
}

namespace {

// Puts `l` on `list` or takes it off (its flag `listed` says where it is),
// under `lock` only when membership changes, and keeps `any` ("the list is
// not empty", read without the lock) in step.
template <class Lock, class List>
void set_listed(Lock& lock, Link& l, bool Link::*listed, List& list, std::atomic<bool>& any,
                bool on)
{
    if (l.*listed == on) {
        return;
    }
    l.*listed = on;
    rt::OptGuard g(lock);
    if (on) {
        list.push_back(&l);
    } else {
        list.remove(&l);
    }
    any.store(!list.empty(), std::memory_order_relaxed);
}

} // namespace

// Under the link's lock (its peer's, or the engine's write lock); the
// lists' lock only when membership changes.
void LinkSet::list_ack_due(Link& l, bool on)
{
    set_listed(lists_lock_, l, &Link::on_ack_list, ack_due_, any_ack_due_, on);
}

void LinkSet::list_unacked(Link& l, bool on)
{
    set_listed(lists_lock_, l, &Link::on_unacked_list, unacked_, any_unacked_, on);
}

void LinkSet::list_probing(Link& l, bool on)
{
    set_listed(lists_lock_, l, &Link::on_probe_list, probing_, any_probing_, on);
}

void LinkSet::list_reading(Link& l, bool on)
{
    set_listed(lists_lock_, l, &Link::on_read_list, reading_, any_reading_, on);
}

} // namespace ulmpi::ulm
