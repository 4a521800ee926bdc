// The remote reads of a path that reads the sender's memory (the ofi and
// verbs paths' single-copy rendezvous): the read slots, the queue of reads
// with pieces still to post, the piece slots (one per remote read request
// posted), the reads ended and not yet reported, and the orphans (pieces
// posted for reads that were given up: the device or provider cannot take
// a posted read back, so its slot stays taken until it completes, and it
// may still write into the reader's memory until then).
//
// The table holds no lock: its owner guards it with one of its own (ofi:
// gets_lock_, verbs: reads_lock_ inside the peer's lock) and calls every
// member with that lock held, except the hints (used(), queued(),
// ended_any()), which are read without it. The owner posts the pieces
// itself (fi_read, an RDMA read work request) in the table's order, and
// tells the table each piece it posted and each completion.
#pragma once

#include "runtime/clock.h"
#include "runtime/status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace ulmpi::path {

using rt::Errc;
using rt::Status;

// One remote read request of a read: `len` bytes into `local` from the
// peer's `raddr` under its key `rkey`.
struct ReadPiece {
    std::byte* local = nullptr;
    std::uint64_t len = 0;
    std::uint64_t raddr = 0;
    std::uint64_t rkey = 0;
    std::uintptr_t ldesc = 0; // the reader's registration (ofi: its descriptor, verbs: its lkey)
};

class ReadTable {
public:
    static constexpr std::uint32_t kNone = ~std::uint32_t{0};

    // A read: planned whole, posted piece by piece.
    struct Read {
        std::vector<ReadPiece> pieces;
        std::size_t next = 0;       // first piece not posted
        std::uint32_t inflight = 0; // pieces posted, not complete
        std::uint64_t bytes = 0;
        std::uint64_t token = 0;
        int peer = -1;
        Status result = Errc::ok;
        rt::Nanos started = 0;
        bool used = false;
        bool sync = false;  // its caller waits for `ended` (Path::get): never reported
        bool ended = false; // (not sync) waits for take_ended()
    };
    // Called as a read ends (counters, the owner's registrations), with the
    // owner's lock held.
    using Ending = std::function<void(std::uint32_t, Read&)>;

    // `reads` slots; a read that is not sync is refused while `depth` are
    // taken; `pieces` posted at once. Forgets everything (close: reset(0, 0, 0)).
    void reset(std::uint32_t reads, std::uint32_t depth, std::uint32_t pieces);
    void on_ending(Ending f) { ending_ = std::move(f); }

    // Takes a slot for a planned read (its pieces are swapped in): its
    // index, or kNone when no slot is free for it. A read of no piece ends
    // at once; the others wait in the queue for their pieces to be posted.
    std::uint32_t open(std::vector<ReadPiece>& pieces, std::uint64_t bytes, std::uint64_t token, int peer,
                       bool sync);
    Read& at(std::uint32_t i) { return reads_[i]; }
    std::uint32_t slots() const { return static_cast<std::uint32_t>(reads_.size()); }

    // Reads with pieces to post, in the order they were opened.
    const std::vector<std::uint32_t>& queue() const { return queue_; }
    bool piece_slot_free() const { return !free_pieces_.empty(); }
    // The slot the next piece posted takes (piece_slot_free()).
    std::uint32_t next_piece_slot() const { return free_pieces_.back(); }
    // Read i's next piece was posted in next_piece_slot().
    void posted(std::uint32_t i);
    // Nothing more of read i is posted; its result is `why` unless it failed
    // already.
    void stop(std::uint32_t i, Status why);
    // The read at position k of the queue: taken off when all its pieces
    // are posted (and ended when none is in flight). True when taken off.
    bool settle(std::size_t k);
    // A posted piece completed with `st`. An orphan only frees its slot.
    void piece_done(std::uint32_t slot, Status st);
    // Ends read i now with `why`; its posted pieces become orphans.
    void abandon(std::uint32_t i, Status why);
    // abandon() of every read of `peer` that is not sync nor ended: how many.
    int abandon_peer(int peer, Status why);

    // The reads ended since the last call (not sync), as (token, result);
    // their slots are free again.
    void take_ended(std::vector<std::pair<std::uint64_t, Status>>& out);
    // Frees the slot of a sync read its caller saw end.
    void release(std::uint32_t i);

    std::size_t orphans() const { return orphans_; }
    std::size_t pieces_busy() const { return pieces_.size() - free_pieces_.size(); }

    // Hints, read without the owner's lock.
    std::uint32_t used() const { return used_.load(std::memory_order_relaxed); }
    bool queued() const { return queued_.load(std::memory_order_relaxed); }
    bool ended_any() const { return ended_hint_.load(std::memory_order_acquire); }

private:
    struct PieceSlot {
        std::uint32_t read = 0;
        bool busy = false;
        bool orphan = false; // its read ended without it: only free the slot
    };
    void end(std::uint32_t i);
    void dequeue(std::uint32_t i);

    std::vector<Read> reads_;
    std::vector<std::uint32_t> free_reads_;
    std::uint32_t depth_ = 0;
    std::vector<std::uint32_t> queue_;
    std::vector<std::uint32_t> ended_;
    std::vector<PieceSlot> pieces_;
    std::vector<std::uint32_t> free_pieces_;
    std::size_t orphans_ = 0;
    Ending ending_;
    std::atomic<std::uint32_t> used_{0};    // slots taken
    std::atomic<bool> queued_{false};       // queue_ not empty
    std::atomic<bool> ended_hint_{false};   // ended_ not empty
};

} // namespace ulmpi::path
