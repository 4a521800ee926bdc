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
