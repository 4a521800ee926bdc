// The shared-memory FIFO (paths/shm/shm_fifo.h) on plain memory: order and
// data across many wrap-arounds, a full ring answering nullptr, the reader
// publishing how far it consumed, and a two-thread stress with data checks.
#include "paths/shm/shm_fifo.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

namespace ulmpi::path::shm {
namespace {

class FifoMem {
public:
    explicit FifoMem(std::size_t capacity) : capacity_(capacity)
    {
        mem_ = std::aligned_alloc(kSlotBytes, fifo_bytes(capacity));
        std::memset(mem_, 0, fifo_bytes(capacity));
    }
    ~FifoMem() { std::free(mem_); }
    FifoMem(const FifoMem&) = delete;
    FifoMem& operator=(const FifoMem&) = delete;

    FifoWriter writer() { return FifoWriter(mem_, capacity_); }
    FifoReader reader() { return FifoReader(mem_, capacity_); }
    std::uint64_t consumed() const
    {
        return static_cast<FifoControl*>(mem_)->consumed.load(std::memory_order_acquire);
    }

private:
    void* mem_;
    std::size_t capacity_;
};

// Message i: length i % (kSlotData + 1), bytes derived from i.
std::uint32_t len_of(std::uint64_t i) { return static_cast<std::uint32_t>(i % (kSlotData + 1)); }
std::byte byte_of(std::uint64_t i, std::size_t k)
{
    return static_cast<std::byte>((i * 31 + k * 7 + 3) & 0xff);
}

void write_msg(FifoWriter& w, Slot* s, std::uint64_t i)
{
    std::uint32_t n = len_of(i);
    for (std::size_t k = 0; k < n; ++k) {
        s->data[k] = byte_of(i, k);
    }
    w.publish(s, static_cast<SlotKind>(1 + i % 3), n);
}

::testing::AssertionResult check_msg(const Slot* s, std::uint64_t i)
{
    if (s->len != len_of(i)) {
        return ::testing::AssertionFailure() << "message " << i << ": len " << s->len;
    }
    if (s->kind != static_cast<SlotKind>(1 + i % 3)) {
        return ::testing::AssertionFailure() << "message " << i << ": kind";
    }
    for (std::size_t k = 0; k < s->len; ++k) {
        if (s->data[k] != byte_of(i, k)) {
            return ::testing::AssertionFailure() << "message " << i << ": byte " << k;
        }
    }
    return ::testing::AssertionSuccess();
}

TEST(ShmFifo, peek_of_empty_fifo_returns_nullptr)
{
    FifoMem m(8);
    FifoReader r = m.reader();
    EXPECT_EQ(r.peek(), nullptr);
    EXPECT_EQ(r.peek(), nullptr);
}

TEST(ShmFifo, reserve_returns_same_slot_until_publish)
{
    FifoMem m(8);
    FifoWriter w = m.writer();
    Slot* a = w.reserve();
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(w.reserve(), a);
    write_msg(w, a, 0);
    Slot* b = w.reserve();
    EXPECT_NE(b, a);
    EXPECT_EQ(w.published(), 1u);
}

TEST(ShmFifo, full_ring_returns_nullptr_until_reader_publishes_consumed)
{
    FifoMem m(8); // the reader tells every 2 slots
    FifoWriter w = m.writer();
    FifoReader r = m.reader();
    for (std::uint64_t i = 0; i < 8; ++i) {
        Slot* s = w.reserve();
        ASSERT_NE(s, nullptr) << i;
        write_msg(w, s, i);
    }
    EXPECT_EQ(w.reserve(), nullptr);
    Slot* s = r.peek();
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(check_msg(s, 0));
    r.pop();
    EXPECT_EQ(m.consumed(), 0u) << "published before the batch was full";
    EXPECT_EQ(w.reserve(), nullptr)
        << "the writer may not reuse a slot the reader has not given back";
    s = r.peek();
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(check_msg(s, 1));
    r.pop();
    EXPECT_EQ(m.consumed(), 2u);
    for (std::uint64_t i = 8; i < 10; ++i) {
        Slot* t = w.reserve();
        ASSERT_NE(t, nullptr) << i;
        write_msg(w, t, i);
    }
    EXPECT_EQ(w.reserve(), nullptr);
    for (std::uint64_t i = 2; i < 10; ++i) {
        Slot* t = r.peek();
        ASSERT_NE(t, nullptr) << i;
        EXPECT_TRUE(check_msg(t, i));
        r.pop();
    }
    EXPECT_EQ(r.peek(), nullptr);
}

TEST(ShmFifo, reader_publishes_consumed_when_it_finds_fifo_empty)
{
    FifoMem m(64); // batch of 16
    FifoWriter w = m.writer();
    FifoReader r = m.reader();
    for (std::uint64_t i = 0; i < 3; ++i) {
        write_msg(w, w.reserve(), i);
    }
    for (std::uint64_t i = 0; i < 3; ++i) {
        ASSERT_NE(r.peek(), nullptr);
        r.pop();
    }
    EXPECT_EQ(m.consumed(), 0u);
    EXPECT_EQ(r.peek(), nullptr);
    EXPECT_EQ(m.consumed(), 3u);
    r.flush(); // nothing new: no store
    EXPECT_EQ(m.consumed(), 3u);
}

TEST(ShmFifo, wraps_around_many_times_keeping_order_and_data)
{
    for (std::size_t cap : {1u, 2u, 4u, 16u}) {
        SCOPED_TRACE(cap);
        FifoMem m(cap);
        FifoWriter w = m.writer();
        FifoReader r = m.reader();
        std::mt19937 rng(static_cast<unsigned>(cap));
        std::uint64_t written = 0;
        std::uint64_t read = 0;
        const std::uint64_t total = 200000;
        while (read < total) {
            for (std::uint64_t n = rng() % (2 * cap + 1); n > 0 && written < total; --n) {
                Slot* s = w.reserve();
                if (s == nullptr) {
                    ASSERT_GE(written - read, 1u);
                    break;
                }
                ASSERT_LT(written - read, cap) << "writer got a slot of a full ring";
                write_msg(w, s, written++);
            }
            for (std::uint64_t n = rng() % (2 * cap + 1); n > 0; --n) {
                Slot* s = r.peek();
                if (s == nullptr) {
                    ASSERT_EQ(read, written) << "reader found nothing though messages wait";
                    break;
                }
                ASSERT_TRUE(check_msg(s, read));
                r.pop();
                ++read;
            }
        }
        EXPECT_EQ(written, total);
        EXPECT_GT(total / cap, 1000u) << "wrapped around often";
    }
}

TEST(ShmFifo, producer_and_consumer_threads_pass_every_message_intact)
{
    for (std::size_t cap : {4u, 64u}) {
        SCOPED_TRACE(cap);
        FifoMem m(cap);
        constexpr std::uint64_t kTotal = 400000;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
        std::atomic<bool> timed_out{false};
        std::thread producer([&] {
            FifoWriter w = m.writer();
            for (std::uint64_t i = 0; i < kTotal;) {
                Slot* s = w.reserve();
                if (s == nullptr) {
                    if (std::chrono::steady_clock::now() > deadline) {
                        timed_out = true;
                        return;
                    }
                    std::this_thread::yield();
                    continue;
                }
                write_msg(w, s, i++);
            }
        });
        FifoReader r = m.reader();
        std::uint64_t bad = 0;
        std::uint64_t first_bad = ~0ULL;
        for (std::uint64_t i = 0; i < kTotal && !timed_out;) {
            Slot* s = r.peek();
            if (s == nullptr) {
                if (std::chrono::steady_clock::now() > deadline) {
                    timed_out = true;
                    break;
                }
                std::this_thread::yield();
                continue;
            }
            if (!check_msg(s, i)) {
                ++bad;
                first_bad = std::min(first_bad, i);
            }
            r.pop();
            ++i;
        }
        producer.join();
        EXPECT_FALSE(timed_out);
        EXPECT_EQ(bad, 0u) << "first bad message " << first_bad;
    }
}

} // namespace
} // namespace ulmpi::path::shm
