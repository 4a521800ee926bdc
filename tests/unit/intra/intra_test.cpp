// intra/: the static split, its rebalancing over the live slots, the update
// and marker tags, and a section without
// replication (every task runs locally, in launch order; calls out of
// place are refused). Sections under replication, with replicas killed, are
// tested by tests/intra (suite intra) under mpirun.
#include "ft/intra/schedule.h"
#include "ft/intra/section.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace ulmpi::test {
namespace {

using intra::Access;
using intra::owner_slot;
using intra::update_tag;

TEST(IntraSplit, first_n_over_r_tasks_go_to_replica_0_and_the_rest_in_blocks)
{
    for (int r = 1; r <= 5; ++r) {
        for (int n = 0; n <= 1100; ++n) {
            std::vector<int> count(static_cast<std::size_t>(r), 0);
            int prev = 0;
            for (int t = 0; t < n; ++t) {
                const int k = owner_slot(t, n, r);
                ASSERT_GE(k, prev) << "n " << n << " r " << r << " t " << t; // blocks, in order
                ASSERT_LT(k, r);
                prev = k;
                ++count[static_cast<std::size_t>(k)];
            }
            ASSERT_EQ(count[0], n / r) << "n " << n << " r " << r;
            for (int k = 0; k < r; ++k) {
                ASSERT_EQ(count[static_cast<std::size_t>(k)], (k + 1) * n / r - k * n / r);
            }
        }
    }
}

TEST(IntraSplit, update_tags_are_distinct_and_valid)
{
    std::set<int> seen;
    for (std::uint64_t s : {1u, 127u, 128u, 300u}) {
        for (int t : {0, 1, 999, intra::kMaxTasks - 1}) {
            for (int a : {0, 1, intra::kMaxArgs - 1}) {
                const int tag = update_tag(s, t, a);
                EXPECT_GE(tag, 0);
                if (s != 128u) { // 128 wraps onto 0 (by design: ULM keeps each pair's order)
                    EXPECT_TRUE(seen.insert(tag).second) << s << " " << t << " " << a;
                }
            }
        }
    }
}

TEST(IntraSplit, a_dead_slots_share_goes_to_the_live_slots_in_blocks)
{
    using intra::live_owner;
    for (int r = 1; r <= 5; ++r) {
        const std::uint32_t all = (1u << r) - 1;
        for (std::uint32_t live = 1; live <= all; ++live) {
            const int m = __builtin_popcount(live);
            for (int n = 0; n <= 300; ++n) {
                std::vector<int> count(static_cast<std::size_t>(r), 0);
                for (int t = 0; t < n; ++t) {
                    const int p = owner_slot(t, n, r);
                    const int k = live_owner(t, n, r, live);
                    ASSERT_TRUE(live & (1u << k)) << "n " << n << " live " << live << " t " << t;
                    if (live & (1u << p)) {
                        ASSERT_EQ(k, p); // a live slot keeps its share
                    }
                    ++count[static_cast<std::size_t>(k)];
                }
                // Every live slot runs its share and, of each dead slot's
                // block of len tasks, len/m or len/m + 1 of them.
                for (int k = 0; k < r; ++k) {
                    if (!(live & (1u << k))) {
                        ASSERT_EQ(count[static_cast<std::size_t>(k)], 0);
                        continue;
                    }
                    int lo = (k + 1) * n / r - k * n / r;
                    int hi = lo;
                    for (int d = 0; d < r; ++d) {
                        if (!(live & (1u << d))) {
                            const int len = (d + 1) * n / r - d * n / r;
                            lo += len / m;
                            hi += (len + m - 1) / m;
                        }
                    }
                    ASSERT_GE(count[static_cast<std::size_t>(k)], lo) << n << " " << live;
                    ASSERT_LE(count[static_cast<std::size_t>(k)], hi) << n << " " << live;
                }
            }
        }
    }
}

TEST(IntraSplit, marker_tags_are_no_update_tags)
{
    std::set<int> updates;
    for (int t = 0; t < 40; ++t) {
        for (int a = 0; a < intra::kMaxArgs - 1; ++a) {
            updates.insert(update_tag(5, t, a));
        }
    }
    std::set<int> markers;
    for (int slot = 0; slot < 32; ++slot) {
        const int tag = intra::marker_tag(5, slot);
        EXPECT_GE(tag, 0);
        EXPECT_EQ(updates.count(tag), 0u) << slot;
        EXPECT_TRUE(markers.insert(tag).second) << slot;
    }
}

TEST(IntraSplit, task_bits)
{
    intra::TaskBits b(19);
    EXPECT_EQ(b.bytes.size(), 3u);
    b.set(0);
    b.set(9);
    b.set(18);
    for (int i = 0; i < 19; ++i) {
        EXPECT_EQ(b.test(i), i == 0 || i == 9 || i == 18) << i;
    }
}

std::vector<int> g_order;

void add_one(void** args, const int* counts)
{
    const auto* in = static_cast<const int*>(args[0]);
    auto* out = static_cast<int*>(args[1]);
    auto* io = static_cast<int*>(args[2]);
    for (int i = 0; i < counts[1]; ++i) {
        out[i] = in[i] + 1;
        io[i] += in[i];
    }
    g_order.push_back(in[0]);
}

intra::TaskDef def3(int n)
{
    intra::TaskDef d;
    d.fn = add_one;
    const ulm::Layout* l = &ulm::bytes_layout();
    d.args = {{Access::in, l, n * 4}, {Access::out, l, n * 4}, {Access::inout, l, n * 4}};
    return d;
}

void add_one_ints(void** args, const int* counts)
{
    // counts are in bytes here (the layout is bytes): 4 per int.
    const int c[3] = {counts[0] / 4, counts[1] / 4, counts[2] / 4};
    add_one(args, c);
}

TEST(IntraSection, runs_every_task_locally_in_launch_order_without_replication)
{
    ulm::Engine eng;
    intra::Section sec(eng, nullptr);
    constexpr int kTasks = 1000;
    std::vector<int> in(kTasks * 2), out(kTasks * 2, -1), io(kTasks * 2, 5);
    for (int i = 0; i < kTasks * 2; ++i) {
        in[static_cast<std::size_t>(i)] = i;
    }
    g_order.clear();
    ASSERT_TRUE(sec.begin().ok());
    intra::TaskDef d = def3(2);
    d.fn = add_one_ints;
    int id = -1;
    ASSERT_TRUE(sec.add_type(d, &id).ok());
    EXPECT_EQ(id, 0);
    EXPECT_EQ(sec.arg_count(id), 3);
    for (int t = 0; t < kTasks; ++t) {
        void* p[3] = {&in[static_cast<std::size_t>(2 * t)], &out[static_cast<std::size_t>(2 * t)],
                      &io[static_cast<std::size_t>(2 * t)]};
        ASSERT_TRUE(sec.launch(id, p, nullptr).ok());
    }
    EXPECT_TRUE(g_order.empty()); // launching only records
    ASSERT_TRUE(sec.end().ok());
    ASSERT_EQ(g_order.size(), static_cast<std::size_t>(kTasks));
    for (int t = 0; t < kTasks; ++t) {
        EXPECT_EQ(g_order[static_cast<std::size_t>(t)], 2 * t);
    }
    for (int i = 0; i < kTasks * 2; ++i) {
        EXPECT_EQ(out[static_cast<std::size_t>(i)], i + 1);
        EXPECT_EQ(io[static_cast<std::size_t>(i)], 5 + i);
    }
    EXPECT_EQ(sec.stats().tasks_run, static_cast<std::uint64_t>(kTasks));
    EXPECT_FALSE(sec.open());
}

TEST(IntraSection, refuses_calls_out_of_place_with_a_reason)
{
    ulm::Engine eng;
    intra::Section sec(eng, nullptr);
    int id = -1;
    void* p[3] = {nullptr, nullptr, nullptr};
    EXPECT_EQ(sec.add_type(def3(1), &id), rt::Errc::invalid_arg);
    EXPECT_EQ(sec.launch(0, p, nullptr), rt::Errc::invalid_arg);
    EXPECT_EQ(sec.end(), rt::Errc::invalid_arg);
    EXPECT_NE(sec.why().find("no section"), std::string::npos) << sec.why();
    ASSERT_TRUE(sec.begin().ok());
    EXPECT_EQ(sec.begin(), rt::Errc::invalid_arg); // no nesting
    intra::TaskDef bad = def3(1);
    bad.fn = nullptr;
    EXPECT_EQ(sec.add_type(bad, &id), rt::Errc::invalid_arg);
    bad = def3(1);
    bad.args[1].count = -1;
    EXPECT_EQ(sec.add_type(bad, &id), rt::Errc::invalid_arg);
    ASSERT_TRUE(sec.add_type(def3(1), &id).ok());
    EXPECT_EQ(sec.launch(id + 1, p, nullptr), rt::Errc::invalid_arg); // not registered
    const int neg[3] = {1, -2, 1};
    EXPECT_EQ(sec.launch(id, p, neg), rt::Errc::invalid_arg);
    ASSERT_TRUE(sec.end().ok());
    EXPECT_EQ(sec.launch(id, p, nullptr), rt::Errc::invalid_arg); // types end with the section
}

TEST(IntraSection, counts_given_at_launch_replace_the_registered_ones)
{
    ulm::Engine eng;
    intra::Section sec(eng, nullptr);
    std::vector<int> in{1, 2, 3, 4}, out(4, 0), io(4, 0);
    ASSERT_TRUE(sec.begin().ok());
    intra::TaskDef d = def3(4);
    d.fn = add_one_ints;
    int id = -1;
    ASSERT_TRUE(sec.add_type(d, &id).ok());
    void* p[3] = {in.data(), out.data(), io.data()};
    const int counts[3] = {8, 8, 8}; // two ints of four
    ASSERT_TRUE(sec.launch(id, p, counts).ok());
    ASSERT_TRUE(sec.end().ok());
    EXPECT_EQ(out, (std::vector<int>{2, 3, 0, 0}));
    EXPECT_EQ(io, (std::vector<int>{1, 2, 0, 0}));
}

} // namespace
} // namespace ulmpi::test
