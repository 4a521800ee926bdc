// CRC32C, three implementations behind one dispatch pointer.
//
// Notation. Internally we work on the raw CRC register (no pre/post
// inversion): R(M, c) is the register after feeding message M to a register
// holding c. The public value is crc32c(M) = ~R(M, ~crc_prev). The register
// update is linear over GF(2), so
//
//     R(A‖B, c) = shift(R(A, c), |B|) ^ R(B, 0)                      (1)
//
// where shift(c, n) feeds n zero bytes to c, which is multiplication of c by
// x^(8n) modulo P (in the reflected bit order, bit 31 is x^0). Identity (1)
// is what both the 3-way interleave and crc32c_combine() rest on.
//
// Software: slicing-by-8 (eight 256-entry tables, one 8-byte word per step).
//
// Hardware: the SSE4.2 crc32 instruction takes 8 bytes per call with a
// latency of 3 cycles and a throughput of one per cycle, so one dependent
// chain runs at a third of the unit's speed. A block of 3·L bytes is
// therefore split in three streams of L bytes, checksummed side by side
// (stream 0 from the running register, streams 1 and 2 from 0), and joined
// with (1): c = shift(shift(c0, L) ^ c1, L) ^ c2. shift(·, L) for the three
// block sizes we use is a table lookup (4 × 256 entries, 4 KiB, built at
// compile time from x^(8L) mod P), so joining costs ~10 instructions per block.
// Long buffers use L = 8 KiB, the remainder L = 256 B, then L = 64 B, and
// the last < 192 bytes run as one stream.
// crc32c_copy() runs the same loop and stores each loaded word to dst.
// The head is aligned (to the source for crc32c, to the destination for
// crc32c_copy) with at most three narrower crc32 steps.
//
// Folding (AVX-512F + VPCLMULQDQ), for buffers of kFoldMin bytes and more:
// a message is a polynomial M(x) (first byte highest), the register after
// it is R(M, 0) = M(x)·x^32 mod P, and R(M, c) is R(M, 0) of M with c
// xored into its first four bytes. So any part of the message may be
// replaced by a polynomial congruent modulo P without changing the CRC. A
// 16-byte lane followed by d more bits contributes L(x)·x^d; with
// L = H·x^64 + Lo (H the lane's first 8 bytes) it is congruent to
// H·(x^(d+64) mod P) ^ Lo·(x^d mod P), two 64×32-bit carry-less products
// that fit in 16 bytes: the lane moves d bits forward and is xored into the
// data there. Four 64-byte accumulators each fold forward by 256 bytes per
// step (vpclmulqdq works on all four lanes of a zmm at once); at the end
// they fold into one 64-byte block, further 64-byte blocks fold into it,
// and the crc32 instruction from register 0 turns that block into the
// register of everything it replaced. The last < 64 bytes go to the SSE4.2
// code. One source load and one destination store per 64 bytes, so
// crc32c_copy() is a copy loop with two multiplies per 64 bytes beside it.
// From kFoldAlignMin bytes on, the head is first aligned to 64 bytes
// (destination for copies, source otherwise) with crc32 steps, so no load
// or store of the loop splits a cache line; below that the serial crc32
// steps of the head would cost more than the splits.
//
// crc32c_combine(): shift by an arbitrary length is a product of the
// precomputed x^(8·2^k) mod P for the bits k of len_b (square-and-multiply).
#include "runtime/crc32c.h"

#include <immintrin.h>
#include <nmmintrin.h>

#include <array>
#include <atomic>
#include <cstring>

namespace ulmpi::rt {
namespace {

constexpr std::uint32_t kPoly = 0x82F63B78u; // reflected Castagnoli polynomial

// ---- GF(2) arithmetic modulo P, reflected representation (bit 31 = x^0) ----

// a·b mod P.
constexpr std::uint32_t mul_mod_p(std::uint32_t a, std::uint32_t b) noexcept
{
    std::uint32_t product = 0;
    for (std::uint32_t m = 1u << 31; m != 0; m >>= 1) {
        if ((a & m) != 0) {
            product ^= b;
        }
        b = (b & 1u) != 0 ? (b >> 1) ^ kPoly : b >> 1; // b·x mod P
    }
    return product;
}

// kPowers[k] = x^(2^k) mod P, enough for a shift of 2^64 bytes = 2^67 bits.
constexpr std::size_t kPowerCount = 67;
constexpr std::array<std::uint32_t, kPowerCount> make_powers() noexcept
{
    std::array<std::uint32_t, kPowerCount> p{};
    p[0] = 1u << 30; // x^1
    for (std::size_t k = 1; k < kPowerCount; ++k) {
        p[k] = mul_mod_p(p[k - 1], p[k - 1]);
    }
    return p;
}
constexpr auto kPowers = make_powers();

// x^(8n) mod P: the operator "append n zero bytes".
constexpr std::uint32_t x_pow_8n(std::uint64_t n) noexcept
{
    std::uint32_t r = 1u << 31; // x^0
    for (std::size_t k = 3; n != 0; ++k, n >>= 1) {
        if ((n & 1u) != 0) {
            r = mul_mod_p(kPowers[k], r);
        }
    }
    return r;
}

// x^n mod P for any number of bits n (x_pow_8n covers whole bytes).
constexpr std::uint32_t x_pow_bits(std::uint64_t n) noexcept
{
    return mul_mod_p(x_pow_8n(n / 8), 1u << (31 - n % 8));
}

// ---- software tables ----

using Table = std::array<std::array<std::uint32_t, 256>, 8>;

// kSlice[0] is the classic byte table; kSlice[k][v] = kSlice[0][v] followed
// by k zero bytes.
constexpr Table make_slice_tables() noexcept
{
    Table t{};
    for (std::uint32_t v = 0; v < 256; ++v) {
        std::uint32_t c = v;
        for (unsigned bit = 0; bit < 8; ++bit) {
            c = (c & 1u) != 0 ? (c >> 1) ^ kPoly : c >> 1;
        }
        t[0][v] = c;
    }
    for (std::size_t k = 1; k < 8; ++k) {
        for (std::uint32_t v = 0; v < 256; ++v) {
            const std::uint32_t prev = t[k - 1][v];
            t[k][v] = (prev >> 8) ^ t[0][prev & 0xFFu];
        }
    }
    return t;
}
constexpr Table kSlice = make_slice_tables();

// ---- shift-by-L tables for the 3-way join ----

using ShiftTable = std::array<std::array<std::uint32_t, 256>, 4>;

// t[i][v] = shift(v << 8i, L). shift is linear, so each entry is the xor of
// the shifted basis vectors of its bits.
constexpr ShiftTable make_shift_table(std::uint64_t len) noexcept
{
    const std::uint32_t op = x_pow_8n(len);
    std::array<std::uint32_t, 32> basis{};
    for (unsigned b = 0; b < 32; ++b) {
        basis[b] = mul_mod_p(op, 1u << b);
    }
    ShiftTable t{};
    for (std::size_t i = 0; i < 4; ++i) {
        for (std::uint32_t v = 0; v < 256; ++v) {
            std::uint32_t r = 0;
            for (std::size_t b = 0; b < 8; ++b) {
                if ((v & (1u << b)) != 0) {
                    r ^= basis[8 * i + b];
                }
            }
            t[i][v] = r;
        }
    }
    return t;
}

constexpr std::size_t kLong = 8192; // bytes per stream, long blocks
constexpr std::size_t kShort = 256; // bytes per stream, short blocks
constexpr std::size_t kTiny = 64;   // bytes per stream, tiny blocks
constexpr ShiftTable kShiftLong = make_shift_table(kLong);
constexpr ShiftTable kShiftShort = make_shift_table(kShort);
constexpr ShiftTable kShiftTiny = make_shift_table(kTiny);

inline std::uint32_t shift(const ShiftTable& t, std::uint32_t c) noexcept
{
    return t[0][c & 0xFFu] ^ t[1][(c >> 8) & 0xFFu] ^ t[2][(c >> 16) & 0xFFu] ^ t[3][c >> 24];
}

inline std::uint64_t load64(const unsigned char* p) noexcept
{
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store64(unsigned char* p, std::uint64_t v) noexcept { std::memcpy(p, &v, sizeof v); }

// ---- software: slicing-by-8 ----

template <bool Copy> std::uint32_t sw_kernel(std::uint32_t c, unsigned char* dst,
                                             const unsigned char* src, std::size_t len) noexcept
{
    while (len >= 8) {
        const std::uint64_t w = load64(src);
        if constexpr (Copy) {
            store64(dst, w);
            dst += 8;
        }
        const std::uint32_t lo = static_cast<std::uint32_t>(w) ^ c;
        const std::uint32_t hi = static_cast<std::uint32_t>(w >> 32);
        c = kSlice[7][lo & 0xFFu] ^ kSlice[6][(lo >> 8) & 0xFFu] ^ kSlice[5][(lo >> 16) & 0xFFu] ^
            kSlice[4][lo >> 24] ^ kSlice[3][hi & 0xFFu] ^ kSlice[2][(hi >> 8) & 0xFFu] ^
            kSlice[1][(hi >> 16) & 0xFFu] ^ kSlice[0][hi >> 24];
        src += 8;
        len -= 8;
    }
    while (len > 0) {
        const unsigned char b = *src++;
        if constexpr (Copy) {
            *dst++ = b;
        }
        c = (c >> 8) ^ kSlice[0][(c ^ b) & 0xFFu];
        --len;
    }
    return c;
}

std::uint32_t sw_crc(std::uint32_t c, const unsigned char* src, std::size_t len) noexcept
{
    return sw_kernel<false>(c, nullptr, src, len);
}
std::uint32_t sw_copy(std::uint32_t c, unsigned char* dst, const unsigned char* src,
                      std::size_t len) noexcept
{
    return sw_kernel<true>(c, dst, src, len);
}

// ---- hardware: SSE4.2 crc32, three streams ----

// Up to 7 bytes (1, 2 and 4 at a time): the caller guarantees len >= n.
template <bool Copy> [[gnu::target("sse4.2"), gnu::always_inline]] inline std::uint32_t
hw_bytes(std::uint32_t c, unsigned char*& dst, const unsigned char*& src, std::size_t n) noexcept
{
    if ((n & 1u) != 0) {
        const unsigned char v = *src;
        if constexpr (Copy) {
            *dst = v;
            dst += 1;
        }
        c = _mm_crc32_u8(c, v);
        src += 1;
    }
    if ((n & 2u) != 0) {
        std::uint16_t v;
        std::memcpy(&v, src, 2);
        if constexpr (Copy) {
            std::memcpy(dst, &v, 2);
            dst += 2;
        }
        c = _mm_crc32_u16(c, v);
        src += 2;
    }
    if ((n & 4u) != 0) {
        std::uint32_t v;
        std::memcpy(&v, src, 4);
        if constexpr (Copy) {
            std::memcpy(dst, &v, 4);
            dst += 4;
        }
        c = _mm_crc32_u32(c, v);
        src += 4;
    }
    return c;
}

// Consumes whole blocks of 3·L bytes.
template <std::size_t L, bool Copy>
[[gnu::target("sse4.2"), gnu::always_inline]] inline std::uint32_t
hw_blocks(std::uint32_t c, unsigned char*& dst, const unsigned char*& src, std::size_t& len,
          const ShiftTable& table) noexcept
{
    while (len >= 3 * L) {
        std::uint64_t c0 = c;
        std::uint64_t c1 = 0;
        std::uint64_t c2 = 0;
        for (std::size_t i = 0; i < L; i += 8) {
            const std::uint64_t w0 = load64(src + i);
            const std::uint64_t w1 = load64(src + L + i);
            const std::uint64_t w2 = load64(src + 2 * L + i);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            if constexpr (Copy) {
                store64(dst + i, w0);
                store64(dst + L + i, w1);
                store64(dst + 2 * L + i, w2);
            }
        }
        c = shift(table, static_cast<std::uint32_t>(c0)) ^ static_cast<std::uint32_t>(c1);
        c = shift(table, c) ^ static_cast<std::uint32_t>(c2);
        src += 3 * L;
        if constexpr (Copy) {
            dst += 3 * L;
        }
        len -= 3 * L;
    }
    return c;
}

template <bool Copy> [[gnu::target("sse4.2")]] std::uint32_t
hw_kernel(std::uint32_t c, unsigned char* dst, const unsigned char* src, std::size_t len) noexcept
{
    if (len >= 16) {
        // Align the side whose accesses matter most: stores when copying.
        const auto addr = reinterpret_cast<std::uintptr_t>(Copy ? dst : src);
        const std::size_t head = (8 - (addr & 7u)) & 7u;
        c = hw_bytes<Copy>(c, dst, src, head);
        len -= head;
    }
    c = hw_blocks<kLong, Copy>(c, dst, src, len, kShiftLong);
    c = hw_blocks<kShort, Copy>(c, dst, src, len, kShiftShort);
    c = hw_blocks<kTiny, Copy>(c, dst, src, len, kShiftTiny);
    std::uint64_t c64 = c;
    while (len >= 8) {
        const std::uint64_t w = load64(src);
        if constexpr (Copy) {
            store64(dst, w);
            dst += 8;
        }
        c64 = _mm_crc32_u64(c64, w);
        src += 8;
        len -= 8;
    }
    // The last 0-7 bytes.
    return hw_bytes<Copy>(static_cast<std::uint32_t>(c64), dst, src, len);
}

[[gnu::target("sse4.2")]] std::uint32_t hw_crc(std::uint32_t c, const unsigned char* src,
                                               std::size_t len) noexcept
{
    return hw_kernel<false>(c, nullptr, src, len);
}
[[gnu::target("sse4.2")]] std::uint32_t hw_words_hole(std::uint32_t c, const unsigned char* src,
                                                      std::size_t nwords, std::size_t hole) noexcept
{
    // Words before the hole, the hole's word masked, words after it: no
    // test inside the loops (a header is 5-9 words, checksummed twice per
    // fragment).
    const std::size_t hole_word = hole / 8;
    const std::uint64_t keep = (hole & 4u) != 0 ? 0x00000000ffffffffull : 0xffffffff00000000ull;
    std::uint64_t c64 = c;
    std::size_t i = 0;
    for (; i < hole_word; ++i) {
        c64 = _mm_crc32_u64(c64, load64(src + 8 * i));
    }
    c64 = _mm_crc32_u64(c64, load64(src + 8 * i) & keep);
    for (++i; i < nwords; ++i) {
        c64 = _mm_crc32_u64(c64, load64(src + 8 * i));
    }
    return static_cast<std::uint32_t>(c64);
}
[[gnu::target("sse4.2")]] std::uint32_t hw_copy(std::uint32_t c, unsigned char* dst,
                                                const unsigned char* src, std::size_t len) noexcept
{
    return hw_kernel<true>(c, dst, src, len);
}

// ---- AVX-512 + VPCLMULQDQ: carry-less folding, then crc32 ----

// Measured on a Xeon with AVX-512: from one 256-byte step on, folding
// beats the 3-way crc32 loop in both latency and throughput, with or
// without a 64-byte aligned start; aligning pays from about 2 KiB (copies;
// plain checksums gain little either way).
constexpr std::size_t kFoldStep = 256; // four 64-byte accumulators
constexpr std::size_t kFoldMin = kFoldStep;
constexpr std::size_t kFoldAlignMin = 2048; // 64-byte aligned head first from here
static_assert(kFoldMin >= kFoldStep && kFoldAlignMin >= kFoldStep + 63);
// The loop asks for the lines two steps ahead: the source for reading, the
// destination for writing. Without it a copy waits for each destination
// line's read-for-ownership, which a memcpy by `rep movsb` avoids: measured
// here, a shm stream of 4 MiB messages with checksums went from 6 400 MB/s
// (memcpy without checksums: 7 400) to 8 900, and 64 KiB cold copy+crc from
// 7.1 to 8.1 GB/s.
constexpr std::size_t kPrefetchAhead = 2 * kFoldStep;

// Multipliers that move a 16-byte lane `bytes` bytes forward. vpclmulqdq on
// bit-reflected operands yields the product times x (bit 127 of the result
// stays 0), and a 32-bit constant in the low half of a 64-bit operand stands
// for itself times x^32; the exponents absorb both. `first` multiplies the
// lane's first 8 bytes (H, degree +64): x^(d+64) = x^(d+31)·x^33; `second`
// multiplies the last 8 (Lo): x^d = x^(d-33)·x^33, with d = 8·bytes.
struct FoldConstants {
    std::uint64_t first;
    std::uint64_t second;
};
constexpr FoldConstants fold_constants(std::size_t bytes) noexcept
{
    return {x_pow_bits(8 * bytes + 31), x_pow_bits(8 * bytes - 33)};
}
constexpr FoldConstants kFold64 = fold_constants(64);
constexpr FoldConstants kFold128 = fold_constants(128);
constexpr FoldConstants kFold192 = fold_constants(192);
constexpr FoldConstants kFold256 = fold_constants(kFoldStep);

// The pair in every 128-bit lane: first in the low qword, second in the high.
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512i
broadcast(FoldConstants k) noexcept
{
    const auto first = static_cast<long long>(k.first);
    const auto second = static_cast<long long>(k.second);
    return _mm512_set_epi64(second, first, second, first, second, first, second, first);
}

// acc moved forward by the distance of k, xored into data.
[[gnu::target("avx512f,vpclmulqdq"), gnu::always_inline]] inline __m512i
fold(__m512i acc, __m512i k, __m512i data) noexcept
{
    const __m512i first = _mm512_clmulepi64_epi128(acc, k, 0x00);
    const __m512i second = _mm512_clmulepi64_epi128(acc, k, 0x11);
    return _mm512_ternarylogic_epi64(first, second, data, 0x96); // three-way xor
}

// Loads 64 bytes at src + at (and stores them to dst + at when copying).
template <bool Copy> [[gnu::target("avx512f"), gnu::always_inline]] inline __m512i
block(unsigned char* dst, const unsigned char* src, std::size_t at) noexcept
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
[[gnu::target("avx512f,vpclmulqdq,sse4.2"), gnu::always_inline]] inline std::uint32_t
fold_blocks(std::uint32_t c, unsigned char*& dst, const unsigned char*& src,
            std::size_t& len) noexcept
{
    const auto advance = [&](std::size_t n) {
        src += n;
        if constexpr (Copy) {
            dst += n;
        }
        len -= n;
    };
    __m512i x0 = block<Copy>(dst, src, 0);
    __m512i x1 = block<Copy>(dst, src, 64);
    __m512i x2 = block<Copy>(dst, src, 128);
    __m512i x3 = block<Copy>(dst, src, 192);
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(c))));
    advance(kFoldStep);
    const __m512i k256 = broadcast(kFold256);
    while (len >= kFoldStep) {
        if (len >= kPrefetchAhead + kFoldStep) {
            for (std::size_t at = kPrefetchAhead; at < kPrefetchAhead + kFoldStep; at += 64) {
                __builtin_prefetch(src + at, 0, 3);
                if constexpr (Copy) {
                    __builtin_prefetch(dst + at, 1, 3);
                }
            }
        }
        x0 = fold(x0, k256, block<Copy>(dst, src, 0));
        x1 = fold(x1, k256, block<Copy>(dst, src, 64));
        x2 = fold(x2, k256, block<Copy>(dst, src, 128));
        x3 = fold(x3, k256, block<Copy>(dst, src, 192));
        advance(kFoldStep);
    }
    const __m512i k64 = broadcast(kFold64);
    __m512i x = fold(x0, broadcast(kFold192), fold(x1, broadcast(kFold128), fold(x2, k64, x3)));
    while (len >= 64) {
        x = fold(x, k64, block<Copy>(dst, src, 0));
        advance(64);
    }
    // x is congruent to everything consumed so far: its register from 0 is theirs.
    alignas(64) unsigned char folded[64];
    _mm512_store_si512(folded, x);
    std::uint64_t c64 = 0;
    for (std::size_t i = 0; i < 64; i += 8) {
        c64 = _mm_crc32_u64(c64, load64(folded + i));
    }
    return static_cast<std::uint32_t>(c64);
}

template <bool Copy> [[gnu::target("avx512f,vpclmulqdq,sse4.2")]] std::uint32_t
fold_kernel(std::uint32_t c, unsigned char* dst, const unsigned char* src, std::size_t len) noexcept
{
    if (len < kFoldMin) {
        return hw_kernel<Copy>(c, dst, src, len);
    }
    // Long buffers: align the side whose accesses matter most (as hw_kernel
    // does) to 64, leaving at least one step. Shorter ones lose more to the
    // serial crc32 steps of the head than to cache-line splits.
    const auto addr = reinterpret_cast<std::uintptr_t>(Copy ? dst : src);
    const std::size_t head = len >= kFoldAlignMin ? (64 - (addr & 63u)) & 63u : 0;
    c = hw_bytes<Copy>(c, dst, src, head & 7u);
    std::uint64_t c64 = c;
    for (std::size_t i = head & 7u; i < head; i += 8) {
        const std::uint64_t w = load64(src);
        if constexpr (Copy) {
            store64(dst, w);
            dst += 8;
        }
        c64 = _mm_crc32_u64(c64, w);
        src += 8;
    }
    len -= head;
    c = fold_blocks<Copy>(static_cast<std::uint32_t>(c64), dst, src, len);
    return hw_kernel<Copy>(c, dst, src, len);
}

[[gnu::target("avx512f,vpclmulqdq,sse4.2")]] std::uint32_t
fold_crc(std::uint32_t c, const unsigned char* src, std::size_t len) noexcept
{
    return fold_kernel<false>(c, nullptr, src, len);
}
[[gnu::target("avx512f,vpclmulqdq,sse4.2")]] std::uint32_t
fold_copy(std::uint32_t c, unsigned char* dst, const unsigned char* src, std::size_t len) noexcept
{
    return fold_kernel<true>(c, dst, src, len);
}

// ---- dispatch ----

struct Impl {
    std::uint32_t (*crc)(std::uint32_t, const unsigned char*, std::size_t) noexcept;
    std::uint32_t (*copy)(std::uint32_t, unsigned char*, const unsigned char*,
                          std::size_t) noexcept;
    const char* name;
};
constexpr Impl kSoftware{&sw_crc, &sw_copy, "software (slicing-by-8)"};
constexpr Impl kHardware{&hw_crc, &hw_copy, "sse4.2 (3-way)"};
constexpr Impl kFold{&fold_crc, &fold_copy, "avx512 vpclmulqdq fold + sse4.2"};

bool cpu_has_sse42() noexcept
{
    __builtin_cpu_init(); // we may run from a static initializer before libgcc's
    return __builtin_cpu_supports("sse4.2") != 0;
}

// libgcc's avx512f also requires the OS to save the zmm registers.
bool cpu_has_fold() noexcept
{
    return cpu_has_sse42() && __builtin_cpu_supports("avx512f") != 0 &&
           __builtin_cpu_supports("vpclmulqdq") != 0;
}

// Constant-initialized, so usable from any static initializer.
std::atomic<const Impl*> g_impl{nullptr};

const Impl* best_impl() noexcept
{
    if (cpu_has_fold()) {
        return &kFold;
    }
    return cpu_has_sse42() ? &kHardware : &kSoftware;
}

inline const Impl* impl() noexcept
{
    const Impl* p = g_impl.load(std::memory_order_relaxed);
    if (p == nullptr) [[unlikely]] {
        p = best_impl();
        g_impl.store(p, std::memory_order_relaxed);
    }
    return p;
}

} // namespace

std::uint32_t crc32c(const void* data, std::size_t len, std::uint32_t crc) noexcept
{
    return ~impl()->crc(~crc, static_cast<const unsigned char*>(data), len);
}

std::uint32_t crc32c_words_hole(const void* data, std::size_t nwords, std::size_t hole) noexcept
{
    const Impl* i = impl();
    const auto* p = static_cast<const unsigned char*>(data);
    if (i != &kSoftware) {
        return ~hw_words_hole(~0u, p, nwords, hole);
    }
    static constexpr unsigned char kZero[4] = {};
    std::uint32_t c = i->crc(~0u, p, hole);
    c = i->crc(c, kZero, sizeof kZero);
    return ~i->crc(c, p + hole + 4, 8 * nwords - hole - 4);
}

std::uint32_t crc32c_copy(void* dst, const void* src, std::size_t len, std::uint32_t crc) noexcept
{
    return ~impl()->copy(~crc, static_cast<unsigned char*>(dst),
                         static_cast<const unsigned char*>(src), len);
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t len_b) noexcept
{
    return mul_mod_p(x_pow_8n(len_b), crc_a) ^ crc_b;
}

const char* crc32c_implementation() noexcept { return impl()->name; }

bool crc32c_hardware_available() noexcept { return cpu_has_sse42(); }

void crc32c_force_software(bool on) noexcept
{
    g_impl.store(on ? &kSoftware : best_impl(), std::memory_order_relaxed);
}

bool crc32c_force(Crc32cImpl which) noexcept
{
    const Impl* p = nullptr;
    switch (which) {
    case Crc32cImpl::best:
        p = best_impl();
        break;
    case Crc32cImpl::fold:
        p = cpu_has_fold() ? &kFold : nullptr;
        break;
    case Crc32cImpl::sse42:
        p = cpu_has_sse42() ? &kHardware : nullptr;
        break;
    case Crc32cImpl::software:
        p = &kSoftware;
        break;
    }
    if (p == nullptr) {
        return false;
    }
    g_impl.store(p, std::memory_order_relaxed);
    return true;
}

} // namespace ulmpi::rt
