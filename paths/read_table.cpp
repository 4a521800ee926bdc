// The read table (read_table.h): slots, queue, pieces and orphans of a
// path's remote reads, under its owner's lock.
#include "paths/read_table.h"

#include <algorithm>

namespace ulmpi::path {

void ReadTable::reset(std::uint32_t reads, std::uint32_t depth, std::uint32_t pieces)
{
    reads_.assign(reads, Read{});
    free_reads_.clear();
    for (std::uint32_t i = reads; i-- > 0;) {
        free_reads_.push_back(i);
    }
    depth_ = depth;
    queue_.clear();
    ended_.clear();
    pieces_.assign(pieces, PieceSlot{});
    free_pieces_.clear();
    for (std::uint32_t i = pieces; i-- > 0;) {
        free_pieces_.push_back(i);
    }
    orphans_ = 0;
    used_.store(0, std::memory_order_relaxed);
    queued_.store(false, std::memory_order_relaxed);
    ended_hint_.store(false, std::memory_order_relaxed);
}

std::uint32_t ReadTable::open(std::vector<ReadPiece>& pieces, std::uint64_t bytes, std::uint64_t token,
                              int peer, bool sync)
{
    if (free_reads_.empty() || (!sync && used() >= depth_)) {
        return kNone;
    }
    const std::uint32_t i = free_reads_.back();
    free_reads_.pop_back();
    Read& q = reads_[i];
    q.pieces.swap(pieces);
    q.next = 0;
    q.inflight = 0;
    q.bytes = bytes;
    q.token = token;
    q.peer = peer;
    q.result = Errc::ok;
    q.started = rt::now_ns();
    q.used = true;
    q.sync = sync;
    q.ended = false;
    used_.fetch_add(1, std::memory_order_relaxed);
    if (q.pieces.empty()) {
        end(i);
        return i;
    }
    queue_.push_back(i);
    queued_.store(true, std::memory_order_relaxed);
    return i;
}

void ReadTable::posted(std::uint32_t i)
{
    const std::uint32_t slot = free_pieces_.back();
    free_pieces_.pop_back();
    pieces_[slot] = PieceSlot{i, true, false};
    Read& q = reads_[i];
    ++q.inflight;
    ++q.next;
}

void ReadTable::stop(std::uint32_t i, Status why)
{
    Read& q = reads_[i];
    if (q.result.ok()) {
        q.result = why;
    }
    q.next = q.pieces.size();
}

bool ReadTable::settle(std::size_t k)
{
    const std::uint32_t i = queue_[k];
    Read& q = reads_[i];
    if (q.next < q.pieces.size()) {
        return false;
    }
    queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(k));
    queued_.store(!queue_.empty(), std::memory_order_relaxed);
    if (q.inflight == 0) {
        end(i);
    }
    return true;
}

void ReadTable::piece_done(std::uint32_t slot, Status st)
{
    if (slot >= pieces_.size() || !pieces_[slot].busy) {
        return;
    }
    PieceSlot& o = pieces_[slot];
    o.busy = false;
    free_pieces_.push_back(slot);
    if (o.orphan) {
        o.orphan = false;
        --orphans_;
        return; // its read ended without it (abandon)
    }
    const std::uint32_t i = o.read;
    Read& q = reads_[i];
    --q.inflight;
    if (!st.ok() && q.next < q.pieces.size()) {
        stop(i, st); // the rest would be wasted
        dequeue(i);
    } else if (!st.ok() && q.result.ok()) {
        q.result = st;
    }
    if (q.next == q.pieces.size() && q.inflight == 0) {
        end(i);
    }
}

void ReadTable::abandon(std::uint32_t i, Status why)
{
    Read& q = reads_[i];
    q.result = why;
    for (PieceSlot& o : pieces_) {
        if (o.busy && !o.orphan && o.read == i) {
            o.orphan = true; // frees its slot at its completion
            ++orphans_;
        }
    }
    q.inflight = 0;
    q.next = q.pieces.size();
    dequeue(i);
    end(i);
}

int ReadTable::abandon_peer(int peer, Status why)
{
    int n = 0;
    for (std::uint32_t i = 0; i < reads_.size(); ++i) {
        const Read& q = reads_[i];
        if (q.used && !q.ended && !q.sync && q.peer == peer) {
            abandon(i, why);
            ++n;
        }
    }
    return n;
}

void ReadTable::take_ended(std::vector<std::pair<std::uint64_t, Status>>& out)
{
    for (std::uint32_t i : ended_) {
        Read& q = reads_[i];
        out.emplace_back(q.token, q.result);
        release(i);
    }
    ended_.clear();
    ended_hint_.store(false, std::memory_order_relaxed);
}

void ReadTable::release(std::uint32_t i)
{
    Read& q = reads_[i];
    q.used = false;
    q.pieces.clear();
    free_reads_.push_back(i);
    used_.fetch_sub(1, std::memory_order_relaxed);
}

void ReadTable::end(std::uint32_t i)
{
    Read& q = reads_[i];
    if (ending_) {
        ending_(i, q);
    }
    q.ended = true;
    if (!q.sync) {
        ended_.push_back(i);
        ended_hint_.store(true, std::memory_order_release);
    }
}

void ReadTable::dequeue(std::uint32_t i)
{
    std::erase(queue_, i);
    queued_.store(!queue_.empty(), std::memory_order_relaxed);
}

} // namespace ulmpi::path
