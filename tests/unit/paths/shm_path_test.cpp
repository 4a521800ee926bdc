// ShmPath between two processes (this one and a forked child), wired by a
// socketpair bootstrap: fragments of every size class both ways with data
// checks, fragment buffers handed back to their owner, a full ring or an
// empty buffer pool answered by acquire() == false and recovered without
// loss, single-copy get() with process_vm_readv when the kernel allows it,
// the shared area reserved for the layers above, and finally the ULM engine
// running over it.
#include "tests/support/test_bootstrap.h"

#include "paths/self/self_path.h"
#include "paths/shm/shm_path.h"
#include "runtime/config.h"
#include "runtime/shared_region.h"
#include "ulm/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>

namespace ulmpi::test {
namespace {

using path::RxFrag;
using path::SendResult;
using path::ShmPath;
using path::TxBuffer;

template <class P, class V> class ScopedParam {
public:
    ScopedParam(const char* name, V v) : p_(dynamic_cast<P*>(rt::find_param(name)))
    {
        if (p_ == nullptr) {
            ADD_FAILURE() << "no parameter " << name;
            return;
        }
        old_ = p_->get();
        p_->set(v);
    }
    ~ScopedParam()
    {
        if (p_ != nullptr) {
            p_->set(old_);
        }
    }
    ScopedParam(const ScopedParam&) = delete;
    ScopedParam& operator=(const ScopedParam&) = delete;

private:
    P* p_;
    V old_{};
};
using ScopedInt = ScopedParam<rt::IntParam, std::int64_t>;
using ScopedSize = ScopedParam<rt::SizeParam, std::uint64_t>;

// Shared-memory geometry of one test (set before fork, so both ranks agree).
struct ShmConfig {
    ScopedInt slots;
    ScopedInt small;
    ScopedInt large;
    ScopedSize eager;
    ScopedSize frag;
    ShmConfig(std::int64_t fifo_slots, std::int64_t nsmall, std::int64_t nlarge,
              std::uint64_t eager_limit, std::uint64_t frag_size)
        : slots("shm_fifo_slots", fifo_slots), small("shm_small_frags", nsmall),
          large("shm_large_frags", nlarge), eager("shm_eager_limit", eager_limit),
          frag("shm_frag_size", frag_size)
    {
    }
};

class Deadline {
public:
    explicit Deadline(int seconds)
        : end_(std::chrono::steady_clock::now() + std::chrono::seconds(seconds))
    {
    }
    bool passed() const { return std::chrono::steady_clock::now() > end_; }

private:
    std::chrono::steady_clock::time_point end_;
};

// Polls once; gives the CPU away when nothing happened, so the two
// processes make progress even when they share one core with other jobs.
int poll(path::Path& p, path::Sink& sink)
{
    int n = p.progress(sink);
    if (n == 0) {
        sched_yield();
    }
    return n;
}

std::unique_ptr<ShmPath> wire_up(SocketBootstrap& boot)
{
    auto p = std::make_unique<ShmPath>(boot.job());
    if (!p->open(boot).ok() || !boot.fence().ok() || !p->connect(boot).ok() || !boot.fence().ok() ||
        !p->connected(boot).ok()) {
        ADD_FAILURE() << "rank " << boot.job().rank << ": shm wire-up failed";
        return nullptr;
    }
    return p;
}

// Test fragments: [seq u32][len u32][bytes derived from (sender, seq)].
std::byte body_byte(int from, std::uint32_t seq, std::size_t k)
{
    return static_cast<std::byte>((seq * 13 + k * 5 + static_cast<std::size_t>(from) * 101) & 0xff);
}

void fill_frag(std::byte* p, int from, std::uint32_t seq, std::uint32_t len)
{
    std::memcpy(p, &seq, 4);
    std::memcpy(p + 4, &len, 4);
    for (std::size_t k = 8; k < len; ++k) {
        p[k] = body_byte(from, seq, k);
    }
}

bool try_send(ShmPath& path, int peer, int me, std::uint32_t seq, std::uint32_t len)
{
    TxBuffer buf;
    if (!path.acquire(peer, len, buf)) {
        return false;
    }
    EXPECT_GE(buf.cap, len);
    fill_frag(buf.data, me, seq, len);
    EXPECT_EQ(path.commit(peer, buf, len), SendResult::done);
    return true;
}

struct FnSink final : path::Sink {
    std::function<void(RxFrag&)> fn;
    int down = 0;
    void on_frag(path::Path&, RxFrag& f) override { fn(f); }
    void on_path_down(path::Path&, int) override { ++down; }
    void on_path_up(path::Path&, int) override {}
};

// Checks fragments from `from` arrive in order and intact.
struct Checker {
    int from;
    std::uint32_t next = 0;
    std::uint32_t bad = 0;
    FnSink sink;
    explicit Checker(int f) : from(f)
    {
        sink.fn = [this](RxFrag& f) {
            bool ok = f.peer == from && f.addressable && f.len >= 8;
            std::uint32_t seq = 0;
            std::uint32_t len = 0;
            if (ok) {
                std::memcpy(&seq, f.data, 4);
                std::memcpy(&len, f.data + 4, 4);
                ok = seq == next && len == f.len;
                for (std::size_t k = 8; ok && k < len; ++k) {
                    ok = f.data[k] == body_byte(from, seq, k);
                }
            }
            if (!ok && bad++ == 0) {
                ADD_FAILURE() << "fragment " << next << " from " << from << " is wrong (seq " << seq
                              << ", len " << len << "/" << f.len << ")";
            }
            ++next;
        };
    }
};

TEST(ShmPath, fragments_of_every_size_flow_both_ways_and_buffers_come_back)
{
    ShmConfig cfg(16, 8, 4, 1024, 8192);
    constexpr std::uint32_t kFrags = 4000;
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        const int peer = 1 - me;
        auto path = wire_up(boot);
        if (!path) {
            return 1;
        }
        EXPECT_TRUE(path->can_reach(peer));
        EXPECT_FALSE(path->can_reach(me));
        const std::uint32_t max = path->info().max_frag;
        const std::uint32_t small_bytes = 1152; // round(1024 + 128, 64)
        EXPECT_EQ(max, 8320u);
        std::mt19937 rng(100 + static_cast<unsigned>(me));
        auto next_len = [&]() -> std::uint32_t {
            switch (rng() % 4) {
            case 0:
                return 8 + rng() % 105; // inline
            case 1:
                return 113 + rng() % (small_bytes - 112); // small buffer
            case 2:
                return small_bytes + 1 + rng() % (max - small_bytes); // large buffer
            default:
                return rng() % 2 == 0 ? max : 8;
            }
        };
        Checker chk(peer);
        std::uint32_t sent = 0;
        std::uint32_t len = next_len();
        Deadline deadline(40);
        while (sent < kFrags || chk.next < kFrags) {
            // Send until the path says no (ring full or no buffer), then poll.
            while (sent < kFrags && try_send(*path, peer, me, sent, len)) {
                ++sent;
                len = next_len();
            }
            poll(*path, chk.sink);
            if (deadline.passed()) {
                ADD_FAILURE() << "rank " << me << ": sent " << sent << ", received " << chk.next;
                return 1;
            }
        }
        EXPECT_EQ(chk.bad, 0u);
        EXPECT_GT(path->counters().send_again, 0u) << "the ring or the pools never ran out";
        EXPECT_EQ(path->counters().frags_sent, kFrags);
        EXPECT_EQ(path->counters().frags_received, kFrags);

        // Let every buffer go home.
        for (int round = 0; round < 4; ++round) {
            for (int i = 0; i < 200; ++i) {
                poll(*path, chk.sink);
            }
            if (!boot.fence().ok()) {
                return 1;
            }
        }
        // Rank 0 takes all its buffers while rank 1 waits: only possible if
        // every one was handed back.
        std::uint32_t got = 0;
        FnSink count;
        count.fn = [&](RxFrag&) { ++got; };
        if (me == 0) {
            for (int i = 0; i < 4; ++i) {
                EXPECT_TRUE(try_send(*path, peer, me, 0, max))
                    << "large buffer " << i << " missing";
            }
            for (int i = 0; i < 8; ++i) {
                EXPECT_TRUE(try_send(*path, peer, me, 0, 500))
                    << "small buffer " << i << " missing";
            }
            TxBuffer buf;
            EXPECT_FALSE(path->acquire(peer, 500, buf)) << "more buffers than configured";
            EXPECT_FALSE(path->acquire(peer, max, buf));
            EXPECT_TRUE(path->acquire(peer, 100, buf)) << "inline fragments need no buffer";
            if (!boot.fence().ok() || !boot.fence().ok()) { // rank 1 drains between them
                return 1;
            }
            Deadline d(20);
            while (!try_send(*path, peer, me, 0, max)) {
                poll(*path, count);
                if (d.passed()) {
                    ADD_FAILURE() << "buffers never came back";
                    return 1;
                }
            }
        } else {
            if (!boot.fence().ok()) {
                return 1;
            }
            Deadline d(20);
            while (got < 12 && !d.passed()) {
                poll(*path, count);
            }
            EXPECT_EQ(got, 12u);
            if (!boot.fence().ok()) {
                return 1;
            }
            while (got < 13 && !d.passed()) {
                poll(*path, count);
            }
            EXPECT_EQ(got, 13u);
        }
        if (!boot.fence().ok()) {
            return 1;
        }
        path->close();
        return 0;
    });
    EXPECT_EQ(child, 0);
}

TEST(ShmPath, full_ring_answers_again_and_recovers_without_loss)
{
    ShmConfig cfg(4, 4, 2, 1024, 8192);
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        const int peer = 1 - me;
        auto path = wire_up(boot);
        if (!path) {
            return 1;
        }
        Checker chk(peer);
        if (me == 0) {
            std::uint32_t sent = 0;
            while (sent < 100 && try_send(*path, peer, me, sent, 40)) {
                ++sent;
            }
            EXPECT_EQ(sent, 4u) << "a ring of 4 slots took " << sent << " fragments";
            EXPECT_EQ(path->counters().send_again, 1u);
            TxBuffer buf;
            EXPECT_FALSE(path->acquire(peer, 40, buf)) << "still full";
            if (!boot.fence().ok() || !boot.fence().ok()) {
                return 1;
            }
            // The reader told us how far it got: room again. Stream the rest.
            Deadline d(20);
            while (sent < 5000) {
                if (try_send(*path, peer, me, sent, 8 + sent % 100)) {
                    ++sent;
                } else {
                    poll(*path, chk.sink);
                }
                if (d.passed()) {
                    ADD_FAILURE() << "stuck at " << sent;
                    return 1;
                }
            }
        } else {
            if (!boot.fence().ok()) {
                return 1;
            }
            Deadline d(20);
            while (chk.next < 4 && !d.passed()) {
                poll(*path, chk.sink);
            }
            poll(*path, chk.sink); // finds the ring empty: publishes consumed
            EXPECT_EQ(chk.next, 4u);
            if (!boot.fence().ok()) {
                return 1;
            }
            while (chk.next < 5000 && !d.passed()) {
                poll(*path, chk.sink);
            }
            EXPECT_EQ(chk.next, 5000u);
            EXPECT_EQ(chk.bad, 0u);
        }
        return boot.fence().ok() ? 0 : 1;
    });
    EXPECT_EQ(child, 0);
}

TEST(ShmPath, a_peer_is_polled_only_once_it_rang_and_nothing_sent_before_is_lost)
{
    ShmConfig cfg(16, 8, 4, 1024, 8192);
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        const int peer = 1 - me;
        auto path = wire_up(boot);
        if (!path) {
            return 1;
        }
        Checker chk(peer);
        for (int k = 0; k < 10; ++k) {
            poll(*path, chk.sink);
        }
        EXPECT_EQ(path->polled_peers(), 0u) << "rank " << me << " polls a peer that never sent";
        if (!boot.fence().ok()) {
            return 1;
        }
        if (me == 1) {
            // Three fragments (inline, small buffer, large buffer) before the
            // receiver looks: all of them must arrive once it does.
            EXPECT_TRUE(try_send(*path, peer, me, 0, 40));
            EXPECT_TRUE(try_send(*path, peer, me, 1, 600));
            EXPECT_TRUE(try_send(*path, peer, me, 2, 5000));
        }
        if (!boot.fence().ok()) {
            return 1;
        }
        Deadline d(20);
        if (me == 0) {
            while (chk.next < 3 && !d.passed()) {
                poll(*path, chk.sink);
            }
            EXPECT_EQ(chk.next, 3u);
            EXPECT_EQ(chk.bad, 0u);
            EXPECT_EQ(path->polled_peers(), 1u);
        }
        if (!boot.fence().ok()) {
            return 1;
        }
        if (me == 1) {
            // Rank 0 handed the two buffers back, ringing my doorbell first:
            // now I poll it.
            while (path->polled_peers() == 0 && !d.passed()) {
                poll(*path, chk.sink);
            }
            EXPECT_EQ(path->polled_peers(), 1u);
        }
        return boot.fence().ok() ? 0 : 1;
    });
    EXPECT_EQ(child, 0);
}

TEST(ShmPath, shared_area_reserved_before_open_is_one_zeroed_memory_beside_the_fifos)
{
    ShmConfig cfg(16, 8, 4, 1024, 8192);
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        const int peer = 1 - me;
        auto path = std::make_unique<ShmPath>(boot.job());
        std::size_t n = 0;
        EXPECT_EQ(path->shared_area(&n), nullptr) << "an area before the wire-up";
        path->reserve_shared_area(5000); // rounded to whole pages
        if (!path->open(boot).ok() || !boot.fence().ok() || !path->connect(boot).ok() ||
            !boot.fence().ok() || !path->connected(boot).ok()) {
            ADD_FAILURE() << "rank " << me << ": shm wire-up failed";
            return 1;
        }
        std::byte* area = path->shared_area(&n);
        EXPECT_NE(area, nullptr);
        EXPECT_EQ(n, 8192u);
        if (area == nullptr || n != 8192) {
            return 1;
        }
        std::size_t nonzero = 0;
        for (std::size_t k = 0; k < n; ++k) {
            nonzero += area[k] != std::byte{0} ? 1 : 0;
        }
        EXPECT_EQ(nonzero, 0u) << "rank " << me << ": the area is not zeroed";
        if (!boot.fence().ok()) {
            return 1;
        }
        // Rank 1 fills all of it, rank 0 reads it; fragments still flow
        // both ways (the area overlaps no FIFO or buffer).
        if (me == 1) {
            for (std::size_t k = 0; k < n; ++k) {
                area[k] = static_cast<std::byte>((k * 7 + 3) & 0xff);
            }
        }
        EXPECT_TRUE(try_send(*path, peer, me, 0, 40));
        EXPECT_TRUE(try_send(*path, peer, me, 1, 600));
        if (!boot.fence().ok()) {
            return 1;
        }
        std::size_t wrong = 0;
        for (std::size_t k = 0; k < n; ++k) {
            wrong += area[k] != static_cast<std::byte>((k * 7 + 3) & 0xff) ? 1 : 0;
        }
        EXPECT_EQ(wrong, 0u) << "rank " << me << " does not see rank 1's bytes";
        Checker chk(peer);
        Deadline d(20);
        while (chk.next < 2 && !d.passed()) {
            poll(*path, chk.sink);
        }
        EXPECT_EQ(chk.next, 2u);
        EXPECT_EQ(chk.bad, 0u);
        return boot.fence().ok() ? 0 : 1;
    });
    EXPECT_EQ(child, 0);
}

TEST(ShmPath, a_rank_that_reserved_another_area_size_refuses_the_segment)
{
    ShmConfig cfg(16, 8, 4, 1024, 8192);
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        auto path = std::make_unique<ShmPath>(boot.job());
        path->reserve_shared_area(me == 0 ? 4096 : 3 * 4096);
        if (!path->open(boot).ok() || !boot.fence().ok()) {
            ADD_FAILURE() << "rank " << me << ": open failed";
            return 1;
        }
        const bool attached = path->connect(boot).ok();
        // Rank 0 made the segment: it maps it; rank 1 must not use it.
        EXPECT_EQ(attached, me == 0) << "rank " << me;
        if (!boot.fence().ok()) {
            return 1;
        }
        if (attached) {
            EXPECT_TRUE(path->connected(boot).ok());
        }
        return boot.fence().ok() ? 0 : 1;
    });
    EXPECT_EQ(child, 0);
}

// Remote memory of the single-copy test: three pieces of one buffer.
constexpr std::size_t kGetBuf = 1000000;
struct Piece {
    std::size_t off;
    std::size_t len;
};
constexpr Piece kPieces[] = {{0, 1000}, {5000, 300000}, {400000, 200000}};
std::byte get_byte(std::size_t i) { return static_cast<std::byte>((i * 7 + (i >> 9)) & 0xff); }
// Byte at position `pos` of the packed stream of kPieces.
std::byte packed_byte(std::size_t pos)
{
    for (const Piece& p : kPieces) {
        if (pos < p.len) {
            return get_byte(p.off + pos);
        }
        pos -= p.len;
    }
    return std::byte{0};
}

// One side of a wired pair's exchange of small test messages: whole
// messages sent to the peer, the next one received kept in `got`.
struct Talk {
    ShmPath& path;
    int peer;
    FnSink sink;
    std::vector<std::byte> got;

    Talk(ShmPath& p, int to) : path(p), peer(to)
    {
        sink.fn = [this](RxFrag& f) { got.assign(f.data, f.data + f.len); };
    }
    bool send(const void* bytes, std::size_t n)
    {
        TxBuffer buf;
        Deadline d(10);
        while (!path.acquire(peer, n, buf)) {
            poll(path, sink);
            if (d.passed()) {
                return false;
            }
        }
        std::memcpy(buf.data, bytes, n);
        return path.commit(peer, buf, n) == SendResult::done;
    }
    // Polls up to 20 s for the next message; false if none came.
    bool wait()
    {
        got.clear();
        Deadline d(20);
        while (got.empty() && !d.passed()) {
            poll(path, sink);
        }
        return !got.empty();
    }
};

TEST(ShmPath, get_reads_peer_memory_when_single_copy_is_allowed)
{
    ShmConfig cfg(16, 8, 4, 1024, 8192);
    ScopedParam<rt::BoolParam, bool> cma("shm_single_copy", true);
    enum : std::uint8_t { kOk = 0, kFailed = 1, kSkipped = 2 };
    std::uint8_t verdict = kFailed;
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        const int peer = 1 - me;
        auto path = wire_up(boot);
        if (!path) {
            return 1;
        }
        std::vector<std::byte> mem(kGetBuf);
        for (std::size_t i = 0; i < kGetBuf; ++i) {
            mem[i] = get_byte(i);
        }
        Talk talk(*path, peer);
        std::vector<std::byte>& got_msg = talk.got;
        auto send_bytes = [&](const void* p, std::size_t n) { return talk.send(p, n); };
        auto wait_msg = [&] { return talk.wait(); };
        if (me == 0) {
            iovec iov[3];
            for (int i = 0; i < 3; ++i) {
                iov[i] = {mem.data() + kPieces[i].off, kPieces[i].len};
            }
            std::byte key[256];
            std::size_t tiny = path->make_rkey(iov, 3, key, 8);
            EXPECT_EQ(tiny, 0u) << "a key that does not fit must not be made";
            std::size_t keylen = path->make_rkey(iov, 3, key, sizeof key);
            EXPECT_EQ(keylen != 0, path->single_copy());
            if (!send_bytes(key, keylen == 0 ? 1 : keylen) || !wait_msg()) {
                ADD_FAILURE() << "no verdict from rank 1";
                return 1;
            }
            verdict = static_cast<std::uint8_t>(got_msg[0]);
        } else {
            if (!wait_msg()) {
                ADD_FAILURE() << "no key from rank 0";
                return 1;
            }
            std::uint8_t v = kOk;
            if (got_msg.size() == 1 || !path->single_copy()) {
                v = kSkipped;
            } else {
                const std::vector<std::byte> key = got_msg;
                struct Read {
                    std::uint64_t offset;
                    std::size_t len;
                };
                // Whole stream into two local pieces; reads across piece
                // boundaries; the exact tail.
                for (Read rd :
                     {Read{0, 501000}, Read{999, 5000}, Read{300900, 200}, Read{500000, 1000}}) {
                    std::vector<std::byte> local(rd.len, std::byte{0});
                    iovec liov[2] = {{local.data(), rd.len / 2},
                                     {local.data() + rd.len / 2, rd.len - rd.len / 2}};
                    rt::Status st = path->get(peer, key.data(), key.size(), rd.offset, liov, 2);
                    EXPECT_TRUE(st.ok())
                        << "get at " << rd.offset << ": " << rt::errc_name(st.code());
                    for (std::size_t i = 0; i < rd.len; ++i) {
                        if (local[i] != packed_byte(rd.offset + i)) {
                            ADD_FAILURE() << "get at " << rd.offset << ": byte " << i << " differs";
                            v = kFailed;
                            break;
                        }
                    }
                }
                std::vector<std::byte> local(1000);
                iovec liov{local.data(), local.size()};
                EXPECT_EQ(path->get(peer, key.data(), key.size(), 500001, &liov, 1),
                          rt::Errc::protocol)
                    << "reading past the described memory must fail";
                EXPECT_EQ(path->get(peer, key.data(), key.size() - 3, 0, &liov, 1),
                          rt::Errc::protocol)
                    << "a cut key must be refused";
                EXPECT_EQ(path->counters().gets, 4u);
                if (::testing::Test::HasFailure()) {
                    v = kFailed;
                }
            }
            if (!send_bytes(&v, 1)) {
                return 1;
            }
        }
        return boot.fence().ok() ? 0 : 1;
    });
    EXPECT_EQ(child, 0);
    if (verdict == kSkipped) {
        GTEST_SKIP() << "process_vm_readv between parent and child is not allowed here";
    }
    EXPECT_EQ(verdict, kOk);
}

// A send that lies in a shared area the sender registered
// (runtime/shared_region.h): the receiver copies it from its own mapping of
// the sender's memfd (counted in rt::shared_read_bytes), at any offset and
// after the sender grew the file; the same bytes as a direct read.
TEST(ShmPath, get_copies_from_a_registered_shared_area)
{
    ShmConfig cfg(16, 8, 4, 1024, 8192);
    ScopedParam<rt::BoolParam, bool> cma("shm_single_copy", true);
    enum : std::uint8_t { kOk = 0, kFailed = 1, kSkipped = 2 };
    std::uint8_t verdict = kFailed;
    constexpr std::size_t kArea = 1u << 20;
    constexpr std::size_t kAt = 4096 + 64; // the message's offset in the area
    constexpr std::size_t kLen = 300000;
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        const int peer = 1 - me;
        auto path = wire_up(boot);
        if (!path) {
            return 1;
        }
        Talk talk(*path, peer);
        std::vector<std::byte>& got_msg = talk.got;
        auto send_bytes = [&](const void* p, std::size_t n) { return talk.send(p, n); };
        auto wait_msg = [&] { return talk.wait(); };
        if (me == 0) {
            const int fd = ::memfd_create("shm-path-test", MFD_CLOEXEC);
            struct stat sb {};
            if (fd < 0 || ::ftruncate(fd, kArea) != 0 || ::fstat(fd, &sb) != 0) {
                // (no memfd here: nothing to test)
                if (!send_bytes("s", 1) || !wait_msg()) {
                    return 1;
                }
                verdict = static_cast<std::uint8_t>(got_msg[0]);
                return boot.fence().ok() ? 0 : 1;
            }
            auto* area = static_cast<std::byte*>(
                ::mmap(nullptr, kArea, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
            if (area == MAP_FAILED) {
                return 1;
            }
            for (std::size_t i = 0; i < kLen; ++i) {
                area[kAt + i] = get_byte(i);
            }
            EXPECT_TRUE(rt::register_shared(area, kArea, fd, sb.st_ino));
            iovec iov{area + kAt, kLen};
            std::byte key[256];
            const std::size_t keylen = path->make_rkey(&iov, 1, key, sizeof key);
            // The receiver reads; then the area grows (the file only), and
            // it reads a second message past the first mapping's end.
            if (!send_bytes(key, keylen == 0 ? 1 : keylen) || !wait_msg()) {
                ADD_FAILURE() << "no word from rank 1";
                return 1;
            }
            if (got_msg[0] != std::byte{kOk}) {
                verdict = static_cast<std::uint8_t>(got_msg[0]);
                rt::unregister_shared(area);
                return boot.fence().ok() ? 0 : 1;
            }
            if (::ftruncate(fd, 2 * kArea) != 0) {
                return 1;
            }
            auto* big = static_cast<std::byte*>(
                ::mmap(nullptr, 2 * kArea, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
            if (big == MAP_FAILED) {
                return 1;
            }
            rt::unregister_shared(area);
            EXPECT_TRUE(rt::register_shared(big, 2 * kArea, fd, sb.st_ino));
            for (std::size_t i = 0; i < kLen; ++i) {
                big[kArea + 8 + i] = get_byte(i + 1);
            }
            iovec far{big + kArea + 8, kLen};
            const std::size_t farlen = path->make_rkey(&far, 1, key, sizeof key);
            if (!send_bytes(key, farlen == 0 ? 1 : farlen) || !wait_msg()) {
                ADD_FAILURE() << "no verdict from rank 1";
                return 1;
            }
            verdict = static_cast<std::uint8_t>(got_msg[0]);
            rt::unregister_shared(big);
        } else {
            std::uint8_t v = kOk;
            for (int round = 0; round < 2 && v == kOk; ++round) {
                if (!wait_msg()) {
                    ADD_FAILURE() << "no key from rank 0";
                    return 1;
                }
                if (got_msg.size() == 1 || !path->single_copy()) {
                    v = kSkipped;
                    if (!send_bytes(&v, 1)) {
                        return 1;
                    }
                    break;
                }
                const std::vector<std::byte> key = got_msg;
                const std::uint64_t before = rt::shared_read_bytes();
                std::vector<std::byte> local(kLen - 1000);
                iovec liov[2] = {{local.data(), 5000}, {local.data() + 5000, local.size() - 5000}};
                rt::Status st = path->get(peer, key.data(), key.size(), 1000, liov, 2);
                EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
                EXPECT_EQ(rt::shared_read_bytes() - before, local.size())
                    << "round " << round << ": not copied from the shared area";
                for (std::size_t i = 0; i < local.size(); ++i) {
                    if (local[i] != get_byte(1000 + i + static_cast<std::size_t>(round))) {
                        ADD_FAILURE() << "round " << round << ": byte " << i << " differs";
                        break;
                    }
                }
                EXPECT_EQ(path->get(peer, key.data(), key.size(), 1, liov, 1).code(),
                          rt::Errc::ok);
                iovec over{local.data(), 1000};
                EXPECT_EQ(path->get(peer, key.data(), key.size(), kLen - 999, &over, 1),
                          rt::Errc::protocol)
                    << "reading past the described memory must fail";
                if (::testing::Test::HasFailure()) {
                    v = kFailed;
                }
                if (!send_bytes(&v, 1)) {
                    return 1;
                }
            }
        }
        return boot.fence().ok() ? 0 : 1;
    });
    EXPECT_EQ(child, 0);
    if (verdict == kSkipped) {
        GTEST_SKIP() << "no memfd or no single copy between parent and child here";
    }
    EXPECT_EQ(verdict, kOk);
}

// ---------------------------------------------------------------------------
// The ULM engine over shm, across two processes.

const ulm::Run kByteRun{0, 1};
const std::uint64_t kBytePrefix[2] = {0, 1};
const ulm::Layout kBytes{1, 1, 1, &kByteRun, kBytePrefix, true};

std::vector<std::byte> msg_bytes(std::size_t n, int from, int i)
{
    std::vector<std::byte> v(n);
    for (std::size_t k = 0; k < n; ++k) {
        v[k] = static_cast<std::byte>(
            (k * 3 + static_cast<std::size_t>(i) * 17 + static_cast<std::size_t>(from) * 71) &
            0xff);
    }
    return v;
}

TEST(ShmEngine, messages_of_all_protocols_flow_between_two_processes)
{
    ShmConfig cfg(64, 16, 4, 4096, 65536);
    ScopedParam<rt::BoolParam, bool> cma("shm_single_copy", true);
    int child = run_pair([&](SocketBootstrap& boot) -> int {
        const int me = boot.job().rank;
        const int peer = 1 - me;
        std::vector<std::unique_ptr<path::Path>> paths;
        paths.push_back(std::make_unique<path::SelfPath>(me));
        paths.push_back(std::make_unique<ShmPath>(boot.job()));
        ulm::Engine e;
        std::string why;
        if (!e.init(boot, std::move(paths), why).ok()) {
            ADD_FAILURE() << "init: " << why;
            return 1;
        }
        EXPECT_STREQ(e.primary_path(peer)->info().name, "shm");
        auto wait = [&](auto done) {
            Deadline d(30);
            while (!done()) {
                if (e.progress() == 0) {
                    sched_yield();
                }
                if (d.passed()) {
                    return false;
                }
            }
            return true;
        };
        const std::size_t sizes[] = {0, 1, 100, 112, 4096, 4097, 65536, 70000, 1u << 20, 3u << 20};
        int i = 0;
        for (std::size_t n : sizes) {
            for (ulm::SendMode mode : {ulm::SendMode::standard, ulm::SendMode::synchronous}) {
                // Rank 0 sends, rank 1 echoes back what it got.
                ++i;
                std::vector<std::byte> in(n);
                ulm::RecvMsg* r = nullptr;
                ulm::SendMsg* s = nullptr;
                std::vector<std::byte> out =
                    me == 0 ? msg_bytes(n, me, i) : std::vector<std::byte>();
                if (me == 0) {
                    EXPECT_TRUE(e.isend(ulm::DataRef{out.data(), n, &kBytes}, peer, i,
                                        ulm::ContextId(1), mode, &s)
                                    .ok());
                    EXPECT_TRUE(
                        e.irecv(ulm::DataRef{in.data(), n, &kBytes}, peer, i, ulm::ContextId(1), &r)
                            .ok());
                } else {
                    EXPECT_TRUE(
                        e.irecv(ulm::DataRef{in.data(), n, &kBytes}, peer, i, ulm::ContextId(1), &r)
                            .ok());
                    if (!wait([&] { return r->complete; })) {
                        ADD_FAILURE() << "rank 1 never got message " << i << " (" << n << " bytes)";
                        return 1;
                    }
                    EXPECT_TRUE(in == msg_bytes(n, 0, i)) << n << " bytes";
                    out = in;
                    e.release(r);
                    r = nullptr;
                    EXPECT_TRUE(e.isend(ulm::DataRef{out.data(), n, &kBytes}, peer, i,
                                        ulm::ContextId(1), mode, &s)
                                    .ok());
                }
                if (!wait([&] { return s->complete && (r == nullptr || r->complete); })) {
                    ADD_FAILURE() << "rank " << me << " stuck at message " << i << " (" << n
                                  << " bytes)";
                    return 1;
                }
                if (me == 0) {
                    EXPECT_TRUE(in == out) << "echo of " << n << " bytes";
                    e.release(r);
                }
                e.release(s);
            }
        }
        if (auto* shm = dynamic_cast<ShmPath*>(e.primary_path(peer));
            shm != nullptr && shm->single_copy()) {
            EXPECT_GT(shm->counters().gets, 0u) << "large messages should be read in place";
        }
        EXPECT_TRUE(e.finalize().ok());
        return 0;
    });
    EXPECT_EQ(child, 0);
}

} // namespace
} // namespace ulmpi::test
