// DescTable (ulm/desc_table.h): ids travel on the wire; a stale id (the
// descriptor was freed, maybe its slot reused) must find nothing.
#include "ulm/desc_table.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace ulmpi::ulm {
namespace {

TEST(DescTable, finds_inserted_object_by_nonzero_id)
{
    DescTable<int> t;
    int a = 1;
    int b = 2;
    std::uint64_t ia = t.insert(&a);
    std::uint64_t ib = t.insert(&b);
    EXPECT_NE(ia, 0u) << "0 means 'no descriptor' on the wire";
    EXPECT_NE(ib, 0u);
    EXPECT_NE(ia, ib);
    EXPECT_EQ(t.find(ia), &a);
    EXPECT_EQ(t.find(ib), &b);
    EXPECT_EQ(t.live(), 2u);
}

TEST(DescTable, rejects_id_after_erase)
{
    DescTable<int> t;
    int a = 1;
    std::uint64_t id = t.insert(&a);
    t.erase(id);
    EXPECT_EQ(t.find(id), nullptr);
    EXPECT_EQ(t.live(), 0u);
}

TEST(DescTable, rejects_stale_id_when_slot_is_reused)
{
    DescTable<int> t;
    int a = 1;
    int b = 2;
    std::uint64_t old_id = t.insert(&a);
    t.erase(old_id);
    std::uint64_t new_id = t.insert(&b);
    EXPECT_EQ(static_cast<std::uint32_t>(new_id), static_cast<std::uint32_t>(old_id))
        << "the slot is reused";
    EXPECT_NE(new_id, old_id);
    EXPECT_EQ(t.find(old_id), nullptr);
    EXPECT_EQ(t.find(new_id), &b);
}

TEST(DescTable, ignores_erase_of_stale_id)
{
    DescTable<int> t;
    int a = 1;
    int b = 2;
    std::uint64_t old_id = t.insert(&a);
    t.erase(old_id);
    std::uint64_t new_id = t.insert(&b);
    t.erase(old_id); // a late duplicate must not free the new owner's slot
    EXPECT_EQ(t.find(new_id), &b);
    EXPECT_EQ(t.live(), 1u);
    int c = 3;
    std::uint64_t other = t.insert(&c);
    EXPECT_NE(static_cast<std::uint32_t>(other), static_cast<std::uint32_t>(new_id))
        << "a slot must never be handed out twice";
    EXPECT_EQ(t.find(new_id), &b);
    EXPECT_EQ(t.find(other), &c);
}

TEST(DescTable, double_erase_does_not_free_slot_twice)
{
    DescTable<int> t;
    int a = 1;
    std::uint64_t id = t.insert(&a);
    t.erase(id);
    t.erase(id);
    int b = 2;
    int c = 3;
    std::uint64_t ib = t.insert(&b);
    std::uint64_t ic = t.insert(&c);
    EXPECT_NE(static_cast<std::uint32_t>(ib), static_cast<std::uint32_t>(ic));
    EXPECT_EQ(t.find(ib), &b);
    EXPECT_EQ(t.find(ic), &c);
}

TEST(DescTable, rejects_ids_it_never_issued)
{
    DescTable<int> t;
    int a = 1;
    std::uint64_t id = t.insert(&a);
    EXPECT_EQ(t.find(0), nullptr);
    EXPECT_EQ(t.find(id + 1), nullptr);            // slot beyond the table
    EXPECT_EQ(t.find(id + (1ULL << 32)), nullptr); // wrong generation
    EXPECT_EQ(t.find(~0ULL), nullptr);
    t.erase(~0ULL);
    t.erase(0);
    EXPECT_EQ(t.find(id), &a);
}

TEST(DescTable, stays_consistent_under_random_insert_and_erase)
{
    std::mt19937 rng(7);
    DescTable<int> t;
    std::vector<int> objs(64);
    std::vector<std::pair<std::uint64_t, int*>> live;
    std::vector<std::uint64_t> dead;
    for (int step = 0; step < 20000; ++step) {
        if (live.empty() || (rng() % 2 == 0 && live.size() < objs.size())) {
            int* o = &objs[rng() % objs.size()];
            live.emplace_back(t.insert(o), o);
        } else {
            std::size_t k = rng() % live.size();
            t.erase(live[k].first);
            dead.push_back(live[k].first);
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
        ASSERT_EQ(t.live(), live.size());
    }
    std::set<std::uint64_t> ids;
    for (auto& [id, o] : live) {
        EXPECT_EQ(t.find(id), o);
        EXPECT_TRUE(ids.insert(id).second);
    }
    for (std::uint64_t id : dead) {
        EXPECT_EQ(t.find(id), nullptr) << std::hex << id;
    }
}

} // namespace
} // namespace ulmpi::ulm
