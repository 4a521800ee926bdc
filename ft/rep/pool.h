// Recycled memory for what the replicator allocates per message: the
// shared_ptr control blocks and the copies of small messages (HeldCopy); the
// acknowledgement table needs none (its ring reuses its slots, ack_ring.h).
// A replicated round trip otherwise spent about 1,600 instructions in malloc
// and free (docs/benchmarks.md).
//
// PoolAlloc<T> is a stateless allocator: single objects come from a free
// list of their own per thread (the freed blocks themselves, linked), of at
// most kKeep blocks; arrays and the rest go to operator new. Blocks left on
// the list at a thread's end stay allocated (reachable from it).
#pragma once

#include <cstddef>
#include <new>

namespace ulmpi::rep {

template <class T> class PoolAlloc {
public:
    using value_type = T;
    static constexpr std::size_t kKeep = 1024;

    PoolAlloc() = default;
    template <class U> PoolAlloc(const PoolAlloc<U>&) noexcept {}

    T* allocate(std::size_t n)
    {
        if (kPooled && n == 1 && head_ != nullptr) {
            Node* b = head_;
            head_ = b->next;
            --kept_;
            return reinterpret_cast<T*>(b);
        }
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kAlign}));
    }
    void deallocate(T* p, std::size_t n) noexcept
    {
        if (kPooled && n == 1 && kept_ < kKeep) {
            Node* b = reinterpret_cast<Node*>(p);
            b->next = head_;
            head_ = b;
            ++kept_;
            return;
        }
        ::operator delete(p, std::align_val_t{kAlign});
    }
    template <class U> bool operator==(const PoolAlloc<U>&) const noexcept { return true; }

private:
    struct Node {
        Node* next;
    };
    static constexpr bool kPooled = sizeof(T) >= sizeof(Node); // a block holds the link
    static constexpr std::size_t kAlign =
        alignof(T) > alignof(std::max_align_t) ? alignof(T) : alignof(std::max_align_t);
    static inline thread_local Node* head_ = nullptr;
    static inline thread_local std::size_t kept_ = 0;
};

} // namespace ulmpi::rep
