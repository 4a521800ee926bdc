// The packer (ulm/packer.h) against a byte-by-byte reference: for random
// layouts (runs in any order, negative displacements and extents, gaps),
// counts, positions and lengths, every operation must touch exactly the
// addresses the reference lists for packed bytes [pos, pos + n), in order.
#include "ulm/packer.h"

#include "runtime/crc32c.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace ulmpi::ulm {
namespace {

// A layout together with the storage its pointers refer to.
struct OwnedLayout {
    std::vector<Run> runs;
    std::vector<std::uint64_t> prefix;
    Layout layout;

    void finish(std::int64_t extent, bool contiguous)
    {
        prefix.assign(runs.size() + 1, 0);
        for (std::size_t i = 0; i < runs.size(); ++i) {
            prefix[i + 1] = prefix[i] + runs[i].len;
        }
        layout.size = prefix.back();
        layout.extent = extent;
        layout.nruns = static_cast<std::uint32_t>(runs.size());
        layout.runs = runs.data();
        layout.prefix = prefix.data();
        layout.contiguous = contiguous;
    }
};

// Memory for `count` elements of a layout, with guard bytes on both sides,
// and the reference: the address offset (from the buffer's base pointer) of
// every packed byte.
struct Buffer {
    std::vector<std::byte> mem;
    std::byte* base = nullptr;
    std::vector<std::int64_t> ref; // packed byte i lives at base + ref[i]

    Buffer(const Layout& l, std::uint64_t count)
    {
        for (std::uint64_t e = 0; e < count; ++e) {
            for (std::uint32_t r = 0; r < l.nruns; ++r) {
                for (std::uint64_t b = 0; b < l.runs[r].len; ++b) {
                    ref.push_back(static_cast<std::int64_t>(e) * l.extent + l.runs[r].disp +
                                  static_cast<std::int64_t>(b));
                }
            }
        }
        std::int64_t lo = 0;
        std::int64_t hi = 0;
        if (!ref.empty()) {
            lo = *std::min_element(ref.begin(), ref.end());
            hi = *std::max_element(ref.begin(), ref.end()) + 1;
        }
        constexpr std::int64_t kGuard = 64;
        mem.assign(static_cast<std::size_t>(hi - lo + 2 * kGuard), std::byte{0});
        base = mem.data() + kGuard - lo;
    }
    std::int64_t off(const std::byte* p) const { return p - base; }
};

OwnedLayout contiguous_bytes(std::uint64_t len)
{
    OwnedLayout o;
    o.runs = {{0, len}};
    o.finish(static_cast<std::int64_t>(len), true);
    return o;
}

OwnedLayout random_layout(std::mt19937& rng)
{
    auto upto = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n + 1)); };
    OwnedLayout o;
    if (upto(7) == 0) {
        // Contiguous: one run as long as the extent, maybe displaced.
        std::uint64_t len = 1 + static_cast<std::uint64_t>(upto(40));
        o.runs = {{upto(3) == 0 ? -upto(16) : upto(16), len}};
        o.finish(static_cast<std::int64_t>(len), true);
        return o;
    }
    int nruns = 1 + upto(6);
    std::int64_t at = upto(2) == 0 ? -upto(30) : upto(10);
    for (int i = 0; i < nruns; ++i) {
        std::uint64_t len = 1 + static_cast<std::uint64_t>(upto(16));
        o.runs.push_back({at, len});
        at += static_cast<std::int64_t>(len) + 1 + upto(8); // gap >= 1: runs are merged
    }
    std::int64_t lo = o.runs.front().disp;
    std::int64_t span = at - lo;
    if (upto(2) == 0) {
        std::shuffle(o.runs.begin(), o.runs.end(), rng); // type-map order need not be memory order
    }
    std::int64_t extent = span + (upto(2) == 0 ? 0 : upto(12));
    if (upto(5) == 0) {
        extent = -extent;
    }
    o.finish(extent, false);
    return o;
}

void fill_pattern(Buffer& b)
{
    for (std::size_t i = 0; i < b.mem.size(); ++i) {
        b.mem[i] = static_cast<std::byte>((i * 131 + 17) & 0xff);
    }
}

void check_one(const Layout& l, std::uint64_t count, std::uint64_t pos, std::uint64_t n,
               std::mt19937& rng)
{
    Buffer buf(l, count);
    DataRef ref{buf.base, count, &l};
    ASSERT_EQ(ref.bytes(), buf.ref.size());
    ASSERT_LE(pos + n, ref.bytes());

    // for_each_segment visits exactly the reference addresses, in order.
    std::vector<std::int64_t> seen;
    for_each_segment(ref, pos, n, [&](std::byte* p, std::size_t len) {
        EXPECT_GT(len, 0u) << "empty segment";
        for (std::size_t i = 0; i < len; ++i) {
            seen.push_back(buf.off(p) + static_cast<std::int64_t>(i));
        }
    });
    std::vector<std::int64_t> want(buf.ref.begin() + static_cast<std::ptrdiff_t>(pos),
                                   buf.ref.begin() + static_cast<std::ptrdiff_t>(pos + n));
    ASSERT_EQ(seen, want);

    // pack reads those bytes.
    fill_pattern(buf);
    std::vector<std::byte> packed(n + 8, std::byte{0xee});
    pack(ref, pos, packed.data(), n);
    for (std::uint64_t i = 0; i < n; ++i) {
        ASSERT_EQ(packed[i], buf.base[want[i]]) << "pack byte " << i;
    }
    for (std::uint64_t i = n; i < n + 8; ++i) {
        ASSERT_EQ(packed[i], std::byte{0xee}) << "pack wrote past n";
    }

    // unpack writes those bytes and nothing else.
    std::fill(buf.mem.begin(), buf.mem.end(), std::byte{0});
    std::vector<std::byte> src(n);
    for (auto& b : src) {
        b = static_cast<std::byte>(1 + rng() % 255);
    }
    unpack(ref, pos, src.data(), n);
    std::vector<bool> written(buf.mem.size(), false);
    for (std::uint64_t i = 0; i < n; ++i) {
        ASSERT_EQ(buf.base[want[i]], src[i]) << "unpack byte " << i;
        written[static_cast<std::size_t>(buf.base + want[i] - buf.mem.data())] = true;
    }
    for (std::size_t i = 0; i < buf.mem.size(); ++i) {
        if (!written[i]) {
            ASSERT_EQ(buf.mem[i], std::byte{0}) << "unpack wrote outside its bytes at " << i;
        }
    }

    // to_iovec with small and large limits.
    for (int max : {1, 2, 3, 5, 64}) {
        std::vector<iovec> iov(static_cast<std::size_t>(max) + 1, iovec{nullptr, 12345});
        std::uint64_t covered = 999;
        int used = to_iovec(ref, pos, n, iov.data(), max, &covered);
        ASSERT_GE(used, 0);
        ASSERT_LE(used, max);
        EXPECT_EQ(iov[static_cast<std::size_t>(max)].iov_len, 12345u) << "wrote past max";
        ASSERT_LE(covered, n);
        if (n > 0) {
            EXPECT_GT(covered, 0u);
        } else {
            EXPECT_EQ(used, 0);
            EXPECT_EQ(covered, 0u);
        }
        std::vector<std::int64_t> got;
        for (int i = 0; i < used; ++i) {
            EXPECT_GT(iov[static_cast<std::size_t>(i)].iov_len, 0u);
            auto* p = static_cast<std::byte*>(iov[static_cast<std::size_t>(i)].iov_base);
            for (std::size_t k = 0; k < iov[static_cast<std::size_t>(i)].iov_len; ++k) {
                got.push_back(buf.off(p) + static_cast<std::int64_t>(k));
            }
            if (i > 0) {
                auto* prev = static_cast<std::byte*>(iov[static_cast<std::size_t>(i - 1)].iov_base);
                EXPECT_NE(prev + iov[static_cast<std::size_t>(i - 1)].iov_len, p)
                    << "adjacent segments must be merged";
            }
        }
        ASSERT_EQ(got.size(), covered);
        ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "max " << max;
        if (covered < n) {
            EXPECT_EQ(used, max) << "stopped early with iovecs left";
            auto* last = static_cast<std::byte*>(iov[static_cast<std::size_t>(used - 1)].iov_base);
            EXPECT_NE(buf.off(last + iov[static_cast<std::size_t>(used - 1)].iov_len),
                      want[covered])
                << "the next byte could have been merged into the last iovec";
        }
    }
}

TEST(Packer, matches_byte_reference_for_random_layouts)
{
    std::mt19937 rng(12345);
    for (int iter = 0; iter < 600; ++iter) {
        OwnedLayout o = random_layout(rng);
        std::uint64_t count = rng() % 8;
        std::uint64_t total = count * o.layout.size;
        for (int k = 0; k < 6; ++k) {
            std::uint64_t pos = total == 0 ? 0 : rng() % (total + 1);
            std::uint64_t n = total - pos == 0 ? 0 : rng() % (total - pos + 1);
            if (k == 0) {
                pos = 0;
                n = total;
            }
            SCOPED_TRACE(testing::Message()
                         << "iter " << iter << " nruns " << o.layout.nruns << " extent "
                         << o.layout.extent << " count " << count << " pos " << pos << " n " << n);
            check_one(o.layout, count, pos, n, rng);
            if (HasFatalFailure()) {
                return;
            }
        }
    }
}

// pack_crc_stream (non-temporal stores into the destination) packs the same
// bytes as pack and returns the same CRC as pack_crc, for runs long enough
// to take the streaming kernel (2 KiB on) and short ones, at every
// destination alignment within a line, and writes nothing past n.
TEST(Packer, pack_crc_stream_matches_pack_crc)
{
    std::mt19937 rng(2026);
    for (int iter = 0; iter < 60; ++iter) {
        OwnedLayout o;
        std::int64_t at = static_cast<std::int64_t>(rng() % 64);
        const int nruns = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < nruns; ++i) {
            const std::uint64_t len = 1 + rng() % (i % 2 == 0 ? 9000 : 300);
            o.runs.push_back({at, len});
            at += static_cast<std::int64_t>(len) + 1 + static_cast<std::int64_t>(rng() % 70);
        }
        o.finish(at + static_cast<std::int64_t>(rng() % 3), nruns == 1 && iter % 3 == 0);
        if (o.layout.contiguous) {
            o.runs[0].disp = 0;
            o.finish(static_cast<std::int64_t>(o.runs[0].len), true);
        }
        const std::uint64_t count = 1 + rng() % 3;
        Buffer buf(o.layout, count);
        fill_pattern(buf);
        DataRef ref{buf.base, count, &o.layout};
        const std::uint64_t total = ref.bytes();
        const std::uint64_t pos = rng() % (total / 2 + 1);
        const std::uint64_t n = total - pos - rng() % ((total - pos) / 2 + 1);
        const std::size_t skew = rng() % 64;
        SCOPED_TRACE(testing::Message() << "iter " << iter << " pos " << pos << " n " << n << " skew " << skew);
        std::vector<std::byte> want(n);
        pack(ref, pos, want.data(), n);
        std::vector<std::byte> out(n + skew + 64, std::byte{0xee});
        const std::uint32_t crc = pack_crc_stream(ref, pos, out.data() + skew, n, 0);
        EXPECT_EQ(crc, rt::crc32c(want.data(), n));
        EXPECT_EQ(crc, pack_crc(ref, pos, want.data(), n));
        ASSERT_TRUE(std::equal(want.begin(), want.end(), out.begin() + static_cast<std::ptrdiff_t>(skew)));
        for (std::size_t i = 0; i < skew; ++i) {
            ASSERT_EQ(out[i], std::byte{0xee}) << "wrote before dst";
        }
        for (std::size_t i = skew + n; i < out.size(); ++i) {
            ASSERT_EQ(out[i], std::byte{0xee}) << "wrote past n";
        }
        // Chained from an earlier CRC, as a fragment's header is.
        EXPECT_EQ(pack_crc_stream(ref, pos, out.data() + skew, n, 0x1234u), rt::crc32c(want.data(), n, 0x1234u));
        // pack_crc_cached (copy, then checksum) alike; unpack_crc back.
        std::vector<std::byte> cached(n + skew, std::byte{0xee});
        EXPECT_EQ(pack_crc_cached(ref, pos, cached.data() + skew, n, 7u), rt::crc32c(want.data(), n, 7u));
        ASSERT_TRUE(std::equal(want.begin(), want.end(), cached.begin() + static_cast<std::ptrdiff_t>(skew)));
        Buffer back(o.layout, count);
        DataRef back_ref{back.base, count, &o.layout};
        EXPECT_EQ(unpack_crc(back_ref, pos, want.data(), n, 9u), rt::crc32c(want.data(), n, 9u));
        std::vector<std::byte> again(n);
        pack(back_ref, pos, again.data(), n);
        ASSERT_TRUE(std::equal(want.begin(), want.end(), again.begin()));
    }
}

TEST(Packer, contiguous_layout_is_visited_as_one_segment)
{
    OwnedLayout o = contiguous_bytes(8);
    std::vector<std::byte> mem(8 * 100);
    DataRef ref{mem.data(), 100, &o.layout};
    EXPECT_EQ(ref.contiguous_base(), mem.data());
    int calls = 0;
    for_each_segment(ref, 13, 700, [&](std::byte* p, std::size_t len) {
        ++calls;
        EXPECT_EQ(p, mem.data() + 13);
        EXPECT_EQ(len, 700u);
    });
    EXPECT_EQ(calls, 1);
    iovec iov[1];
    std::uint64_t covered = 0;
    EXPECT_EQ(to_iovec(ref, 0, 800, iov, 1, &covered), 1);
    EXPECT_EQ(covered, 800u);
    EXPECT_EQ(iov[0].iov_base, mem.data());
}

TEST(Packer, single_element_of_one_run_is_contiguous_even_with_larger_extent)
{
    OwnedLayout o;
    o.runs = {{24, 10}};
    o.finish(100, false);
    std::vector<std::byte> mem(200);
    DataRef one{mem.data(), 1, &o.layout};
    EXPECT_EQ(one.contiguous_base(), mem.data() + 24);
    DataRef two{mem.data(), 2, &o.layout};
    EXPECT_EQ(two.contiguous_base(), nullptr);
    std::mt19937 rng(1);
    check_one(o.layout, 1, 3, 5, rng);
    check_one(o.layout, 2, 3, 15, rng);
}

TEST(Packer, to_iovec_merges_runs_that_touch_across_elements)
{
    // Element: bytes [0,4) and [6,8); extent 8: run 2 of element e ends where
    // run 1 of element e+1 starts.
    OwnedLayout o;
    o.runs = {{0, 4}, {6, 2}};
    o.finish(8, false);
    std::vector<std::byte> mem(8 * 4);
    DataRef ref{mem.data(), 4, &o.layout};
    iovec iov[8];
    std::uint64_t covered = 0;
    int used = to_iovec(ref, 0, ref.bytes(), iov, 8, &covered);
    EXPECT_EQ(covered, 24u);
    ASSERT_EQ(used, 5);
    EXPECT_EQ(iov[0].iov_base, mem.data());
    EXPECT_EQ(iov[0].iov_len, 4u);
    EXPECT_EQ(iov[1].iov_base, mem.data() + 6);
    EXPECT_EQ(iov[1].iov_len, 6u); // [6,8) + [8,12)
    EXPECT_EQ(iov[4].iov_base, mem.data() + 30);
    EXPECT_EQ(iov[4].iov_len, 2u);
}

TEST(Packer, to_iovec_reports_nothing_for_zero_bytes_or_zero_limit)
{
    OwnedLayout o = contiguous_bytes(4);
    std::vector<std::byte> mem(16);
    DataRef ref{mem.data(), 4, &o.layout};
    iovec iov[2];
    std::uint64_t covered = 7;
    EXPECT_EQ(to_iovec(ref, 0, 0, iov, 2, &covered), 0);
    EXPECT_EQ(covered, 0u);
    covered = 7;
    EXPECT_EQ(to_iovec(ref, 0, 16, iov, 0, &covered), 0);
    EXPECT_EQ(covered, 0u);
}

TEST(Packer, data_ref_without_layout_has_no_bytes)
{
    DataRef ref;
    EXPECT_EQ(ref.bytes(), 0u);
    EXPECT_EQ(ref.contiguous_base(), nullptr);
    int calls = 0;
    for_each_segment(ref, 0, 0, [&](std::byte*, std::size_t) { ++calls; });
    EXPECT_EQ(calls, 0);
}

TEST(Packer, find_run_returns_run_holding_each_byte)
{
    OwnedLayout o;
    o.runs = {{0, 3}, {10, 1}, {20, 5}, {40, 2}};
    o.finish(50, false);
    const std::uint32_t want[] = {0, 0, 0, 1, 2, 2, 2, 2, 2, 3, 3};
    for (std::uint64_t b = 0; b < o.layout.size; ++b) {
        EXPECT_EQ(detail::find_run(o.layout, b), want[b]) << b;
    }
}

} // namespace
} // namespace ulmpi::ulm
