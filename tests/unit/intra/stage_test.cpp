// intra/stage.h: which updates a section stages and where (seeded random
// sizes around the threshold and the area's limit), and the staging area
// itself (2 MiB aligned, grows across the 2 MiB boundaries, every byte
// writable; a shared memfd, registered, and a fork's child's own). That staged updates reach the siblings is tested under mpirun
// (tests/intra, --param intra_stage_min).
#include "ft/intra/stage.h"
#include "runtime/shared_region.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

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

// The area is a memfd registered as shared (runtime/shared_region.h: the
// shared-memory path finds a staged update in it and names its file and
// offset), follows the area when it grows, and a forked child (a re-created
// replica) makes an area of its own before it writes: the parent's staged
// bytes stay as they were.
TEST(IntraStage, shared_area_is_registered_and_a_fork_makes_its_own)
{
    if (!Stage::can_share()) {
        GTEST_SKIP() << "no memfd here";
    }
    Stage s;
    ASSERT_TRUE(s.reserve(3u << 20));
    ASSERT_TRUE(s.shared());
    rt::SharedRef ref;
    ASSERT_TRUE(rt::find_shared(s.data() + 100, 1000, &ref));
    EXPECT_EQ(ref.offset, 100u);
    EXPECT_TRUE(rt::find_shared(s.data() + s.capacity() - 10, 10, &ref));
    EXPECT_FALSE(rt::find_shared(s.data() + s.capacity() - 10, 11, &ref));
    const std::uint64_t ino = ref.ino;
    ASSERT_TRUE(s.reserve(9u << 20)); // grows: the same file, registered anew
    ASSERT_TRUE(rt::find_shared(s.data() + (8u << 20), 4096, &ref));
    EXPECT_EQ(ref.ino, ino);
    EXPECT_EQ(ref.offset, 8u << 20);
    std::memset(s.data(), 0x5a, s.capacity());
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        bool ok = s.reserve(1u << 20) && s.shared();
        rt::SharedRef mine;
        ok = ok && rt::find_shared(s.data(), 1, &mine) && mine.ino != ino;
        if (ok) {
            std::memset(s.data(), 0x77, s.capacity());
        }
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's area";
    for (std::uint64_t i = 0; i < s.capacity(); i += 997) {
        ASSERT_EQ(s.data()[i], std::byte{0x5a}) << "byte " << i << " written by the child";
    }
    ASSERT_TRUE(rt::find_shared(s.data(), 1, &ref));
    EXPECT_EQ(ref.ino, ino);
    const std::uint64_t cap = s.capacity();
    ASSERT_TRUE(s.reserve(1, false)); // intra_stage_shared=0: private, as large
    EXPECT_FALSE(s.shared());
    EXPECT_EQ(s.capacity(), cap);
    EXPECT_FALSE(rt::find_shared(s.data(), 1, &ref));
    ASSERT_TRUE(s.reserve(1, true));
    EXPECT_TRUE(s.shared());
    EXPECT_TRUE(rt::find_shared(s.data() + cap - 1, 1, &ref));
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
