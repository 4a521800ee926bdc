// Intrusive doubly linked list: the element carries its own ListHook, so
// linking and unlinking never allocate. An element is in at most one list per
// hook. Used for descriptor queues (posted receives, unexpected messages,
// unacknowledged fragments) on the fast path.
#pragma once

#include <cstddef>

namespace ulmpi::rt {

struct ListHook {
    ListHook* prev = nullptr;
    ListHook* next = nullptr;
    bool linked() const noexcept { return next != nullptr; }
};

template <class T, ListHook T::*Hook> class IntrusiveList {
public:
    IntrusiveList() noexcept { head_.prev = head_.next = &head_; }
    IntrusiveList(const IntrusiveList&) = delete;
    IntrusiveList& operator=(const IntrusiveList&) = delete;

    bool empty() const noexcept { return head_.next == &head_; }
    std::size_t size() const noexcept { return size_; }

    void push_back(T* item) noexcept { insert_before(&head_, hook(item)); }
    void push_front(T* item) noexcept { insert_before(head_.next, hook(item)); }
    // Inserts item before pos (pos == nullptr: at the end).
    void insert_before(T* pos, T* item) noexcept
    {
        insert_before(pos == nullptr ? &head_ : hook(pos), hook(item));
    }

    T* front() const noexcept { return empty() ? nullptr : owner(head_.next); }
    T* back() const noexcept { return empty() ? nullptr : owner(head_.prev); }
    T* next(T* item) const noexcept
    {
        ListHook* n = hook(item)->next;
        return n == &head_ ? nullptr : owner(n);
    }
    T* prev(T* item) const noexcept
    {
        ListHook* p = hook(item)->prev;
        return p == &head_ ? nullptr : owner(p);
    }

    void remove(T* item) noexcept
    {
        ListHook* h = hook(item);
        h->prev->next = h->next;
        h->next->prev = h->prev;
        h->prev = h->next = nullptr;
        --size_;
    }

    T* pop_front() noexcept
    {
        T* item = front();
        if (item != nullptr) {
            remove(item);
        }
        return item;
    }

    // Iteration that tolerates removal of the current element:
    //   for (T* it = l.front(), *nx; it; it = nx) { nx = l.next(it); ... }

private:
    static ListHook* hook(T* item) noexcept { return &(item->*Hook); }
    static T* owner(ListHook* h) noexcept
    {
        return reinterpret_cast<T*>(reinterpret_cast<char*>(h) - hook_offset());
    }
    static std::size_t hook_offset() noexcept
    {
        // Offset of the hook inside T, measured on a properly aligned probe.
        alignas(T) static unsigned char probe[sizeof(T)];
        T* t = reinterpret_cast<T*>(probe);
        return static_cast<std::size_t>(reinterpret_cast<unsigned char*>(&(t->*Hook)) - probe);
    }
    void insert_before(ListHook* pos, ListHook* h) noexcept
    {
        h->next = pos;
        h->prev = pos->prev;
        pos->prev->next = h;
        pos->prev = h;
        ++size_;
    }

    ListHook head_;
    std::size_t size_ = 0;
};

} // namespace ulmpi::rt
