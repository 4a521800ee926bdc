// NoticeFilter: failure notices told once per process of a rank, and never
// about a process already replaced here.
#include "runtime/notice_filter.h"

#include <gtest/gtest.h>

using ulmpi::rt::NoticeFilter;

TEST(NoticeFilter, a_failure_is_news_once)
{
    NoticeFilter f;
    f.reset({0, 0, 0});
    EXPECT_TRUE(f.news(1, 0));
    EXPECT_FALSE(f.news(1, 0)) << "the board tells what the frame told";
    EXPECT_TRUE(f.news(2, 0));
    EXPECT_FALSE(f.news(3, 0)) << "outside the job";
    EXPECT_FALSE(f.news(-1, 0));
}

TEST(NoticeFilter, the_old_process_notice_is_stale_after_the_new_one_is_taken_in)
{
    NoticeFilter f;
    f.reset({0, 0});
    EXPECT_TRUE(f.news(1, 0));
    f.revived(1, 1);
    // A late frame or a board mark not cleared yet: the dead process's.
    EXPECT_TRUE(f.stale(1, 0));
    EXPECT_FALSE(f.news(1, 0));
    // The new process fails: news again.
    EXPECT_FALSE(f.stale(1, 1));
    EXPECT_TRUE(f.news(1, 1));
    EXPECT_FALSE(f.news(1, 1));
    EXPECT_EQ(f.known(1), 1);
}

TEST(NoticeFilter, a_new_process_that_failed_before_it_was_taken_in_is_told_again_after)
{
    NoticeFilter f;
    f.reset({0, 0});
    EXPECT_TRUE(f.news(0, 0));
    // Incarnation 1 was started and died before this process took it in.
    EXPECT_TRUE(f.news(0, 1));
    f.revived(0, 1);
    // Reading the board again after taking it in: its mark is news.
    EXPECT_TRUE(f.news(0, 1));
}

TEST(NoticeFilter, incarnations_known_at_start_make_older_notices_stale)
{
    NoticeFilter f;
    f.reset({2, 0}); // rank 0 runs its third process (from ULMPI_PEER_INCARNATIONS)
    EXPECT_FALSE(f.news(0, 1));
    EXPECT_TRUE(f.news(0, 2));
    f.revived(0, 1); // an older incarnation never moves it back
    EXPECT_EQ(f.known(0), 2);
    f.forget_told();
    EXPECT_TRUE(f.news(0, 2)) << "told again after the queued notices were lost";
}
