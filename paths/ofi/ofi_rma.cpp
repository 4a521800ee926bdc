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
                         std::uint64_t remote_offset, const iovec* local, int nlocal, GetReq& req)
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
            req.pieces.push_back(Piece{static_cast<std::byte*>(local[li].iov_base) + lo, n, nullptr,
                                       (virt ? re.addr : 0) + ro, re.key});
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
                for (fid_mr*& m : req.locals) {
                    rt::OptGuard g(dom_);
                    close_fid(m);
                }
                req.locals.clear();
                return Errc::no_memory;
            }
            req.locals.push_back(mr);
            const auto* base = static_cast<const std::byte*>(local[li].iov_base);
            for (; at < req.pieces.size() && req.pieces[at].local >= base &&
                   req.pieces[at].local < base + local[li].iov_len;
                 ++at) {
                req.pieces[at].desc = fi_mr_desc(mr);
            }
        }
    }
    req.peer = peer;
    return Errc::ok;
}

std::uint32_t OfiPath::enqueue_get(GetReq& planned)
{
    rt::OptGuard g(gets_lock_);
    // start_get() reads take at most kGetDepth slots: the others are
    // get()'s, which ends its reads itself (slots ended by start_get()
    // wait for a progress() with a sink to be reported and freed).
    if (free_gets_.empty() ||
        (!planned.sync && gets_used_.load(std::memory_order_relaxed) >= kGetDepth)) {
        return ~std::uint32_t{0};
    }
    const std::uint32_t i = free_gets_.back();
    free_gets_.pop_back();
    GetReq& q = gets_[i];
    q.pieces.swap(planned.pieces);
    q.locals.swap(planned.locals);
    q.next = 0;
    q.inflight = 0;
    q.bytes = planned.bytes;
    q.token = planned.token;
    q.peer = planned.peer;
    q.result = Errc::ok;
    q.started = rt::now_ns();
    q.used = true;
    q.sync = planned.sync;
    q.ended = false;
    gets_used_.fetch_add(1, std::memory_order_relaxed);
    if (q.pieces.empty()) {
        end_get(i);
        return i;
    }
    get_queue_.push_back(i);
    gets_queued_.store(true, std::memory_order_relaxed);
    pump_gets_locked();
    return i;
}

void OfiPath::pump_gets()
{
    if (!gets_queued_.load(std::memory_order_relaxed)) {
        return;
    }
    rt::OptGuard g(gets_lock_);
    pump_gets_locked();
}

void OfiPath::pump_gets_locked()
{
    while (!get_queue_.empty() && !free_reads_.empty()) {
        const std::uint32_t qi = get_queue_.front();
        GetReq& q = gets_[qi];
        const Piece& pc = q.pieces[q.next];
        const std::uint32_t slot = free_reads_.back();
        Op& op = read_ops_[slot];
        op.req = qi;
        op.peer = q.peer;
        op.orphan = false;
        const fi_addr_t from = q.peer >= 0 ? peers_[static_cast<std::size_t>(q.peer)].addr : FI_ADDR_UNSPEC;
        ssize_t rc = -FI_EHOSTUNREACH; // the peer was reset meanwhile
        if (from != FI_ADDR_UNSPEC) {
            rt::OptGuard d(dom_);
            rc = fi_read(ep_, pc.local, pc.len, pc.desc, from, pc.raddr, pc.key, &op.ctx);
        }
        if (rc == -FI_EAGAIN) {
            return; // the provider's queue is full: again after its completions
        }
        if (rc != 0) {
            if (q.result.ok()) {
                q.result = Errc::io_error;
            }
            mark_down(q.peer, lib::strerror(static_cast<int>(-rc)));
            q.next = q.pieces.size(); // nothing more of it goes
        } else {
            free_reads_.pop_back();
            ++q.inflight;
            ++q.next;
        }
        if (q.next == q.pieces.size()) {
            get_queue_.pop_front();
            if (q.inflight == 0) {
                end_get(qi);
            }
        }
    }
    gets_queued_.store(!get_queue_.empty(), std::memory_order_relaxed);
}

void OfiPath::on_read_done(Op& op, int err)
{
    free_reads_.push_back(op.index);
    if (op.orphan) {
        op.orphan = false;
        --orphans_;
        return; // its read ended without it (check_reads, abandon_gets)
    }
    GetReq& q = gets_[op.req];
    --q.inflight;
    if (err != 0) {
        if (q.result.ok()) {
            q.result = key_error(err) ? Errc::protocol : Errc::io_error;
        }
        if (q.next < q.pieces.size()) {
            q.next = q.pieces.size(); // the rest would be wasted
            std::erase(get_queue_, op.req);
            gets_queued_.store(!get_queue_.empty(), std::memory_order_relaxed);
        }
    }
    if (q.next == q.pieces.size() && q.inflight == 0) {
        end_get(op.req);
    }
}

void OfiPath::end_get(std::uint32_t i)
{
    GetReq& q = gets_[i];
    for (fid_mr*& mr : q.locals) {
        rt::OptGuard g(dom_);
        close_fid(mr);
    }
    q.locals.clear();
    if (q.result.ok()) {
        bump(counters_.gets);
        bump(counters_.get_bytes, q.bytes);
    }
    q.ended = true;
    if (!q.sync) {
        gets_ended_.push_back(i);
        gets_ended_hint_.store(true, std::memory_order_release);
    }
}

void OfiPath::check_reads(rt::Nanos now)
{
    if (gets_used_.load(std::memory_order_relaxed) == 0) {
        return;
    }
    rt::OptGuard g(gets_lock_);
    for (std::uint32_t i = 0; i < gets_.size(); ++i) {
        GetReq& q = gets_[i];
        if (!q.used || q.ended || now - q.started <= kReadLimit) {
            continue;
        }
        mark_down(q.peer, "remote reads did not complete in 60 s");
        abandon_locked(i, Errc::timeout);
    }
}

void OfiPath::abandon_locked(std::uint32_t i, Status why)
{
    GetReq& q = gets_[i];
    q.result = why;
    for (Op& op : read_ops_) {
        if (op.req == i && std::find(free_reads_.begin(), free_reads_.end(), op.index) == free_reads_.end()) {
            op.orphan = true; // frees its slot at its completion
            ++orphans_;
        }
    }
    q.inflight = 0;
    q.next = q.pieces.size();
    std::erase(get_queue_, i);
    gets_queued_.store(!get_queue_.empty(), std::memory_order_relaxed);
    end_get(i);
}

bool OfiPath::abandon_gets(int peer)
{
    if (!open_ || !info_.can_fail || peer < 0 || peer >= job_.size) {
        return false;
    }
    int n = 0;
    {
        rt::OptGuard g(gets_lock_);
        for (std::uint32_t i = 0; i < gets_.size(); ++i) {
            GetReq& q = gets_[i];
            if (q.used && !q.ended && !q.sync && q.peer == peer) {
                abandon_locked(i, Errc::io_error);
                ++n;
            }
        }
    }
    if (n > 0) {
        ULMPI_DEBUG("ofi: %d reads from rank %d given up (%zu pieces still posted)", n, peer, orphan_reads());
    }
    return true;
}

std::size_t OfiPath::orphan_reads() const
{
    rt::OptGuard g(gets_lock_);
    return orphans_;
}

void OfiPath::report_gets(Sink& sink)
{
    if (!gets_ended_hint_.load(std::memory_order_acquire)) {
        return;
    }
    reports_.clear();
    {
        rt::OptGuard g(gets_lock_);
        for (std::uint32_t i : gets_ended_) {
            GetReq& q = gets_[i];
            reports_.emplace_back(q.token, q.result);
            q.used = false;
            free_gets_.push_back(i);
            gets_used_.fetch_sub(1, std::memory_order_relaxed);
        }
        gets_ended_.clear();
        gets_ended_hint_.store(false, std::memory_order_relaxed);
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
    return read_ops_.size() - free_reads_.size();
}

Status OfiPath::start_get(int peer, const void* rkey, std::size_t rkey_len,
                          std::uint64_t remote_offset, const iovec* local, int nlocal,
                          std::uint64_t token)
{
    if (!open_) {
        return Errc::unreachable;
    }
    if (gets_used_.load(std::memory_order_relaxed) >= kGetDepth) {
        return Errc::again;
    }
    GetReq plan;
    if (Status st = plan_get(peer, rkey, rkey_len, remote_offset, local, nlocal, plan); !st.ok()) {
        return st;
    }
    plan.token = token;
    plan.sync = false;
    if (enqueue_get(plan) == ~std::uint32_t{0}) {
        for (fid_mr*& mr : plan.locals) {
            rt::OptGuard g(dom_);
            close_fid(mr);
        }
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
    GetReq plan;
    if (Status st = plan_get(peer, rkey, rkey_len, remote_offset, local, nlocal, plan); !st.ok()) {
        return st;
    }
    plan.sync = true;
    std::uint32_t i = enqueue_get(plan);
    while (i == ~std::uint32_t{0}) {
        // Every slot is taken by reads started earlier: they end as the
        // queue is polled (and are reported by the next progress()).
        if (poll_cq(nullptr) == 0) {
            ::sched_yield();
        }
        check_reads(rt::now_ns());
        i = enqueue_get(plan);
    }
    // Wait for every piece (they write into the caller's memory); polling
    // the queue also serves a peer reading from us at the same time.
    for (std::uint32_t polls = 0;; ++polls) {
        {
            rt::OptGuard g(gets_lock_);
            GetReq& q = gets_[i];
            if (q.ended) {
                const Status st = q.result;
                q.used = false;
                free_gets_.push_back(i);
                gets_used_.fetch_sub(1, std::memory_order_relaxed);
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
