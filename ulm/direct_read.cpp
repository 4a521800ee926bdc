// Single-copy reads that do not wait (direct_read.h): started from a get
// match fragment, advanced by the path's on_get_done reports, finished with
// fin, or with a request for a stream when the read failed.
#include "ulm/engine.h"

#include "runtime/crc32c.h"
#include "ulm/direct_read.h"

#include <cstring>

namespace ulmpi::ulm {

bool Engine::start_direct(RecvMsg* r, path::Path* via, int src, std::uint64_t send_id,
                          const std::byte* key, std::uint32_t keylen)
{
    if (via == nullptr || via->info().get_depth == 0 || keylen < sizeof(GetPrefix) ||
        keylen - sizeof(GetPrefix) > kMaxGetKey) {
        return false;
    }
    auto* d = new DirectRead;
    std::memcpy(&d->pre, key, sizeof d->pre);
    if (d->pre.checked != 0 && r->expected != r->env.msg_len) {
        delete d;
        return false; // truncated: the message's checksum cannot be checked on part of it
    }
    d->r = r;
    d->via = via;
    d->src = src;
    d->incarnation = links_[src].peer_incarnation;
    d->send_id = send_id;
    d->keylen = keylen - static_cast<std::uint32_t>(sizeof(GetPrefix));
    std::memcpy(d->key, key + sizeof(GetPrefix), d->keylen);
    if (links_[src].multi() && via->info().can_fail && r->expected > 0) {
        d->bounce.reset(new (std::nothrow) std::byte[r->expected]);
        if (d->bounce == nullptr) {
            delete d;
            return false;
        }
    }
    bury_reads();
    r->reading = true;
    links_.read_started(links_[src], via, r->expected);
    pump_direct(d);
    return true;
}

// Starts slices while the path takes them. The read is finished here only
// when nothing of it is in flight (else by the last on_get_done).
void Engine::pump_direct(DirectRead* d)
{
    RecvMsg* r = d->r;
    while (!d->failed && d->pos < r->expected) {
        iovec iov[kMaxIov];
        std::uint64_t covered = 0;
        int n = 1;
        if (d->bounce != nullptr) {
            covered = r->expected - d->pos;
            iov[0] = iovec{d->bounce.get() + d->pos, covered};
        } else {
            n = to_iovec(r->data, d->pos, r->expected - d->pos, iov, kMaxIov, &covered);
        }
        const Status st = d->via->start_get(d->src, d->key, d->keylen, d->pos, iov, n,
                                            reinterpret_cast<std::uint64_t>(d));
        if (st.ok()) {
            ++d->inflight;
            d->pos += covered;
        } else if (st == Errc::again) {
            // The path's depth is full: again once one of its reads ends.
            d->waiting = true;
            rt::OptGuard g(reads_lock_);
            reads_waiting_.push_back(d);
            reads_waiting_hint_.store(true, std::memory_order_release);
            return;
        } else {
            d->failed = true;
        }
    }
    if (d->inflight == 0 && (d->failed || d->pos >= r->expected)) {
        finish_direct(d);
    }
}

void Engine::on_get_done(path::Path& path, std::uint64_t token, Status st)
{
    (void)path;
    auto* d = reinterpret_cast<DirectRead*>(token);
    rt::OptGuard pg(peer(d->src).lock); // (fine mode; under the engine's read lock)
    --d->inflight;
    if (!st.ok()) {
        d->failed = true;
    } else {
        links_.read_moved(links_[d->src], d->via);
    }
    if (d->waiting) {
        return; // retry_reads() goes on with it
    }
    if (!d->failed && d->pos < d->r->expected) {
        pump_direct(d);
        return;
    }
    if (d->inflight == 0) {
        finish_direct(d);
    }
}

int Engine::retry_reads()
{
    int n = 0;
    while (reads_waiting_hint_.load(std::memory_order_acquire)) {
        DirectRead* d;
        {
            rt::OptGuard g(reads_lock_);
            d = reads_waiting_.front();
            if (d == nullptr) {
                reads_waiting_hint_.store(false, std::memory_order_relaxed);
                break;
            }
            reads_waiting_.remove(d);
            reads_waiting_hint_.store(!reads_waiting_.empty(), std::memory_order_relaxed);
        }
        rt::OptGuard pg(peer(d->src).lock);
        d->waiting = false;
        const std::uint64_t before = d->pos;
        pump_direct(d); // may finish it, or put it back
        if (d->waiting && d->pos == before) {
            break; // the path is still full: the rest waits too
        }
        ++n;
    }
    return n;
}

void Engine::bury_reads()
{
    rt::OptGuard g(reads_lock_);
    std::erase_if(buried_reads_, [](const auto& b) { return b.first->orphan_reads() == 0; });
}

void Engine::finish_direct(DirectRead* d)
{
    RecvMsg* r = d->r;
    Peer& p = peer(d->src);
    links_.read_ended(links_[d->src], d->via, r->expected);
    const bool same = links_[d->src].alive() && links_[d->src].peer_incarnation == d->incarnation;
    bool ok = !d->failed && same;
    if (ok && (d->pre.checked != 0 || d->bounce != nullptr)) {
        // Checked in place, or copied out of the bounce buffer and checked
        // in the same pass.
        std::uint32_t crc = 0;
        std::uint64_t pos = 0;
        while (pos < r->expected) {
            iovec iov[kMaxIov];
            std::uint64_t covered = 0;
            const int n = to_iovec(r->data, pos, r->expected - pos, iov, kMaxIov, &covered);
            std::uint64_t at = pos;
            for (int i = 0; i < n; ++i) {
                crc = d->bounce != nullptr
                          ? rt::crc32c_copy(iov[i].iov_base, d->bounce.get() + at, iov[i].iov_len, crc)
                          : rt::crc32c(iov[i].iov_base, iov[i].iov_len, crc);
                at += iov[i].iov_len;
            }
            pos += covered;
        }
        if (d->pre.checked != 0 && crc != d->pre.crc) {
            ++links_[d->src].counters.crc_payload_fail;
            ok = false;
        }
    }
    const std::uint64_t send_id = d->send_id;
    if (!ok && d->bounce != nullptr && d->via->orphan_reads() != 0) {
        // Pieces of it may still land: the buffer waits for them.
        rt::OptGuard g(reads_lock_);
        buried_reads_.emplace_back(d->via, std::move(d->bounce));
    }
    delete d;
    r->reading = false; // the path writes no more into the buffer
    if (ok) {
        FinHeader f{};
        fill_base(p, f.base, FragType::fin, 0, 0);
        f.send_id = send_id;
        send_ctrl(p, &f, sizeof f);
        r->received = r->expected;
        complete_recv(r);
        return;
    }
    if (!same) {
        // The sender failed (or was replaced) during the read.
        if (rep_ != nullptr) {
            rep_->on_recv_orphaned(*r);
            return;
        }
        r->error = Errc::peer_failed;
        complete_recv(r);
        return;
    }
    ask_stream(p, r, send_id);
}

} // namespace ulmpi::ulm
