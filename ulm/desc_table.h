// Descriptor ids that travel on the wire (send_id, recv_id). An id is
// (generation << 32 | slot); looking up a stale id (a late or duplicated
// control fragment for a descriptor already freed) returns nullptr instead of
// touching reused memory. With fine locks (runtime/opt_lock.h) the table
// has a leaf lock of its own; the objects it points to are guarded by
// their owners (ulm/engine.h, "Locking").
#pragma once

#include "runtime/opt_lock.h"

#include <cstdint>
#include <vector>

namespace ulmpi::ulm {

template <class T> class DescTable {
public:
    std::uint64_t insert(T* obj)
    {
        rt::OptGuard g(lock_);
        std::uint32_t slot;
        if (!free_.empty()) {
            slot = free_.back();
            free_.pop_back();
        } else {
            slot = static_cast<std::uint32_t>(entries_.size());
            entries_.push_back({nullptr, 1});
        }
        entries_[slot].obj = obj;
        return (static_cast<std::uint64_t>(entries_[slot].gen) << 32) | slot;
    }

    T* find(std::uint64_t id) const
    {
        rt::OptGuard g(lock_);
        auto slot = static_cast<std::uint32_t>(id);
        auto gen = static_cast<std::uint32_t>(id >> 32);
        if (slot >= entries_.size() || entries_[slot].gen != gen) {
            return nullptr;
        }
        return entries_[slot].obj;
    }

    void erase(std::uint64_t id)
    {
        rt::OptGuard g(lock_);
        auto slot = static_cast<std::uint32_t>(id);
        if (slot < entries_.size() && entries_[slot].gen == static_cast<std::uint32_t>(id >> 32)) {
            entries_[slot].obj = nullptr;
            if (++entries_[slot].gen == 0) {
                entries_[slot].gen = 1;
            }
            free_.push_back(slot);
        }
    }

    std::size_t live() const { return entries_.size() - free_.size(); }
    // The live objects, in slot order (a copy: the caller may erase).
    std::vector<T*> all() const
    {
        rt::OptGuard g(lock_);
        std::vector<T*> out;
        for (const Entry& e : entries_) {
            if (e.obj != nullptr) {
                out.push_back(e.obj);
            }
        }
        return out;
    }

private:
    struct Entry {
        T* obj;
        std::uint32_t gen;
    };
    std::vector<Entry> entries_;
    std::vector<std::uint32_t> free_;
    mutable rt::OptMutex lock_;
};

} // namespace ulmpi::ulm
