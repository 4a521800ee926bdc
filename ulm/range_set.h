// RangeSet: a set of 64-bit fragment sequence numbers (1, 2, 3, ...) kept as
// sorted disjoint ranges. The receiver keeps two per peer, "received" and
// "delivered"; their in_order() values are the LIRS and LIDS carried by
// every ack (wire.h), and insert() returning false is how a duplicate
// fragment is recognised.
//
// Layout. The prefix 1..in_order_ is a plain counter. Everything above it
// lives in `islands_`: sorted, disjoint, non-adjacent inclusive ranges
// [lo, hi], all with lo > in_order_ + 1 (an island touching the prefix is
// folded into it at once). So the number of islands equals the number of
// holes below the highest sequence, and memory follows the holes, not the
// sequences. islands_ is a vector used as a queue: the live islands are
// [head_, size()); the front island is retired by bumping head_.
//
// Cost of insert(seq):
//   seq == in_order()+1, no islands       O(1), no allocation (the usual case)
//   seq == in_order()+1, fills the first hole  O(1) (merge the front island)
//   seq == highest()+1 (extends the top)  O(1), no allocation
//   a new hole above highest()+1          amortized O(1) (vector append)
//   seq inside the island region          O(log k) search (k = islands), plus
//                                         an O(k) move of 16-byte entries when
//                                         it opens or closes a hole in the
//                                         middle (a memmove; k is bounded by
//                                         the sender's window in practice)
// contains() is O(1) below in_order(), O(log k) above it.
//
// Not thread-safe. Sequence number 0 means "not sequenced" on the wire and is
// never a member: insert(0) returns false and changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ulmpi::ulm {

class RangeSet {
public:
    struct Range {
        std::uint64_t lo; // inclusive
        std::uint64_t hi; // inclusive
    };

    RangeSet() = default;

    // Adds seq; false when it was already present (a duplicate) or seq == 0.
    bool insert(std::uint64_t seq)
    {
        if (seq == in_order_ + 1 && head_ == islands_.size() && seq != 0) [[likely]] {
            in_order_ = seq;
            ++count_;
            return true;
        }
        return insert_slow(seq);
    }

    bool contains(std::uint64_t seq) const
    {
        if (seq <= in_order_) {
            return seq != 0;
        }
        return contains_slow(seq);
    }

    // Largest n such that 1..n are all present; 0 when 1 is missing.
    std::uint64_t in_order() const { return in_order_; }
    // Largest sequence present; 0 when empty.
    std::uint64_t highest() const { return has_islands() ? islands_.back().hi : in_order_; }
    // Number of sequences present.
    std::uint64_t count() const { return count_; }
    bool empty() const { return count_ == 0; }
    // Number of disjoint ranges (the 1..in_order() prefix counts as one).
    std::size_t ranges() const { return (in_order_ != 0 ? 1 : 0) + islands(); }
    // Number of holes below highest(), i.e. of ranges above the prefix.
    std::size_t islands() const { return islands_.size() - head_; }

    void clear();
    // Room for this many holes without allocating (optional).
    void reserve(std::size_t holes) { islands_.reserve(head_ + holes); }

    // f(Range) for every present range, ascending.
    template <class F> void for_each_range(F&& f) const
    {
        if (in_order_ != 0) {
            f(Range{1, in_order_});
        }
        for (std::size_t i = head_; i < islands_.size(); ++i) {
            f(islands_[i]);
        }
    }

    // f(Range) for every missing range below highest(), ascending.
    template <class F> void for_each_gap(F&& f) const
    {
        std::uint64_t next = in_order_ + 1; // first sequence not yet accounted for
        for (std::size_t i = head_; i < islands_.size(); ++i) {
            f(Range{next, islands_[i].lo - 1});
            next = islands_[i].hi + 1;
        }
    }

    // The missing sequences below highest(), one by one, ascending:
    //     for (std::uint64_t seq : set.missing()) { ... }
    // Diagnostics only: a gap may hold very many sequences.
    class MissingIterator {
    public:
        using value_type = std::uint64_t;
        using difference_type = std::ptrdiff_t;
        std::uint64_t operator*() const { return seq_; }
        MissingIterator& operator++()
        {
            if (seq_ + 1 < set_->islands_[idx_].lo) {
                ++seq_;
            } else {
                seq_ = set_->islands_[idx_].hi + 1;
                ++idx_;
            }
            return *this;
        }
        MissingIterator operator++(int)
        {
            MissingIterator old = *this;
            ++*this;
            return old;
        }
        bool operator==(const MissingIterator& o) const { return idx_ == o.idx_ && seq_ == o.seq_; }

    private:
        friend class RangeSet;
        MissingIterator(const RangeSet* set, std::size_t idx, std::uint64_t seq)
            : set_(set), idx_(idx), seq_(seq)
        {
        }
        // Invariant: idx_ < size() means seq_ is missing and seq_ < islands_[idx_].lo.
        const RangeSet* set_;
        std::size_t idx_;
        std::uint64_t seq_;
    };
    struct MissingView {
        const RangeSet* set;
        MissingIterator begin() const
        {
            return MissingIterator(set, set->head_, set->in_order_ + 1);
        }
        MissingIterator end() const
        {
            return MissingIterator(set, set->islands_.size(), set->highest() + 1);
        }
    };
    MissingView missing() const { return MissingView{this}; }

private:
    bool has_islands() const { return head_ != islands_.size(); }
    bool insert_slow(std::uint64_t seq);
    bool contains_slow(std::uint64_t seq) const;
    // Index (into islands_) of the first live island with hi >= seq, or size().
    std::size_t find(std::uint64_t seq) const;
    void pop_front();
    void push_back(Range r);

    std::uint64_t in_order_ = 0;
    std::uint64_t count_ = 0;
    std::size_t head_ = 0;
    std::vector<Range> islands_;
};

} // namespace ulmpi::ulm
