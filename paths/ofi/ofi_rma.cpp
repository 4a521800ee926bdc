// The ofi path's remote reads (the single-copy rendezvous): registrations
// of the sender's memory for remote reads (make_rkey, a small cache) and
// the reads by fi_read (get).
#include "paths/ofi/ofi_path.h"
#include "paths/ofi/ofi_util.h"

#include "runtime/log.h"

#include <rdma/fi_rma.h>

#include <algorithm>
#include <cstring>
#include <sched.h>

namespace ulmpi::path::ofi {

fid_mr* OfiPath::cached_mr(const void* addr, std::size_t len)
{
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    const rt::Nanos now = rt::now_ns();
    rt::OptGuard hold(mrs_lock_);
    for (Reg& r : mrs_) {
        if (r.addr == a && r.len == len) {
            r.used = now;
            return r.mr;
        }
    }
    fid_mr* mr = nullptr;
    if (!register_mr(addr, len, FI_REMOTE_READ, mr).ok()) {
        return nullptr;
    }
    if (mrs_.size() >= opt_.rkey_cache) {
        // The least recently used goes (a read of it still to come fails
        // with a key error, and ULM streams that message instead).
        auto lru = std::min_element(mrs_.begin(), mrs_.end(),
                                    [](const Reg& x, const Reg& y) { return x.used < y.used; });
        rt::OptGuard g(dom_);
        close_fid(lru->mr);
        *lru = Reg{a, len, mr, now};
    } else {
        mrs_.push_back(Reg{a, len, mr, now});
    }
    return mr;
}

void OfiPath::expire_mrs(rt::Nanos now)
{
    rt::OptGuard hold(mrs_lock_);
    if (mrs_.empty()) {
        return;
    }
    auto old = [&](Reg& r) {
        if (now - r.used > kMrIdle) {
            rt::OptGuard g(dom_);
            close_fid(r.mr);
            return true;
        }
        return false;
    };
    mrs_.erase(std::remove_if(mrs_.begin(), mrs_.end(), old), mrs_.end());
}

std::size_t OfiPath::make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap)
{
    const std::size_t need = sizeof(RkeyHead) + static_cast<std::size_t>(iovcnt) * sizeof(RkeyEntry);
    if (!open_ || !info_.has_get || need > cap || iovcnt <= 0) {
        return 0;
    }
    auto* o = static_cast<std::byte*>(out);
    const RkeyHead head{static_cast<std::uint32_t>(iovcnt), kWireVersion};
    std::memcpy(o, &head, sizeof head);
    for (int i = 0; i < iovcnt; ++i) {
        RkeyEntry e{reinterpret_cast<std::uint64_t>(iov[i].iov_base), iov[i].iov_len, 0};
        if (iov[i].iov_len > 0) {
            fid_mr* mr = cached_mr(iov[i].iov_base, iov[i].iov_len);
            if (mr == nullptr) {
                return 0;
            }
            e.key = fi_mr_key(mr);
        }
        std::memcpy(o + sizeof head + static_cast<std::size_t>(i) * sizeof e, &e, sizeof e);
    }
    exposed_at_.store(rt::now_ns(), std::memory_order_relaxed);
    return need;
}

Status OfiPath::plan_get(int peer, const void* rkey, std::size_t rkey_len,
                         std::uint64_t remote_offset, const iovec* local, int nlocal, Plan& req)
{
    if (!info_.has_get || peer < 0 || peer >= job_.size || rkey_len < sizeof(RkeyHead)) {
        return Errc::protocol;
    }
    const Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (!p.reach) {
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
    const bool virt = (fi_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    const bool local_mr = (fi_->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
    std::size_t ri = 0;
    std::uint64_t ro = remote_offset;
    while (ri < head.n && ro >= entry(ri).len) {
        ro -= entry(ri).len;
        ++ri;
    }
    req.pieces.clear();
    req.bytes = 0;
    for (int li = 0; li < nlocal; ++li) {
        std::uint64_t lo = 0;
        while (lo < local[li].iov_len) {
            if (ri >= head.n) {
                return Errc::protocol; // the key covers less than asked
            }
            const RkeyEntry re = entry(ri);
            const std::uint64_t n = std::min<std::uint64_t>({local[li].iov_len - lo, re.len - ro, opt_.read_chunk});
            req.pieces.push_back(ReadPiece{static_cast<std::byte*>(local[li].iov_base) + lo, n,
                                           (virt ? re.addr : 0) + ro, re.key, 0});
            req.bytes += n;
            lo += n;
            ro += n;
            if (ro == re.len) {
                ++ri;
                ro = 0;
            }
        }
    }
    if (local_mr) {
        // The reader's segments registered once each; every piece of a
        // segment carries its descriptor.
        std::size_t at = 0;
        for (int li = 0; li < nlocal; ++li) {
            if (local[li].iov_len == 0) {
                continue;
            }
            fid_mr* mr = nullptr;
            if (!register_mr(local[li].iov_base, local[li].iov_len, FI_READ, mr).ok()) {
                close_locals(req.locals);
                return Errc::no_memory;
            }
            req.locals.push_back(mr);
            const auto* base = static_cast<const std::byte*>(local[li].iov_base);
            for (; at < req.pieces.size() && req.pieces[at].local >= base &&
                   req.pieces[at].local < base + local[li].iov_len;
                 ++at) {
                req.pieces[at].ldesc = reinterpret_cast<std::uintptr_t>(fi_mr_desc(mr));
            }
        }
    }
    req.peer = peer;
    return Errc::ok;
}

void OfiPath::close_locals(std::vector<fid_mr*>& mrs)
{
    for (fid_mr*& mr : mrs) {
        rt::OptGuard g(dom_);
        close_fid(mr);
    }
    mrs.clear();
}

std::uint32_t OfiPath::enqueue_get(Plan& planned, std::uint64_t token, bool sync)
{
    rt::OptGuard g(gets_lock_);
    // start_get() reads take at most kGetDepth slots: the others are
    // get()'s, which ends its reads itself (slots ended by start_get()
    // wait for a progress() with a sink to be reported and freed).
    const std::uint32_t i = reads_.open(planned.pieces, planned.bytes, token, planned.peer, sync);
    if (i == ReadTable::kNone) {
        return i;
    }
    locals_[i].swap(planned.locals);
    if (reads_.at(i).ended) {
        close_locals(locals_[i]); // nothing to read: ended already
    } else {
        pump_gets_locked();
    }
    return i;
}

void OfiPath::pump_gets()
{
    if (!reads_.queued()) {
        return;
    }
    rt::OptGuard g(gets_lock_);
    pump_gets_locked();
}

void OfiPath::pump_gets_locked()
{
    while (!reads_.queue().empty() && reads_.piece_slot_free()) {
        const std::uint32_t qi = reads_.queue().front();
        ReadTable::Read& q = reads_.at(qi);
        const ReadPiece& pc = q.pieces[q.next];
        const std::uint32_t slot = reads_.next_piece_slot();
        Op& op = read_ops_[slot];
        op.peer = q.peer;
        const fi_addr_t from = q.peer >= 0 ? peers_[static_cast<std::size_t>(q.peer)].addr : FI_ADDR_UNSPEC;
        ssize_t rc = -FI_EHOSTUNREACH; // the peer was reset meanwhile
        if (from != FI_ADDR_UNSPEC) {
            rt::OptGuard d(dom_);
            rc = fi_read(ep_, pc.local, pc.len, reinterpret_cast<void*>(pc.ldesc), from, pc.raddr, pc.rkey,
                         &op.ctx);
        }
        if (rc == -FI_EAGAIN) {
            return; // the provider's queue is full: again after its completions
        }
        if (rc != 0) {
            mark_down(q.peer, lib::strerror(static_cast<int>(-rc)));
            reads_.stop(qi, Errc::io_error); // nothing more of it goes
        } else {
            reads_.posted(qi);
        }
        reads_.settle(0);
    }
}

void OfiPath::on_read_done(Op& op, int err)
{
    reads_.piece_done(op.index, err == 0 ? Status{Errc::ok}
                                         : Status{key_error(err) ? Errc::protocol : Errc::io_error});
}

void OfiPath::read_ending(std::uint32_t i, ReadTable::Read& q)
{
    close_locals(locals_[i]);
    if (q.result.ok()) {
        bump(counters_.gets);
        bump(counters_.get_bytes, q.bytes);
    }
}

void OfiPath::check_reads(rt::Nanos now)
{
    if (reads_.used() == 0) {
        return;
    }
    rt::OptGuard g(gets_lock_);
    for (std::uint32_t i = 0; i < reads_.slots(); ++i) {
        const ReadTable::Read& q = reads_.at(i);
        if (!q.used || q.ended || now - q.started <= kReadLimit) {
            continue;
        }
        mark_down(q.peer, "remote reads did not complete in 60 s");
        reads_.abandon(i, Errc::timeout);
    }
}

bool OfiPath::abandon_gets(int peer)
{
    if (!open_ || !info_.can_fail || peer < 0 || peer >= job_.size) {
        return false;
    }
    int n = 0;
    {
        rt::OptGuard g(gets_lock_);
        n = reads_.abandon_peer(peer, Errc::io_error);
    }
    if (n > 0) {
        ULMPI_DEBUG("ofi: %d reads from rank %d given up (%zu pieces still posted)", n, peer, orphan_reads());
    }
    return true;
}

std::size_t OfiPath::orphan_reads() const
{
    rt::OptGuard g(gets_lock_);
    return reads_.orphans();
}

void OfiPath::report_gets(Sink& sink)
{
    if (!reads_.ended_any()) {
        return;
    }
    reports_.clear();
    {
        rt::OptGuard g(gets_lock_);
        reads_.take_ended(reports_);
    }
    // The sink may start reads and send (its fin) from here.
    std::vector<std::pair<std::uint64_t, Status>> now;
    now.swap(reports_);
    for (const auto& [token, st] : now) {
        sink.on_get_done(*this, token, st);
    }
    reported_ += static_cast<int>(now.size());
    now.clear();
    if (reports_.empty()) {
        reports_.swap(now); // keep the capacity
    }
}

std::size_t OfiPath::reads_in_flight() const
{
    rt::OptGuard g(gets_lock_);
    return reads_.pieces_busy();
}

Status OfiPath::start_get(int peer, const void* rkey, std::size_t rkey_len,
                          std::uint64_t remote_offset, const iovec* local, int nlocal,
                          std::uint64_t token)
{
    if (!open_) {
        return Errc::unreachable;
    }
    if (reads_.used() >= kGetDepth) {
        return Errc::again;
    }
    Plan plan;
    if (Status st = plan_get(peer, rkey, rkey_len, remote_offset, local, nlocal, plan); !st.ok()) {
        return st;
    }
    if (enqueue_get(plan, token, false) == ReadTable::kNone) {
        close_locals(plan.locals);
        return Errc::again;
    }
    return Errc::ok;
}

Status OfiPath::get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                    const iovec* local, int nlocal)
{
    if (!open_) {
        return Errc::unreachable;
    }
    Plan plan;
    if (Status st = plan_get(peer, rkey, rkey_len, remote_offset, local, nlocal, plan); !st.ok()) {
        return st;
    }
    std::uint32_t i = enqueue_get(plan, 0, true);
    while (i == ReadTable::kNone) {
        // Every slot is taken by reads started earlier: they end as the
        // queue is polled (and are reported by the next progress()).
        if (poll_cq(nullptr) == 0) {
            ::sched_yield();
        }
        check_reads(rt::now_ns());
        i = enqueue_get(plan, 0, true);
    }
    // Wait for every piece (they write into the caller's memory); polling
    // the queue also serves a peer reading from us at the same time.
    for (std::uint32_t polls = 0;; ++polls) {
        {
            rt::OptGuard g(gets_lock_);
            const ReadTable::Read& q = reads_.at(i);
            if (q.ended) {
                const Status st = q.result;
                reads_.release(i);
                return st;
            }
        }
        if (poll_cq(nullptr) == 0) {
            ::sched_yield(); // the peer serving the reads may need this CPU
        }
        pump_gets();
        if ((polls & 255) == 255) {
            check_reads(rt::now_ns());
        }
    }
}

} // namespace ulmpi::path::ofi
