// The verbs path's own logic on the software device, two ranks in two
// forked processes: wire-up, flow control at its limits, rendezvous by RDMA
// read at many sizes and offsets, the registration cache under munmap and
// realloc, and the evidence of failure it gives ULM.
#include "tests/verbs/verbs_pair.h"

#include "paths/verbs/verbs_memhook.h"
#include "runtime/opt_lock.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <sys/mman.h>

// A ThreadSanitizer build has no memory hooks: its runtime intercepts mmap
// and munmap itself (paths/verbs/verbs_memhook.cpp).
#if defined(__SANITIZE_THREAD__)
#define SKIP_WITHOUT_MEMORY_HOOKS() GTEST_SKIP() << "no memory hooks in a ThreadSanitizer build"
#else
#define SKIP_WITHOUT_MEMORY_HOOKS() static_cast<void>(0)
#endif

namespace ulmpi::test {
namespace {

using path::verbs::VerbsOptions;
using path::verbs::VerbsPath;

std::byte pattern(std::size_t i, int seed) { return static_cast<std::byte>((i * 131 + static_cast<std::size_t>(seed) * 17) & 0xff); }

// One failure per loop, not one per byte.
template <class A, class B> bool expect_same(const A& a, const B& b)
{
    EXPECT_EQ(a, b);
    return a == b;
}

VerbsOptions small_options() { return small_verbs_options(); }

TEST(VerbsPath, wires_up_and_moves_fragments_of_every_size_in_order)
{
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        auto p = wire(boot, f.name, small_options());
        if (p == nullptr) {
            return 1;
        }
        EXPECT_TRUE(p->can_reach(1 - rank));
        EXPECT_FALSE(p->can_reach(rank));
        EXPECT_GT(p->info().inline_max, 0u);
        RecordingSink s;
        const std::size_t max = p->info().max_frag;
        std::vector<std::size_t> sizes;
        for (std::size_t n = 1; n <= max; n = n * 3 + 1) {
            sizes.push_back(n);
        }
        sizes.push_back(p->info().inline_max);
        sizes.push_back(p->info().inline_max + 1);
        sizes.push_back(max);
        if (rank == 0) {
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                std::vector<std::byte> d(sizes[k]);
                for (std::size_t i = 0; i < d.size(); ++i) {
                    d[i] = pattern(i, static_cast<int>(k));
                }
                EXPECT_TRUE(send_bytes(*p, s, 1, d.data(), d.size()));
            }
            EXPECT_TRUE(wait_frags(*p, s, 1)); // the answer
        } else {
            EXPECT_TRUE(wait_frags(*p, s, sizes.size()));
            for (std::size_t k = 0; k < sizes.size() && k < s.frags.size(); ++k) {
                if (!expect_same(s.frags[k].size(), sizes[k])) { break; }
                for (std::size_t i = 0; i < sizes[k]; ++i) {
                    if (!expect_same(s.frags[k][i], pattern(i, static_cast<int>(k)))) { break; }
                }
            }
            char ok = 1;
            EXPECT_TRUE(send_bytes(*p, s, 0, &ok, 1));
            // Let the answer leave before the process goes.
            for (int i = 0; i < 1000; ++i) {
                p->progress(s);
            }
        }
        EXPECT_TRUE(boot.fence().ok());
        EXPECT_TRUE(s.downs.empty());
        return 0;
    }));
}

// Many fragments through a receive queue of one or two buffers; the
// receiver is slow. Nothing may be lost, no send may find the queue empty
// (an RNR NAK: the soft device counts them), and the sender must wait for
// credit rather than overrun.
void flow(std::uint32_t depth)
{
    Fabric f;
    const int count = 2000;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        VerbsOptions o = small_options();
        o.srq_depth = depth;
        auto p = wire(boot, f.name, o);
        if (p == nullptr) {
            return 1;
        }
        EXPECT_EQ(p->share(), depth);
        RecordingSink s;
        if (rank == 0) {
            EXPECT_EQ(p->credits(1), depth);
            for (int i = 0; i < count; ++i) {
                std::vector<std::byte> d(static_cast<std::size_t>(1 + (i * 37) % 3000));
                std::memcpy(d.data(), &i, std::min(sizeof i, d.size()));
                d.back() = static_cast<std::byte>(i);
                EXPECT_TRUE(send_bytes(*p, s, 1, d.data(), d.size()));
            }
            EXPECT_GT(p->credit_stalls(), 0u); // it did run out and wait
            EXPECT_TRUE(wait_frags(*p, s, 1));
        } else {
            const rt::Nanos end = rt::monotonic_ns() + 60 * rt::Nanos{1000000000};
            while (s.frags.size() < static_cast<std::size_t>(count) && rt::monotonic_ns() < end) {
                if (s.frags.size() % 97 == 0) {
                    ::usleep(200); // a slow receiver
                }
                p->progress(s);
            }
            EXPECT_EQ(s.frags.size(), static_cast<std::size_t>(count));
            for (int i = 0; i < count && i < static_cast<int>(s.frags.size()); ++i) {
                if (!expect_same(s.frags[static_cast<std::size_t>(i)].size(), static_cast<std::size_t>(1 + (i * 37) % 3000))) { break; }
                if (!expect_same(s.frags[static_cast<std::size_t>(i)].back(), static_cast<std::byte>(i))) { break; }
            }
            EXPECT_GT(p->credit_writes(), 0u); // credits went back explicitly
            char ok = 1;
            EXPECT_TRUE(send_bytes(*p, s, 0, &ok, 1));
            for (int i = 0; i < 1000; ++i) {
                p->progress(s);
            }
        }
        EXPECT_TRUE(boot.fence().ok());
        if (rank == 0 && real_device() == nullptr) {
            soft::FabricCounters c;
            EXPECT_TRUE(soft::counters(f.name, c));
            EXPECT_EQ(c.rnr_naks, 0u) << "a send found the shared receive queue empty";
            EXPECT_GE(c.sends, static_cast<std::uint64_t>(count));
        }
        EXPECT_TRUE(boot.fence().ok());
        return 0;
    }));
}

TEST(VerbsPath, one_receive_buffer_is_enough_and_never_overrun) { flow(1); }
TEST(VerbsPath, two_receive_buffers_are_enough_and_never_overrun) { flow(2); }

// The sender's side of a rendezvous: makes a key for `iov`, sends it, and
// waits for the receiver's answer.
bool offer(VerbsPath& p, RecordingSink& s, const iovec* iov, int n)
{
    std::byte msg[300];
    std::size_t klen = p.make_rkey(iov, n, msg, sizeof msg);
    EXPECT_GT(klen, 0u);
    if (klen == 0) {
        return false;
    }
    std::size_t before = s.frags.size();
    EXPECT_TRUE(send_bytes(p, s, 1, msg, klen));
    EXPECT_TRUE(wait_frags(p, s, before + 1));
    return s.frags.size() > before && s.frags.back().size() == 1 && s.frags.back()[0] == std::byte{1};
}

// The receiver's side: takes the next key, reads `total` bytes from remote
// offset `roff` into `dst` (split in two iovecs at `split`).
bool take(VerbsPath& p, RecordingSink& s, std::byte* dst, std::size_t total, std::uint64_t roff,
          std::size_t split)
{
    std::size_t before = s.frags.size();
    if (!wait_frags(p, s, before + 1)) {
        return false;
    }
    const std::vector<std::byte> key = s.frags.back();
    iovec l[2] = {{dst, std::min(split, total)}, {dst + std::min(split, total), total - std::min(split, total)}};
    rt::Status st = p.get(0, key.data(), key.size(), roff, l, 2);
    EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
    char ok = st.ok() ? 1 : 0;
    EXPECT_TRUE(send_bytes(p, s, 0, &ok, 1));
    return st.ok();
}

TEST(VerbsPath, rendezvous_reads_every_size_and_offset_straight_into_place)
{
    Fabric f;
    const std::vector<std::size_t> sizes = {1, 7, 4095, 4096, 4097, 65537, (1u << 20) + 3, 5u << 20};
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        VerbsOptions o = small_options();
        o.read_chunk = 256 * 1024; // several reads per large message
        auto p = wire(boot, f.name, o);
        if (p == nullptr) {
            return 1;
        }
        RecordingSink s;
        std::vector<std::byte> buf((6u << 20) + 64);
        for (std::size_t sz : sizes) {
            for (std::size_t off : {std::size_t{0}, std::size_t{3}, std::size_t{61}}) {
                if (rank == 0) {
                    for (std::size_t i = 0; i < sz; ++i) {
                        buf[off + i] = pattern(i, static_cast<int>(sz + off));
                    }
                    // Two remote segments: a key describing a split buffer.
                    iovec iov[2] = {{buf.data() + off, sz / 3}, {buf.data() + off + sz / 3, sz - sz / 3}};
                    if (sz / 3 == 0) {
                        iov[0].iov_len = sz;
                    }
                    EXPECT_TRUE(offer(*p, s, iov, sz / 3 == 0 ? 1 : 2)) << sz << "@" << off;
                    if (sz / 3 == 0) {
                        continue;
                    }
                } else {
                    std::fill(buf.begin(), buf.end(), std::byte{0xee});
                    std::byte* dst = buf.data() + 5 + off;
                    // Whole message; then (next offer) only its tail from a remote offset.
                    EXPECT_TRUE(take(*p, s, dst, sz, 0, sz / 2 + 1));
                    for (std::size_t i = 0; i < sz; ++i) {
                        if (!expect_same(dst[i], pattern(i, static_cast<int>(sz + off)))) { break; }
                    }
                    EXPECT_EQ(dst[sz], std::byte{0xee}); // nothing past the end
                    if (sz / 3 == 0) {
                        continue;
                    }
                }
                // The tail from remote offset sz/2 (crossing the segment split or not).
                if (rank == 0) {
                    iovec iov[2] = {{buf.data() + off, sz / 3}, {buf.data() + off + sz / 3, sz - sz / 3}};
                    EXPECT_TRUE(offer(*p, s, iov, 2));
                } else {
                    std::fill(buf.begin(), buf.end(), std::byte{0xee});
                    const std::size_t from = sz / 2;
                    EXPECT_TRUE(take(*p, s, buf.data(), sz - from, from, 1));
                    for (std::size_t i = 0; i < sz - from; ++i) {
                        if (!expect_same(buf[i], pattern(from + i, static_cast<int>(sz + off)))) { break; }
                    }
                }
            }
        }
        EXPECT_GT(p->counters().gets + (rank == 0 ? 1 : 0), 0u);
        if (rank == 0) {
            EXPECT_GT(p->reg_cache()->hits(), 0u); // the same buffer again: found, not registered anew
        }
        EXPECT_TRUE(boot.fence().ok());
        return 0;
    }));
}

// A buffer is sent, unmapped, and new memory is mapped at the same address
// (and a malloc'd buffer is freed and allocated again): the next send must
// read the new bytes, never the old pages of a cached registration. With
// the hooks taken away the soft device shows what would happen.
void remap_case(bool hooks, bool expect_fresh)
{
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        auto p = wire(boot, f.name, small_options());
        if (p == nullptr) {
            return 1;
        }
        if (!hooks) {
            path::verbs::memhook_remove();
        }
        RecordingSink s;
        const std::size_t len = 3 * 4096 + 100;
        int stale = 0;
        for (int round = 0; round < 4; ++round) {
            if (rank == 0) {
                void* a = nullptr;
                static void* fixed = nullptr;
                if (round < 2) {
                    // mmap at one address, twice.
                    a = ::mmap(fixed, len, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | (fixed != nullptr ? MAP_FIXED : 0), -1, 0);
                    EXPECT_NE(a, MAP_FAILED);
                    fixed = a;
                } else {
                    a = std::malloc(len); // free + malloc: same address
                }
                std::memset(a, 'a' + round, len);
                iovec iov{a, len};
                EXPECT_TRUE(offer(*p, s, &iov, 1));
                if (round < 2) {
                    EXPECT_EQ(::munmap(a, len), 0);
                } else {
                    std::free(a);
                }
            } else {
                std::vector<char> dst(len);
                EXPECT_TRUE(take(*p, s, reinterpret_cast<std::byte*>(dst.data()), len, 0, len));
                if (dst[0] != 'a' + round || dst[len - 1] != 'a' + round) {
                    ++stale;
                }
            }
        }
        if (rank == 0 && hooks) {
            EXPECT_GT(p->reg_cache()->invalidations(), 0u);
        }
        if (rank == 1) {
            if (expect_fresh) {
                EXPECT_EQ(stale, 0) << "read through a stale registration";
            } else {
                EXPECT_GT(stale, 0) << "without the hooks the soft device should have shown stale pages";
            }
        }
        EXPECT_TRUE(boot.fence().ok());
        return 0;
    }));
}

// Threads (verbs_path.h, "Threads"): with the fine locks on, rank 0's four
// threads send inline and bounce-buffer fragments over few credits, send
// queue slots and bounce buffers while rank 1's two threads progress (credit
// writes on the queue pair the senders use) and a third reads rank 0's
// memory by RDMA read over and over. Every fragment arrives exactly once, in
// each sender's order (one queue pair, completions in order); every read
// lands whole.
struct CountingSink final : path::Sink {
    static constexpr std::uint64_t kKey = 99;
    std::mutex m;
    std::vector<std::vector<std::uint64_t>> seen;
    std::vector<std::byte> key;
    std::atomic<std::uint64_t> total{0};
    std::atomic<bool> has_key{false};
    std::atomic<bool> bye{false};
    std::atomic<int> downs{0};
    void on_frag(path::Path&, path::RxFrag& f) override
    {
        if (f.len == 1) {
            bye = true;
            return;
        }
        std::uint64_t who = 0, seq = 0;
        std::memcpy(&who, f.data, sizeof who);
        std::memcpy(&seq, f.data + 8, sizeof seq);
        std::lock_guard<std::mutex> g(m);
        if (who == kKey) {
            key.assign(f.data + 16, f.data + f.len);
            has_key = true;
            return;
        }
        if (who < seen.size()) {
            seen[who].push_back(seq);
        }
        total.fetch_add(1, std::memory_order_relaxed);
    }
    void on_path_down(path::Path&, int) override { downs.fetch_add(1); }
    void on_path_up(path::Path&, int) override {}
};

TEST(VerbsPath, threads_send_poll_and_read_at_once_and_nothing_is_lost)
{
    Fabric f;
    constexpr int kSenders = 4;
    constexpr std::uint64_t kEach = 300;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        VerbsOptions o = small_options();
        o.srq_depth = 8;  // few credits: stalls and credit writes beside the sends
        o.send_bufs = 4;  // bounce buffers run out
        o.qp_depth = 8;   // send queue slots run out
        o.read_chunk = 64 * 1024;
        auto p = wire(boot, f.name, o);
        if (p == nullptr) {
            return 1;
        }
        CountingSink s;
        s.seen.resize(kSenders);
        std::vector<std::byte> src(1u << 20);
        for (std::size_t i = 0; i < src.size(); ++i) {
            src[i] = pattern(i, 5);
        }
        if (rank == 0) {
            // The key first, before the threads.
            std::byte msg[300];
            const std::uint64_t who = CountingSink::kKey, seq = 0;
            std::memcpy(msg, &who, 8);
            std::memcpy(msg + 8, &seq, 8);
            iovec iov{src.data(), src.size()};
            const std::size_t klen = p->make_rkey(&iov, 1, msg + 16, sizeof msg - 16);
            EXPECT_GT(klen, 0u);
            EXPECT_TRUE(send_bytes(*p, s, 1, msg, 16 + klen));
        } else {
            const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{30} * 1000000000;
            while (!s.has_key && rt::monotonic_ns() < end) {
                p->progress(s);
            }
            EXPECT_TRUE(s.has_key.load());
        }
        rt::set_fine_locks(true);
        const rt::Nanos end = rt::monotonic_ns() + rt::Nanos{90} * 1000000000;
        std::atomic<bool> stuck{false};
        std::atomic<int> reads{0};
        std::atomic<bool> reader_done{false};
        std::vector<std::thread> ts;
        if (rank == 0) {
            for (int t = 0; t < kSenders; ++t) {
                ts.emplace_back([&, t] {
                    std::vector<std::byte> fr(1000);
                    const auto who = static_cast<std::uint64_t>(t);
                    std::memcpy(fr.data(), &who, 8);
                    for (std::uint64_t seq = 0; seq < kEach && !stuck; ++seq) {
                        const std::size_t len = (seq + who) % 3 == 0 ? fr.size() : 40; // bounce, inline
                        std::memcpy(fr.data() + 8, &seq, 8);
                        path::TxBuffer b;
                        while (!p->acquire(1, len, b)) {
                            p->progress(s);
                            if (rt::monotonic_ns() > end) {
                                stuck = true;
                                return;
                            }
                        }
                        std::memcpy(b.data, fr.data(), len);
                        EXPECT_EQ(p->commit(1, b, len), path::SendResult::done);
                    }
                });
            }
            ts.emplace_back([&] { // rank 1 says when it has everything and is done reading
                while (!s.bye && !stuck) {
                    p->progress(s);
                    if (rt::monotonic_ns() > end) {
                        stuck = true;
                    }
                }
            });
        } else {
            for (int t = 0; t < 2; ++t) {
                ts.emplace_back([&] {
                    while ((s.total.load() < kSenders * kEach || !reader_done) && !stuck) {
                        p->progress(s);
                        if (rt::monotonic_ns() > end) {
                            stuck = true;
                        }
                    }
                });
            }
            ts.emplace_back([&] {
                std::vector<std::byte> key;
                {
                    std::lock_guard<std::mutex> g(s.m);
                    key = s.key;
                }
                std::vector<std::byte> dst(src.size());
                while ((s.total.load() < kSenders * kEach || reads.load() < 3) && !stuck) {
                    std::fill(dst.begin(), dst.end(), std::byte{0});
                    iovec d{dst.data(), dst.size()};
                    rt::Status st = p->get(0, key.data(), key.size(), 0, &d, 1);
                    EXPECT_TRUE(st.ok()) << rt::errc_name(st.code());
                    EXPECT_TRUE(dst == src);
                    if (!st.ok() || dst != src) {
                        break;
                    }
                    ++reads;
                }
                reader_done = true;
            });
        }
        for (auto& t : ts) {
            t.join();
        }
        EXPECT_FALSE(stuck.load()) << "rank " << rank << ": received " << s.total.load();
        if (rank == 1 && !stuck) {
            char bye = 1;
            EXPECT_TRUE(send_bytes(*p, s, 0, &bye, 1));
            for (int t = 0; t < kSenders; ++t) {
                const auto& got = s.seen[static_cast<std::size_t>(t)];
                EXPECT_EQ(got.size(), kEach) << "sender " << t;
                for (std::uint64_t i = 0; i < got.size(); ++i) {
                    if (!expect_same(got[i], i)) {
                        break; // lost, twice or out of order
                    }
                }
            }
            EXPECT_GE(reads.load(), 3);
            EXPECT_EQ(p->counters().gets, static_cast<std::uint64_t>(reads.load()));
        }
        // Rank 1's goodbye needs rank 0's receive queue polled: rank 0's
        // progress thread ended when it came; let the last sends complete.
        const rt::Nanos quiet = rt::monotonic_ns() + rt::Nanos{200} * 1000000;
        while (rt::monotonic_ns() < quiet) {
            p->progress(s);
        }
        EXPECT_EQ(s.downs.load(), 0);
        rt::set_fine_locks(false);
        return ::testing::Test::HasFailure() ? 1 : 0;
    }, 120));
}

TEST(VerbsPath, registration_cache_never_reads_memory_unmapped_and_mapped_again)
{
    SKIP_WITHOUT_MEMORY_HOOKS();
    ASSERT_TRUE(path::verbs::memhook_interposed());
    remap_case(true, true);
}

TEST(VerbsPath, without_the_memory_hooks_a_stale_registration_would_be_read)
{
    remap_case(false, false);
}

TEST(VerbsPath, an_error_completion_reports_the_path_down_to_that_peer)
{
    if (real_device() != nullptr) {
        GTEST_SKIP() << "needs the soft device's fault injection";
    }
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        auto p = wire(boot, f.name, small_options());
        if (p == nullptr) {
            return 1;
        }
        RecordingSink s;
        if (rank == 0) {
            // The third request on our queue pair fails.
            EXPECT_TRUE(soft::inject_error(f.name, p->qpn(1), 2, path::verbs::WcStatus::retry_exc_err));
            char b[100] = {};
            for (int i = 0; i < 5; ++i) {
                EXPECT_TRUE(send_bytes(*p, s, 1, b, sizeof b));
            }
            const rt::Nanos end = rt::monotonic_ns() + 5000000000;
            while (s.downs.empty() && rt::monotonic_ns() < end) {
                p->progress(s);
            }
            EXPECT_EQ(s.downs, std::vector<int>{1});
            EXPECT_FALSE(p->can_reach(1));
            EXPECT_GT(p->error_completions(), 0u);
            path::TxBuffer t;
            EXPECT_TRUE(p->acquire(1, 10, t));
            EXPECT_EQ(p->commit(1, t, 10), path::SendResult::failed);
            iovec l{b, 10};
            EXPECT_FALSE(p->get(1, b, 8, 0, &l, 1).ok());
        }
        EXPECT_TRUE(boot.fence().ok());
        return 0;
    }));
}

TEST(VerbsPath, a_port_going_down_and_up_is_reported_and_sends_fail_meanwhile)
{
    if (real_device() != nullptr) {
        GTEST_SKIP() << "needs the soft device's fault injection";
    }
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap& boot) {
        auto p = wire(boot, f.name, small_options());
        if (p == nullptr) {
            return 1;
        }
        RecordingSink s;
        EXPECT_TRUE(boot.fence().ok());
        if (rank == 0) {
            EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, false));
        }
        EXPECT_TRUE(boot.fence().ok());
        rt::Nanos end = rt::monotonic_ns() + 5000000000;
        while (s.downs.empty() && rt::monotonic_ns() < end) {
            p->progress(s);
        }
        EXPECT_EQ(s.downs, std::vector<int>{1 - rank});
        EXPECT_FALSE(p->port_up());
        path::TxBuffer t;
        EXPECT_TRUE(p->acquire(1 - rank, 10, t));
        EXPECT_EQ(p->commit(1 - rank, t, 10), path::SendResult::failed);
        EXPECT_TRUE(boot.fence().ok());
        if (rank == 0) {
            EXPECT_TRUE(soft::set_port_state(f.name, 0, 1, true));
        }
        EXPECT_TRUE(boot.fence().ok());
        end = rt::monotonic_ns() + 5000000000;
        while (s.ups.empty() && rt::monotonic_ns() < end) {
            p->progress(s);
        }
        EXPECT_EQ(s.ups, std::vector<int>{1 - rank});
        // Nothing was lost while it was down: the queue pairs still work.
        char b[50] = {7};
        EXPECT_TRUE(send_bytes(*p, s, 1 - rank, b, sizeof b));
        EXPECT_TRUE(wait_frags(*p, s, 1));
        for (int i = 0; i < 1000; ++i) {
            p->progress(s);
        }
        EXPECT_TRUE(boot.fence().ok());
        return 0;
    }));
}

} // namespace
} // namespace ulmpi::test

namespace ulmpi::test {
namespace {

void invalidate_cb(void* ctx, std::uintptr_t a, std::size_t n)
{
    static_cast<path::verbs::RegCache*>(ctx)->invalidate(a, n);
}

// Every way a program gives memory back reaches the cache through the hooks.
TEST(RegCache, munmap_mremap_madvise_and_mmap_fixed_drop_cached_registrations)
{
    SKIP_WITHOUT_MEMORY_HOOKS();
    if (real_device() != nullptr) {
        GTEST_SKIP() << "soft device only";
    }
    Fabric f;
    EXPECT_TRUE(run_two([&](int rank, SocketBootstrap&) {
        if (rank == 1) {
            return 0;
        }
        soft::FabricOptions fo;
        fo.name = f.name;
        fo.pool_bytes = std::size_t{1} << 28;
        auto prov = soft::make_soft_provider(fo);
        std::string why;
        auto dev = prov->open("soft0", why);
        EXPECT_NE(dev, nullptr) << why;
        if (dev == nullptr) {
            return 1;
        }
        path::verbs::RegCache cache(*dev, true, ~std::uint64_t{0});
        EXPECT_TRUE(path::verbs::memhook_install(&invalidate_cb, &cache));
        const std::size_t len = 8 * 4096;
        auto fresh = [&]() {
            void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            EXPECT_NE(p, MAP_FAILED);
            std::memset(p, 1, len);
            // The whole buffer (pinned as one run: the soft device moves
            // pinned pages into its pool, and mremap needs one mapping).
            EXPECT_NE(cache.acquire(p, len, path::verbs::access::remote_read), nullptr);
            EXPECT_EQ(cache.acquire(static_cast<char*>(p) + 4096, 50, path::verbs::access::remote_read),
                      cache.acquire(static_cast<char*>(p) + 4100, 10, path::verbs::access::remote_read));
            EXPECT_EQ(cache.entries(), 1u);
            return p;
        };
        void* p = fresh();
        EXPECT_EQ(::madvise(static_cast<char*>(p) + 4096, 4096, MADV_DONTNEED), 0);
        EXPECT_EQ(cache.entries(), 0u) << "madvise";
        EXPECT_EQ(::munmap(p, len), 0);

        p = fresh();
        void* q = ::mremap(p, len, 2 * len, MREMAP_MAYMOVE);
        EXPECT_NE(q, MAP_FAILED);
        EXPECT_EQ(cache.entries(), 0u) << "mremap";
        EXPECT_EQ(::munmap(q, 2 * len), 0);

        p = fresh();
        void* in = static_cast<char*>(p) + 4096;
        EXPECT_EQ(::mmap(in, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), in);
        EXPECT_EQ(cache.entries(), 0u) << "mmap MAP_FIXED";
        EXPECT_EQ(::munmap(p, len), 0);

        p = fresh();
        // A release elsewhere leaves the entry alone.
        void* other = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_EQ(::munmap(other, 4096), 0);
        EXPECT_EQ(cache.entries(), 1u);
        EXPECT_EQ(::munmap(p, len), 0);
        EXPECT_EQ(cache.entries(), 0u) << "munmap";
        EXPECT_GE(cache.invalidations(), 4u);
        EXPECT_GT(path::verbs::memhook_events(), 0u);
        path::verbs::memhook_remove();
        return 0;
    }));
}

} // namespace
} // namespace ulmpi::test
