#include "runtime/notice_filter.h"

#include <algorithm>

namespace ulmpi::rt {

void NoticeFilter::reset(const std::vector<int>& incarnations)
{
    known_ = incarnations;
    told_.assign(known_.size(), -1);
}

bool NoticeFilter::news(int rank, int incarnation)
{
    if (!valid(rank) || stale(rank, incarnation)) {
        return false;
    }
    int& told = told_[static_cast<std::size_t>(rank)];
    if (incarnation <= told) {
        return false;
    }
    told = incarnation;
    return true;
}

bool NoticeFilter::stale(int rank, int incarnation) const
{
    return valid(rank) && incarnation < known_[static_cast<std::size_t>(rank)];
}

void NoticeFilter::revived(int rank, int incarnation)
{
    if (!valid(rank)) {
        return;
    }
    const auto r = static_cast<std::size_t>(rank);
    known_[r] = std::max(known_[r], incarnation);
    told_[r] = -1;
}

void NoticeFilter::forget_told() { std::fill(told_.begin(), told_.end(), -1); }

int NoticeFilter::known(int rank) const
{
    return valid(rank) ? known_[static_cast<std::size_t>(rank)] : 0;
}

} // namespace ulmpi::rt
