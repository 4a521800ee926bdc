// CRC32C with VPCLMULQDQ: carry-less folding in AVX-512 (zmm) or AVX2 (ymm)
// registers for buffers of kFoldMin bytes and more; with AVX2, copies of
// kBlock256 bytes and more also run three crc32 instruction streams beside
// the folding. Shorter buffers, and the last < 32 bytes of longer ones,
// take the SSE4.2 kernel (crc32c_kernels.h).
//
// Folding. A message is a polynomial M(x) (first byte highest), the
// register after it is R(M, 0) = M(x)·x^32 mod P, and R(M, c) is R(M, 0) of
// M with c xored into its first four bytes. So any part of the message may
// be replaced by a polynomial congruent modulo P without changing the CRC.
// A 16-byte lane followed by d more bits contributes L(x)·x^d; with
// L = H·x^64 + Lo (H the lane's first 8 bytes) it is congruent to
// H·(x^(d+64) mod P) ^ Lo·(x^d mod P), two 64×32-bit carry-less products
// that fit in 16 bytes: the lane moves d bits forward and is xored into the
// data there. vpclmulqdq on bit-reflected operands yields the product times
// x (bit 127 of the result stays 0), and a 32-bit constant in the low half
// of a 64-bit operand stands for itself times x^32; fold_constants() absorbs
// both.
//
// 256 bytes of accumulators (eight ymm or four zmm registers) fold forward
// by one step of 256 bytes at a time, all lanes at once. At the end they
// fold into one 32-byte register (a tree: half of them onto the other
// half), the remaining whole 32-byte blocks (fewer than eight) each fold
// straight to the last one (side by side, not one after the other), the
// 32 bytes fold down to one 16-byte lane, and two crc32 instructions from
// register 0 turn that lane into the register of everything it replaced.
// From 96 bytes on this beats one crc32 chain in latency (Zen 5: 128 bytes
// 7.5 against 11.5 ns per dependent call).
//
// Blocks (AVX2 copies). Where the multiplier does one 256-bit product per
// cycle or less, folding alone leaves the crc32 unit idle. A block is
// [V: 1024 bytes][S0][S1][S2: 256 bytes each]: the accumulators fold
// through V one step at a time while three crc32 chains (from 0) advance by
// 64 bytes per step through the S streams. The streams join as in the 3-way
// kernel into r, the register after S0‖S1‖S2 from 0, which is xored into the
// first four bytes of the next block (the register before a message may be
// xored into its first four bytes); the accumulators jump over the streams
// by folding 256 + 768 bytes at the next block's first step. After the last
// block the accumulators fold down to one 32-byte register at the end of its
// V, whose two lanes fold forward over the streams to the block's end; the
// register of that lane from 0, xored with r, is the register after the
// block. Measured on Zen 5 with the AVX2 kernel forced, against folding
// alone: 4 KiB copy+crc 114 against 134 ns, 64 KiB 1.83 against 2.15 us,
// cold 64 KiB 23 against 27 us. Checksums without a copy lost when the data
// came from memory (cold 4 KiB 1.0 against 0.5 us: four streams of reads),
// and AVX-512 copies gained nothing (the zmm fold alone keeps up with the
// stores), so both stay with folding alone.
//
// From kAlignMin bytes on, the head is first aligned to 64 bytes
// (destination for copies, source otherwise) with crc32 steps, so no vector
// load or store splits a cache line. The loops ask for lines ahead (source
// for reading, destination for writing): without it a copy waits for each
// destination line's read-for-ownership, which a memcpy by `rep movsb`
// avoids (measured on a Xeon with AVX-512: a shm stream of 4 MiB messages
// with checksums went from 6 400 MB/s to 8 900, memcpy without checksums
// 7 400). The copy variants store every loaded register and word, so
// copy+crc reads the source once.
#include "runtime/crc32c_kernels.h"

#include <immintrin.h>

#include <algorithm>

namespace ulmpi::rt::crc32c_detail {
namespace {

constexpr std::size_t kStep = 256;       // bytes of accumulators, and of one fold step
constexpr std::size_t kAlignMin = 2048;  // 64-byte aligned head first from here
constexpr std::size_t kFoldMin = 96;   // three 32-byte registers; shorter ones take crc32
constexpr std::size_t kPrefetchAhead = 2 * kStep; // the plain fold loop asks this far ahead
constexpr std::size_t kStreamMin = kAlignMin;     // streaming copies: aligned, whole steps
static_assert(kStreamMin >= kAlignMin && kAlignMin >= kStep + 63);

constexpr FoldConstants kFold16 = fold_constants(16);
constexpr FoldConstants kFold32 = fold_constants(32);
constexpr FoldConstants kFold64 = fold_constants(64);
constexpr FoldConstants kFold128 = fold_constants(128);
constexpr FoldConstants kFold256 = fold_constants(kStep);

// kFoldBy32[i] moves a lane 32·i bytes forward.
constexpr std::array<FoldConstants, 9> make_fold_by_32() noexcept
{
    std::array<FoldConstants, 9> t{};
    for (std::size_t i = 1; i < t.size(); ++i) {
        t[i] = fold_constants(32 * i);
    }
    return t;
}
constexpr auto kFoldBy32 = make_fold_by_32();

// ---- helpers ----

// Aligns the side whose accesses matter most (as hw_kernel does) to 64 bytes
// when the buffer is long enough, by crc32 steps.
template <bool Copy> [[gnu::target("sse4.2"), gnu::always_inline]] inline std::uint32_t
align_head(std::uint32_t c, unsigned char*& dst, const unsigned char*& src,
           std::size_t& len) noexcept
{
    const auto addr = reinterpret_cast<std::uintptr_t>(Copy ? dst : src);
    const std::size_t head = len >= kAlignMin ? (64 - (addr & 63u)) & 63u : 0;
    c = hw_bytes<Copy>(c, dst, src, head & 7u);
    c = hw_words<Copy>(c, dst, src, head / 8);
    len -= head;
    return c;
}

// A fixed number of words of each stream (unrolled).
template <std::size_t Words, bool Copy> [[gnu::target("sse4.2"), gnu::always_inline]] inline void
streams_fixed(std::uint64_t (&c)[3], unsigned char* dst, const unsigned char* src,
              std::size_t stride) noexcept
{
#pragma GCC unroll 16
    for (std::size_t i = 0; i < 8 * Words; i += 8) {
#pragma GCC unroll 3
        for (std::size_t s = 0; s < 3; ++s) {
            const std::uint64_t w = load64(src + s * stride + i);
            if constexpr (Copy) {
                store64(dst + s * stride + i, w);
            }
            c[s] = _mm_crc32_u64(c[s], w);
        }
    }
}

template <bool Copy> [[gnu::always_inline]] inline void
advance(unsigned char*& dst, const unsigned char*& src, std::size_t& len, std::size_t n) noexcept
{
    src += n;
    if constexpr (Copy) {
        dst += n;
    }
    len -= n;
}

// Asks for `lines` cache lines from `at`: the source for reading, the
// destination for writing. Without it a copy waits for each destination
// line's read-for-ownership, which a memcpy by `rep movsb` avoids.
template <bool Copy> [[gnu::always_inline]] inline void
prefetch(unsigned char* dst, const unsigned char* src, std::size_t at, std::size_t lines) noexcept
{
    for (std::size_t i = 0; i < lines; ++i) {
        __builtin_prefetch(src + at + 64 * i, 0, 3);
        if constexpr (Copy) {
            __builtin_prefetch(dst + at + 64 * i, 1, 3);
        }
    }
}

// The fold loops' look-ahead: source lines, and destination lines for
// writing only in copies of kAlignMin bytes and more. A shorter copy goes
// into a shared-memory fragment whose lines the receiving core read last:
// asking for them ahead only delayed the copy (shm ping-pong of 1 KiB with
// checksums, 2 vCPU AMD EPYC: 1.10 us with, 0.94-0.99 without; the
// source-only prefetch kept the rest).
template <bool Copy> [[gnu::always_inline]] inline void
prefetch_ahead(unsigned char* dst, const unsigned char* src, bool ask_dst) noexcept
{
    if (Copy && ask_dst) {
        prefetch<true>(dst, src, kPrefetchAhead, kStep / 64);
    } else {
        prefetch<false>(dst, src, kPrefetchAhead, kStep / 64);
    }
}

// ---- 256-bit registers (AVX2 + VPCLMULQDQ) ----

// The pair in both 128-bit lanes: first in the low qword, second in the high.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256i broadcast256(FoldConstants k) noexcept
{
    const auto first = static_cast<long long>(k.first);
    const auto second = static_cast<long long>(k.second);
    return _mm256_set_epi64x(second, first, second, first);
}

[[gnu::target("sse2"), gnu::always_inline]] inline __m128i pair128(FoldConstants k) noexcept
{
    return _mm_set_epi64x(static_cast<long long>(k.second), static_cast<long long>(k.first));
}

// acc moved forward by the distance of k, xored into data.
[[gnu::target("avx2,vpclmulqdq"), gnu::always_inline]] inline __m256i
fold(__m256i acc, __m256i k, __m256i data) noexcept
{
    const __m256i first = _mm256_clmulepi64_epi128(acc, k, 0x00);
    const __m256i second = _mm256_clmulepi64_epi128(acc, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(first, data), second);
}

// One lane moved forward by the distance of k (nothing xored in).
[[gnu::target("pclmul"), gnu::always_inline]] inline __m128i lane_forward(__m128i lane,
                                                                        __m128i k) noexcept
{
    return _mm_xor_si128(_mm_clmulepi64_si128(lane, k, 0x00), _mm_clmulepi64_si128(lane, k, 0x11));
}

// The register from 0 of a 16-byte lane.
[[gnu::target("sse4.2"), gnu::always_inline]] inline std::uint32_t lane_crc(__m128i u) noexcept
{
    std::uint64_t c64 = _mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(u)));
    c64 = _mm_crc32_u64(c64, static_cast<std::uint64_t>(_mm_extract_epi64(u, 1)));
    return static_cast<std::uint32_t>(c64);
}

[[gnu::target("avx2"), gnu::always_inline]] inline __m256i with_register(__m256i x,
                                                                       std::uint32_t c) noexcept
{
    return _mm256_xor_si256(x, _mm256_zextsi128_si256(_mm_cvtsi32_si128(static_cast<int>(c))));
}

// Loads 32 bytes at src + at (and stores them to dst + at when copying;
// streaming, dst + at must be 32-byte aligned).
template <bool Copy, bool Stream = false> [[gnu::target("avx2"), gnu::always_inline]] inline __m256i
block256(unsigned char* dst, const unsigned char* src, std::size_t at) noexcept
{
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at));
    if constexpr (Stream) {
        _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + at), v);
    } else if constexpr (Copy) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + at), v);
    }
    return v;
}

// Arrays for brevity: the loops over them are unrolled, so they live in
// registers.
using Acc256 = __m256i[8];

template <bool Copy, bool Stream = false> [[gnu::target("avx2"), gnu::always_inline]] inline void
load_step(Acc256& x, unsigned char* dst, const unsigned char* src, std::uint32_t c) noexcept
{
#pragma GCC unroll 8
    for (std::size_t i = 0; i < 8; ++i) {
        x[i] = block256<Copy, Stream>(dst, src, 32 * i);
    }
    x[0] = with_register(x[0], c);
}

template <bool Copy, bool Stream = false>
[[gnu::target("avx2,vpclmulqdq"), gnu::always_inline]] inline void
fold_step(Acc256& x, __m256i k, unsigned char* dst, const unsigned char* src) noexcept
{
#pragma GCC unroll 8
    for (std::size_t i = 0; i < 8; ++i) {
        x[i] = fold(x[i], k, block256<Copy, Stream>(dst, src, 32 * i));
    }
}

// The accumulators as one 32-byte register at the end of their step.
[[gnu::target("avx2,vpclmulqdq"), gnu::always_inline]] inline __m256i reduce(Acc256& x) noexcept
{
    const __m256i k128 = broadcast256(kFold128);
    x[4] = fold(x[0], k128, x[4]);
    x[5] = fold(x[1], k128, x[5]);
    x[6] = fold(x[2], k128, x[6]);
    x[7] = fold(x[3], k128, x[7]);
    const __m256i k64 = broadcast256(kFold64);
    x[6] = fold(x[4], k64, x[6]);
    x[7] = fold(x[5], k64, x[7]);
    return fold(x[6], broadcast256(kFold32), x[7]);
}

// The register from 0 of the 32 bytes w stands for, after its first lane
// moves forward by the distance of first_lane and its second by that of
// second_lane.
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2"), gnu::always_inline]] inline std::uint32_t
register_after(__m256i w, FoldConstants first_lane, FoldConstants second_lane) noexcept
{
    const __m128i lo = _mm256_castsi256_si128(w);
    const __m128i hi = _mm256_extracti128_si256(w, 1);
    return lane_crc(_mm_xor_si128(lane_forward(lo, pair128(first_lane)),
                                  lane_forward(hi, pair128(second_lane))));
}

[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2"), gnu::always_inline]] inline std::uint32_t
register_at_end(__m256i w) noexcept
{
    const __m128i lo = _mm256_castsi256_si128(w);
    const __m128i hi = _mm256_extracti128_si256(w, 1);
    return lane_crc(_mm_xor_si128(lane_forward(lo, pair128(kFold16)), hi));
}

// n (1..8) whole 32-byte blocks, c xored into the first: one register at
// the last block. Every block folds straight to the last one, so the
// multiplies run side by side.
template <bool Copy> [[gnu::target("avx2,vpclmulqdq"), gnu::always_inline]] inline __m256i
fold_run(unsigned char* dst, const unsigned char* src, std::size_t n, std::uint32_t c) noexcept
{
    __m256i acc = block256<Copy>(dst, src, 32 * (n - 1));
    if (n == 1) {
        return with_register(acc, c);
    }
    acc = fold(with_register(block256<Copy>(dst, src, 0), c), broadcast256(kFoldBy32[n - 1]), acc);
    for (std::size_t i = 1; i + 1 < n; ++i) {
        acc = fold(block256<Copy>(dst, src, 32 * i), broadcast256(kFoldBy32[n - 1 - i]), acc);
    }
    return acc;
}

// The end of every kernel: fewer than kStep bytes after `w`, the 32 bytes
// folded from everything before them (when have_w), else from register c.
// Whole 32-byte blocks fold, the last < 32 bytes take crc32.
template <bool Copy>
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2"), gnu::always_inline]] inline std::uint32_t
finish(std::uint32_t c, __m256i w, bool have_w, unsigned char* dst, const unsigned char* src,
       std::size_t len) noexcept
{
    const std::size_t n = len / 32;
    if (n > 0) {
        __m256i acc = fold_run<Copy>(dst, src, n, have_w ? 0 : c);
        w = have_w ? fold(w, broadcast256(kFoldBy32[n]), acc) : acc;
        have_w = true;
        advance<Copy>(dst, src, len, 32 * n);
    }
    if (have_w) {
        c = register_at_end(w);
    }
    return hw_kernel<Copy>(c, dst, src, len);
}

// Blocks: [V: 4 steps][S0][S1][S2: 256 bytes each].
constexpr std::size_t kBlockStream256 = 256;
constexpr std::size_t kBlock256 = 4 * kStep + 3 * kBlockStream256;
constexpr FoldConstants kJump256 = fold_constants(kStep + 3 * kBlockStream256);
constexpr FoldConstants kEndFirst256 = fold_constants(16 + 3 * kBlockStream256);
constexpr FoldConstants kEndSecond256 = fold_constants(3 * kBlockStream256);

// Copies whole blocks (at least one) and returns the register after them.
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2"), gnu::always_inline]] inline std::uint32_t
blocks256(std::uint32_t c, unsigned char*& dst, const unsigned char*& src,
          std::size_t& len) noexcept
{
    constexpr bool Copy = true;
    constexpr std::size_t kPerStep = kBlockStream256 / 4 / 8; // words per stream and step
    const __m256i k256 = broadcast256(kFold256);
    const __m256i jump = broadcast256(kJump256);
    Acc256 x;
    std::uint32_t r = c;
    // The streams read four places at once, which the hardware prefetchers
    // do not foresee: ask for the first block whole, then for each next
    // one a step at a time.
    prefetch<Copy>(dst, src, kStep, (kBlock256 - kStep) / 64);
    for (bool first = true; len >= kBlock256; first = false) {
        std::uint64_t cs[3] = {0, 0, 0};
        unsigned char* sd = dst + 4 * kStep;
        const unsigned char* ss = src + 4 * kStep;
        const bool ahead = len >= 2 * kBlock256; // the next block is all ours
        if (ahead) {
            prefetch<Copy>(dst, src, kBlock256, kBlock256 / 64 / 4);
        }
        if (first) {
            load_step<Copy>(x, dst, src, r);
        } else {
            fold_step<Copy>(x, jump, dst, src);
            x[0] = with_register(x[0], r);
        }
        streams_fixed<kPerStep, Copy>(cs, sd, ss, kBlockStream256);
#pragma GCC unroll 3
        for (std::size_t j = 1; j < 4; ++j) {
            if (ahead) {
                prefetch<Copy>(dst, src, kBlock256 + j * kBlock256 / 4, kBlock256 / 64 / 4);
            }
            fold_step<Copy>(x, k256, dst + j * kStep, src + j * kStep);
            streams_fixed<kPerStep, Copy>(cs, sd + j * kPerStep * 8, ss + j * kPerStep * 8,
                                          kBlockStream256);
        }
        r = shift(kShiftShort, static_cast<std::uint32_t>(cs[0]));
        r = shift(kShiftShort, r ^ static_cast<std::uint32_t>(cs[1]));
        r ^= static_cast<std::uint32_t>(cs[2]);
        advance<Copy>(dst, src, len, kBlock256);
    }
    return register_after(reduce(x), kEndFirst256, kEndSecond256) ^ r;
}

// Stream: a copy with non-temporal stores for the 256-byte steps (the
// caller guarantees len >= kAlignMin, so the head aligns dst to 64 bytes),
// the source alone prefetched, a store fence at the end.
template <bool Copy, bool Stream = false>
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold256_kernel(std::uint32_t c, unsigned char* dst, const unsigned char* src,
               std::size_t len) noexcept
{
    static_assert(Copy || !Stream);
    if (len < kFoldMin) {
        return hw_kernel<Copy>(c, dst, src, len);
    }
    const bool ask_dst = len >= kAlignMin;
    c = align_head<Copy>(c, dst, src, len);
    if constexpr (Copy && !Stream) {
        if (len >= kBlock256) {
            c = blocks256(c, dst, src, len);
        }
    }
    __m256i w = _mm256_setzero_si256();
    const bool have_w = len >= kStep;
    if (have_w) {
        Acc256 x;
        load_step<Copy, Stream>(x, dst, src, c);
        advance<Copy>(dst, src, len, kStep);
        const __m256i k256 = broadcast256(kFold256);
        while (len >= kStep) {
            if (len >= kPrefetchAhead + kStep) {
                prefetch_ahead<Copy && !Stream>(dst, src, ask_dst);
            }
            fold_step<Copy, Stream>(x, k256, dst, src);
            advance<Copy>(dst, src, len, kStep);
        }
        w = reduce(x);
    }
    c = finish<Copy>(c, w, have_w, dst, src, len);
    if constexpr (Stream) {
        _mm_sfence();
    }
    return c;
}

// ---- 512-bit registers (AVX-512F + VPCLMULQDQ) ----

[[gnu::target("avx512f"), gnu::always_inline]] inline __m512i broadcast512(FoldConstants k) noexcept
{
    const auto first = static_cast<long long>(k.first);
    const auto second = static_cast<long long>(k.second);
    return _mm512_set_epi64(second, first, second, first, second, first, second, first);
}

[[gnu::target("avx512f,vpclmulqdq"), gnu::always_inline]] inline __m512i
fold(__m512i acc, __m512i k, __m512i data) noexcept
{
    const __m512i first = _mm512_clmulepi64_epi128(acc, k, 0x00);
    const __m512i second = _mm512_clmulepi64_epi128(acc, k, 0x11);
    return _mm512_ternarylogic_epi64(first, second, data, 0x96); // three-way xor
}

template <bool Copy, bool Stream = false> [[gnu::target("avx512f"), gnu::always_inline]] inline __m512i
block512(unsigned char* dst, const unsigned char* src, std::size_t at) noexcept
{
    const __m512i v = _mm512_loadu_si512(src + at);
    if constexpr (Stream) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + at), v);
    } else if constexpr (Copy) {
        _mm512_storeu_si512(dst + at, v);
    }
    return v;
}

using Acc512 = __m512i[4];

template <bool Copy, bool Stream = false> [[gnu::target("avx512f"), gnu::always_inline]] inline void
load_step(Acc512& x, unsigned char* dst, const unsigned char* src, std::uint32_t c) noexcept
{
#pragma GCC unroll 4
    for (std::size_t i = 0; i < 4; ++i) {
        x[i] = block512<Copy, Stream>(dst, src, 64 * i);
    }
    x[0] = _mm512_xor_si512(x[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(c))));
}

template <bool Copy, bool Stream = false>
[[gnu::target("avx512f,vpclmulqdq"), gnu::always_inline]] inline void
fold_step(Acc512& x, __m512i k, unsigned char* dst, const unsigned char* src) noexcept
{
#pragma GCC unroll 4
    for (std::size_t i = 0; i < 4; ++i) {
        x[i] = fold(x[i], k, block512<Copy, Stream>(dst, src, 64 * i));
    }
}

// The accumulators as one 32-byte register at the end of their step.
[[gnu::target("avx512f,vpclmulqdq"), gnu::always_inline]] inline __m256i reduce(Acc512& x) noexcept
{
    x[2] = fold(x[0], broadcast512(kFold128), x[2]);
    x[3] = fold(x[1], broadcast512(kFold128), x[3]);
    const __m512i y = fold(x[2], broadcast512(kFold64), x[3]);
    // (maskz: GCC 12's cast and plain extract have an "undefined" source
    // that -Wmaybe-uninitialized flags)
    const __m256i lo = _mm512_maskz_extracti64x4_epi64(0xFF, y, 0);
    const __m256i hi = _mm512_maskz_extracti64x4_epi64(0xFF, y, 1);
    return fold(lo, broadcast256(kFold32), hi);
}

// Stream as in fold256_kernel.
template <bool Copy, bool Stream = false>
[[gnu::target("avx512f,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold512_kernel(std::uint32_t c, unsigned char* dst, const unsigned char* src,
               std::size_t len) noexcept
{
    static_assert(Copy || !Stream);
    if (len < kFoldMin) {
        return hw_kernel<Copy>(c, dst, src, len);
    }
    const bool ask_dst = len >= kAlignMin;
    c = align_head<Copy>(c, dst, src, len);
    __m256i w = _mm256_setzero_si256();
    const bool have_w = len >= kStep;
    if (have_w) {
        Acc512 x;
        load_step<Copy, Stream>(x, dst, src, c);
        advance<Copy>(dst, src, len, kStep);
        const __m512i k256 = broadcast512(kFold256);
        while (len >= kStep) {
            if (len >= kPrefetchAhead + kStep) {
                prefetch_ahead<Copy && !Stream>(dst, src, ask_dst);
            }
            fold_step<Copy, Stream>(x, k256, dst, src);
            advance<Copy>(dst, src, len, kStep);
        }
        w = reduce(x);
    }
    c = finish<Copy>(c, w, have_w, dst, src, len);
    if constexpr (Stream) {
        _mm_sfence();
    }
    return c;
}

} // namespace

[[gnu::target("avx512f,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold512_crc(std::uint32_t c, const unsigned char* src, std::size_t len) noexcept
{
    return fold512_kernel<false>(c, nullptr, src, len);
}
[[gnu::target("avx512f,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold512_copy(std::uint32_t c, unsigned char* dst, const unsigned char* src,
             std::size_t len) noexcept
{
    return fold512_kernel<true>(c, dst, src, len);
}
[[gnu::target("avx512f,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold512_stream(std::uint32_t c, unsigned char* dst, const unsigned char* src,
               std::size_t len) noexcept
{
    return len >= kStreamMin ? fold512_kernel<true, true>(c, dst, src, len)
                             : fold512_kernel<true>(c, dst, src, len);
}
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold256_crc(std::uint32_t c, const unsigned char* src, std::size_t len) noexcept
{
    return fold256_kernel<false>(c, nullptr, src, len);
}
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold256_copy(std::uint32_t c, unsigned char* dst, const unsigned char* src,
             std::size_t len) noexcept
{
    return fold256_kernel<true>(c, dst, src, len);
}
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold256_stream(std::uint32_t c, unsigned char* dst, const unsigned char* src,
               std::size_t len) noexcept
{
    return len >= kStreamMin ? fold256_kernel<true, true>(c, dst, src, len)
                             : fold256_kernel<true>(c, dst, src, len);
}

} // namespace ulmpi::rt::crc32c_detail
