// The acknowledgement table's ring (ft/rep/ack_ring.h): acknowledgements out
// of order, numbers never posted (gaps), a window that wraps around the ring
// many times, acknowledgements before the post and after the release, a dead
// replica's cleanup; and a seeded random run against a reference model (the
// map and set the table used before), operation by operation.
#include "ft/rep/ack_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace ulmpi::test {
namespace {

using rep::AckTable;

std::vector<std::uint64_t> numbers(const AckTable& t, int dst)
{
    std::vector<std::uint64_t> out;
    for (const auto& [m, e] : t.held(dst)) {
        out.push_back(m);
    }
    return out;
}

TEST(AckRing, acknowledgements_out_of_order_release_each_send_once)
{
    AckTable t(2);
    std::vector<ulm::SendMsg> s(9);
    for (std::uint64_t m = 1; m <= 8; ++m) {
        EXPECT_EQ(t.post(1, m, &s[m], 0b10u), 0b10u);
    }
    std::vector<std::uint64_t> left{1, 2, 3, 4, 5, 6, 7, 8};
    for (std::uint64_t m : std::initializer_list<std::uint64_t>{5, 3, 8, 1, 2, 4, 7, 6}) {
        EXPECT_EQ(t.ack(1, 1, m), &s[m]) << m;
        EXPECT_EQ(t.ack(1, 1, m), nullptr) << m; // a duplicate
        std::erase(left, m);
        EXPECT_EQ(numbers(t, 1), left);
    }
    EXPECT_TRUE(t.held(1).empty());
    EXPECT_EQ(t.held(1).span(), 0u);
    EXPECT_EQ(t.held(0).size(), 0u);
}

TEST(AckRing, numbers_never_posted_leave_gaps_that_hold_nothing)
{
    AckTable t(1);
    ulm::SendMsg a, b, c;
    t.post(0, 1, &a, 0b10u);
    t.post(0, 4, &b, 0b10u); // 2 and 3 waited for nobody
    t.post(0, 9, &c, 0b10u);
    EXPECT_EQ(numbers(t, 0), (std::vector<std::uint64_t>{1, 4, 9}));
    EXPECT_EQ(t.held(0).count(3), 0u);
    EXPECT_EQ(t.held(0).find(4)->send, &b);
    EXPECT_EQ(t.ack(0, 1, 1), &a);
    EXPECT_EQ(t.held(0).span(), 6u); // 4 .. 9
    EXPECT_EQ(t.ack(0, 1, 9), &c);
    EXPECT_EQ(t.held(0).span(), 1u);
    EXPECT_EQ(t.ack(0, 1, 4), &b);
    EXPECT_EQ(t.held(0).span(), 0u);
    EXPECT_EQ(t.held(0).stale(), 0u);
}

// A window of 10 numbers slides over 100,000: the ring (16 slots) wraps
// thousands of times and holds exactly the window, in order.
TEST(AckRing, a_sliding_window_wraps_around_the_ring)
{
    AckTable t(1);
    std::vector<ulm::SendMsg> s(16);
    for (std::uint64_t m = 1; m <= 100'000; ++m) {
        t.post(0, m, &s[m % 16], 0b11u);
        if (m > 10) {
            const std::uint64_t old = m - 10;
            EXPECT_EQ(t.ack(0, 0, old), &s[old % 16]);
            EXPECT_EQ(t.ack(0, 1, old), &s[old % 16]);
        }
        if (m % 9973 == 0) {
            std::vector<std::uint64_t> want;
            for (std::uint64_t k = m > 10 ? m - 9 : 1; k <= m; ++k) {
                want.push_back(k);
            }
            EXPECT_EQ(numbers(t, 0), want);
        }
        ASSERT_LE(t.held(0).span(), 11u);
    }
    EXPECT_EQ(t.waiting(), 10u);
}

TEST(AckRing, early_acknowledgements_wait_for_their_post_and_stale_ones_do_not_pin_the_window)
{
    AckTable t(1);
    std::vector<ulm::SendMsg> s(2000);
    // A sender replica 1,000 messages behind its sibling's receiver.
    for (std::uint64_t m = 1; m <= 1000; ++m) {
        EXPECT_EQ(t.ack(0, 1, m), nullptr);
    }
    EXPECT_EQ(t.held(0).size(), 0u);
    EXPECT_EQ(t.held(0).span(), 1000u);
    for (std::uint64_t m = 1; m <= 1000; ++m) {
        EXPECT_EQ(t.post(0, m, &s[m], 0b11u), 0b01u); // replica 1's came early
    }
    for (std::uint64_t m = 1; m <= 1000; ++m) {
        EXPECT_EQ(t.ack(0, 0, m), &s[m]);
    }
    EXPECT_EQ(t.held(0).span(), 0u);
    // A duplicate of a released number: kept aside, the window moves on.
    EXPECT_EQ(t.ack(0, 1, 500), nullptr);
    EXPECT_EQ(t.held(0).stale(), 1u);
    for (std::uint64_t m = 1001; m <= 1500; ++m) {
        t.post(0, m, &s[m], 0b10u);
        EXPECT_EQ(t.ack(0, 1, m), &s[m]);
    }
    EXPECT_EQ(t.held(0).span(), 0u);
    // Posted again (a resend): the early acknowledgement counts, as before.
    EXPECT_EQ(t.post(0, 500, &s[500], 0b11u), 0b01u);
    EXPECT_EQ(t.held(0).stale(), 0u);
    EXPECT_EQ(t.ack(0, 0, 500), &s[500]);
}

TEST(AckRing, a_dead_replica_releases_its_waits_and_forgets_its_early_acknowledgements)
{
    AckTable t(1);
    std::vector<ulm::SendMsg> s(10);
    for (std::uint64_t m = 1; m <= 5; ++m) {
        t.post(0, m, &s[m], m % 2 == 0 ? 0b010u : 0b110u);
    }
    EXPECT_EQ(t.ack(0, 1, 3), &s[3]);
    EXPECT_EQ(t.ack(0, 1, 7), nullptr); // early
    EXPECT_EQ(t.ack(0, 2, 7), nullptr); // early
    auto out = t.drop_replica(0, 1);
    EXPECT_EQ(out, (std::vector<ulm::SendMsg*>{&s[1], &s[2], &s[4], &s[5]}));
    EXPECT_EQ(numbers(t, 0), (std::vector<std::uint64_t>{1, 3, 5})); // they wait for replica 2
    EXPECT_TRUE(t.drop_replica(0, 1).empty());
    // Replica 1 re-created: its early acknowledgement of 7 died with it.
    EXPECT_EQ(t.post(0, 7, &s[7], 0b110u), 0b010u);
    EXPECT_EQ(t.drop_replica(0, 2).size(), 3u);
    EXPECT_EQ(numbers(t, 0), (std::vector<std::uint64_t>{7}));
}

// The table as it was (a map by number, a set of early acknowledgements),
// for post, ack and drop_replica without parking.
struct Model {
    std::map<std::uint64_t, std::pair<ulm::SendMsg*, std::uint32_t>> pend;
    std::set<std::pair<int, std::uint64_t>> early;

    std::uint32_t post(std::uint64_t m, ulm::SendMsg* s, std::uint32_t want)
    {
        for (int l = 0; l < 32; ++l) {
            if ((want & (1u << l)) && early.erase({l, m}) > 0) {
                want &= ~(1u << l);
            }
        }
        if (want != 0) {
            pend[m] = {s, want};
        }
        return want;
    }
    ulm::SendMsg* ack(int l, std::uint64_t m)
    {
        const auto it = pend.find(m);
        if (it == pend.end()) {
            early.insert({l, m});
            return nullptr;
        }
        if (!(it->second.second & (1u << l))) {
            return nullptr;
        }
        ulm::SendMsg* s = it->second.first;
        it->second.second &= ~(1u << l);
        if (it->second.second == 0) {
            pend.erase(it);
        }
        return s;
    }
    std::vector<ulm::SendMsg*> drop(int l)
    {
        std::vector<ulm::SendMsg*> out;
        for (auto it = pend.begin(); it != pend.end();) {
            if (it->second.second & (1u << l)) {
                out.push_back(it->second.first);
                it->second.second &= ~(1u << l);
            }
            it = it->second.second == 0 ? pend.erase(it) : std::next(it);
        }
        std::erase_if(early, [&](const auto& e) { return e.first == l; });
        return out;
    }
};

// Acknowledgements nearly in order with random reordering, duplicates,
// early ones from a replica ahead, numbers posted again, replicas dying.
TEST(AckRing, matches_the_reference_model_in_a_seeded_random_run)
{
    for (std::uint32_t seed = 1; seed <= 20; ++seed) {
        std::mt19937 rng(seed);
        auto pick = [&](std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng); };
        AckTable t(1);
        Model ref;
        std::vector<ulm::SendMsg> s(64);
        std::uint64_t next = 1;
        std::vector<std::pair<int, std::uint64_t>> due; // acknowledgements to give
        for (int op = 0; op < 20'000; ++op) {
            const std::uint64_t r = pick(100);
            if (r < 40) {
                const std::uint64_t m = pick(20) == 0 && next > 40 ? next - 1 - pick(40) : next++;
                const auto want = static_cast<std::uint32_t>(1 + pick(7)); // replicas 0-2
                ulm::SendMsg* sm = &s[m % 64];
                ASSERT_EQ(t.post(0, m, sm, want), ref.post(m, sm, want)) << seed << " post " << m;
                for (int l = 0; l < 3; ++l) {
                    if (want & (1u << l)) {
                        due.emplace_back(l, m);
                    }
                }
            } else if (r < 90 && !due.empty()) {
                // Mostly the oldest, sometimes one further on.
                const std::size_t i = pick(4) == 0 ? pick(due.size()) : pick(std::min<std::size_t>(due.size(), 3));
                const auto [l, m] = due[i];
                if (pick(10) != 0) {
                    due.erase(due.begin() + static_cast<std::ptrdiff_t>(i)); // else a duplicate later
                }
                ASSERT_EQ(t.ack(0, l, m), ref.ack(l, m)) << seed << " ack " << m;
            } else if (r < 97) {
                const auto l = static_cast<int>(pick(3)); // early, from a replica ahead
                const std::uint64_t m = next + pick(30);
                ASSERT_EQ(t.ack(0, l, m), ref.ack(l, m)) << seed << " early " << m;
            } else if (pick(20) == 0) {
                const auto l = static_cast<int>(pick(3));
                ASSERT_EQ(t.drop_replica(0, l), ref.drop(l)) << seed << " drop " << l;
                std::erase_if(due, [&](const auto& d) { return d.first == l; });
            }
            if (op % 97 == 0) {
                std::vector<std::pair<std::uint64_t, std::uint32_t>> got, want;
                for (const auto& [m, e] : t.held(0)) {
                    got.emplace_back(m, e.waiting);
                }
                for (const auto& [m, e] : ref.pend) {
                    want.emplace_back(m, e.second);
                }
                ASSERT_EQ(got, want) << seed << " at " << op;
            }
        }
    }
}

} // namespace
} // namespace ulmpi::test
