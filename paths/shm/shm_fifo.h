// Single-writer single-reader FIFO of 128-byte slots in shared memory, one
// per ordered (sender, receiver) pair of ranks on a host.
//
// Each slot carries its own sequence word: the writer fills the slot, then
// stores seq = ticket + 1 (modulo 2^32: a slot's stale value is a whole ring
// behind) with release order; the reader polls that word with acquire
// order. So a poll of an empty FIFO reads one cache line that only changes
// when a message comes. The slot header is 8 bytes, so a fragment of up to
// 56 bytes (a small eager message, wire.h) moves in one 64-byte line
// transfer; a second line costs about 100 ns more between two cores,
// unless its transfer overlaps the first's processing: the reader asks for
// it as soon as the first line says the fragment goes on. (A writer that
// also asked to own the next slot's second line early, prefetchw, lost
// 3-19 % of 64 B streaming bandwidth: docs/benchmarks.md.)
// The reader tells the writer how far it has consumed through `consumed`,
// published every few slots and whenever it finds the FIFO empty; the writer
// re-reads it only when the ring looks full. A full ring answers nullptr:
// the caller queues (never drops) and retries.
//
// Slot payload: small fragments inline, or a reference to a fragment buffer
// in the sender's region, or the return of such a buffer to its owner.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ulmpi::path::shm {

inline constexpr std::size_t kSlotBytes = 128;
inline constexpr std::size_t kSlotHeader = 8;
inline constexpr std::size_t kSlotData = kSlotBytes - kSlotHeader;
inline constexpr std::size_t kLine = 64;

enum class SlotKind : std::uint8_t { inline_frag = 1, frag_ref = 2, frag_return = 3 };

struct alignas(kSlotBytes) Slot {
    std::atomic<std::uint32_t> seq; // ticket + 1, modulo 2^32
    SlotKind kind;
    std::uint8_t pad;
    std::uint16_t len;
    std::byte data[kSlotData];
};
static_assert(sizeof(Slot) == kSlotBytes);
static_assert(offsetof(Slot, data) == kSlotHeader);
static_assert(kSlotData < 65536, "len is 16 bits");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

struct alignas(kSlotBytes) FifoControl {
    std::atomic<std::uint64_t> consumed; // written by the reader only
};
static_assert(sizeof(FifoControl) == kSlotBytes);

// Bytes of one FIFO with `capacity` slots (a power of two).
constexpr std::size_t fifo_bytes(std::size_t capacity)
{
    return sizeof(FifoControl) + capacity * sizeof(Slot);
}

class FifoWriter {
public:
    FifoWriter() = default;
    FifoWriter(void* mem, std::size_t capacity)
        : ctl_(static_cast<FifoControl*>(mem)),
          slots_(reinterpret_cast<Slot*>(static_cast<std::byte*>(mem) + sizeof(FifoControl))),
          mask_(capacity - 1), capacity_(capacity)
    {
    }

    // The next free slot, or nullptr when the ring is full. Calling it again
    // before publish() returns the same slot.
    Slot* reserve()
    {
        if (tail_ - cached_consumed_ >= capacity_) {
            cached_consumed_ = ctl_->consumed.load(std::memory_order_acquire);
            if (tail_ - cached_consumed_ >= capacity_) {
                return nullptr;
            }
        }
        return &slots_[tail_ & mask_];
    }

    void publish(Slot* s, SlotKind kind, std::uint32_t len)
    {
        s->kind = kind;
        s->len = static_cast<std::uint16_t>(len);
        s->seq.store(static_cast<std::uint32_t>(tail_ + 1), std::memory_order_release);
        ++tail_;
    }

    std::uint64_t published() const { return tail_; }

private:
    FifoControl* ctl_ = nullptr;
    Slot* slots_ = nullptr;
    std::uint64_t mask_ = 0;
    std::uint64_t capacity_ = 0;
    std::uint64_t tail_ = 0;
    std::uint64_t cached_consumed_ = 0;
};

class FifoReader {
public:
    FifoReader() = default;
    FifoReader(void* mem, std::size_t capacity)
        : ctl_(static_cast<FifoControl*>(mem)),
          slots_(reinterpret_cast<Slot*>(static_cast<std::byte*>(mem) + sizeof(FifoControl))),
          mask_(capacity - 1), batch_(capacity / 4 == 0 ? 1 : capacity / 4)
    {
    }

    // The oldest unread slot, or nullptr when empty.
    Slot* peek()
    {
        Slot* s = &slots_[head_ & mask_];
        if (s->seq.load(std::memory_order_acquire) != static_cast<std::uint32_t>(head_ + 1)) {
            flush();
            return nullptr;
        }
        if (s->len > kLine - kSlotHeader) {
            // The fragment goes on in the second line: fetch it while the
            // header in the first is being read and matched.
            __builtin_prefetch(reinterpret_cast<const std::byte*>(s) + kLine);
        }
        return s;
    }

    // Releases the slot returned by peek().
    void pop()
    {
        set(head_, head_ + 1);
        if (head_ - told_ >= batch_) {
            flush();
        }
    }

    void flush()
    {
        if (told_ != head_) {
            ctl_->consumed.store(head_, std::memory_order_release);
            set(told_, head_);
        }
    }

    // With fine locks (the reader's own calls run under its path's lock):
    // whether a thread that does not hold that lock should take it, i.e. a
    // slot is ready or the writer has not been told of the consumed ones.
    // Lets idle pollers skip an empty FIFO without touching its lock.
    bool worth_a_look() const
    {
        const std::uint64_t h = std::atomic_ref<const std::uint64_t>(head_).load(std::memory_order_relaxed);
        if (std::atomic_ref<const std::uint64_t>(told_).load(std::memory_order_relaxed) != h) {
            return true;
        }
        return slots_[h & mask_].seq.load(std::memory_order_acquire) == static_cast<std::uint32_t>(h + 1);
    }

private:
    FifoControl* ctl_ = nullptr;
    Slot* slots_ = nullptr;
    std::uint64_t mask_ = 0;
    std::uint64_t batch_ = 1;
    // Written by the reader only; read by worth_a_look() from other threads
    // under fine locks, so always written atomically: a relaxed store is a
    // plain move on x86, cheaper than testing whether fine locks are on.
    static void set(std::uint64_t& field, std::uint64_t v)
    {
        std::atomic_ref<std::uint64_t>(field).store(v, std::memory_order_relaxed);
    }

    alignas(8) std::uint64_t head_ = 0;
    alignas(8) std::uint64_t told_ = 0;
};

} // namespace ulmpi::path::shm
