// rt::Pool: growth by chunks, reuse of freed slots, the max_objects limit,
// construction and destruction of the objects it hands out.
#include "runtime/pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

namespace ulmpi::rt {
namespace {

struct Counted {
    static inline int alive = 0;
    int a;
    int b;
    Counted(int x, int y) : a(x), b(y) { ++alive; }
    ~Counted() { --alive; }
};

struct alignas(64) Wide {
    std::uint64_t v[3];
};

TEST(Pool, grows_geometrically_when_exhausted)
{
    Pool<int> pool(4);
    EXPECT_EQ(pool.capacity(), 0u);
    std::vector<int*> got;
    for (int i = 0; i < 4; ++i) {
        got.push_back(pool.get(i));
    }
    EXPECT_EQ(pool.capacity(), 4u);
    got.push_back(pool.get(4));
    EXPECT_EQ(pool.capacity(), 4u + 8u);
    for (int i = 5; i < 12; ++i) {
        got.push_back(pool.get(i));
    }
    EXPECT_EQ(pool.capacity(), 12u);
    got.push_back(pool.get(12));
    EXPECT_EQ(pool.capacity(), 12u + 16u);
    EXPECT_EQ(pool.in_use(), 13u);
    std::set<int*> distinct(got.begin(), got.end());
    EXPECT_EQ(distinct.size(), got.size());
    for (int i = 0; i < 13; ++i) {
        EXPECT_EQ(*got[static_cast<std::size_t>(i)], i);
    }
    for (int* p : got) {
        pool.put(p);
    }
    EXPECT_EQ(pool.in_use(), 0u);
}

TEST(Pool, reuses_freed_slot_without_growing)
{
    Pool<int> pool(2);
    int* a = pool.get(1);
    int* b = pool.get(2);
    pool.put(a);
    int* c = pool.get(3);
    EXPECT_EQ(c, a);
    EXPECT_EQ(*c, 3);
    EXPECT_EQ(pool.capacity(), 2u);
    pool.put(c);
    for (int round = 0; round < 1000; ++round) {
        int* x = pool.get(round);
        EXPECT_EQ(x, a);
        pool.put(x);
    }
    EXPECT_EQ(pool.capacity(), 2u);
    pool.put(b);
}

TEST(Pool, returns_nullptr_when_max_objects_reached)
{
    Pool<int> pool(4, 10);
    std::vector<int*> got;
    for (int i = 0; i < 10; ++i) {
        int* p = pool.get(i);
        ASSERT_NE(p, nullptr) << i;
        got.push_back(p);
    }
    EXPECT_EQ(pool.capacity(), 10u); // 4, then 6 instead of 8
    EXPECT_EQ(pool.get(99), nullptr);
    EXPECT_EQ(pool.in_use(), 10u);
    pool.put(got.back());
    got.pop_back();
    int* again = pool.get(7);
    ASSERT_NE(again, nullptr);
    got.push_back(again);
    EXPECT_EQ(pool.get(8), nullptr);
    for (int* p : got) {
        pool.put(p);
    }
}

TEST(Pool, constructs_with_arguments_and_destroys_on_put)
{
    Counted::alive = 0;
    {
        Pool<Counted> pool(3);
        Counted* a = pool.get(1, 2);
        Counted* b = pool.get(3, 4);
        EXPECT_EQ(a->a, 1);
        EXPECT_EQ(a->b, 2);
        EXPECT_EQ(b->a, 3);
        EXPECT_EQ(Counted::alive, 2);
        pool.put(a);
        EXPECT_EQ(Counted::alive, 1);
        pool.put(b);
        EXPECT_EQ(Counted::alive, 0);
    }
    EXPECT_EQ(Counted::alive, 0);
}

TEST(Pool, keeps_alignment_of_overaligned_types)
{
    Pool<Wide> pool(3);
    std::vector<Wide*> got;
    for (int i = 0; i < 50; ++i) {
        Wide* w = pool.get();
        ASSERT_NE(w, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w) % 64, 0u);
        w->v[0] = w->v[1] = w->v[2] = static_cast<std::uint64_t>(i);
        got.push_back(w);
    }
    for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(got[static_cast<std::size_t>(i)]->v[2], static_cast<std::uint64_t>(i));
        pool.put(got[static_cast<std::size_t>(i)]);
    }
}

TEST(Pool, treats_zero_first_chunk_as_one)
{
    Pool<int> pool(0);
    int* a = pool.get(1);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(pool.capacity(), 1u);
    int* b = pool.get(2);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(pool.capacity(), 3u);
    pool.put(a);
    pool.put(b);
}

} // namespace
} // namespace ulmpi::rt
