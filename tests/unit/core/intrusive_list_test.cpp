// rt::IntrusiveList: linking, unlinking, ordered iteration, insert_before,
// an element on two lists through two hooks.
#include "runtime/intrusive_list.h"

#include <gtest/gtest.h>

#include <vector>

namespace ulmpi::rt {
namespace {

struct Item {
    int value = 0;
    double padding = 0; // the hook is not the first member
    ListHook a;
    char more[13] = {};
    ListHook b;
};

using ListA = IntrusiveList<Item, &Item::a>;
using ListB = IntrusiveList<Item, &Item::b>;

template <class L> std::vector<int> values(const L& l)
{
    std::vector<int> out;
    for (Item* it = l.front(); it != nullptr; it = l.next(it)) {
        out.push_back(it->value);
    }
    return out;
}

template <class L> std::vector<int> values_backwards(const L& l)
{
    std::vector<int> out;
    for (Item* it = l.back(); it != nullptr; it = l.prev(it)) {
        out.push_back(it->value);
    }
    return out;
}

TEST(IntrusiveList, is_empty_when_new)
{
    ListA l;
    EXPECT_TRUE(l.empty());
    EXPECT_EQ(l.size(), 0u);
    EXPECT_EQ(l.front(), nullptr);
    EXPECT_EQ(l.back(), nullptr);
    EXPECT_EQ(l.pop_front(), nullptr);
}

TEST(IntrusiveList, keeps_order_of_push_back_and_push_front)
{
    Item it[4];
    for (int i = 0; i < 4; ++i) {
        it[i].value = i;
    }
    ListA l;
    l.push_back(&it[1]);
    l.push_back(&it[2]);
    l.push_front(&it[0]);
    l.push_back(&it[3]);
    EXPECT_EQ(values(l), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(values_backwards(l), (std::vector<int>{3, 2, 1, 0}));
    EXPECT_EQ(l.size(), 4u);
    EXPECT_EQ(l.front(), &it[0]);
    EXPECT_EQ(l.back(), &it[3]);
    for (auto& i : it) {
        EXPECT_TRUE(i.a.linked());
        EXPECT_FALSE(i.b.linked());
    }
    while (l.pop_front() != nullptr) {
    }
}

TEST(IntrusiveList, removes_front_middle_and_back)
{
    Item it[5];
    ListA l;
    for (int i = 0; i < 5; ++i) {
        it[i].value = i;
        l.push_back(&it[i]);
    }
    l.remove(&it[2]);
    EXPECT_FALSE(it[2].a.linked());
    EXPECT_EQ(values(l), (std::vector<int>{0, 1, 3, 4}));
    l.remove(&it[0]);
    EXPECT_EQ(values(l), (std::vector<int>{1, 3, 4}));
    l.remove(&it[4]);
    EXPECT_EQ(values(l), (std::vector<int>{1, 3}));
    EXPECT_EQ(values_backwards(l), (std::vector<int>{3, 1}));
    EXPECT_EQ(l.size(), 2u);
    EXPECT_EQ(l.pop_front(), &it[1]);
    EXPECT_EQ(l.pop_front(), &it[3]);
    EXPECT_TRUE(l.empty());
    // A removed element can be linked again.
    l.push_back(&it[2]);
    EXPECT_EQ(values(l), (std::vector<int>{2}));
    l.remove(&it[2]);
}

TEST(IntrusiveList, insert_before_places_item_before_pos_or_at_end_when_null)
{
    Item it[6];
    for (int i = 0; i < 6; ++i) {
        it[i].value = i;
    }
    ListA l;
    l.insert_before(nullptr, &it[3]);   // empty list: at the end
    l.insert_before(&it[3], &it[1]);    // before the front
    l.insert_before(&it[3], &it[2]);    // in the middle
    l.insert_before(nullptr, &it[5]);   // at the end
    l.insert_before(&it[5], &it[4]);    // before the back
    l.insert_before(l.front(), &it[0]); // new front
    EXPECT_EQ(values(l), (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(values_backwards(l), (std::vector<int>{5, 4, 3, 2, 1, 0}));
    EXPECT_EQ(l.size(), 6u);
    while (l.pop_front() != nullptr) {
    }
}

TEST(IntrusiveList, tolerates_removal_of_current_element_while_iterating)
{
    Item it[10];
    ListA l;
    for (int i = 0; i < 10; ++i) {
        it[i].value = i;
        l.push_back(&it[i]);
    }
    for (Item *x = l.front(), *nx; x != nullptr; x = nx) {
        nx = l.next(x);
        if (x->value % 2 == 0) {
            l.remove(x);
        }
    }
    EXPECT_EQ(values(l), (std::vector<int>{1, 3, 5, 7, 9}));
    EXPECT_EQ(l.size(), 5u);
    while (l.pop_front() != nullptr) {
    }
}

TEST(IntrusiveList, holds_one_element_on_two_lists_through_two_hooks)
{
    Item it[3];
    ListA la;
    ListB lb;
    for (int i = 0; i < 3; ++i) {
        it[i].value = i;
        la.push_back(&it[i]);
        lb.push_front(&it[i]);
    }
    EXPECT_EQ(values(la), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(values(lb), (std::vector<int>{2, 1, 0}));
    la.remove(&it[1]);
    EXPECT_EQ(values(la), (std::vector<int>{0, 2}));
    EXPECT_EQ(values(lb), (std::vector<int>{2, 1, 0}));
    EXPECT_TRUE(it[1].b.linked());
    while (la.pop_front() != nullptr) {
    }
    while (lb.pop_front() != nullptr) {
    }
}

} // namespace
} // namespace ulmpi::rt
