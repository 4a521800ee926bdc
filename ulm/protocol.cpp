// Eager and rendezvous protocols of the engine (see engine.h for the outline
// and wire.h for the fragments).
#include "ulm/engine.h"

#include "runtime/crc32c.h"
#include "runtime/log.h"
#include "ulm/direct_read.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sched.h>

namespace ulmpi::ulm {
// ---------------------------------------------------------------------------
// API

Status Engine::isend(const DataRef& data, int dst, int tag, ContextId ctx, SendMode mode,
                     SendMsg** out)
{
    if (rep_ == nullptr) [[likely]] {
        return isend_peer(data, dst, tag, ctx, mode, out);
    }
    if (dst < 0 || dst >= size()) {
        return Errc::invalid_arg;
    }
    const int phys = rep_->route(dst);
    if (phys >= 0 && links_[phys].alive()) {
        // Held before it can complete (an eager send completes in isend_peer).
        SendMsg* s = nullptr;
        Status st = isend_peer(data, phys, tag, ctx, mode, &s, [&](SendMsg& m) { rep_->on_send(m, dst); });
        *out = s;
        return st;
    }
    // That replica of the destination is gone: nothing to send, only the
    // other replicas' acknowledgements to wait for.
    SendMsg* s = send_pool_.get();
    if (s == nullptr) {
        return Errc::no_memory;
    }
    s->data = data;
    s->total = data.bytes();
    s->dst = -1;
    s->tag = tag;
    s->ctx = ctx;
    s->mode = mode;
    s->state = SendMsg::State::done;
    rep_->on_send(*s, dst);
    *out = s;
    check_complete(s);
    return Errc::ok;
}

Status Engine::isend_peer(const DataRef& data, int dst, int tag, ContextId ctx, SendMode mode,
                          SendMsg** out)
{
    return isend_peer(data, dst, tag, ctx, mode, out, [](SendMsg&) {});
}

template <class Before>
Status Engine::isend_peer(const DataRef& data, int dst, int tag, ContextId ctx, SendMode mode,
                          SendMsg** out, Before&& before)
{
    if (dst < 0 || dst >= size_) {
        return Errc::invalid_arg;
    }
    Peer& p = peer(dst);
    rt::ReadGuard eg(elock_);
    rt::OptGuard pg(p.lock);
    if (!links_[dst].alive()) {
        return Errc::peer_failed;
    }
    SendMsg* s = send_pool_.get();
    if (s == nullptr) {
        return Errc::no_memory;
    }
    s->data = data;
    s->total = data.bytes();
    s->dst = dst;
    s->tag = tag;
    s->ctx = ctx;
    s->mode = mode;
    *out = s;
    before(*s);
    if (!p.pending.empty() || !start_send(p, s)) {
        if (s->state == SendMsg::State::queued && !s->hook.linked()) {
            p.pending.push_back(s);
            mark_active(p);
        }
    }
    return Errc::ok; // failures show in s->error when it completes
}

// send_now() once the locks it needs are held (none below fine locks).
bool Engine::send_now_locked(const DataRef& data, int dst, int tag, ContextId ctx)
{
    Peer& p = peer(dst);
    Link& l = links_[dst];
    Rail* rail = l.control_rail();
    const std::uint64_t total = data.bytes();
    if (!p.pending.empty() || rail == nullptr) [[unlikely]] {
        return false;
    }
    if (total > l.eager_max()) {
        return false; // too large for one fragment of every rail it may fail over to
    }
    EagerHeader h;
    links_.fill_base(l, h.base, FragType::eager, flag::eager, static_cast<std::uint32_t>(total));
    h.context = ctx.value();
    h.tag = tag;
    h.msg_seq = p.next_msg_out.value();
    Payload pl;
    pl.ref = &data;
    pl.len = static_cast<std::uint32_t>(total);
    if (!links_.emit(l, *rail, reinterpret_cast<std::byte*>(&h), sizeof h, pl, nullptr)) {
        return false;
    }
    ++p.next_msg_out;
    ++p.counters.msgs_sent;
    return true;
}

bool Engine::send_now_fine(const DataRef& data, int dst, int tag, ContextId ctx)
{
    rt::ReadGuard eg(elock_);
    rt::OptGuard pg(peer(dst).lock);
    return send_now_locked(data, dst, tag, ctx);
}

bool Engine::send_now(const DataRef& data, int dst, int tag, ContextId ctx)
{
    if (dst < 0 || dst >= size_ || rep_ != nullptr) [[unlikely]] {
        return false;
    }
    if (fine_) [[unlikely]] {
        return send_now_fine(data, dst, tag, ctx);
    }
    return send_now_locked(data, dst, tag, ctx);
}

Status Engine::irecv(const DataRef& data, int src, int tag, ContextId ctx, RecvMsg** out)
{
    RecvMsg* r = recv_pool_.get();
    if (r == nullptr) {
        return Errc::no_memory;
    }
    *out = r;
    return irecv_into(*r, data, src, tag, ctx);
}

void Engine::withdraw_any(RecvMsg& r)
{
    // A read under way writes into the buffer until its path reports its
    // end (direct_read.h): only then may the owner have its memory back.
    while (r.reading) {
        if (progress() == 0) {
            sched_yield();
        }
    }
    if (!r.complete) {
        // Another thread's pass may be completing it: take the whole engine.
        rt::WriteGuard g(elock_);
        if (!r.complete) {
            matcher_.cancel(&r);
        }
        if (r.id != 0) {
            recvs_.erase(r.id);
            r.id = 0;
        }
        return;
    }
    if (r.id != 0) {
        recvs_.erase(r.id);
        r.id = 0;
    }
}

void Engine::take_stored(RecvMsg& r, Unexpected* u)
{
    deliver_stored(&r, u);
    free_unexpected(u);
}

Status Engine::irecv_rest(RecvMsg& rr)
{
    RecvMsg* r = &rr;
    const int src = r->src;
    if (src != kAnySource && (src < 0 || src >= size())) {
        r->error = Errc::invalid_arg;
        complete_recv(r);
        return Errc::ok;
    }
    if (!fine_) [[likely]] {
        if (Unexpected* u = matcher_.post(r)) {
            take_stored(*r, u);
        } else if (src != kAnySource && rep_ == nullptr && !links_[src].alive()) {
            matcher_.cancel(r);
            r->error = Errc::peer_failed;
            complete_recv(r);
        }
        return Errc::ok;
    }
    rt::ReadGuard eg(elock_);
    Unexpected* u = nullptr;
    {
        rt::OptGuard mg(match_lock_);
        u = matcher_.post(r);
        if (u == nullptr && src != kAnySource && !links_[src].alive()) {
            matcher_.cancel(r);
            r->error = Errc::peer_failed;
        } else if (u == nullptr) {
            return Errc::ok; // posted: an arrival completes it
        }
    }
    if (u == nullptr) {
        complete_recv(r); // the peer failed
        return Errc::ok;
    }
    // Taken from the unexpected list: ours alone now. Its answers (cts,
    // fin) go to the sender under the sender's lock.
    {
        rt::OptGuard pg(peer(u->peer).lock);
        deliver_stored(r, u);
    }
    free_unexpected(u);
    return Errc::ok;
}

bool Engine::iprobe(int src, int tag, ContextId ctx, Envelope* env)
{
    rt::ReadGuard eg(elock_);
    rt::OptGuard mg(match_lock_);
    Unexpected* u = matcher_.probe(ctx, src, tag);
    if (u == nullptr) {
        return false;
    }
    *env = Envelope{u->src, u->hdr.tag, u->hdr.msg_len};
    return true;
}

Unexpected* Engine::improbe(int src, int tag, ContextId ctx, Envelope* env)
{
    rt::ReadGuard eg(elock_);
    rt::OptGuard mg(match_lock_);
    Unexpected* u = matcher_.probe(ctx, src, tag);
    if (u != nullptr) {
        matcher_.take(u);
        *env = Envelope{u->src, u->hdr.tag, u->hdr.msg_len};
    }
    return u;
}

Status Engine::imrecv(Unexpected* msg, const DataRef& data, RecvMsg** out)
{
    RecvMsg* r = recv_pool_.get();
    if (r == nullptr) {
        return Errc::no_memory;
    }
    r->data = data;
    r->capacity = data.bytes();
    r->src = msg->src;
    r->tag = msg->hdr.tag;
    r->ctx = msg->ctx();
    *out = r;
    {
        rt::ReadGuard eg(elock_);
        rt::OptGuard pg(peer(msg->peer).lock);
        deliver_stored(r, msg);
    }
    free_unexpected(msg);
    return Errc::ok;
}

bool Engine::cancel(RecvMsg* r)
{
    rt::WriteGuard g(elock_);
    if (r->complete || !matcher_.cancel(r)) {
        return false;
    }
    r->cancelled = true;
    complete_recv(r);
    return true;
}

void Engine::abandon(RecvMsg* r, Errc why)
{
    rt::WriteGuard g(elock_);
    if (r->complete) {
        return;
    }
    if (matcher_.cancel(r)) {
        r->error = why;
        complete_recv(r);
        return;
    }
    withdraw_matched(r, why);
}

// A matched receive whose data is still to come (it has an id the data
// fragments name): forget the id, so that they are dropped, and complete it.
void Engine::withdraw_matched(RecvMsg* r, Errc why)
{
    if (r->complete || r->id == 0) {
        return;
    }
    recvs_.erase(r->id);
    r->id = 0;
    r->error = why;
    complete_recv(r);
}

namespace {

// The match fragment has left and the receiver has not answered yet.
bool waits_for_receiver(const SendMsg& s)
{
    return s.state == SendMsg::State::await_cts || s.state == SendMsg::State::await_sync ||
           s.state == SendMsg::State::await_fin;
}

} // namespace

bool Engine::cancel(SendMsg* s)
{
    // A send whose match fragment never left is withdrawn here. One whose
    // match fragment left but that still waits for the receiver (rendezvous,
    // synchronous) asks the receiver, which removes the message if no
    // receive has taken it: the send then completes as cancelled, or else
    // normally. An eager send that completed locally cannot be cancelled
    // (MPI allows a cancel to fail). Under replication a send is never
    // cancelled (its number is counted at every replica of the receiver).
    if (rep_ != nullptr) {
        return false;
    }
    rt::WriteGuard g(elock_);
    if (!s->complete && waits_for_receiver(*s) && s->id != 0) {
        ask_cancel(peer(s->dst), *s);
        return false;
    }
    if (s->complete || s->state != SendMsg::State::queued) {
        return false;
    }
    Peer& p = peer(s->dst);
    if (s->hook.linked()) {
        p.pending.remove(s);
    }
    s->cancelled = true;
    protocol_done(s);
    return true;
}

void Engine::release(SendMsg* s)
{
    rt::ReadGuard eg(elock_);
    rt::OptGuard pg(peer(s->dst).lock); // its sends' state is the peer's
    s->released = true;
    maybe_free(s);
}

void Engine::release(RecvMsg* r)
{
    if (fine_ && !r->complete) {
        // A pass may be completing it: decide who frees it under write
        // (complete_recv then sees `released`).
        rt::WriteGuard g(elock_);
        r->released = true;
        if (!r->complete) {
            return;
        }
    }
    r->released = true;
    if (r->complete) {
        if (r->id != 0) {
            recvs_.erase(r->id);
        }
        recv_pool_.put(r);
    }
}

// ---------------------------------------------------------------------------
// Send side

// Headers are filled (LinkSet::fill_base) without their fragment sequence
// number: emit() assigns it when the fragment really leaves (control
// fragments may wait in a queue first).

namespace {

// Emits the match or eager header `h`, with a RepExt carrying the
// replication acknowledgement `piggy` when that is not 0: in the checksum
// words over a rail without checksums (no byte more), else after `h`.
template <class H>
bool emit_msg(LinkSet& links, Link& l, Rail& rail, H& h, std::uint64_t piggy, const Payload& pl,
              SendMsg* owner)
{
    if (piggy == 0) [[likely]] {
        return links.emit(l, rail, reinterpret_cast<std::byte*>(&h), sizeof h, pl, owner);
    }
    h.base.flags |= flag::rep_ext;
    if (!rail.checksum) {
        const RepExt x{piggy};
        std::memcpy(reinterpret_cast<std::byte*>(&h) + offsetof(BaseHeader, hcrc), &x, sizeof x);
        return links.emit(l, rail, reinterpret_cast<std::byte*>(&h), sizeof h, pl, owner);
    }
    alignas(8) std::byte b[sizeof(H) + sizeof(RepExt)];
    std::memcpy(b, &h, sizeof h);
    const RepExt x{piggy};
    std::memcpy(b + sizeof h, &x, sizeof x);
    return links.emit(l, rail, b, sizeof b, pl, owner);
}

} // namespace

bool Engine::start_send(Peer& p, SendMsg* s)
{
    Link& l = links_[p.rank];
    Rail* rail = l.control_rail();
    if (rail == nullptr) {
        s->error = Errc::peer_failed;
        protocol_done(s);
        return true;
    }
    if (l.at_cap(*rail, std::min<std::uint64_t>(s->total, rail->max_frag))) {
        return false; // waits on the peer's pending list for ACKs to free room
    }
    path::Path* path = rail->path;
    const path::PathInfo& info = path->info();
    const bool sync = s->mode == SendMode::synchronous;
    // Replication: an acknowledgement owed to this process rides along on
    // a message of the program's (numbered by on_send).
    std::uint64_t piggy = 0;
    if (rep_ != nullptr && s->rep_seq != 0) [[unlikely]] {
        piggy = rep_->piggy_ack(p.rank);
    }
    const std::uint32_t ext = piggy != 0 && rail->checksum ? static_cast<std::uint32_t>(sizeof(RepExt)) : 0;
    MatchHeader h;
    h.context = s->ctx.value();
    h.tag = s->tag;
    h.msg_seq = p.next_msg_out.value();
    h.msg_len = s->total;

    // Eager only when header and payload fit one fragment of this path, and
    // of every other rail to the peer: a match fragment cannot be split
    // when its rail fails (LinkSet::split).
    std::uint64_t eager_limit = info.eager_limit;
    std::uint64_t max_frag = info.max_frag;
    if (l.multi()) [[unlikely]] {
        eager_limit = std::min(eager_limit, l.eager_floor());
        max_frag = std::min<std::uint64_t>(max_frag, l.frag_floor());
    }
    if (s->total <= eager_limit && sizeof(MatchHeader) + ext + s->total <= max_frag) {
        const auto plen = static_cast<std::uint32_t>(s->total);
        Payload pl;
        pl.ref = &s->data;
        pl.len = plen;
        // Eager data is copied for retransmission: the buffer is free at once.
        if (sync) {
            // Ssend: the full match header names the descriptor to answer.
            if (s->id == 0) {
                s->id = sends_.insert(s);
            }
            fill_base(p, h.base, FragType::match, static_cast<std::uint16_t>(flag::eager | flag::sync), plen);
            h.send_id = s->id;
            if (!emit_msg(links_, l, *rail, h, piggy, pl, nullptr)) {
                return false;
            }
        } else {
            EagerHeader e;
            fill_base(p, e.base, FragType::eager, flag::eager, plen);
            e.context = h.context;
            e.tag = h.tag;
            e.msg_seq = h.msg_seq;
            if (!emit_msg(links_, l, *rail, e, piggy, pl, nullptr)) {
                return false;
            }
        }
        if (piggy != 0) {
            rep_->piggy_sent(p.rank);
        }
        s->msg_seq = p.next_msg_out;
        ++p.next_msg_out;
        ++p.counters.msgs_sent;
        if (sync) {
            s->state = SendMsg::State::await_sync;
        } else {
            protocol_done(s);
        }
        return true;
    }

    // Rendezvous. Single copy when the path can read our memory directly
    // and the link uses that one rail; over several rails the data streams
    // over all of them (a read would carry the message over one: udp + ofi
    // to a peer carried everything by ofi reads, 39 MB/s of two 62 MB/s
    // rails). Not over a checksummed rail whose data fragments are
    // streamed (shm, Rail::streamed): there the read is checked by a CRC
    // pass on each side, one after the other (the sender's before the match
    // leaves, the receiver's after its read), while fragments copy and
    // checksum in one pass on both cores at once: with reliability on,
    // 1 MiB ping-pong 105 µs read directly, 59 µs through fragments (2 vCPU
    // AMD EPYC, docs/benchmarks.md 2026-11-28).
    std::byte key[256];
    std::size_t keylen = 0;
    const bool striped = l.stripe && l.up_rails() > 1;
    if (info.has_get && !striped && !(rail->checksum && rail->streamed) && s->total >= get_min_ &&
        (info.get_max == 0 || s->total <= info.get_max)) {
        if (s->id == 0) {
            s->id = sends_.insert(s); // (make_get_key may remember it)
        }
        keylen = make_get_key(p, *rail, s, key, sizeof key);
    }
    if (s->id == 0) {
        s->id = sends_.insert(s);
    }
    Payload pl;
    bool ok;
    if (keylen != 0) {
        fill_base(p, h.base, FragType::match,
                  static_cast<std::uint16_t>(flag::get | (sync ? flag::sync : 0)),
                  static_cast<std::uint32_t>(keylen));
        h.send_id = s->id;
        pl.bytes = key;
        pl.len = static_cast<std::uint32_t>(keylen);
        ok = emit_msg(links_, l, *rail, h, piggy, pl, nullptr);
    } else {
        std::uint64_t room = max_frag - sizeof(MatchHeader) - ext;
        auto plen = static_cast<std::uint32_t>(std::min<std::uint64_t>({s->total, room, eager_limit}));
        fill_base(p, h.base, FragType::match, static_cast<std::uint16_t>(sync ? flag::sync : 0), plen);
        h.send_id = s->id;
        pl.ref = &s->data;
        pl.len = plen;
        ok = emit_msg(links_, l, *rail, h, piggy, pl, s);
        s->next_offset = plen;
    }
    if (!ok) {
        return false;
    }
    if (piggy != 0) {
        rep_->piggy_sent(p.rank);
    }
    s->msg_seq = p.next_msg_out;
    ++p.next_msg_out;
    ++p.counters.msgs_sent;
    s->state = keylen != 0 ? SendMsg::State::await_fin : SendMsg::State::await_cts;
    return true;
}

// Streams data fragments from next_offset up to limit. False when a path ran
// out of room (the caller keeps the send on the peer's pending list).
bool Engine::continue_send(Peer& p, SendMsg* s)
{
    Link& l = links_[p.rank];
    while (s->next_offset < s->limit) {
        if (!l.alive()) {
            s->error = Errc::peer_failed;
            break;
        }
        // The link picks the rail for each fragment (striping); nullptr:
        // every rail is at its cap for now.
        const std::uint64_t left = s->limit - s->next_offset;
        Rail* rail = l.bulk_rail(std::min<std::uint64_t>(left, 65536));
        if (rail == nullptr) {
            return false;
        }
        const std::uint64_t room = rail->max_frag - sizeof(DataHeader);
        auto chunk = static_cast<std::uint32_t>(std::min<std::uint64_t>(left, room));
        DataHeader h;
        fill_base(p, h.base, FragType::data, 0, chunk);
        h.recv_id = s->recv_id;
        h.offset = s->next_offset;
        Payload pl;
        pl.ref = &s->data;
        pl.offset = s->next_offset;
        pl.len = chunk;
        if (!links_.emit(l, *rail, reinterpret_cast<std::byte*>(&h), sizeof h, pl, s)) {
            return false;
        }
        s->next_offset += chunk;
    }
    protocol_done(s);
    return true;
}

void Engine::mark_active(Peer& p)
{
    rt::OptGuard g(active_lock_);
    if (!p.active_hook.linked()) {
        active_.push_back(&p);
    }
    active_hint_.store(true, std::memory_order_release);
}

int Engine::push_pending(Peer& p)
{
    bool drained = false;
    int n = links_.push(links_[p.rank], &drained);
    if (!drained) {
        return n;
    }
    while (SendMsg* s = p.pending.front()) {
        bool ok = s->state == SendMsg::State::queued ? start_send(p, s) : continue_send(p, s);
        if (!ok) {
            return n;
        }
        if (s->hook.linked()) {
            p.pending.remove(s);
        }
        ++n;
        maybe_free(s);
    }
    rt::OptGuard g(active_lock_);
    active_.remove(&p);
    return n;
}

// The protocol needs nothing more from the peer; the MPI request completes
// once the fragments that point into its buffer are acknowledged.
void Engine::ask_cancel(Peer& p, const SendMsg& s)
{
    CancelHeader c{};
    fill_base(p, c.base, FragType::cancel, 0, 0);
    c.send_id = s.id;
    c.msg_seq = s.msg_seq.value();
    c.context = s.ctx.value();
    send_ctrl(p, &c, sizeof c);
}

// Receiver: the sender wants its message back.
void Engine::on_cancel(Peer& p, const CancelHeader& h)
{
    CancelHeader reply{};
    fill_base(p, reply.base, FragType::cancel_reply, 0, 0);
    reply.send_id = h.send_id;
    reply.msg_seq = h.msg_seq;
    reply.context = h.context;
    if (h.msg_seq >= p.expected_in.value()) {
        reply.result = CancelResult::not_arrived; // or held ahead of sequence
    } else {
        Unexpected* u = nullptr;
        {
            rt::OptGuard mg(match_lock_);
            u = matcher_.find_unexpected(ContextId(h.context), p.rank, h.msg_seq);
            if (u != nullptr) {
                matcher_.take(u);
            }
        }
        if (u != nullptr) {
            free_unexpected(u);
            reply.result = CancelResult::cancelled;
        } else {
            reply.result = CancelResult::matched;
        }
    }
    send_ctrl(p, &reply, sizeof reply);
}

void Engine::on_cancel_reply(Peer& p, const CancelHeader& h)
{
    SendMsg* s = sends_.find(h.send_id);
    if (s == nullptr || s->msg_seq.value() != h.msg_seq || !waits_for_receiver(*s)) {
        return; // it completed meanwhile (the receive came first)
    }
    if (h.result == CancelResult::cancelled) {
        s->cancelled = s->error == Errc::ok; // else interrupted (interrupt_context), not cancelled
        protocol_done(s);
    } else if (h.result == CancelResult::not_arrived) {
        ask_cancel(p, *s); // the match fragment is still on its way: ask again
    }
}

void Engine::protocol_done(SendMsg* s)
{
    s->state = SendMsg::State::done;
    if (s->id != 0) {
        sends_.erase(s->id);
        s->id = 0;
    }
    check_complete(s);
}

void Engine::check_complete(SendMsg* s)
{
    if (!s->complete && s->state == SendMsg::State::done && s->unacked == 0 && s->holds == 0) {
        s->complete = true;
    }
    maybe_free(s);
}

void Engine::release_hold(SendMsg* s)
{
    if (s->holds > 0) {
        --s->holds;
    }
    check_complete(s);
}

void Engine::repost(RecvMsg* r)
{
    r->matched = false;
    r->complete = false;
    r->error = Errc::ok;
    r->received = 0;
    r->expected = 0;
    r->send_id = 0;
    r->peer = -1;
    r->rep_seq = 0;
    r->env = Envelope{};
    if (Unexpected* u = matcher_.post_front(r)) {
        deliver_stored(r, u);
        free_unexpected(u);
    }
}

void Engine::maybe_free(SendMsg* s)
{
    if (s->released && s->complete && !s->hook.linked()) {
        send_pool_.put(s);
    }
}

// ---------------------------------------------------------------------------
// Receive side

namespace {

// The match header an eager fragment stands for (what on_match() takes).
MatchHeader match_of(const EagerHeader& e)
{
    MatchHeader h;
    h.base = e.base;
    h.base.type = FragType::match;
    h.base.flags = static_cast<std::uint8_t>((e.base.flags | flag::eager) & ~flag::sync);
    h.context = e.context;
    h.tag = e.tag;
    h.msg_seq = e.msg_seq;
    h.msg_len = e.base.payload_len;
    h.send_id = 0;
    return h;
}

// A receive matched by a message from `src` (seen as `src_view`).
[[gnu::always_inline]] inline void set_matched(RecvMsg* r, int src, int src_view, std::uint64_t rep_seq,
                                               int tag, std::uint64_t msg_len, std::uint64_t send_id)
{
    r->matched = true;
    r->peer = src;
    r->rep_seq = rep_seq;
    r->env = Envelope{src_view, tag, msg_len};
    r->expected = std::min(msg_len, r->capacity);
    r->send_id = send_id;
    if (msg_len > r->capacity) {
        r->error = Errc::truncated;
    }
}

} // namespace

// on_match() of an eager fragment in the common case: in sequence with
// nothing held back, below fine locks and without replication. It matches
// or is stored at once, without a match header (a small message's receive
// path is mostly this). False: on_match() takes it.
bool Engine::eager_in_order(Peer& p, path::Path& via, const EagerHeader& e, const std::byte* payload)
{
    if (fine_ || rep_ != nullptr || e.msg_seq != p.expected_in.value() || !p.ahead.empty()) [[unlikely]] {
        return false;
    }
    const std::uint32_t plen = e.base.payload_len;
    ++p.counters.msgs_received;
    p.counters.bytes_received += plen;
    RecvMsg* r = matcher_.arrive(ContextId(e.context), p.rank, e.tag);
    if (r == nullptr) {
        ++p.counters.unexpected;
        Unexpected* u = store_unexpected(p.rank, &via, match_of(e), payload, plen);
        u->rep_seq = 0;
        matcher_.add_unexpected(u);
    } else {
        set_matched(r, p.rank, p.rank, 0, e.tag, plen, 0);
        unpack(r->data, 0, payload, r->expected);
        r->received = r->expected;
        if (!r->released) {
            r->complete = true; // what complete_recv() does here
        } else {
            complete_recv(r);
        }
    }
    ++p.expected_in;
    return true;
}

// on_frag() with the sender's lock held (none below fine locks).
void Engine::on_frag_locked(path::Path& path, path::RxFrag& frag)
{
    Peer& p = peer(frag.peer);
    Link& l = links_[frag.peer];
    BaseHeader b = read_header<BaseHeader>(frag.data);
    const std::uint32_t hlen = header_len(b.type, b.flags);
    if (b.version != kWireVersion || hlen == 0 || frag.len < hlen ||
        (frag.addressable && frag.len != hlen + static_cast<std::size_t>(b.payload_len))) [[unlikely]] {
        if (links_.checksummed(l, path)) {
            ++l.counters.crc_header_fail; // most likely a damaged header
        } else {
            ++l.counters.bad_frags;
        }
        ULMPI_DEBUG("dropped a malformed fragment from rank %d", frag.peer);
        return;
    }
    // A payload that is not addressable (datagrams) is read into a bounce
    // buffer here, except data fragments: those land in the user buffer.
    const std::byte* payload = frag.data + hlen;
    if (!frag.addressable && !carries_data(b.type) && b.payload_len > 0) {
        p.bounce.resize(b.payload_len);
        iovec iov{p.bounce.data(), b.payload_len};
        frag.read_payload(0, &iov, 1);
        payload = p.bounce.data();
    }
    if (!links_.accept(l, path, b, hlen, frag, payload)) {
        return; // damaged, stale, a duplicate, or an ACK or probe (handled there)
    }
    if ((b.flags & flag::rep_ext) && rep_ != nullptr) [[unlikely]] {
        RepExt x;
        std::memcpy(&x, frag.data + rep_ext_at(b.type, b.flags), sizeof x);
        rep_->on_piggy_ack(p.rank, x.m);
    }
    switch (b.type) {
    case FragType::match:
        // Delivered before it is processed (its payload was checked in
        // accept): the ACK it owes then rides on the CTS that matching it
        // may send at once, instead of following alone.
        links_.delivered(l, b);
        on_match(p, path, read_header<MatchHeader>(frag.data), payload, b.payload_len);
        return;
    case FragType::eager: {
        const EagerHeader e = read_header<EagerHeader>(frag.data);
        if (!eager_in_order(p, path, e, payload)) {
            on_match(p, path, match_of(e), payload, b.payload_len);
        }
        break;
    }
    case FragType::data:
        if (!on_data(p, read_header<DataHeader>(frag.data), frag, links_.checksummed(l, path))) {
            links_.payload_corrupt(l, b);
            return;
        }
        break;
    case FragType::piece:
        // Data of a fragment split for fail-over (wire.h): DataHeader's
        // fields come first.
        if (!on_data(p, read_header<DataHeader>(frag.data), frag, links_.checksummed(l, path))) {
            links_.payload_corrupt(l, b);
            return;
        }
        links_.delivered(l, b);
        links_.piece_delivered(l, read_header<PieceHeader>(frag.data));
        return;
    case FragType::cts:
        on_cts(p, read_header<CtsHeader>(frag.data));
        break;
    case FragType::fin:
        on_fin(p, read_header<FinHeader>(frag.data));
        break;
    case FragType::cancel:
        on_cancel(p, read_header<CancelHeader>(frag.data));
        break;
    case FragType::cancel_reply:
        on_cancel_reply(p, read_header<CancelHeader>(frag.data));
        break;
    default:
        ++l.counters.bad_frags; // link-level types never get here
        return;
    }
    links_.delivered(l, b);
}

void Engine::on_frag_fine(path::Path& path, path::RxFrag& frag)
{
    rt::OptGuard pg(peer(frag.peer).lock); // under the engine's read lock (progress)
    on_frag_locked(path, frag);
}

void Engine::on_frag(path::Path& path, path::RxFrag& frag)
{
    if (frag.len < sizeof(BaseHeader) || frag.peer < 0 || frag.peer >= size_) [[unlikely]] {
        return;
    }
    if (fine_) [[unlikely]] {
        on_frag_fine(path, frag);
        return;
    }
    on_frag_locked(path, frag);
}

void Engine::on_match(Peer& p, path::Path& via, const MatchHeader& h, const std::byte* payload,
                      std::uint32_t plen)
{
    ++p.counters.msgs_received;
    p.counters.bytes_received += (h.base.flags & flag::get) ? 0 : plen;
    if (h.msg_seq != p.expected_in.value()) [[unlikely]] {
        if (h.msg_seq < p.expected_in.value()) {
            return; // an old duplicate
        }
        // Ahead of sequence: hold it, sorted, until the gap fills. Searched
        // from the back: behind one gap, later messages arrive in order.
        Unexpected* after = p.ahead.back();
        while (after != nullptr && after->hdr.msg_seq > h.msg_seq) {
            after = p.ahead.prev(after);
        }
        if (after != nullptr && after->hdr.msg_seq == h.msg_seq) {
            return; // a duplicate of one already held
        }
        ++p.counters.out_of_order;
        Unexpected* u = store_unexpected(p.rank, &via, h, payload, plen);
        p.ahead.insert_before(after != nullptr ? p.ahead.next(after) : p.ahead.front(), u);
        return;
    }
    deliver_in_order(p, &via, h, payload, plen, nullptr);
    ++p.expected_in;
    while (Unexpected* u = p.ahead.front()) {
        if (u->hdr.msg_seq != p.expected_in.value()) {
            break;
        }
        p.ahead.remove(u);
        deliver_in_order(p, u->via, u->hdr, u->payload(), u->payload_len, u);
        ++p.expected_in;
    }
}

void Engine::deliver_in_order(Peer& p, path::Path* via, const MatchHeader& h,
                              const std::byte* payload, std::uint32_t plen, Unexpected* stored)
{
    if (!fine_) [[likely]] {
        int src = p.rank;
        std::uint64_t rep_seq = 0;
        if (rep_ != nullptr) [[unlikely]] {
            src = rep_->logical_of(p.rank);
            rep_seq = rep_->on_arrival(p.rank, ContextId(h.context));
        }
        RecvMsg* r = matcher_.arrive(ContextId(h.context), src, h.tag);
        if (r == nullptr) {
            ++p.counters.unexpected;
            Unexpected* u = stored != nullptr ? stored : store_unexpected(p.rank, via, h, payload, plen);
            u->src = src;
            u->rep_seq = rep_seq;
            matcher_.add_unexpected(u);
            return;
        }
        deliver_matched(r, via, h, payload, plen, p.rank, src, rep_seq);
        if (stored != nullptr) {
            free_unexpected(stored);
        }
        return;
    }
    RecvMsg* r = nullptr;
    {
        // Arrive and store as one step: a receive posted meanwhile would
        // otherwise miss the message (irecv_into posts under this lock).
        rt::OptGuard mg(match_lock_);
        r = matcher_.arrive(ContextId(h.context), p.rank, h.tag);
        if (r == nullptr) {
            ++p.counters.unexpected;
            matcher_.add_unexpected(stored != nullptr ? stored
                                                      : store_unexpected(p.rank, via, h, payload, plen));
            return;
        }
    }
    deliver_matched(r, via, h, payload, plen, p.rank, p.rank, 0);
    if (stored != nullptr) {
        free_unexpected(stored);
    }
}

void Engine::deliver_matched(RecvMsg* r, path::Path* via, const MatchHeader& h,
                             const std::byte* payload, std::uint32_t plen, int src, int src_view,
                             std::uint64_t rep_seq)
{
    Peer& p = peer(src);
    set_matched(r, src, src_view, rep_seq, h.tag, h.msg_len, h.send_id);
    const std::uint8_t flags = h.base.flags;

    if (flags & flag::eager) {
        // Whole: deliverable even when the sender has failed since.
        unpack(r->data, 0, payload, std::min<std::uint64_t>(plen, r->expected));
        r->received = r->expected;
        if (flags & flag::sync) {
            CtsHeader c{};
            fill_base(p, c.base, FragType::cts, 0, 0);
            c.send_id = h.send_id;
            c.recv_id = 0;
            c.offset = h.msg_len;
            c.length = h.msg_len;
            send_ctrl(p, &c, sizeof c);
        }
        complete_recv(r);
        return;
    }
    if (!links_[src].alive()) {
        // The rest of the message was to come from a process that failed.
        if (rep_ != nullptr) {
            rep_->on_recv_orphaned(*r); // another replica of the sender will send it
            return;
        }
        r->error = Errc::peer_failed;
        complete_recv(r);
        return;
    }

    if (flags & flag::get) {
        if (!reads_well(r->data)) {
            ask_stream(p, r, h.send_id);
            return;
        }
        if (start_direct(r, via, src, h.send_id, payload, plen)) {
            return; // under way: on_get_done() answers and completes it
        }
        if (read_direct(r, via, src, payload, plen)) {
            FinHeader f{};
            fill_base(p, f.base, FragType::fin, 0, 0);
            f.send_id = h.send_id;
            send_ctrl(p, &f, sizeof f);
            r->received = r->expected;
            complete_recv(r);
            return;
        }
        // The path cannot read after all (or the data did not check): ask
        // the sender to stream it.
        ask_stream(p, r, h.send_id);
        return;
    }

    // Rendezvous with the first bytes in this fragment.
    std::uint64_t first = std::min<std::uint64_t>(plen, r->expected);
    unpack(r->data, 0, payload, first);
    r->received = first;
    CtsHeader c{};
    fill_base(p, c.base, FragType::cts, 0, 0);
    c.send_id = h.send_id;
    c.offset = plen;
    c.length = r->expected;
    if (first >= r->expected) {
        c.recv_id = 0;
        send_ctrl(p, &c, sizeof c);
        complete_recv(r);
        return;
    }
    r->id = recvs_.insert(r);
    c.recv_id = r->id;
    send_ctrl(p, &c, sizeof c);
}

// A message the receiver meant to read (flag::get) and cannot: the sender
// streams all of it (cts from offset 0).
void Engine::ask_stream(Peer& p, RecvMsg* r, std::uint64_t send_id)
{
    r->received = 0;
    r->id = recvs_.insert(r);
    CtsHeader c{};
    fill_base(p, c.base, FragType::cts, 0, 0);
    c.send_id = send_id;
    c.recv_id = r->id;
    c.offset = 0;
    c.length = r->expected;
    send_ctrl(p, &c, sizeof c);
    if (r->expected == 0) {
        recvs_.erase(r->id);
        r->id = 0;
        complete_recv(r);
    }
}

// The key a single-copy read needs: what the path's make_rkey writes, behind
// a GetPrefix. Over a checksummed rail the prefix carries the CRC32C of the
// whole message, which the receiver checks after its read (a direct read is
// otherwise unverified). 0: no key (the message streams instead).
//
// A contiguous message whose bytes another send to the same peer still
// under way was checksummed for (the same address and length) takes that
// CRC without reading the bytes again: MPI forbids changing a send buffer
// until its send completes, so they are the bytes that send summed. (A
// window of sends of one buffer, or the same data to a peer several times,
// costs one pass instead of one per send; a program that writes into a
// buffer still being sent gets a CRC failure at the receiver, which then
// asks for a stream.)
std::size_t Engine::make_get_key(Peer& p, Rail& rail, SendMsg* s, std::byte* key, std::size_t cap)
{
    iovec iov[kMaxIov];
    std::uint64_t covered = 0;
    const int n = to_iovec(s->data, 0, s->total, iov, kMaxIov, &covered);
    if (covered != s->total || cap < sizeof(GetPrefix)) {
        return 0;
    }
    GetPrefix pre{};
    if (rail.checksum) {
        pre.checked = 1;
        Peer::GetCrc& m = p.get_crc;
        const auto* base = static_cast<const std::byte*>(iov[0].iov_base);
        const SendMsg* o = nullptr;
        if (n == 1 && m.send_id != 0 && m.send_id != s->id && m.base == base && m.len == s->total) {
            o = sends_.find(m.send_id); // under way (protocol_done takes it out)
        }
        if (o != nullptr && o->data.contiguous_base() == base && o->total == s->total) {
            pre.crc = m.crc;
            ++p.counters.get_crc_reused;
        } else {
            for (int i = 0; i < n; ++i) {
                pre.crc = rt::crc32c(iov[i].iov_base, iov[i].iov_len, pre.crc);
            }
            if (n == 1) {
                m = Peer::GetCrc{s->id, base, s->total, pre.crc};
            }
        }
    }
    const std::size_t k = rail.path->make_rkey(iov, n, key + sizeof pre, cap - sizeof pre);
    if (k == 0) {
        return 0;
    }
    std::memcpy(key, &pre, sizeof pre);
    return sizeof pre + k;
}

// Reads a message's bytes straight from the sender's memory (flag::get), in
// slices of kMaxIov segments, over the path the key came by. False: the
// path could not, or the bytes failed their checksum; the caller asks the
// sender to stream instead.
bool Engine::read_direct(RecvMsg* r, path::Path* via, int src, const std::byte* key, std::uint32_t keylen)
{
    if (via == nullptr || keylen < sizeof(GetPrefix)) {
        return false;
    }
    GetPrefix pre;
    std::memcpy(&pre, key, sizeof pre);
    if (pre.checked != 0 && r->expected != r->env.msg_len) {
        return false; // truncated: the message's checksum cannot be checked on part of it
    }
    std::uint64_t pos = 0;
    std::uint32_t crc = 0;
    while (pos < r->expected) {
        iovec iov[kMaxIov];
        std::uint64_t covered = 0;
        const int n = to_iovec(r->data, pos, r->expected - pos, iov, kMaxIov, &covered);
        if (!via->get(src, key + sizeof pre, keylen - sizeof pre, pos, iov, n).ok()) {
            return false;
        }
        if (pre.checked != 0) {
            for (int i = 0; i < n; ++i) {
                crc = rt::crc32c(iov[i].iov_base, iov[i].iov_len, crc);
            }
        }
        pos += covered;
    }
    if (pre.checked != 0 && crc != pre.crc) {
        ++links_[src].counters.crc_payload_fail;
        return false;
    }
    return true;
}

bool Engine::on_data(Peer& p, const DataHeader& h, path::RxFrag& frag, bool checksum)
{
    RecvMsg* r = recvs_.find(h.recv_id);
    if (r == nullptr || r->complete) {
        return true; // stale: the receive completed or was never ours
    }
    std::uint64_t n = h.base.payload_len;
    if (h.offset >= r->expected) {
        n = 0;
    } else if (h.offset + n > r->expected) {
        n = r->expected - h.offset;
    }
    if (frag.addressable) {
        const std::byte* src = frag.data + header_len(h.base.type, h.base.flags);
        if (checksum && (h.base.flags & flag::crc)) {
            // Copy and checksum in one pass, also for the data of long
            // messages that the sender copied then checksummed
            // (kCachedCopyMin): our destination is no other core's, and
            // one pass over the fragment beats two. Bytes beyond the
            // receive buffer (truncation) are checksummed without being
            // copied.
            std::uint32_t crc = unpack_crc(r->data, h.offset, src, n);
            if (n < h.base.payload_len) {
                crc = rt::crc32c(src + n, h.base.payload_len - n, crc);
            }
            if (crc != h.base.pcrc) {
                return false; // the bytes will be overwritten by the resend
            }
        } else {
            unpack(r->data, h.offset, src, n);
        }
    } else {
        iovec iov[kMaxIov];
        std::uint64_t done = 0;
        std::uint32_t crc = 0;
        while (done < n) {
            std::uint64_t covered = 0;
            int cnt = to_iovec(r->data, h.offset + done, n - done, iov, kMaxIov, &covered);
            frag.read_payload(done, iov, cnt);
            if (checksum) {
                for (int i = 0; i < cnt; ++i) {
                    crc = rt::crc32c(iov[i].iov_base, iov[i].iov_len, crc);
                }
            }
            done += covered;
        }
        if (n < h.base.payload_len) {
            p.bounce.resize(h.base.payload_len - n);
            iovec rest{p.bounce.data(), p.bounce.size()};
            frag.read_payload(n, &rest, 1);
            if (checksum) {
                crc = rt::crc32c(p.bounce.data(), p.bounce.size(), crc);
            }
        }
        if (checksum && (h.base.flags & flag::crc) && crc != h.base.pcrc) {
            return false;
        }
    }
    p.counters.bytes_received += n;
    r->received += n;
    if (r->received >= r->expected) {
        recvs_.erase(r->id);
        r->id = 0;
        complete_recv(r);
    }
    return true;
}

void Engine::on_cts(Peer& p, const CtsHeader& h)
{
    SendMsg* s = sends_.find(h.send_id);
    if (s == nullptr) {
        return;
    }
    if (s->state == SendMsg::State::await_sync) {
        protocol_done(s);
        return;
    }
    if (s->state != SendMsg::State::await_cts && s->state != SendMsg::State::await_fin) {
        return;
    }
    s->recv_id = h.recv_id;
    s->next_offset = h.offset;
    s->limit = h.length;
    s->state = SendMsg::State::sending;
    if (!p.pending.empty() || !continue_send(p, s)) {
        if (!s->hook.linked()) {
            // Data streams go ahead of queued match fragments, so that they
            // do not wait behind later messages, and behind the streams
            // granted before them: messages finish in the order they were
            // granted (a stream put first took the rail from the one before
            // it, and a window of messages finished all at once, late).
            SendMsg* at = p.pending.front();
            while (at != nullptr && at->state != SendMsg::State::queued) {
                at = p.pending.next(at);
            }
            if (at != nullptr) {
                p.pending.insert_before(at, s);
            } else {
                p.pending.push_back(s);
            }
            mark_active(p);
        }
    }
}

void Engine::on_fin(Peer& p, const FinHeader& h)
{
    (void)p;
    SendMsg* s = sends_.find(h.send_id);
    if (s == nullptr || s->state != SendMsg::State::await_fin) {
        return;
    }
    protocol_done(s);
}

void Engine::complete_recv(RecvMsg* r)
{
    if (fine_) {
        // The owner may be waiting without a lock and may drop a
        // descriptor of its stack once it sees `complete`: setting it is
        // the last touch. `released` only changes under write (release()).
        if (!r->released) {
            r->complete = true;
            return;
        }
        if (r->id != 0) {
            recvs_.erase(r->id);
        }
        recv_pool_.put(r);
        return;
    }
    r->complete = true;
    if (rep_ != nullptr && r->matched && (r->error == Errc::ok || r->error == Errc::truncated)) [[unlikely]] {
        rep_->on_recv_complete(*r);
    }
    if (r->released) {
        if (r->id != 0) {
            recvs_.erase(r->id);
        }
        recv_pool_.put(r);
    }
}

Unexpected* Engine::store_unexpected(int peer, path::Path* via, const MatchHeader& h,
                                     const std::byte* payload, std::uint32_t plen)
{
    Unexpected* u = unexpected_pool_.get();
    if (u == nullptr) {
        rt::fatal("out of memory storing an unexpected message from rank %d", peer);
    }
    u->hdr = h;
    u->peer = peer;
    u->src = peer;
    u->via = via;
    u->payload_len = plen;
    if (plen > Unexpected::kInline) {
        u->heap = static_cast<std::byte*>(std::malloc(plen));
        if (u->heap == nullptr) {
            rt::fatal("out of memory storing a %u-byte unexpected message from rank %d", plen, peer);
        }
        std::memcpy(u->heap, payload, plen);
    } else if (plen > 0) {
        std::memcpy(u->inline_payload, payload, plen);
    }
    return u;
}

void Engine::free_unexpected(Unexpected* u)
{
    std::free(u->heap);
    unexpected_pool_.put(u);
}

} // namespace ulmpi::ulm
