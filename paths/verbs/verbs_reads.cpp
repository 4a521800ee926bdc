// The verbs path's rendezvous (verbs_path.h, "Rendezvous"): keys for the
// sender's memory (make_rkey), and RDMA reads of it by the receiver, waited
// for (get) or started and reported later (start_get).
#include "paths/verbs/verbs_path.h"

#include "runtime/clock.h"
#include "runtime/log.h"

#include <algorithm>
#include <cstring>

namespace ulmpi::path::verbs {
namespace {

struct RkeyHead {
    std::uint32_t n;
    std::uint32_t version;
};
struct RkeyEntry {
    std::uint64_t addr;
    std::uint64_t len;
    std::uint32_t rkey;
    std::uint32_t pad;
};

} // namespace

std::size_t VerbsPath::make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap)
{
    const std::size_t need = sizeof(RkeyHead) + static_cast<std::size_t>(iovcnt) * sizeof(RkeyEntry);
    if (!open_ || need > cap || iovcnt <= 0) {
        return 0;
    }
    auto* o = static_cast<std::byte*>(out);
    RkeyHead head{static_cast<std::uint32_t>(iovcnt), kWireVersion};
    std::memcpy(o, &head, sizeof head);
    for (int i = 0; i < iovcnt; ++i) {
        Mr* mr = cache_->acquire(iov[i].iov_base, iov[i].iov_len, access::remote_read);
        if (mr == nullptr) {
            return 0;
        }
        RkeyEntry e{reinterpret_cast<std::uint64_t>(iov[i].iov_base), iov[i].iov_len, mr->rkey, 0};
        std::memcpy(o + sizeof head + static_cast<std::size_t>(i) * sizeof e, &e, sizeof e);
    }
    return need;
}

Status VerbsPath::plan_read(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                            const iovec* local, int nlocal, std::vector<ReadPiece>& out, std::uint64_t& bytes)
{
    if (peer < 0 || peer >= job_.size || rkey_len < sizeof(RkeyHead)) {
        return Errc::protocol;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (!open_ || !p.reach || broken(p) || !port_up_) {
        return Errc::unreachable;
    }
    const auto* k = static_cast<const std::byte*>(rkey);
    RkeyHead head;
    std::memcpy(&head, k, sizeof head);
    if (head.version != kWireVersion || rkey_len != sizeof head + std::size_t{head.n} * sizeof(RkeyEntry)) {
        return Errc::protocol;
    }
    auto entry = [&](std::size_t i) {
        RkeyEntry e;
        std::memcpy(&e, k + sizeof head + i * sizeof e, sizeof e);
        return e;
    };
    // Skip to remote_offset.
    std::size_t ri = 0;
    std::uint64_t ro = remote_offset;
    while (ri < head.n && ro >= entry(ri).len) {
        ro -= entry(ri).len;
        ++ri;
    }
    out.clear();
    bytes = 0;
    for (int li = 0; li < nlocal; ++li) {
        if (local[li].iov_len == 0) {
            continue;
        }
        Mr* mr = cache_->acquire(local[li].iov_base, local[li].iov_len, access::local_write);
        if (mr == nullptr) {
            return Errc::no_memory;
        }
        std::uint64_t lo = 0;
        while (lo < local[li].iov_len) {
            if (ri >= head.n) {
                return Errc::protocol; // the key covers less than asked
            }
            const RkeyEntry re = entry(ri);
            const std::uint64_t n = std::min<std::uint64_t>({local[li].iov_len - lo, re.len - ro, opt_.read_chunk});
            out.push_back(ReadPiece{static_cast<std::byte*>(local[li].iov_base) + lo, n, re.addr + ro, re.rkey,
                                    mr->lkey});
            bytes += n;
            lo += n;
            ro += n;
            if (ro == re.len) {
                ++ri;
                ro = 0;
            }
        }
    }
    return Errc::ok;
}

Status VerbsPath::get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                      const iovec* local, int nlocal)
{
    std::vector<ReadPiece> plan;
    std::uint64_t bytes = 0;
    if (Status st = plan_read(peer, rkey, rkey_len, remote_offset, local, nlocal, plan, bytes); !st.ok()) {
        return st;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    // The send queue's number of our last read, plus one: the receive side
    // may post credit writes on this queue pair in between ("Threads"), and
    // completions come in order, so this one's completion covers them all.
    std::uint64_t end = 0;
    for (const ReadPiece& pc : plan) {
        p.lock.lock();
        while (!has_slot(p)) {
            p.lock.unlock(); // the send queue's reader takes the peer locks
            poll_send();
            p.lock.lock();
            if (p.broken) {
                p.lock.unlock();
                return Errc::io_error;
            }
        }
        const bool ok = post_read(peer, pc, kReadTok);
        end = p.posted;
        p.lock.unlock();
        if (!ok) {
            return Errc::io_error;
        }
    }
    // Wait for every read: the last one's completion covers them all.
    const rt::Nanos limit = rt::now_ns() + 60 * rt::Nanos{1000000000};
    for (;;) {
        {
            rt::OptGuard hold(p.lock);
            if (p.done >= end) {
                break;
            }
            if (p.broken) {
                return Errc::io_error;
            }
            if (rt::now_ns() > limit) {
                break_peer(peer, "RDMA read did not complete in 60 s");
                return Errc::timeout;
            }
        }
        poll_send();
    }
    bump(counters_.gets);
    bump(counters_.get_bytes, bytes);
    return Errc::ok;
}

bool VerbsPath::post_read(int peer, const ReadPiece& pc, std::uint32_t tok)
{
    Sge s{reinterpret_cast<std::uint64_t>(pc.local), static_cast<std::uint32_t>(pc.len),
          static_cast<std::uint32_t>(pc.ldesc)};
    SendWr wr;
    wr.op = Op::rdma_read;
    wr.sg = &s;
    wr.nsge = 1;
    wr.remote_addr = pc.raddr;
    wr.rkey = static_cast<std::uint32_t>(pc.rkey);
    return post(peer, wr, tok);
}

Status VerbsPath::start_get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                            const iovec* local, int nlocal, std::uint64_t token)
{
    if (!open_) {
        return Errc::unreachable;
    }
    if (reads_.used() >= kGetDepth) {
        return Errc::again;
    }
    std::vector<ReadPiece> plan;
    std::uint64_t bytes = 0;
    if (Status st = plan_read(peer, rkey, rkey_len, remote_offset, local, nlocal, plan, bytes); !st.ok()) {
        return st;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    rt::OptGuard hold(p.lock);
    rt::OptGuard g(reads_lock_);
    const std::uint32_t i = reads_.open(plan, bytes, token, peer, false);
    if (i == ReadTable::kNone) {
        return Errc::again;
    }
    if (!reads_.at(i).ended) { // (nothing to read: reported by the next progress())
        pump_peer_locked(peer);
    }
    return Errc::ok;
}

void VerbsPath::pump_peer_locked(int peer)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    // A quarter of the send queue stays for sends and credit writes.
    const std::uint64_t room = opt_.qp_depth - opt_.qp_depth / 4;
    for (std::size_t k = 0; k < reads_.queue().size();) {
        const std::uint32_t qi = reads_.queue()[k];
        ReadTable::Read& q = reads_.at(qi);
        if (q.peer != peer) {
            ++k;
            continue;
        }
        if (p.broken) {
            reads_.stop(qi, Errc::io_error); // the queue pair is in error: nothing more of it goes
        }
        while (q.next < q.pieces.size() && reads_.piece_slot_free() && p.posted - p.done < room) {
            if (!post_read(peer, q.pieces[q.next], kPieceTok + reads_.next_piece_slot())) {
                reads_.stop(qi, Errc::io_error); // the queue pair broke
                break;
            }
            reads_.posted(qi);
        }
        if (!reads_.settle(k)) {
            break; // no room: the peer's later reads wait behind this one
        }
    }
}

void VerbsPath::pump_reads()
{
    if (!reads_.queued()) {
        return;
    }
    pump_peers_.clear();
    {
        rt::OptGuard g(reads_lock_);
        for (std::uint32_t qi : reads_.queue()) {
            const int r = reads_.at(qi).peer;
            if (std::find(pump_peers_.begin(), pump_peers_.end(), r) == pump_peers_.end()) {
                pump_peers_.push_back(r);
            }
        }
    }
    for (int r : pump_peers_) {
        Peer& p = peers_[static_cast<std::size_t>(r)];
        rt::OptGuard hold(p.lock);
        rt::OptGuard g(reads_lock_);
        pump_peer_locked(r);
    }
}

void VerbsPath::on_piece_done(std::uint32_t slot, WcStatus st)
{
    rt::OptGuard g(reads_lock_);
    piece_done_locked(slot, st);
}

void VerbsPath::piece_done_locked(std::uint32_t slot, WcStatus st)
{
    reads_.piece_done(slot, st == WcStatus::success         ? Status{Errc::ok}
                            : st == WcStatus::rem_access_err ? Status{Errc::protocol}
                                                             : Status{Errc::io_error});
}

void VerbsPath::read_ending(ReadTable::Read& q)
{
    if (q.result.ok()) {
        bump(counters_.gets);
        bump(counters_.get_bytes, q.bytes);
    }
}

bool VerbsPath::abandon_gets(int peer)
{
    if (!open_ || !info_.can_fail || peer < 0 || peer >= job_.size) {
        return false;
    }
    int n = 0;
    std::size_t left = 0;
    {
        rt::OptGuard g(reads_lock_);
        n = reads_.abandon_peer(peer, Errc::io_error);
        left = reads_.orphans();
    }
    if (n > 0) {
        ULMPI_DEBUG("verbs: %s: %d reads from rank %d given up (%zu pieces still posted)", name_.c_str(), n,
                    peer, left);
    }
    return true;
}

std::size_t VerbsPath::orphan_reads() const
{
    rt::OptGuard g(reads_lock_);
    return reads_.orphans();
}

std::size_t VerbsPath::pieces_in_flight() const
{
    rt::OptGuard g(reads_lock_);
    return reads_.pieces_busy();
}

void VerbsPath::free_pieces(const std::vector<std::uint32_t>& ring)
{
    rt::OptGuard g(reads_lock_);
    for (std::uint32_t t : ring) {
        if (is_piece(t)) {
            // The queue pair is destroyed: the device completes it never.
            piece_done_locked(t - kPieceTok, WcStatus::wr_flush_err);
        }
    }
}

void VerbsPath::report_reads(Sink& sink)
{
    if (!reads_.ended_any()) {
        return;
    }
    std::vector<std::pair<std::uint64_t, Status>> now;
    {
        rt::OptGuard g(reads_lock_);
        reads_.take_ended(now);
    }
    // The sink may start reads (and send its fin) from here: no lock held.
    for (const auto& [token, st] : now) {
        sink.on_get_done(*this, token, st);
    }
}

} // namespace ulmpi::path::verbs
