// rt::crc32c: published vectors, software == hardware, crc32c_copy and
// crc32c_copy_stream at every length and misalignment, chaining and combine identities. Every test runs
// once on each implementation: AVX-512 folding, AVX2 folding and SSE4.2
// (each skipped when the CPU lacks it) and software.
#include "runtime/crc32c.h"

#include "runtime/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

namespace ulmpi::rt {
namespace {

// Bit-at-a-time reference, independent of both implementations.
std::uint32_t reference_crc(const void* data, std::size_t len, std::uint32_t crc = 0)
{
    const auto* p = static_cast<const unsigned char*>(data);
    crc = ~crc;
    for (std::size_t i = 0; i < len; ++i) {
        crc ^= p[i];
        for (int b = 0; b < 8; ++b) {
            crc = (crc & 1u) != 0 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
    }
    return ~crc;
}

std::vector<unsigned char> random_bytes(std::size_t n, std::uint32_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<unsigned char> v(n);
    for (auto& b : v) {
        b = static_cast<unsigned char>(rng());
    }
    return v;
}

std::uint32_t crc_of(std::string_view s) { return crc32c(s.data(), s.size()); }

// The two copying checksums; the streaming one differs from the plain one
// only from 2 KiB on, so the exhaustive test starts it a little below.
using CopyFn = std::uint32_t (*)(void*, const void*, std::size_t, std::uint32_t) noexcept;
struct CopyVariant {
    const char* name;
    CopyFn fn;
    std::size_t exhaustive_from;
};
const CopyVariant kCopies[] = {{"crc32c_copy", &crc32c_copy, 0},
                               {"crc32c_copy_stream", &crc32c_copy_stream, 1900},
                               {"crc32c_copy_cached", &crc32c_copy_cached, 3900}};

constexpr std::string_view kAvx512Name = "avx512 vpclmulqdq fold + sse4.2";
constexpr std::string_view kAvx2Name = "avx2 vpclmulqdq fold + sse4.2";
constexpr std::string_view kSse42Name = "sse4.2 (3-way)";
constexpr std::string_view kSoftwareName = "software (slicing-by-8)";

class Crc32c : public ::testing::TestWithParam<Crc32cImpl> {
protected:
    void SetUp() override
    {
        if (!crc32c_force(GetParam())) {
            switch (GetParam()) {
            case Crc32cImpl::avx512:
                GTEST_SKIP() << "this CPU lacks AVX-512F or VPCLMULQDQ (or SSE4.2)";
            case Crc32cImpl::avx2:
                GTEST_SKIP() << "this CPU lacks AVX2 or VPCLMULQDQ (or SSE4.2)";
            default:
                GTEST_SKIP() << "this CPU lacks SSE4.2";
            }
        }
    }
    void TearDown() override { crc32c_force(Crc32cImpl::best); }
};

TEST_P(Crc32c, reports_the_implementation_in_use)
{
    const std::string_view name = crc32c_implementation();
    switch (GetParam()) {
    case Crc32cImpl::avx512:
        EXPECT_EQ(name, kAvx512Name);
        break;
    case Crc32cImpl::avx2:
        EXPECT_EQ(name, kAvx2Name);
        break;
    case Crc32cImpl::sse42:
        EXPECT_EQ(name, kSse42Name);
        break;
    default:
        EXPECT_EQ(name, kSoftwareName);
        break;
    }
}

TEST_P(Crc32c, matches_published_vectors)
{
    EXPECT_EQ(crc_of("123456789"), 0xE3069283u);
    EXPECT_EQ(crc_of(""), 0x00000000u);
    EXPECT_EQ(crc_of("a"), 0xC1D04330u);
    EXPECT_EQ(crc_of("The quick brown fox jumps over the lazy dog"), 0x22620404u);

    // RFC 3720 (iSCSI) appendix B.4.
    unsigned char buf[32];
    std::memset(buf, 0x00, sizeof buf);
    EXPECT_EQ(crc32c(buf, sizeof buf), 0x8A9136AAu);
    std::memset(buf, 0xFF, sizeof buf);
    EXPECT_EQ(crc32c(buf, sizeof buf), 0x62A8AB43u);
    for (int i = 0; i < 32; ++i) {
        buf[i] = static_cast<unsigned char>(i);
    }
    EXPECT_EQ(crc32c(buf, sizeof buf), 0x46DD794Eu);
    for (int i = 0; i < 32; ++i) {
        buf[i] = static_cast<unsigned char>(31 - i);
    }
    EXPECT_EQ(crc32c(buf, sizeof buf), 0x113FDB5Cu);
    // The same vectors through the copying variant.
    unsigned char out[32];
    EXPECT_EQ(crc32c_copy(out, buf, sizeof buf), 0x113FDB5Cu);
    EXPECT_EQ(std::memcmp(out, buf, sizeof buf), 0);
}

TEST_P(Crc32c, matches_bitwise_reference_at_every_length_and_offset)
{
    // Covers the aligned head, both 3-way block sizes (768 B and 24 KiB
    // blocks) and every tail length.
    const auto data = random_bytes(3 * 8192 * 2 + 3 * 256 * 2 + 64, 1);
    for (std::size_t len = 0; len <= 1600; ++len) {
        for (std::size_t off = 0; off < 8; ++off) {
            ASSERT_EQ(crc32c(data.data() + off, len), reference_crc(data.data() + off, len))
                << "len " << len << " off " << off;
        }
    }
    for (std::size_t len : {24575u, 24576u, 24577u, 24576u + 768u + 7u, 49152u, 50000u}) {
        for (std::size_t off = 0; off < 8; ++off) {
            ASSERT_EQ(crc32c(data.data() + off, len), reference_crc(data.data() + off, len))
                << "len " << len << " off " << off;
        }
    }
}

TEST_P(Crc32c, words_with_a_hole_equal_the_bytes_with_those_four_zeroed)
{
    const auto data = random_bytes(8 * 12 + 8, 2);
    for (std::size_t n = 1; n <= 12; ++n) {
        for (std::size_t hole = 0; hole + 4 <= 8 * n; hole += 4) {
            for (std::size_t off = 0; off < 8; ++off) {
                std::vector<unsigned char> copy(data.begin() + static_cast<std::ptrdiff_t>(off),
                                                data.begin() + static_cast<std::ptrdiff_t>(off + 8 * n));
                std::memset(copy.data() + hole, 0, 4);
                ASSERT_EQ(crc32c_words_hole(data.data() + off, n, hole), reference_crc(copy.data(), copy.size()))
                    << n << " words, hole at " << hole << ", offset " << off;
            }
        }
    }
}

TEST_P(Crc32c, copy_equals_memcpy_plus_crc_at_every_length_and_misalignment)
{
    constexpr std::size_t kMax = 4096;
    constexpr unsigned char kGuard = 0xA5;
    const auto src = random_bytes(kMax + 16, 2);
    std::vector<unsigned char> dst(kMax + 48, kGuard);
    const std::vector<unsigned char> guard(48, kGuard);
    for (const CopyVariant& copy : kCopies) {
        for (std::size_t len = copy.exhaustive_from; len <= kMax; ++len) {
            for (std::size_t so = 0; so < 16; ++so) {
                const std::uint32_t want = crc32c(src.data() + so, len);
                for (std::size_t d = 0; d < 16; ++d) {
                    unsigned char* out = dst.data() + 16 + d;
                    const std::uint32_t got = copy.fn(out, src.data() + so, len, 0);
                    ASSERT_EQ(got, want)
                        << copy.name << " len " << len << " src+" << so << " dst+" << d;
                    ASSERT_EQ(std::memcmp(out, src.data() + so, len), 0)
                        << copy.name << " len " << len << " src+" << so << " dst+" << d;
                    ASSERT_EQ(std::memcmp(dst.data(), guard.data(), 16 + d), 0)
                        << copy.name << " wrote before dst, len " << len;
                    ASSERT_EQ(std::memcmp(out + len, guard.data(), 32 - d), 0)
                        << copy.name << " wrote after dst, len " << len;
                    std::memset(out, kGuard, len);
                }
            }
        }
    }
    // Spot-check against the independent reference too.
    EXPECT_EQ(crc32c(src.data() + 3, kMax), reference_crc(src.data() + 3, kMax));
}

TEST_P(Crc32c, copy_is_correct_for_large_sizes)
{
    const std::size_t sizes[] = {3 * 8192, 3 * 8192 + 1, 65536 + 13, (1u << 20) + 3,
                                 (4u << 20) + 5};
    const auto src = random_bytes((4u << 20) + 64, 3);
    std::vector<unsigned char> dst((4u << 20) + 64);
    for (const CopyVariant& copy : kCopies) {
        for (std::size_t len : sizes) {
            for (std::size_t so : {0u, 1u, 7u, 12u}) {
                for (std::size_t d : {0u, 3u, 8u, 13u}) {
                    std::memset(dst.data(), 0, dst.size());
                    const std::uint32_t got = copy.fn(dst.data() + d, src.data() + so, len, 0);
                    ASSERT_EQ(got, crc32c(src.data() + so, len)) << copy.name << " len " << len;
                    ASSERT_EQ(std::memcmp(dst.data() + d, src.data() + so, len), 0)
                        << copy.name << " len " << len;
                }
            }
        }
    }
    const std::size_t big = (1u << 20) + 3;
    EXPECT_EQ(crc32c(src.data() + 1, big), reference_crc(src.data() + 1, big));
}

TEST_P(Crc32c, chains_across_any_split)
{
    const auto data = random_bytes(100000, 4);
    std::vector<unsigned char> out(data.size());
    std::mt19937_64 rng(5);
    for (int trial = 0; trial < 300; ++trial) {
        const std::size_t len = rng() % data.size();
        const std::size_t cut = len == 0 ? 0 : rng() % (len + 1);
        const std::uint32_t whole = crc32c(data.data(), len);
        EXPECT_EQ(crc32c(data.data() + cut, len - cut, crc32c(data.data(), cut)), whole);
        for (const CopyVariant& copy : kCopies) {
            std::memset(out.data(), 0, len);
            const std::uint32_t a = copy.fn(out.data(), data.data(), cut, 0);
            EXPECT_EQ(copy.fn(out.data() + cut, data.data() + cut, len - cut, a), whole)
                << copy.name;
            EXPECT_EQ(std::memcmp(out.data(), data.data(), len), 0) << copy.name;
        }
    }
    // Byte by byte.
    std::uint32_t c = 0;
    for (std::size_t i = 0; i < 1000; ++i) {
        c = crc32c(data.data() + i, 1, c);
    }
    EXPECT_EQ(c, crc32c(data.data(), 1000));
}

TEST_P(Crc32c, matches_reference_around_fold_steps_and_block_edges)
{
    // Lengths k·32 - 7 .. k·32 + 7 up to 4 KiB + 256 B: the folds' threshold
    // (one 256-byte step), their 256-byte steps, the 64-byte (AVX-512) and
    // 32-byte (both) blocks after them, the < 32-byte tail handed to crc32,
    // and the 2 KiB threshold from which the head is aligned to 64 bytes.
    // Several source misalignments, a destination misalignment that varies
    // with the length, and a random initial crc per source offset.
    constexpr std::size_t kMax = 4096 + 256 + 7;
    constexpr unsigned char kGuard = 0xA5;
    const auto src = random_bytes(kMax + 64, 10);
    std::vector<unsigned char> dst(kMax + 128, kGuard);
    std::mt19937_64 rng(11);
    for (std::size_t so : {0u, 1u, 8u, 33u, 63u}) {
        const auto seed = static_cast<std::uint32_t>(rng());
        // want[n]: the reference over the first n bytes, all n in one pass.
        std::vector<std::uint32_t> want(kMax + 1);
        want[0] = seed;
        for (std::size_t n = 1; n <= kMax; ++n) {
            want[n] = reference_crc(src.data() + so + n - 1, 1, want[n - 1]);
        }
        for (std::size_t base = 32; base + 7 <= kMax; base += 32) {
            for (std::size_t len = base - 7; len <= base + 7; ++len) {
                const unsigned char* in = src.data() + so;
                ASSERT_EQ(crc32c(in, len, seed), want[len]) << "len " << len << " src+" << so;
                unsigned char* out = dst.data() + (so * 7 + len) % 64;
                ASSERT_EQ(crc32c_copy(out, in, len, seed), want[len])
                    << "len " << len << " src+" << so;
                ASSERT_EQ(std::memcmp(out, in, len), 0) << "len " << len << " src+" << so;
                ASSERT_EQ(out[len], kGuard) << "wrote after dst, len " << len;
                std::memset(out, kGuard, len);
            }
        }
    }
}

TEST_P(Crc32c, combine_equals_crc_of_concatenation)
{
    const auto data = random_bytes(200000, 6);
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const std::size_t len = rng() % data.size();
        const std::size_t cut = len == 0 ? 0 : rng() % (len + 1);
        const std::uint32_t a = crc32c(data.data(), cut);
        const std::uint32_t b = crc32c(data.data() + cut, len - cut);
        EXPECT_EQ(crc32c_combine(a, b, len - cut), crc32c(data.data(), len)) << len << " " << cut;
    }
    // Empty B leaves A; empty A gives B.
    const std::uint32_t a = crc32c(data.data(), 77);
    EXPECT_EQ(crc32c_combine(a, 0, 0), a);
    EXPECT_EQ(crc32c_combine(0, a, 77), a);
    // A long run of zeros: combine against a crc computed directly.
    std::vector<unsigned char> zeros(5u << 20, 0);
    const std::uint32_t z = crc32c(zeros.data(), zeros.size());
    EXPECT_EQ(crc32c_combine(a, z, zeros.size()), crc32c(zeros.data(), zeros.size(), a));
}

TEST_P(Crc32c, combine_is_associative_for_huge_lengths)
{
    // Lengths beyond any buffer we can checksum: (A‖B)‖C == A‖(B‖C).
    const std::uint32_t a = 0x12345678u;
    const std::uint32_t b = 0x9ABCDEF0u;
    const std::uint32_t c = 0x0F1E2D3Cu;
    const std::size_t lb = (std::size_t{1} << 40) + 12345;
    const std::size_t lc = (std::size_t{1} << 62) + 999;
    EXPECT_EQ(crc32c_combine(crc32c_combine(a, b, lb), c, lc),
              crc32c_combine(a, crc32c_combine(b, c, lc), lb + lc));
}

INSTANTIATE_TEST_SUITE_P(Impl, Crc32c,
                         ::testing::Values(Crc32cImpl::avx512, Crc32cImpl::avx2,
                                           Crc32cImpl::sse42, Crc32cImpl::software),
                         [](const ::testing::TestParamInfo<Crc32cImpl>& info) {
                             switch (info.param) {
                             case Crc32cImpl::avx512:
                                 return "avx512";
                             case Crc32cImpl::avx2:
                                 return "avx2";
                             case Crc32cImpl::sse42:
                                 return "sse42";
                             default:
                                 return "software";
                             }
                         });

TEST(Crc32cDispatch, picks_the_fastest_implementation_this_cpu_runs)
{
    const bool avx512 = crc32c_force(Crc32cImpl::avx512);
    const bool avx2 = crc32c_force(Crc32cImpl::avx2);
    const bool sse42 = crc32c_force(Crc32cImpl::sse42);
    EXPECT_EQ(sse42, crc32c_hardware_available());
    EXPECT_EQ(avx512, crc32c_available(Crc32cImpl::avx512));
    EXPECT_EQ(avx2, crc32c_available(Crc32cImpl::avx2));
    EXPECT_TRUE(crc32c_available(Crc32cImpl::software));
    EXPECT_TRUE(avx2 ? sse42 : true) << "folding finishes with the SSE4.2 crc32 instruction";
    EXPECT_TRUE(avx512 ? avx2 : true) << "a CPU with AVX-512F has AVX2";
    ASSERT_TRUE(crc32c_force(Crc32cImpl::best));
    const std::string_view best = crc32c_implementation();
    EXPECT_EQ(best, avx512 ? kAvx512Name : avx2 ? kAvx2Name : sse42 ? kSse42Name : kSoftwareName);
    crc32c_force_software(true);
    EXPECT_EQ(crc32c_implementation(), kSoftwareName);
    crc32c_force_software(false);
    EXPECT_EQ(crc32c_implementation(), best);
}

TEST(Crc32cDispatch, the_environment_chooses_the_kernel)
{
    ParamBase* param = find_param("crc32c_impl");
    ASSERT_NE(param, nullptr) << "ULMPI_CRC32C_IMPL is not registered";
    std::string why;
    ASSERT_TRUE(crc32c_force(Crc32cImpl::best));
    const std::string best = crc32c_implementation();
    const auto choose = [&](const char* value) {
        ::setenv("ULMPI_CRC32C_IMPL", value, 1);
        const bool ok = param->reload(why);
        crc32c_force_software(false); // back to the configured kernel
        return ok;
    };
    struct Case {
        const char* value;
        Crc32cImpl impl;
        std::string_view name;
    };
    const Case cases[] = {{"avx512", Crc32cImpl::avx512, kAvx512Name},
                          {"avx2", Crc32cImpl::avx2, kAvx2Name},
                          {"sse42", Crc32cImpl::sse42, kSse42Name},
                          {"sw", Crc32cImpl::software, kSoftwareName}};
    for (const Case& c : cases) {
        ASSERT_TRUE(choose(c.value)) << c.value;
        // A kernel this CPU cannot run falls back to the fastest it can.
        EXPECT_EQ(crc32c_implementation(), crc32c_available(c.impl) ? c.name : best) << c.value;
        EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u) << c.value;
    }
    ASSERT_TRUE(choose("auto"));
    EXPECT_EQ(crc32c_implementation(), best);
    ASSERT_TRUE(choose("sw"));
    EXPECT_FALSE(choose("avx1024")) << "a value outside the choices is refused";
    EXPECT_EQ(crc32c_implementation(), best) << "and the default (auto) holds";
    ::unsetenv("ULMPI_CRC32C_IMPL");
    ASSERT_TRUE(param->reload(why));
    crc32c_force_software(false);
    EXPECT_EQ(crc32c_implementation(), best);
}

TEST(Crc32cDispatch, software_and_hardware_agree_on_random_data)
{
    if (!crc32c_hardware_available()) {
        GTEST_SKIP() << "no SSE4.2 on this CPU";
    }
    const auto data = random_bytes(1u << 20, 8);
    std::vector<unsigned char> out(data.size());
    std::mt19937_64 rng(9);
    for (int trial = 0; trial < 2000; ++trial) {
        std::size_t len = rng() % (trial < 1500 ? 4096 : data.size());
        const std::size_t off = rng() % 64;
        if (off + len > data.size()) {
            len = data.size() - off;
        }
        const std::uint32_t seed = static_cast<std::uint32_t>(rng());
        crc32c_force_software(true);
        const std::uint32_t sw = crc32c(data.data() + off, len, seed);
        const std::uint32_t sw_copy = crc32c_copy(out.data(), data.data() + off, len, seed);
        ASSERT_EQ(sw_copy, sw) << "len " << len << " off " << off;
        // Every hardware implementation this CPU runs (the folding ones too).
        for (Crc32cImpl hw_impl : {Crc32cImpl::sse42, Crc32cImpl::avx2, Crc32cImpl::avx512}) {
            if (!crc32c_force(hw_impl)) {
                continue;
            }
            const std::uint32_t hw = crc32c(data.data() + off, len, seed);
            const std::uint32_t hw_copy = crc32c_copy(out.data(), data.data() + off, len, seed);
            const std::uint32_t hw_stream =
                crc32c_copy_stream(out.data(), data.data() + off, len, seed);
            ASSERT_EQ(hw, sw) << crc32c_implementation() << ", len " << len << " off " << off;
            ASSERT_EQ(hw_copy, sw) << crc32c_implementation() << ", len " << len << " off " << off;
            ASSERT_EQ(hw_stream, sw)
                << crc32c_implementation() << " stream, len " << len << " off " << off;
        }
    }
    crc32c_force_software(false);
}

} // namespace
} // namespace ulmpi::rt
