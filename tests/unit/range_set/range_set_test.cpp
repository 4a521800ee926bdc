// ulm::RangeSet against a std::set reference: random orders with duplicates,
// in_order (LIRS/LIDS), merging of neighbours, gaps, large in-order runs.
#include "ulm/range_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace ulmpi::ulm {
namespace {

using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

Ranges ranges_of(const RangeSet& s)
{
    Ranges out;
    s.for_each_range([&](RangeSet::Range r) { out.emplace_back(r.lo, r.hi); });
    return out;
}

Ranges ranges_of(const std::set<std::uint64_t>& ref)
{
    Ranges out;
    for (std::uint64_t v : ref) {
        if (!out.empty() && out.back().second + 1 == v) {
            out.back().second = v;
        } else {
            out.emplace_back(v, v);
        }
    }
    return out;
}

std::uint64_t in_order_of(const std::set<std::uint64_t>& ref)
{
    std::uint64_t n = 0;
    for (std::uint64_t v : ref) {
        if (v != n + 1) {
            break;
        }
        n = v;
    }
    return n;
}

// Full comparison of the set's observable state with the reference.
void expect_same(const RangeSet& s, const std::set<std::uint64_t>& ref, std::uint64_t universe)
{
    ASSERT_EQ(s.count(), ref.size());
    ASSERT_EQ(s.in_order(), in_order_of(ref));
    ASSERT_EQ(s.highest(), ref.empty() ? 0 : *ref.rbegin());
    const Ranges want = ranges_of(ref);
    ASSERT_EQ(ranges_of(s), want);
    ASSERT_EQ(s.ranges(), want.size());
    for (std::uint64_t v = 0; v <= universe + 1; ++v) {
        ASSERT_EQ(s.contains(v), ref.count(v) == 1) << "seq " << v;
    }
    // Missing below highest, one by one and as gaps.
    std::vector<std::uint64_t> missing_want;
    for (std::uint64_t v = 1; v < s.highest(); ++v) {
        if (ref.count(v) == 0) {
            missing_want.push_back(v);
        }
    }
    std::vector<std::uint64_t> missing_got(s.missing().begin(), s.missing().end());
    ASSERT_EQ(missing_got, missing_want);
    std::vector<std::uint64_t> from_gaps;
    s.for_each_gap([&](RangeSet::Range g) {
        ASSERT_LE(g.lo, g.hi);
        for (std::uint64_t v = g.lo; v <= g.hi; ++v) {
            from_gaps.push_back(v);
        }
    });
    ASSERT_EQ(from_gaps, missing_want);
}

TEST(RangeSet, starts_empty)
{
    RangeSet s;
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.in_order(), 0u);
    EXPECT_EQ(s.highest(), 0u);
    EXPECT_EQ(s.ranges(), 0u);
    EXPECT_FALSE(s.contains(0));
    EXPECT_FALSE(s.contains(1));
    EXPECT_EQ(s.missing().begin(), s.missing().end());
}

TEST(RangeSet, zero_is_never_a_member)
{
    RangeSet s;
    EXPECT_FALSE(s.insert(0));
    EXPECT_TRUE(s.empty());
    EXPECT_TRUE(s.insert(1));
    EXPECT_FALSE(s.insert(0));
    EXPECT_FALSE(s.contains(0));
    EXPECT_EQ(s.count(), 1u);
}

TEST(RangeSet, in_order_inserts_keep_one_range)
{
    RangeSet s;
    constexpr std::uint64_t kN = 1000000;
    for (std::uint64_t seq = 1; seq <= kN; ++seq) {
        ASSERT_TRUE(s.insert(seq));
    }
    EXPECT_EQ(s.ranges(), 1u);
    EXPECT_EQ(s.islands(), 0u);
    EXPECT_EQ(s.in_order(), kN);
    EXPECT_EQ(s.highest(), kN);
    EXPECT_EQ(s.count(), kN);
    EXPECT_TRUE(s.contains(kN));
    EXPECT_FALSE(s.contains(kN + 1));
    EXPECT_FALSE(s.insert(kN / 2)); // duplicate
    EXPECT_FALSE(s.insert(kN));
    EXPECT_EQ(s.count(), kN);
}

TEST(RangeSet, duplicates_are_reported)
{
    RangeSet s;
    EXPECT_TRUE(s.insert(5));
    EXPECT_FALSE(s.insert(5));
    EXPECT_TRUE(s.insert(1));
    EXPECT_FALSE(s.insert(1));
    EXPECT_TRUE(s.insert(6));
    EXPECT_FALSE(s.insert(6));
    EXPECT_FALSE(s.insert(5));
    EXPECT_EQ(s.count(), 3u);
}

TEST(RangeSet, in_order_is_lirs)
{
    RangeSet s;
    EXPECT_TRUE(s.insert(2));
    EXPECT_TRUE(s.insert(3));
    EXPECT_EQ(s.in_order(), 0u); // 1 is missing
    EXPECT_EQ(s.highest(), 3u);
    EXPECT_TRUE(s.insert(1));
    EXPECT_EQ(s.in_order(), 3u); // the island 2..3 joined the prefix
    EXPECT_EQ(s.ranges(), 1u);
    EXPECT_TRUE(s.insert(5));
    EXPECT_TRUE(s.insert(7));
    EXPECT_EQ(s.in_order(), 3u);
    EXPECT_TRUE(s.insert(4));
    EXPECT_EQ(s.in_order(), 5u);
    EXPECT_TRUE(s.insert(6));
    EXPECT_EQ(s.in_order(), 7u);
    EXPECT_EQ(s.ranges(), 1u);
}

TEST(RangeSet, neighbours_merge)
{
    RangeSet s;
    // Islands 10, 12, 14 (ranges: three), then fill the holes.
    EXPECT_TRUE(s.insert(10));
    EXPECT_TRUE(s.insert(12));
    EXPECT_TRUE(s.insert(14));
    EXPECT_EQ(s.ranges(), 3u);
    EXPECT_TRUE(s.insert(13)); // closes the hole between 12 and 14
    EXPECT_EQ(s.ranges(), 2u);
    EXPECT_EQ(ranges_of(s), (Ranges{{10, 10}, {12, 14}}));
    EXPECT_TRUE(s.insert(9));  // extends an island downwards
    EXPECT_TRUE(s.insert(15)); // extends the top
    EXPECT_EQ(ranges_of(s), (Ranges{{9, 10}, {12, 15}}));
    EXPECT_TRUE(s.insert(11));
    EXPECT_EQ(ranges_of(s), (Ranges{{9, 15}}));
    EXPECT_TRUE(s.insert(5)); // a new island in front of the first
    EXPECT_TRUE(s.insert(7));
    EXPECT_EQ(ranges_of(s), (Ranges{{5, 5}, {7, 7}, {9, 15}}));
    EXPECT_EQ(s.in_order(), 0u);
    for (std::uint64_t v : {1u, 2u, 3u, 4u}) {
        EXPECT_TRUE(s.insert(v));
    }
    EXPECT_EQ(ranges_of(s), (Ranges{{1, 5}, {7, 7}, {9, 15}}));
    EXPECT_EQ(s.in_order(), 5u);
    EXPECT_TRUE(s.insert(8));
    EXPECT_EQ(ranges_of(s), (Ranges{{1, 5}, {7, 15}}));
    EXPECT_TRUE(s.insert(6));
    EXPECT_EQ(ranges_of(s), (Ranges{{1, 15}}));
    EXPECT_EQ(s.in_order(), 15u);
    EXPECT_EQ(s.islands(), 0u);
}

TEST(RangeSet, missing_lists_holes_below_highest)
{
    RangeSet s;
    for (std::uint64_t v : {1u, 2u, 5u, 6u, 9u}) {
        EXPECT_TRUE(s.insert(v));
    }
    std::vector<std::uint64_t> got(s.missing().begin(), s.missing().end());
    EXPECT_EQ(got, (std::vector<std::uint64_t>{3, 4, 7, 8}));
    Ranges gaps;
    s.for_each_gap([&](RangeSet::Range g) { gaps.emplace_back(g.lo, g.hi); });
    EXPECT_EQ(gaps, (Ranges{{3, 4}, {7, 8}}));
}

TEST(RangeSet, random_orders_match_std_set)
{
    std::mt19937_64 rng(42);
    for (int trial = 0; trial < 200; ++trial) {
        const std::uint64_t universe = 1 + rng() % 300;
        // Every value once, shuffled, with duplicates sprinkled in; sometimes
        // nearly in order (small local swaps), as striping produces.
        std::vector<std::uint64_t> order(universe);
        std::iota(order.begin(), order.end(), std::uint64_t{1});
        if (trial % 3 == 0) {
            for (std::size_t i = 0; i + 1 < order.size(); ++i) {
                if (rng() % 4 == 0) {
                    std::swap(order[i], order[std::min(order.size() - 1, i + 1 + rng() % 5)]);
                }
            }
        } else {
            std::shuffle(order.begin(), order.end(), rng);
        }
        const std::size_t dups = rng() % (universe + 1);
        for (std::size_t d = 0; d < dups; ++d) {
            const std::size_t at = rng() % (order.size() + 1);
            order.insert(order.begin() + static_cast<std::ptrdiff_t>(at), 1 + rng() % universe);
        }
        RangeSet s;
        std::set<std::uint64_t> ref;
        for (std::size_t k = 0; k < order.size(); ++k) {
            const std::uint64_t v = order[k];
            const bool fresh = ref.insert(v).second;
            ASSERT_EQ(s.insert(v), fresh) << "trial " << trial << " step " << k << " seq " << v;
            if (k % 7 == 0 || k + 1 == order.size()) {
                expect_same(s, ref, universe);
                if (HasFatalFailure()) {
                    return;
                }
            }
        }
        EXPECT_EQ(s.ranges(), 1u);
        EXPECT_EQ(s.in_order(), universe);
    }
}

TEST(RangeSet, random_sparse_subsets_match_std_set)
{
    // Not every value arrives: holes stay open, the island vector grows,
    // shrinks from the front and gets reused.
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 100; ++trial) {
        const std::uint64_t universe = 1 + rng() % 2000;
        RangeSet s;
        std::set<std::uint64_t> ref;
        const std::size_t steps = rng() % (2 * universe);
        std::uint64_t front = 1;
        for (std::size_t k = 0; k < steps; ++k) {
            // Mostly near a moving front, sometimes anywhere.
            std::uint64_t v =
                rng() % 4 == 0 ? 1 + rng() % universe : std::min(universe, front + rng() % 16);
            front = std::min(universe, front + (rng() % 3 == 0 ? 1 : 0));
            ASSERT_EQ(s.insert(v), ref.insert(v).second);
            if (k % 50 == 0) {
                expect_same(s, ref, universe);
                if (HasFatalFailure()) {
                    return;
                }
            }
        }
        expect_same(s, ref, universe);
        if (HasFatalFailure()) {
            return;
        }
    }
}

TEST(RangeSet, islands_track_holes_not_sequences)
{
    RangeSet s;
    // 1000 islands of 1000 sequences each, every hole one wide.
    for (std::uint64_t i = 0; i < 1000; ++i) {
        for (std::uint64_t j = 0; j < 1000; ++j) {
            ASSERT_TRUE(s.insert(2 + i * 1001 + j));
        }
    }
    EXPECT_EQ(s.islands(), 1000u);
    EXPECT_EQ(s.in_order(), 0u);
    EXPECT_EQ(s.count(), 1000000u);
    // Fill the holes from the front: the prefix swallows one island each time.
    for (std::uint64_t i = 0; i < 1000; ++i) {
        ASSERT_TRUE(s.insert(1 + i * 1001));
        ASSERT_EQ(s.in_order(), (i + 1) * 1001);
        ASSERT_EQ(s.islands(), 999 - i);
    }
    EXPECT_EQ(s.ranges(), 1u);
}

TEST(RangeSet, handles_the_top_of_the_sequence_space)
{
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    RangeSet s;
    EXPECT_TRUE(s.insert(kMax));
    EXPECT_TRUE(s.insert(kMax - 2));
    EXPECT_TRUE(s.contains(kMax));
    EXPECT_FALSE(s.contains(kMax - 1));
    EXPECT_EQ(s.highest(), kMax);
    EXPECT_TRUE(s.insert(kMax - 1));
    EXPECT_EQ(s.islands(), 1u);
    EXPECT_FALSE(s.insert(kMax));
    EXPECT_EQ(s.count(), 3u);
}

TEST(RangeSet, clear_resets)
{
    RangeSet s;
    s.insert(1);
    s.insert(3);
    s.clear();
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.ranges(), 0u);
    EXPECT_FALSE(s.contains(1));
    EXPECT_TRUE(s.insert(1));
    EXPECT_EQ(s.in_order(), 1u);
}

} // namespace
} // namespace ulmpi::ulm
