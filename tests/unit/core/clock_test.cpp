// rt::ManualClock replaces now_ns() while it lives.
#include "runtime/clock.h"

#include <gtest/gtest.h>

namespace ulmpi::rt {
namespace {

TEST(Clock, monotonic_time_never_goes_back)
{
    Nanos last = now_ns();
    for (int i = 0; i < 1000; ++i) {
        Nanos t = now_ns();
        EXPECT_GE(t, last);
        last = t;
    }
}

TEST(ManualClock, drives_now_ns_only_through_advance)
{
    {
        ManualClock clock(5000);
        EXPECT_EQ(now_ns(), 5000);
        EXPECT_EQ(now_ns(), 5000);
        clock.advance(250);
        EXPECT_EQ(now_ns(), 5250);
        EXPECT_EQ(clock.now(), 5250);
        clock.advance(0);
        EXPECT_EQ(now_ns(), 5250);
    }
    // Gone: back to the real clock, which is far from 5250 ns since boot.
    Nanos a = now_ns();
    Nanos b = monotonic_ns();
    EXPECT_LE(a, b);
    EXPECT_LT(b - a, 1000000000);
}

TEST(ManualClock, starts_at_one_second_by_default)
{
    ManualClock clock;
    EXPECT_EQ(now_ns(), 1000000000);
}

} // namespace
} // namespace ulmpi::rt
