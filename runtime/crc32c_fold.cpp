// CRC32C by carry-less folding: AVX-512 (four 64-byte accumulators in zmm
// registers) and AVX2 (eight 32-byte accumulators in ymm registers), both
// with VPCLMULQDQ, for buffers of kFoldMin bytes and more. Shorter buffers,
// and the last < 32 bytes of longer ones, take the SSE4.2 kernel.
//
// A message is a polynomial M(x) (first byte highest), the register after it
// is R(M, 0) = M(x)·x^32 mod P, and R(M, c) is R(M, 0) of M with c xored
// into its first four bytes. So any part of the message may be replaced by a
// polynomial congruent modulo P without changing the CRC. A 16-byte lane
// followed by d more bits contributes L(x)·x^d; with L = H·x^64 + Lo (H the
// lane's first 8 bytes) it is congruent to H·(x^(d+64) mod P) ^
// Lo·(x^d mod P), two 64×32-bit carry-less products that fit in 16 bytes:
// the lane moves d bits forward and is xored into the data there.
// vpclmulqdq on bit-reflected operands yields the product times x (bit 127
// of the result stays 0), and a 32-bit constant in the low half of a 64-bit
// operand stands for itself times x^32; fold_constants() absorbs both.
//
// Every accumulator folds forward by one step (256 bytes) per loop turn
// (vpclmulqdq works on all the 16-byte lanes of a register at once). At the
// end the accumulators fold into one register (a tree: half of them onto
// the other half, and so on), further whole registers of data fold into it,
// the register folds down to one 16-byte lane, and two crc32 instructions
// from register 0 turn that lane into the register of everything it
// replaced. One source load and one destination store per register, so a
// copy+crc is a copy loop with two multiplies per register beside it.
//
// From kFoldAlignMin bytes on, the head is first aligned to 64 bytes
// (destination for copies, source otherwise) with crc32 steps, so no load or
// store of the loop splits a cache line; below that the serial crc32 steps
// of the head would cost more than the splits.
//
// The loop asks for the lines two steps ahead: the source for reading, the
// destination for writing. Without it a copy waits for each destination
// line's read-for-ownership, which a memcpy by `rep movsb` avoids: measured
// on a Xeon with AVX-512, a shm stream of 4 MiB messages with checksums went
// from 6 400 MB/s (memcpy without checksums: 7 400) to 8 900, and 64 KiB
// cold copy+crc from 7.1 to 8.1 GB/s.
#include "runtime/crc32c_kernels.h"

#include <immintrin.h>

namespace ulmpi::rt::crc32c_detail {
namespace {

// Measured on a Xeon with AVX-512: from one 256-byte step on, folding beats
// the 3-way crc32 loop in both latency and throughput, with or without a
// 64-byte aligned start; aligning pays from about 2 KiB (copies; plain
// checksums gain little either way).
constexpr std::size_t kFoldStep = 256;
constexpr std::size_t kFoldMin = kFoldStep;
constexpr std::size_t kFoldAlignMin = 2048; // 64-byte aligned head first from here
static_assert(kFoldMin >= kFoldStep && kFoldAlignMin >= kFoldStep + 63);
constexpr std::size_t kPrefetchAhead = 2 * kFoldStep;

constexpr FoldConstants kFold16 = fold_constants(16);
constexpr FoldConstants kFold32 = fold_constants(32);
constexpr FoldConstants kFold64 = fold_constants(64);
constexpr FoldConstants kFold128 = fold_constants(128);
constexpr FoldConstants kFold192 = fold_constants(192);
constexpr FoldConstants kFold256 = fold_constants(kFoldStep);

// Aligns the side whose accesses matter most (as hw_kernel does) to 64 bytes
// when the buffer is long enough, by crc32 steps; leaves at least one step.
template <bool Copy> [[gnu::target("sse4.2"), gnu::always_inline]] inline std::uint32_t
align_head(std::uint32_t c, unsigned char*& dst, const unsigned char*& src,
           std::size_t& len) noexcept
{
    const auto addr = reinterpret_cast<std::uintptr_t>(Copy ? dst : src);
    const std::size_t head = len >= kFoldAlignMin ? (64 - (addr & 63u)) & 63u : 0;
    c = hw_bytes<Copy>(c, dst, src, head & 7u);
    c = hw_words<Copy>(c, dst, src, head / 8);
    len -= head;
    return c;
}

// Prefetches the step after next (when the buffer has one): the source for
// reading, the destination for writing.
template <bool Copy> [[gnu::always_inline]] inline void
prefetch_ahead(unsigned char* dst, const unsigned char* src, std::size_t len) noexcept
{
    if (len >= kPrefetchAhead + kFoldStep) {
        for (std::size_t at = kPrefetchAhead; at < kPrefetchAhead + kFoldStep; at += 64) {
            __builtin_prefetch(src + at, 0, 3);
            if constexpr (Copy) {
                __builtin_prefetch(dst + at, 1, 3);
            }
        }
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

// acc moved forward by the distance of k, xored into data.
[[gnu::target("avx2,vpclmulqdq"), gnu::always_inline]] inline __m256i
fold(__m256i acc, __m256i k, __m256i data) noexcept
{
    const __m256i first = _mm256_clmulepi64_epi128(acc, k, 0x00);
    const __m256i second = _mm256_clmulepi64_epi128(acc, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(first, data), second);
}

// Loads 32 bytes at src + at (and stores them to dst + at when copying).
template <bool Copy> [[gnu::target("avx2"), gnu::always_inline]] inline __m256i
block256(unsigned char* dst, const unsigned char* src, std::size_t at) noexcept
{
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at));
    if constexpr (Copy) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + at), v);
    }
    return v;
}

// The register (from 0) of the 32 bytes x stands for: the first lane folds
// onto the second, two crc32 steps finish.
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2"), gnu::always_inline]] inline std::uint32_t
finish256(__m256i x) noexcept
{
    const __m128i lo = _mm256_castsi256_si128(x);
    const __m128i hi = _mm256_extracti128_si256(x, 1);
    const __m128i k = _mm_set_epi64x(static_cast<long long>(kFold16.second),
                                     static_cast<long long>(kFold16.first));
    const __m128i u = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(lo, k, 0x00), hi),
                                    _mm_clmulepi64_si128(lo, k, 0x11));
    std::uint64_t c64 = _mm_crc32_u64(0, static_cast<std::uint64_t>(_mm_cvtsi128_si64(u)));
    c64 = _mm_crc32_u64(c64, static_cast<std::uint64_t>(_mm_extract_epi64(u, 1)));
    return static_cast<std::uint32_t>(c64);
}

// Consumes whole 32-byte blocks (at least kFoldStep bytes) and returns the
// register after them.
template <bool Copy>
[[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2"), gnu::always_inline]] inline std::uint32_t
fold256_blocks(std::uint32_t c, unsigned char*& dst, const unsigned char*& src,
               std::size_t& len) noexcept
{
    const auto advance = [&](std::size_t n) {
        src += n;
        if constexpr (Copy) {
            dst += n;
        }
        len -= n;
    };
    __m256i x0 = block256<Copy>(dst, src, 0);
    __m256i x1 = block256<Copy>(dst, src, 32);
    __m256i x2 = block256<Copy>(dst, src, 64);
    __m256i x3 = block256<Copy>(dst, src, 96);
    __m256i x4 = block256<Copy>(dst, src, 128);
    __m256i x5 = block256<Copy>(dst, src, 160);
    __m256i x6 = block256<Copy>(dst, src, 192);
    __m256i x7 = block256<Copy>(dst, src, 224);
    x0 = _mm256_xor_si256(x0, _mm256_zextsi128_si256(_mm_cvtsi32_si128(static_cast<int>(c))));
    advance(kFoldStep);
    const __m256i k256 = broadcast256(kFold256);
    while (len >= kFoldStep) {
        prefetch_ahead<Copy>(dst, src, len);
        x0 = fold(x0, k256, block256<Copy>(dst, src, 0));
        x1 = fold(x1, k256, block256<Copy>(dst, src, 32));
        x2 = fold(x2, k256, block256<Copy>(dst, src, 64));
        x3 = fold(x3, k256, block256<Copy>(dst, src, 96));
        x4 = fold(x4, k256, block256<Copy>(dst, src, 128));
        x5 = fold(x5, k256, block256<Copy>(dst, src, 160));
        x6 = fold(x6, k256, block256<Copy>(dst, src, 192));
        x7 = fold(x7, k256, block256<Copy>(dst, src, 224));
        advance(kFoldStep);
    }
    const __m256i k128 = broadcast256(kFold128);
    x4 = fold(x0, k128, x4);
    x5 = fold(x1, k128, x5);
    x6 = fold(x2, k128, x6);
    x7 = fold(x3, k128, x7);
    const __m256i k64 = broadcast256(kFold64);
    x6 = fold(x4, k64, x6);
    x7 = fold(x5, k64, x7);
    const __m256i k32 = broadcast256(kFold32);
    __m256i x = fold(x6, k32, x7);
    while (len >= 32) {
        x = fold(x, k32, block256<Copy>(dst, src, 0));
        advance(32);
    }
    return finish256(x);
}

template <bool Copy> [[gnu::target("avx2,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold256_kernel(std::uint32_t c, unsigned char* dst, const unsigned char* src,
               std::size_t len) noexcept
{
    if (len < kFoldMin) {
        return hw_kernel<Copy>(c, dst, src, len);
    }
    c = align_head<Copy>(c, dst, src, len);
    c = fold256_blocks<Copy>(c, dst, src, len);
    return hw_kernel<Copy>(c, dst, src, len);
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

template <bool Copy> [[gnu::target("avx512f"), gnu::always_inline]] inline __m512i
block512(unsigned char* dst, const unsigned char* src, std::size_t at) noexcept
{
    const __m512i v = _mm512_loadu_si512(src + at);
    if constexpr (Copy) {
        _mm512_storeu_si512(dst + at, v);
    }
    return v;
}

// Consumes whole 64-byte blocks (at least kFoldStep bytes) and returns the
// register after them.
template <bool Copy>
[[gnu::target("avx512f,vpclmulqdq,pclmul,sse4.2"), gnu::always_inline]] inline std::uint32_t
fold512_blocks(std::uint32_t c, unsigned char*& dst, const unsigned char*& src,
               std::size_t& len) noexcept
{
    const auto advance = [&](std::size_t n) {
        src += n;
        if constexpr (Copy) {
            dst += n;
        }
        len -= n;
    };
    __m512i x0 = block512<Copy>(dst, src, 0);
    __m512i x1 = block512<Copy>(dst, src, 64);
    __m512i x2 = block512<Copy>(dst, src, 128);
    __m512i x3 = block512<Copy>(dst, src, 192);
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(c))));
    advance(kFoldStep);
    const __m512i k256 = broadcast512(kFold256);
    while (len >= kFoldStep) {
        prefetch_ahead<Copy>(dst, src, len);
        x0 = fold(x0, k256, block512<Copy>(dst, src, 0));
        x1 = fold(x1, k256, block512<Copy>(dst, src, 64));
        x2 = fold(x2, k256, block512<Copy>(dst, src, 128));
        x3 = fold(x3, k256, block512<Copy>(dst, src, 192));
        advance(kFoldStep);
    }
    const __m512i k64 = broadcast512(kFold64);
    __m512i x = fold(x2, k64, x3);
    x = fold(x1, broadcast512(kFold128), x);
    x = fold(x0, broadcast512(kFold192), x);
    while (len >= 64) {
        x = fold(x, k64, block512<Copy>(dst, src, 0));
        advance(64);
    }
    // 64 -> 32 bytes, then as the 256-bit kernel.
    // (maskz: GCC 12's cast and plain extract have an "undefined" source
    // that -Wmaybe-uninitialized flags)
    const __m256i lo = _mm512_maskz_extracti64x4_epi64(0xFF, x, 0);
    const __m256i hi = _mm512_maskz_extracti64x4_epi64(0xFF, x, 1);
    __m256i y = fold(lo, broadcast256(kFold32), hi);
    if (len >= 32) {
        y = fold(y, broadcast256(kFold32), block256<Copy>(dst, src, 0));
        advance(32);
    }
    return finish256(y);
}

template <bool Copy> [[gnu::target("avx512f,vpclmulqdq,pclmul,sse4.2")]] std::uint32_t
fold512_kernel(std::uint32_t c, unsigned char* dst, const unsigned char* src,
               std::size_t len) noexcept
{
    if (len < kFoldMin) {
        return hw_kernel<Copy>(c, dst, src, len);
    }
    c = align_head<Copy>(c, dst, src, len);
    c = fold512_blocks<Copy>(c, dst, src, len);
    return hw_kernel<Copy>(c, dst, src, len);
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

} // namespace ulmpi::rt::crc32c_detail
