// The ofi path's peers: whom it serves, their addresses in the address
// vector, a peer replaced by a new process (reset_peer, connect_peer), and
// the evidence that a peer cannot be reached (mark_down, check_stuck).
#include "paths/ofi/ofi_path.h"
#include "paths/ofi/ofi_util.h"

#include "runtime/log.h"

#include <cstring>

namespace ulmpi::path::ofi {

bool OfiPath::serves(int r) const
{
    const bool shm = std::strstr(provider(), "shm") != nullptr;
    const bool same_host = job_.node_of_rank.size() == static_cast<std::size_t>(job_.size) &&
                           job_.node_of_rank[static_cast<std::size_t>(r)] == job_.node_id;
    return !((same_host && !opt_.everywhere) || (!same_host && shm));
}

OfiPath::Insert OfiPath::insert_peer(int r, rt::Bootstrap& boot)
{
    std::vector<std::byte> v;
    if (!boot.get(r, "ofi.addr", v).ok() || v.size() < sizeof(AddrRecord)) {
        return Insert::skipped; // no ofi path there
    }
    AddrRecord a;
    std::memcpy(&a, v.data(), sizeof a);
    if (a.version != kWireVersion || v.size() != sizeof a + a.addr_len) {
        ULMPI_ERROR("ofi: rank %d published an address of another version", r);
        return Insert::bad;
    }
    if (a.provider_hash != job_hash(provider())) {
        ULMPI_DEBUG("ofi: rank %d uses another provider than %s", r, provider());
        return Insert::skipped;
    }
    Peer& p = peers_[static_cast<std::size_t>(r)];
    int n;
    {
        rt::OptGuard g(dom_);
        n = fi_av_insert(av_, v.data() + sizeof a, 1, &p.addr, 0, nullptr);
    }
    if (n != 1) {
        ULMPI_WARN("ofi: the address of rank %d is refused by %s", r, provider());
        p.addr = FI_ADDR_UNSPEC;
        return Insert::skipped;
    }
    p.reach = true;
    return Insert::reached;
}

Status OfiPath::reset_peer(int peer, rt::Bootstrap&)
{
    if (!open_ || peer < 0 || peer >= job_.size || peer == job_.rank) {
        return Errc::invalid_arg;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    rt::OptGuard hold(p.lock);
    for (const Pending& b : p.backlog) {
        give_free_tx(b.buf);
    }
    p.backlog.clear();
    set_queued(p);
    {
        rt::OptGuard g(misc_);
        std::erase(backlogged_, peer);
        backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
        if (p.down) {
            downs_any_.store(--downs_ > 0, std::memory_order_relaxed);
        }
        p.down = p.down_due = p.up_due = false;
    }
    // Operations in flight to the old process complete as the provider
    // decides; they no longer speak for the peer (on_tx, check_stuck).
    {
        rt::OptGuard g(dom_);
        for (Op& op : tx_ops_) {
            if (op.peer == peer) {
                op.peer = -1;
            }
        }
        if (p.addr != FI_ADDR_UNSPEC) {
            if (int rc = fi_av_remove(av_, &p.addr, 1, 0); rc != 0) {
                ULMPI_DEBUG("ofi: removing the address of rank %d: %s", peer, lib::strerror(-rc));
            }
        }
    }
    {
        rt::OptGuard g(gets_lock_);
        for (Op& op : read_ops_) {
            if (op.peer == peer) {
                op.peer = -1;
            }
        }
        for (std::uint32_t i = 0; i < reads_.slots(); ++i) {
            ReadTable::Read& q = reads_.at(i);
            if (q.used && q.peer == peer) {
                q.peer = -1; // its pieces not posted yet fail (pump_gets_locked)
            }
        }
    }
    p.addr = FI_ADDR_UNSPEC;
    p.reach = false;
    return Errc::ok;
}

Status OfiPath::connect_peer(int peer, rt::Bootstrap& boot)
{
    if (!open_ || peer < 0 || peer >= job_.size || peer == job_.rank) {
        return Errc::invalid_arg;
    }
    if (peers_[static_cast<std::size_t>(peer)].reach) {
        return Errc::ok; // known since the wire-up
    }
    if (!serves(peer)) {
        return Errc::unreachable;
    }
    switch (insert_peer(peer, boot)) {
    case Insert::reached:
        return Errc::ok;
    case Insert::bad:
        return Errc::protocol;
    case Insert::skipped:
        break;
    }
    return Errc::unreachable;
}

bool OfiPath::can_reach(int peer) const
{
    return open_ && peer >= 0 && peer < job_.size && peers_[static_cast<std::size_t>(peer)].reach;
}

void OfiPath::mark_down(int peer, const char* why)
{
    if (peer < 0 || peer >= job_.size) {
        return;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    rt::OptGuard g(misc_);
    if (!p.down) {
        ULMPI_DEBUG("ofi: rank %d unreachable over %s: %s", peer, provider(), why);
        p.down = true;
        p.down_due = true;
        p.up_due = false;
        downs_any_.store(++downs_ > 0, std::memory_order_relaxed);
        any_news_.store(true, std::memory_order_release);
    }
}

void OfiPath::check_stuck(rt::Nanos now)
{
    const rt::Nanos limit = static_cast<rt::Nanos>(opt_.send_timeout_ms) * 1000000;
    std::vector<int> late;
    {
        rt::OptGuard g(dom_);
        for (const Op& op : tx_ops_) {
            if (op.busy && op.peer >= 0 && now - op.posted > limit) {
                late.push_back(op.peer);
            }
        }
    }
    std::vector<int> peers;
    {
        rt::OptGuard g(misc_);
        peers = backlogged_;
    }
    for (int peer : peers) {
        Peer& p = peers_[static_cast<std::size_t>(peer)];
        if (!p.lock.try_lock()) {
            continue; // its sender is at it; next time
        }
        if (!p.backlog.empty() && now - p.backlog.front().since > limit) {
            late.push_back(~peer); // refused, not stuck in flight
        }
        p.lock.unlock();
    }
    for (int l : late) {
        const int peer = l >= 0 ? l : ~l;
        bool down;
        {
            rt::OptGuard g(misc_);
            down = peers_[static_cast<std::size_t>(peer)].down;
        }
        if (!down) {
            mark_down(peer, l >= 0 ? "a send did not complete in time"
                                   : "the provider refused sends for too long");
        }
    }
}

} // namespace ulmpi::path::ofi
