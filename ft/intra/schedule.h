// Who runs which task of a section (docs/intra_parallelization.md,
// "Schedule" and "Failures"): the paper's static split over the R replica
// slots, with the share of every slot this replica knows dead split in turn
// over the live ones, and the end-of-section markers of R >= 3.
#pragma once

#include "ft/intra/task.h"

#include <bit>
#include <cstdint>
#include <vector>

namespace ulmpi::intra {

// Slot that runs task `task` of `n` when `live` (bit k: slot k) holds the
// live slots: the static split's slot if it lives, else, of the dead slot's
// block of tasks, the j-th part of len*j/m.. goes to the j-th live slot (m
// live slots, in slot order). Replicas that agree on `live` agree on every
// owner without a message; `live` must not be empty.
inline int live_owner(int task, int n, int r, std::uint32_t live)
{
    const int p = owner_slot(task, n, r);
    if (live & (1u << p)) {
        return p;
    }
    const auto b = static_cast<int>(static_cast<long long>(p) * n / r);
    const auto e = static_cast<int>(static_cast<long long>(p + 1) * n / r);
    const int m = std::popcount(live);
    int q = owner_slot(task - b, e - b, m); // the q-th live slot
    for (int k = 0; k < 32; ++k) {
        if (live & (1u << k)) {
            if (q-- == 0) {
                return k;
            }
        }
    }
    return p; // (not reached: live has m bits)
}

// The tag of replica `slot`'s end-of-section marker: the task field holds
// the slot, the parameter field the one value no parameter has (a task has
// at most kMaxArgs - 1 parameters).
inline int marker_tag(std::uint64_t section, int slot)
{
    return update_tag(section, slot, kMaxArgs - 1);
}

// A marker's body: bit i set when the sender sent task i's update to the
// receiver in this section.
struct TaskBits {
    std::vector<std::uint8_t> bytes;

    explicit TaskBits(int n) : bytes(static_cast<std::size_t>((n + 7) / 8), 0) {}
    void set(int i) { bytes[static_cast<std::size_t>(i) / 8] |= std::uint8_t(1u << (i % 8)); }
    bool test(int i) const { return bytes[static_cast<std::size_t>(i) / 8] & (1u << (i % 8)); }
};

} // namespace ulmpi::intra
