// CRC32C internals shared by runtime/crc32c.cpp (software and SSE4.2
// kernels, dispatch) and runtime/crc32c_fold.cpp (carry-less folding on
// AVX-512 and AVX2 registers). Not part of the runtime's interface.
//
// Notation. We work on the raw CRC register (no pre/post inversion): R(M, c)
// is the register after feeding message M to a register holding c. The
// public value is crc32c(M) = ~R(M, ~crc_prev). The register update is
// linear over GF(2), so
//
//     R(A‖B, c) = shift(R(A, c), |B|) ^ R(B, 0)                      (1)
//
// where shift(c, n) feeds n zero bytes to c, which is multiplication of c by
// x^(8n) modulo P (in the reflected bit order, bit 31 is x^0). Identity (1)
// is what the 3-way interleave and crc32c_combine() rest on.
//
// SSE4.2: the crc32 instruction takes 8 bytes per call with a latency of 3
// cycles and a throughput of one per cycle, so one dependent chain runs at
// a third of the unit's speed. A block of 3·L bytes is therefore split in
// three streams of L bytes, checksummed side by side (stream 0 from the
// running register, streams 1 and 2 from 0), and joined with (1):
// c = shift(shift(c0, L) ^ c1, L) ^ c2. shift(·, L) for the three block
// sizes we use is a table lookup (4 × 256 entries, 4 KiB, built at compile
// time from x^(8L) mod P), so joining costs ~10 instructions per block. Long
// buffers use L = 8 KiB, the remainder L = 256 B, then L = 64 B, and the
// last < 192 bytes run as one stream. The copying variant runs the same
// loop and stores each loaded word to dst. The head is aligned (to the
// source for a checksum, to the destination for a copy) with at most three
// narrower crc32 steps.
#pragma once

#include <nmmintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ulmpi::rt::crc32c_detail {

inline constexpr std::uint32_t kPoly = 0x82F63B78u; // reflected Castagnoli polynomial

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
inline constexpr std::size_t kPowerCount = 67;
constexpr std::array<std::uint32_t, kPowerCount> make_powers() noexcept
{
    std::array<std::uint32_t, kPowerCount> p{};
    p[0] = 1u << 30; // x^1
    for (std::size_t k = 1; k < kPowerCount; ++k) {
        p[k] = mul_mod_p(p[k - 1], p[k - 1]);
    }
    return p;
}
inline constexpr auto kPowers = make_powers();

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

inline constexpr std::size_t kLong = 8192; // bytes per stream, long blocks
inline constexpr std::size_t kShort = 256; // bytes per stream, short blocks
inline constexpr std::size_t kTiny = 64;   // bytes per stream, tiny blocks
inline constexpr ShiftTable kShiftLong = make_shift_table(kLong);
inline constexpr ShiftTable kShiftShort = make_shift_table(kShort);
inline constexpr ShiftTable kShiftTiny = make_shift_table(kTiny);

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

// ---- SSE4.2 crc32, three streams ----

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

// n whole words, one stream (the caller guarantees len >= 8n).
template <bool Copy> [[gnu::target("sse4.2"), gnu::always_inline]] inline std::uint32_t
hw_words(std::uint32_t c, unsigned char*& dst, const unsigned char*& src, std::size_t n) noexcept
{
    std::uint64_t c64 = c;
    for (; n > 0; --n) {
        const std::uint64_t w = load64(src);
        if constexpr (Copy) {
            store64(dst, w);
            dst += 8;
        }
        c64 = _mm_crc32_u64(c64, w);
        src += 8;
    }
    return static_cast<std::uint32_t>(c64);
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

template <bool Copy> [[gnu::target("sse4.2")]] inline std::uint32_t
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
    c = hw_words<Copy>(c, dst, src, len / 8);
    // The last 0-7 bytes.
    return hw_bytes<Copy>(c, dst, src, len & 7u);
}

// ---- folding (runtime/crc32c_fold.cpp) ----

// Multipliers that move a 16-byte lane `bytes` bytes forward (the algebra is
// in crc32c_fold.cpp): `first` for the lane's first 8 bytes, `second` for
// its last 8.
struct FoldConstants {
    std::uint64_t first;
    std::uint64_t second;
};
constexpr FoldConstants fold_constants(std::size_t bytes) noexcept
{
    return {x_pow_bits(8 * bytes + 31), x_pow_bits(8 * bytes - 33)};
}

// Kernels over raw registers; each runs only where its CPU test passed.
std::uint32_t fold512_crc(std::uint32_t c, const unsigned char* src, std::size_t len) noexcept;
std::uint32_t fold512_copy(std::uint32_t c, unsigned char* dst, const unsigned char* src,
                           std::size_t len) noexcept;
std::uint32_t fold256_crc(std::uint32_t c, const unsigned char* src, std::size_t len) noexcept;
std::uint32_t fold256_copy(std::uint32_t c, unsigned char* dst, const unsigned char* src,
                           std::size_t len) noexcept;
// Copies whose whole destination lines go out with non-temporal stores.
std::uint32_t fold512_stream(std::uint32_t c, unsigned char* dst, const unsigned char* src,
                             std::size_t len) noexcept;
std::uint32_t fold256_stream(std::uint32_t c, unsigned char* dst, const unsigned char* src,
                             std::size_t len) noexcept;

} // namespace ulmpi::rt::crc32c_detail
