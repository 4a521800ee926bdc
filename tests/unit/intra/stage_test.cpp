// intra/stage.h: which updates a section stages and where (seeded random
// sizes around the threshold and the area's limit), and the staging area
// itself (2 MiB aligned, grows across the 2 MiB boundaries, every byte
// writable). That staged updates reach the siblings is tested under mpirun
// (tests/intra, --param intra_stage_min).
#include "ft/intra/stage.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace ulmpi::test {
namespace {

using intra::kDirect;
using intra::kStageAlign;
using intra::plan_stage;
using intra::Stage;

TEST(IntraStage, stages_what_reaches_the_threshold_and_fits_the_limit)
{
    for (std::uint32_t seed = 1; seed <= 300; ++seed) {
        std::mt19937_64 rng(seed);
        const std::uint64_t min = rng() % 3 == 0 ? 0 : 1 + rng() % 100000;
        const std::uint64_t max = rng() % 400000;
        std::vector<std::uint64_t> sizes(rng() % 40);
        for (auto& z : sizes) {
            // around min, around max, anything
            switch (rng() % 3) {
            case 0: z = min + rng() % 5 - std::min<std::uint64_t>(min, 2); break;
            case 1: z = max + rng() % 5 - std::min<std::uint64_t>(max, 2); break;
            default: z = rng() % 200000; break;
            }
        }
        const intra::StagePlan p = plan_stage(sizes, min, max);
        ASSERT_EQ(p.offset.size(), sizes.size());
        ASSERT_LE(p.bytes, max) << "seed " << seed;
        std::uint64_t end = 0; // where the last staged update ends
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            const std::uint64_t at = (end + kStageAlign - 1) / kStageAlign * kStageAlign;
            const bool fits = at <= max && sizes[i] <= max - at;
            const bool want = min != 0 && sizes[i] >= min && fits;
            ASSERT_EQ(p.offset[i] != kDirect, want) << "seed " << seed << " update " << i;
            if (want) {
                ASSERT_EQ(p.offset[i], at) << "seed " << seed; // in order, aligned, no overlap
                end = at + sizes[i];
            }
        }
        ASSERT_EQ(p.bytes, end) << "seed " << seed;
    }
}

TEST(IntraStage, area_is_aligned_writable_and_grows_across_huge_pages)
{
    std::mt19937_64 rng(7);
    Stage s;
    EXPECT_EQ(s.capacity(), 0u);
    std::uint64_t cap = 0;
    for (int i = 0; i < 40; ++i) {
        // sizes around the multiples of 2 MiB, up to 10 MiB
        const std::uint64_t k = 1 + rng() % 5;
        const std::uint64_t want = k * Stage::kHuge + rng() % 9 - 4;
        ASSERT_TRUE(s.reserve(want));
        ASSERT_GE(s.capacity(), want);
        ASSERT_EQ(s.capacity() % Stage::kHuge, 0u);
        ASSERT_GE(s.capacity(), cap); // never shrinks
        cap = s.capacity();
        ASSERT_EQ(reinterpret_cast<std::uintptr_t>(s.data()) % Stage::kHuge, 0u);
        std::memset(s.data(), 0x5a, want);                 // every byte asked for
        s.data()[s.capacity() - 1] = std::byte{0x11};      // and the last one it has
        ASSERT_EQ(s.data()[want - 1], std::byte{0x5a});
    }
    ASSERT_TRUE(s.reserve(1)); // smaller: the same area
    EXPECT_EQ(s.capacity(), cap);
}

TEST(IntraStage, pays_only_where_huge_pages_are_advised)
{
    EXPECT_TRUE(intra::thp_madvise_mode("always [madvise] never\n"));
    EXPECT_FALSE(intra::thp_madvise_mode("[always] madvise never\n"));
    EXPECT_FALSE(intra::thp_madvise_mode("always madvise [never]\n"));
    EXPECT_FALSE(intra::thp_madvise_mode(""));
    EXPECT_FALSE(intra::thp_madvise_mode(nullptr));
}

} // namespace
} // namespace ulmpi::test
