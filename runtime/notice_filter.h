// NoticeFilter: which failure notices about ranks are news to this process.
//
// A notice (an EVENT frame, a notice board mark) names a rank and the
// incarnation of the rank's process that failed: 0 for the process the job
// started with, more for a process that replaced a dead one (FT-MPI
// REBUILD, a re-created replica, a spawn slot used again). This process
// knows, per rank, the incarnation it has taken in (revived()). A notice is
//   stale  when its incarnation is older than that: the failure of a process
//          already replaced here, whatever order the notices arrive in;
//   news   otherwise, once per rank and incarnation (the frame and the board
//          both tell it; a later incarnation's failure is news again).
// A notice about an incarnation newer than the one taken in (the new
// process failed before this one took it in) is news too: the rank is
// failed either way. revived() makes the next notice news again, so that
// the board, read again, tells whether the process just taken in is dead.
#pragma once

#include <vector>

namespace ulmpi::rt {

class NoticeFilter {
public:
    // Rank r taken in as incarnation incarnations[r]; nothing told.
    void reset(const std::vector<int>& incarnations);
    // Whether a notice that `rank`'s process of `incarnation` failed is news;
    // if so it is recorded as told.
    bool news(int rank, int incarnation);
    // Whether such a notice is about a process already replaced here.
    bool stale(int rank, int incarnation) const;
    // This process took in `rank`'s process of `incarnation`.
    void revived(int rank, int incarnation);
    // Every failure may be told again (the notices queued so far are lost).
    void forget_told();
    int known(int rank) const;

private:
    bool valid(int rank) const
    {
        return rank >= 0 && static_cast<std::size_t>(rank) < known_.size();
    }
    std::vector<int> known_; // per rank: the incarnation taken in
    std::vector<int> told_;  // per rank: the newest incarnation told failed, -1: none
};

} // namespace ulmpi::rt
