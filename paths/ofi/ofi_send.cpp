// The ofi path's send side: send buffers, fi_inject / fi_send, and the
// per-peer backlog of sends the provider refused for now.
#include "paths/ofi/ofi_path.h"
#include "paths/ofi/ofi_util.h"

#include "runtime/log.h"

#include <cstring>

namespace ulmpi::path::ofi {

void OfiPath::bump(std::uint64_t& counter, std::uint64_t n)
{
    if (rt::fine_locks()) [[unlikely]] {
        std::atomic_ref<std::uint64_t>(counter).fetch_add(n, std::memory_order_relaxed);
    } else {
        counter += n;
    }
}

std::uint32_t OfiPath::take_free_tx()
{
    rt::OptGuard g(pool_);
    if (free_tx_.empty()) {
        return ~std::uint32_t{0};
    }
    const std::uint32_t i = free_tx_.back();
    free_tx_.pop_back();
    free_n_.store(free_tx_.size(), std::memory_order_relaxed);
    return i;
}

void OfiPath::set_queued(Peer& p)
{
    std::atomic_ref<std::size_t>(p.queued).store(p.backlog.size(), std::memory_order_release);
}

void OfiPath::give_free_tx(std::uint32_t i)
{
    rt::OptGuard g(pool_);
    free_tx_.push_back(i);
    free_n_.store(free_tx_.size(), std::memory_order_relaxed);
}

bool OfiPath::acquire(int peer, std::size_t len, TxBuffer& out)
{
    if (!can_reach(peer) || len > info_.max_frag) {
        out.data = scratch_.data() + kHdr;
        out.cap = scratch_.size() - kHdr;
        out.token = kFailTok; // commit() answers failed
        return true;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (queued(p) != 0) [[unlikely]] {
        rt::OptGuard hold(p.lock);
        if (!p.backlog.empty()) {
            flush_backlog(peer);
            if (!p.backlog.empty()) {
                bump(counters_.send_again);
                return false;
            }
        }
    }
    std::uint32_t i = take_free_tx();
    if (i == ~std::uint32_t{0}) {
        poll_cq(nullptr);
        i = take_free_tx();
        if (i == ~std::uint32_t{0}) {
            bump(counters_.send_again);
            return false;
        }
    }
    out.data = txb(i) + kHdr;
    out.cap = opt_.buf_size - kHdr;
    out.token = i;
    return true;
}

SendResult OfiPath::send_now(std::uint32_t buf, int peer, std::size_t len)
{
    const fi_addr_t to = peers_[static_cast<std::size_t>(peer)].addr;
    for (int attempt = 0;; ++attempt) {
        ssize_t rc;
        if (len <= inject_max_) {
            {
                rt::OptGuard g(dom_);
                rc = -FI_EAGAIN; // no transmit entry left (rxd: ofi_tx_credits.h)
                if (credits_.take()) {
                    rc = fi_inject(ep_, txb(buf), len, to);
                    if (rc != 0) {
                        credits_.give_back();
                    }
                }
            }
            if (rc == 0) {
                give_free_tx(buf);
            }
        } else {
            Op& op = tx_ops_[buf];
            const rt::Nanos now = rt::now_ns();
            rt::OptGuard g(dom_); // op's fields: check_stuck() reads them under dom_
            op.peer = peer;
            op.busy = true;
            op.posted = now;
            rc = -FI_EAGAIN; // no transmit entry left (rxd: ofi_tx_credits.h)
            if (credits_.take()) {
                rc = fi_send(ep_, txb(buf), len, tx_desc(), to, &op.ctx);
                if (rc != 0) {
                    credits_.give_back();
                }
            }
            if (rc != 0) {
                op.busy = false;
            }
        }
        if (rc == 0) {
            return SendResult::done;
        }
        if (rc != -FI_EAGAIN) {
            give_free_tx(buf);
            mark_down(peer, lib::strerror(static_cast<int>(-rc)));
            return SendResult::failed;
        }
        if (attempt == 2) {
            return SendResult::again;
        }
        poll_cq(nullptr); // drives the provider's progress
    }
}

SendResult OfiPath::commit(int peer, const TxBuffer& b, std::size_t len)
{
    if (b.token == kFailTok) {
        return SendResult::failed;
    }
    const auto i = static_cast<std::uint32_t>(b.token);
    const FragHeader h = frag_header(static_cast<std::uint32_t>(job_.rank), job_tag_);
    std::memcpy(txb(i), &h, sizeof h);
    const std::size_t total = len + kHdr;
    bump(counters_.frags_sent);
    bump(counters_.bytes_sent, len);
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    // An empty backlog stays empty while we send (only this peer's sender,
    // one at a time, fills it), so the common case takes no lock.
    bool sent_again = false;
    if (queued(p) == 0) [[likely]] {
        const SendResult r = send_now(i, peer, total);
        if (r != SendResult::again) {
            return r;
        }
        sent_again = true;
    }
    rt::OptGuard hold(p.lock);
    if (!sent_again && p.backlog.empty()) { // flushed meanwhile
        const SendResult r = send_now(i, peer, total);
        if (r != SendResult::again) {
            return r;
        }
        sent_again = true;
    }
    if (sent_again) {
        rt::OptGuard g(misc_);
        backlogged_.push_back(peer);
        backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
    }
    p.backlog.push_back({i, total, rt::now_ns()}); // goes in order from progress()
    set_queued(p);
    return SendResult::done;
}

void OfiPath::flush_backlog(int peer)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    while (!p.backlog.empty()) {
        const Pending b = p.backlog.front();
        const SendResult r = send_now(b.buf, peer, b.len);
        if (r == SendResult::again) {
            return;
        }
        p.backlog.pop_front(); // sent, or failed: the peer is reported down and ULM resends
        set_queued(p);
    }
}

void OfiPath::flush_backlogs()
{
    if (!rt::fine_locks()) {
        for (std::size_t k = 0; k < backlogged_.size();) {
            const int peer = backlogged_[k];
            flush_backlog(peer);
            if (peers_[static_cast<std::size_t>(peer)].backlog.empty()) {
                backlogged_[k] = backlogged_.back();
                backlogged_.pop_back();
            } else {
                ++k;
            }
        }
        backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
        return;
    }
    std::vector<int> peers;
    {
        rt::OptGuard g(misc_);
        peers = backlogged_;
    }
    for (int peer : peers) {
        Peer& p = peers_[static_cast<std::size_t>(peer)];
        if (!p.lock.try_lock()) {
            continue; // its sender flushes it (acquire)
        }
        flush_backlog(peer);
        if (p.backlog.empty()) {
            rt::OptGuard g(misc_);
            std::erase(backlogged_, peer);
            backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
        }
        p.lock.unlock();
    }
}

std::size_t OfiPath::backlog() const
{
    std::size_t n = 0;
    for (const Peer& p : peers_) {
        rt::OptGuard g(const_cast<rt::OptMutex&>(p.lock));
        n += p.backlog.size();
    }
    return n;
}

} // namespace ulmpi::path::ofi
