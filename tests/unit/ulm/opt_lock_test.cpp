// The fine locks (runtime/opt_lock.h): off they take nothing; on, the
// mutex excludes, the reader-writer lock lets readers in together, keeps a
// writer alone, passes nested guards through, and serves a writer while
// readers keep overlapping (it is never starved by them).
#include "runtime/opt_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace ulmpi::rt;

namespace {

struct FineOn {
    FineOn() { set_fine_locks(true); }
    ~FineOn() { set_fine_locks(false); }
};

bool before(std::chrono::steady_clock::time_point end)
{
    return std::chrono::steady_clock::now() < end;
}

} // namespace

TEST(OptLock, off_takes_nothing)
{
    set_fine_locks(false);
    OptMutex m;
    OptGuard a(m);
    EXPECT_TRUE(m.try_lock()); // held above, yet free: off
    OptRwLock rw;
    WriteGuard w(rw);
    EXPECT_EQ(OptRwLock::held(), 0);
    ReadGuard r(rw);
    EXPECT_EQ(OptRwLock::held(), 0);
}

TEST(OptLock, mutex_excludes_when_on)
{
    FineOn on;
    OptMutex m;
    long counter = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
        ts.emplace_back([&] {
            for (int i = 0; i < 20000; ++i) {
                OptGuard g(m);
                ++counter;
            }
        });
    }
    for (auto& t : ts) {
        t.join();
    }
    EXPECT_EQ(counter, 80000);
    OptGuard g(m);
    std::thread other([&] { EXPECT_FALSE(m.try_lock()); });
    other.join();
}

TEST(OptLock, readers_share_writer_is_alone_and_nesting_passes)
{
    FineOn on;
    OptRwLock rw;
    std::atomic<int> inside{0};
    std::atomic<bool> overlap{false};
    std::atomic<bool> writer_saw_other{false};
    long data = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; ++t) {
        ts.emplace_back([&] {
            for (int i = 0; i < 3000; ++i) {
                ReadGuard r(rw);
                ReadGuard nested(rw); // a nested read passes
                EXPECT_EQ(OptRwLock::held(), 1);
                if (inside.fetch_add(1) > 0) {
                    overlap = true; // two readers at once
                }
                std::this_thread::yield();
                inside.fetch_sub(1);
            }
        });
    }
    ts.emplace_back([&] {
        for (int i = 0; i < 300; ++i) {
            WriteGuard w(rw);
            WriteGuard nested(rw);
            ReadGuard read_in_write(rw); // what a writer's nested calls do
            EXPECT_EQ(OptRwLock::held(), 2);
            if (inside.load() != 0) {
                writer_saw_other = true;
            }
            ++data;
        }
    });
    for (auto& t : ts) {
        t.join();
    }
    EXPECT_FALSE(writer_saw_other.load());
    EXPECT_EQ(data, 300);
    EXPECT_EQ(OptRwLock::held(), 0);
    (void)overlap; // two readers at once is allowed, not required, on a loaded machine
}

TEST(OptLock, writer_is_not_starved_by_overlapping_readers)
{
    FineOn on;
    OptRwLock rw;
    std::atomic<bool> stop{false};
    std::atomic<int> reading{0};
    std::vector<std::thread> readers;
    // Two readers whose read sections always overlap one another.
    for (int t = 0; t < 2; ++t) {
        readers.emplace_back([&] {
            while (!stop.load()) {
                ReadGuard r(rw);
                reading.fetch_add(1);
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
    }
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (reading.load() < 20 && before(end)) {
        std::this_thread::yield(); // both readers are at it
    }
    int writes = 0;
    while (writes < 50 && before(end)) {
        WriteGuard w(rw);
        ++writes;
    }
    stop = true;
    for (auto& t : readers) {
        t.join();
    }
    EXPECT_EQ(writes, 50) << "the writer got in only " << writes << " times in 20 s";
}
