// mpi::HandleTable (mpi/handle.h, header only): user handles from index
// 1024 on, reused after erase; erase ignores handles of other kinds,
// predefined indexes, indexes past the table and ones already erased.
#include "mpi/handle.h"

#include <gtest/gtest.h>

namespace ulmpi::mpi {
namespace {

constexpr int kKind = 0x6c;
using Table = HandleTable<int, kKind>;

TEST(HandleTable, erase_frees_a_user_handle_for_reuse)
{
    Table t;
    int a = 1;
    int b = 2;
    const int ha = t.insert(&a);
    ASSERT_EQ(handle_kind(ha), kKind);
    ASSERT_EQ(handle_index(ha), Table::kFirstUser);
    EXPECT_EQ(t.get(ha), &a);
    t.erase(ha);
    EXPECT_EQ(t.get(ha), nullptr);
    EXPECT_EQ(t.insert(&b), ha); // the freed index comes back
    EXPECT_EQ(t.get(ha), &b);
}

TEST(HandleTable, erase_ignores_other_kinds_predefined_and_stale_handles)
{
    Table t;
    int pre = 0;
    int a = 1;
    t.set_predefined(1, &pre);
    t.erase(make_handle(kKind, 1)); // predefined: stays, before any user handle exists
    EXPECT_EQ(t.get(make_handle(kKind, 1)), &pre);
    const int ha = t.insert(&a);
    const int index = handle_index(ha);
    // The same index under the kinds next to ours, below and above.
    t.erase(make_handle(kKind - 1, index));
    t.erase(make_handle(kKind + 1, index));
    t.erase(make_handle(kKind + 1, 1));
    t.erase(make_handle(kKind, index + 1)); // past the table's end
    t.erase(make_handle(kKind, 1));
    t.erase(0);
    t.erase(-1);
    EXPECT_EQ(t.get(ha), &a);
    EXPECT_EQ(t.get(make_handle(kKind, 1)), &pre);
    EXPECT_EQ(t.live_user(), 1u);
    t.erase(ha);
    t.erase(ha); // twice: the index is freed once
    int b = 2;
    int c = 3;
    const int hb = t.insert(&b);
    const int hc = t.insert(&c);
    EXPECT_EQ(hb, ha);
    EXPECT_NE(hc, hb);
    EXPECT_EQ(t.get(hb), &b);
    EXPECT_EQ(t.get(hc), &c);
}

} // namespace
} // namespace ulmpi::mpi
