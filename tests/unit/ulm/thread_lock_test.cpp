// The MPI lock (ulm/thread_lock.h): off it does nothing; on, nested entries
// pass through, a released lock lets another thread in, and a waiter that
// calls let_others_in() between passes serves a queued thread.
#include "ulm/thread_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using ulmpi::ulm::ThreadLock;

namespace {

// Waits (bounded) until `flag` holds; the watchdog of these tests.
bool eventually(const std::atomic<bool>& flag, void (*between)(ThreadLock&), ThreadLock& l)
{
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!flag.load()) {
        if (std::chrono::steady_clock::now() > end) {
            return false;
        }
        between(l);
    }
    return true;
}

} // namespace

TEST(ThreadLock, off_guard_takes_nothing)
{
    ThreadLock l;
    {
        ThreadLock::Guard g(l);
        EXPECT_FALSE(ThreadLock::held());
        // Another thread is not kept out either.
        std::atomic<bool> in{false};
        std::thread t([&] {
            ThreadLock::Guard g2(l);
            in = true;
        });
        t.join();
        EXPECT_TRUE(in.load());
    }
    EXPECT_EQ(l.contended(), 0u);
}

TEST(ThreadLock, nested_entries_pass_through)
{
    ThreadLock l;
    l.enable();
    {
        ThreadLock::Guard outer(l);
        EXPECT_TRUE(ThreadLock::held());
        {
            ThreadLock::Guard inner(l); // a callback calling MPI again
            EXPECT_TRUE(ThreadLock::held());
        }
        EXPECT_TRUE(ThreadLock::held());
    }
    EXPECT_FALSE(ThreadLock::held());
}

TEST(ThreadLock, released_lets_another_thread_in_and_restores_depth)
{
    ThreadLock l;
    l.enable();
    std::atomic<bool> in{false};
    ThreadLock::Guard outer(l);
    ThreadLock::Guard inner(l);
    std::thread t([&] {
        ThreadLock::Guard g(l);
        in = true;
    });
    {
        ThreadLock::Released r(l); // a waiter's idle step
        EXPECT_FALSE(ThreadLock::held());
        EXPECT_TRUE(eventually(in, [](ThreadLock&) { std::this_thread::yield(); }, l));
    }
    EXPECT_TRUE(ThreadLock::held());
    t.join();
}

TEST(ThreadLock, waiter_hands_over_between_passes)
{
    ThreadLock l;
    l.enable();
    std::atomic<bool> in{false};
    ThreadLock::Guard g(l);
    std::thread t([&] {
        ThreadLock::Guard g2(l); // queues behind the waiter
        in = true;
    });
    // The waiter never releases the lock except through let_others_in():
    // without the hand-over the other thread would never get in.
    EXPECT_TRUE(eventually(in, [](ThreadLock& lk) { lk.let_others_in(); }, l));
    EXPECT_TRUE(ThreadLock::held());
    EXPECT_GE(l.contended(), 1u);
    t.join();
}

TEST(ThreadLock, many_threads_serialise_their_sections)
{
    ThreadLock l;
    l.enable();
    long counter = 0; // guarded by l only: TSan checks the ordering
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i) {
        ts.emplace_back([&] {
            for (int k = 0; k < 20000; ++k) {
                ThreadLock::Guard g(l);
                ++counter;
                if (k % 100 == 0) {
                    ThreadLock::Released r(l);
                    std::this_thread::yield();
                }
                l.let_others_in();
            }
        });
    }
    for (auto& t : ts) {
        t.join();
    }
    EXPECT_EQ(counter, 80000);
}
