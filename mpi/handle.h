// Handle tables. A handle is (kind << 24) | index (see include/mpi.h); each
// kind has a table from index to object. Predefined objects sit at fixed
// small indexes; objects the program creates get indexes from 1024 on,
// reused after they are freed.
#pragma once

#include <cstdint>
#include <vector>

namespace ulmpi::mpi {

constexpr int handle_kind(int h) { return static_cast<int>(static_cast<std::uint32_t>(h) >> 24); }
constexpr int handle_index(int h) { return h & 0xffffff; }
constexpr int make_handle(int kind, int index) { return (kind << 24) | index; }

template <class T, int Kind> class HandleTable {
public:
    static constexpr int kFirstUser = 1024;
    static constexpr int kMaxIndex = 0xffffff;

    // nullptr when h is not a live handle of this kind.
    T* get(int h) const
    {
        if (handle_kind(h) != Kind) {
            return nullptr;
        }
        auto i = static_cast<std::size_t>(handle_index(h));
        return i < objs_.size() ? objs_[i] : nullptr;
    }

    void set_predefined(int index, T* obj)
    {
        if (static_cast<std::size_t>(index) >= objs_.size()) {
            objs_.resize(static_cast<std::size_t>(index) + 1, nullptr);
        }
        objs_[static_cast<std::size_t>(index)] = obj;
    }

    // Returns the new handle, or 0 when the table is full.
    int insert(T* obj)
    {
        int index;
        if (nfree_ != 0) {
            index = free_[--nfree_];
        } else {
            if (objs_.size() < kFirstUser) {
                objs_.resize(kFirstUser, nullptr);
            }
            if (objs_.size() > kMaxIndex) {
                return 0;
            }
            index = static_cast<int>(objs_.size());
            objs_.push_back(nullptr);
        }
        objs_[static_cast<std::size_t>(index)] = obj;
        return make_handle(Kind, index);
    }

    void erase(int h)
    {
        // The index by one subtraction: a handle of another kind gives at
        // least 2^24 (modulo 2^32), past the table's end (insert() keeps it
        // at most 2^24 entries long).
        const std::size_t i = static_cast<std::uint32_t>(h) -
                              static_cast<std::uint32_t>(make_handle(Kind, 0));
        if (i >= kFirstUser && i < objs_.size() && objs_[i] != nullptr) {
            objs_[i] = nullptr;
            if (nfree_ == free_.size()) [[unlikely]] {
                grow_free();
            }
            free_[nfree_++] = static_cast<int>(i);
        }
    }

    std::size_t live_user() const
    {
        std::size_t n = 0;
        for (std::size_t i = kFirstUser; i < objs_.size(); ++i) {
            n += objs_[i] != nullptr ? 1 : 0;
        }
        return n;
    }

    template <class Fn> void for_each_user(Fn&& fn) const
    {
        for (std::size_t i = kFirstUser; i < objs_.size(); ++i) {
            if (objs_[i] != nullptr) {
                fn(objs_[i]);
            }
        }
    }

private:
    std::vector<T*> objs_;
    // Free indexes, a stack of nfree_ entries (its growth out of line, so
    // that erase() stays a few instructions: every request completion).
    [[gnu::noinline]] void grow_free() { free_.resize(free_.empty() ? 64 : free_.size() * 2); }
    std::vector<int> free_;
    std::size_t nfree_ = 0;
};

} // namespace ulmpi::mpi
