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

Status OfiPath::get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                    const iovec* local, int nlocal)
{
    if (!info_.has_get || peer < 0 || peer >= job_.size || rkey_len < sizeof(RkeyHead)) {
        return Errc::protocol;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
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
    std::vector<fid_mr*> locals; // only where the provider wants local registration
    Status result = Errc::ok;
    std::uint64_t bytes = 0;
    const rt::Nanos limit = rt::now_ns() + kReadLimit;
    // The read slots this call holds (several threads may read at once, for
    // different peers: each waits for its own reads only).
    std::vector<std::uint32_t> mine;
    auto settle = [&](const Op& o) {
        if (o.err != 0 && result.ok()) {
            result = key_error(o.err) ? Errc::protocol : Errc::io_error;
        }
    };
    // Settles and frees this call's completed slots; answers how many are
    // still in flight.
    auto reap = [&] {
        rt::OptGuard g(reads_);
        std::size_t busy = 0;
        for (std::size_t k = 0; k < mine.size();) {
            Op& o = read_ops_[mine[k]];
            if (o.done) {
                settle(o);
                o.err = 0;
                o.claimed = false;
                mine[k] = mine.back();
                mine.pop_back();
            } else {
                ++busy;
                ++k;
            }
        }
        return busy;
    };
    auto claim = [&]() -> Op* {
        rt::OptGuard g(reads_);
        for (Op& o : read_ops_) {
            if (!o.claimed) {
                o.claimed = true;
                o.done = false;
                o.err = 0;
                o.peer = peer;
                mine.push_back(o.index);
                return &o;
            }
        }
        return nullptr;
    };
    for (int li = 0; li < nlocal && result.ok(); ++li) {
        if (local[li].iov_len == 0) {
            continue;
        }
        void* desc = nullptr;
        if (local_mr) {
            fid_mr* mr = nullptr;
            if (!register_mr(local[li].iov_base, local[li].iov_len, FI_READ, mr).ok()) {
                result = Errc::no_memory;
                break;
            }
            locals.push_back(mr);
            desc = fi_mr_desc(mr);
        }
        std::uint64_t lo = 0;
        while (lo < local[li].iov_len && result.ok()) {
            if (ri >= head.n) {
                result = Errc::protocol; // the key covers less than asked
                break;
            }
            const RkeyEntry re = entry(ri);
            const std::uint64_t n = std::min<std::uint64_t>({local[li].iov_len - lo, re.len - ro, opt_.read_chunk});
            Op* slot = claim();
            while (slot == nullptr) {
                reap();
                slot = claim();
                if (slot != nullptr || rt::now_ns() > limit) {
                    break;
                }
                if (poll_cq(nullptr) == 0) {
                    ::sched_yield(); // the peer serving the reads may need this CPU
                }
            }
            if (slot == nullptr) {
                mark_down(peer, "remote reads did not complete in 60 s");
                result = Errc::timeout;
                break;
            }
            const std::uint64_t raddr = (virt ? re.addr : 0) + ro;
            ssize_t rc;
            for (;;) {
                {
                    rt::OptGuard g(dom_);
                    rc = fi_read(ep_, static_cast<std::byte*>(local[li].iov_base) + lo, n, desc,
                                 p.addr, raddr, re.key, &slot->ctx);
                }
                if (rc != -FI_EAGAIN || rt::now_ns() >= limit) {
                    break;
                }
                if (poll_cq(nullptr) == 0 && rt::fine_locks()) {
                    ::sched_yield(); // another thread reads the queue
                }
            }
            if (rc != 0) {
                rt::OptGuard g(reads_);
                slot->done = true;
                mark_down(peer, lib::strerror(static_cast<int>(-rc)));
                result = Errc::io_error;
                break;
            }
            bytes += n;
            lo += n;
            ro += n;
            if (ro == re.len) {
                ++ri;
                ro = 0;
            }
        }
    }
    // Wait for every read posted (they write into the caller's memory).
    while (reap() > 0) {
        if (poll_cq(nullptr) == 0) {
            ::sched_yield();
        }
        if (rt::now_ns() > limit) {
            mark_down(peer, "remote reads did not complete in 60 s");
            result = Errc::timeout;
            rt::OptGuard g(reads_);
            for (std::uint32_t i : mine) {
                read_ops_[i].orphan = true; // freed at its completion (on_tx)
            }
            break;
        }
    }
    for (fid_mr*& mr : locals) {
        rt::OptGuard g(dom_);
        close_fid(mr);
    }
    if (result.ok()) {
        bump(counters_.gets);
        bump(counters_.get_bytes, bytes);
    }
    return result;
}

} // namespace ulmpi::path::ofi
