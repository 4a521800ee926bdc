// RangeSet: the out-of-order cases (see range_set.h for the layout).
#include "ulm/range_set.h"

#include <algorithm>

namespace ulmpi::ulm {
namespace {
// Island storage kept when the last hole closes; more than this is returned
// to the system, so a burst of holes does not pin memory forever.
constexpr std::size_t kKeepIslands = 64;
} // namespace

void RangeSet::clear()
{
    in_order_ = 0;
    count_ = 0;
    head_ = 0;
    islands_.clear();
}

std::size_t RangeSet::find(std::uint64_t seq) const
{
    const auto first = islands_.begin() + static_cast<std::ptrdiff_t>(head_);
    const auto it = std::lower_bound(first, islands_.end(), seq,
                                     [](const Range& r, std::uint64_t s) { return r.hi < s; });
    return static_cast<std::size_t>(it - islands_.begin());
}

bool RangeSet::contains_slow(std::uint64_t seq) const
{
    // seq > in_order_ here.
    if (!has_islands() || seq > islands_.back().hi) {
        return false;
    }
    const std::size_t i = find(seq);
    return i < islands_.size() && islands_[i].lo <= seq;
}

void RangeSet::pop_front()
{
    ++head_;
    if (head_ == islands_.size()) {
        head_ = 0;
        if (islands_.capacity() > kKeepIslands) {
            std::vector<Range>().swap(islands_);
        } else {
            islands_.clear();
        }
    }
}

void RangeSet::push_back(Range r)
{
    if (islands_.size() == islands_.capacity() && head_ != 0 && head_ >= islands()) {
        // At least half the storage is retired islands: slide the live ones
        // down instead of growing (amortized O(1): the next compaction is at
        // least size()/2 appends away).
        islands_.erase(islands_.begin(), islands_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
    }
    islands_.push_back(r);
}

bool RangeSet::insert_slow(std::uint64_t seq)
{
    if (seq <= in_order_ || seq == 0) {
        return false;
    }
    if (seq == in_order_ + 1) {
        // Extends the prefix (islands exist, or the fast path would have taken it).
        in_order_ = seq;
        ++count_;
        if (has_islands() && islands_[head_].lo == seq + 1) {
            in_order_ = islands_[head_].hi;
            pop_front();
        }
        return true;
    }
    // seq > in_order_ + 1: it belongs to the island region.
    if (!has_islands()) {
        push_back(Range{seq, seq});
        ++count_;
        return true;
    }
    Range& top = islands_.back();
    if (seq > top.hi) {
        if (seq == top.hi + 1) {
            top.hi = seq;
        } else {
            push_back(Range{seq, seq});
        }
        ++count_;
        return true;
    }
    // in_order_ + 1 < seq <= top.hi: inside an island or in a hole below one.
    const std::size_t i = find(seq);
    Range& next = islands_[i]; // first island with hi >= seq; exists since seq <= top.hi
    if (seq >= next.lo) {
        return false; // duplicate
    }
    // seq lies in the hole just below `next`. Its lower neighbour is the
    // previous island, or the prefix for the first island (but seq ==
    // in_order_ + 1 was handled above, so it cannot touch the prefix).
    const bool joins_next = seq + 1 == next.lo;
    const bool joins_prev = i > head_ && islands_[i - 1].hi + 1 == seq;
    if (joins_prev && joins_next) {
        islands_[i - 1].hi = next.hi; // the hole closes: two islands become one
        islands_.erase(islands_.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (joins_prev) {
        islands_[i - 1].hi = seq;
    } else if (joins_next) {
        next.lo = seq;
    } else if (i == head_ && head_ != 0) {
        // A new island in front of the first: reuse a retired slot.
        --head_;
        islands_[head_] = Range{seq, seq};
    } else {
        // A new island in the middle of a hole: the hole splits in two.
        islands_.insert(islands_.begin() + static_cast<std::ptrdiff_t>(i), Range{seq, seq});
    }
    ++count_;
    return true;
}

} // namespace ulmpi::ulm
