// Free-list pool of fixed-type objects. Objects are carved from chunks that
// grow geometrically and are only returned to the system when the pool dies,
// so get()/put() on the fast path are a pointer pop/push. Chunks are placed on
// the caller's NUMA node when the process is bound (first-touch by the
// allocating thread).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace ulmpi::rt {

template <class T> class Pool {
public:
    explicit Pool(std::size_t first_chunk = 64, std::size_t max_objects = 0)
        : next_chunk_(first_chunk == 0 ? 1 : first_chunk), max_objects_(max_objects)
    {
    }
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;
    ~Pool()
    {
        for (void* c : chunks_) {
            std::free(c);
        }
    }

    // Constructs a T in a free slot; nullptr when the pool is at its limit or
    // memory is exhausted.
    template <class... Args> T* get(Args&&... args)
    {
        if (free_ == nullptr && !grow()) {
            return nullptr;
        }
        Slot* s = free_;
        free_ = s->next;
        ++in_use_;
        return new (s->storage) T(std::forward<Args>(args)...);
    }

    // get() with default-initialization (`new T`, not `new T()`): members
    // without an initializer keep whatever the slot held, so a T with large
    // arrays (ulm's SendFrag: header and inline copy, 280 bytes) is not
    // zeroed first on every get.
    T* get_default()
    {
        if (free_ == nullptr && !grow()) {
            return nullptr;
        }
        Slot* s = free_;
        free_ = s->next;
        ++in_use_;
        return new (s->storage) T;
    }

    void put(T* obj) noexcept
    {
        obj->~T();
        Slot* s = reinterpret_cast<Slot*>(obj);
        s->next = free_;
        free_ = s;
        --in_use_;
    }

    std::size_t in_use() const noexcept { return in_use_; }
    std::size_t capacity() const noexcept { return capacity_; }

private:
    union Slot {
        Slot* next;
        alignas(T) unsigned char storage[sizeof(T)];
    };

    bool grow()
    {
        std::size_t n = next_chunk_;
        if (max_objects_ != 0) {
            if (capacity_ >= max_objects_) {
                return false;
            }
            if (capacity_ + n > max_objects_) {
                n = max_objects_ - capacity_;
            }
        }
        auto* chunk = static_cast<Slot*>(std::aligned_alloc(
            alignof(Slot) < 64 ? 64 : alignof(Slot), round_up(n * sizeof(Slot), 64)));
        if (chunk == nullptr) {
            return false;
        }
        chunks_.push_back(chunk);
        for (std::size_t i = 0; i < n; ++i) {
            chunk[i].next = (i + 1 < n) ? &chunk[i + 1] : free_;
        }
        free_ = chunk;
        capacity_ += n;
        next_chunk_ = n * 2;
        return true;
    }
    static std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

    Slot* free_ = nullptr;
    std::vector<void*> chunks_;
    std::size_t next_chunk_;
    std::size_t max_objects_;
    std::size_t capacity_ = 0;
    std::size_t in_use_ = 0;
};

} // namespace ulmpi::rt

namespace ulmpi::rt {

// Free list of raw blocks of one size (payload copies kept for
// retransmission). Blocks are allocated in chunks and reused; never freed
// to the system while the pool lives.
class BlockPool {
public:
    explicit BlockPool(std::size_t block_size = 0, std::size_t chunk_blocks = 32)
        : block_(round(block_size)), chunk_(chunk_blocks == 0 ? 1 : chunk_blocks)
    {
    }
    BlockPool(const BlockPool&) = delete;
    BlockPool& operator=(const BlockPool&) = delete;
    ~BlockPool()
    {
        for (void* c : chunks_) {
            std::free(c);
        }
    }
    // Only while no block is out.
    void set_block_size(std::size_t size) { block_ = round(size); }
    std::size_t block_size() const { return block_; }

    void* get()
    {
        if (free_.empty() && !grow()) {
            return nullptr;
        }
        void* b = free_.back();
        free_.pop_back();
        return b;
    }
    void put(void* b) { free_.push_back(b); }

private:
    static std::size_t round(std::size_t v) { return (v + 63) / 64 * 64; }
    bool grow()
    {
        if (block_ == 0) {
            return false;
        }
        void* c = std::aligned_alloc(64, block_ * chunk_);
        if (c == nullptr) {
            return false;
        }
        chunks_.push_back(c);
        for (std::size_t i = 0; i < chunk_; ++i) {
            free_.push_back(static_cast<std::byte*>(c) + i * block_);
        }
        return true;
    }
    std::size_t block_;
    std::size_t chunk_;
    std::vector<void*> chunks_;
    std::vector<void*> free_;
};

} // namespace ulmpi::rt
