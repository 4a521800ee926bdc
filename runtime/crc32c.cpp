// CRC32C: the software kernel, the SSE4.2 entry points, the choice of
// kernel and the public functions. The arithmetic and the SSE4.2 kernel are
// described in crc32c_kernels.h, the folding kernels in crc32c_fold.cpp.
//
// Software: slicing-by-8 (eight 256-entry tables, one 8-byte word per step).
//
// Choice: the best kernel this CPU runs, unless ULMPI_CRC32C_IMPL names
// another (tests and benchmarks also use crc32c_force()). All kernels give
// identical results, so a choice is about speed only.
//
// crc32c_combine(): shift by an arbitrary length is a product of the
// precomputed x^(8·2^k) mod P for the bits k of len_b (square-and-multiply).
#include "runtime/crc32c.h"

#include "runtime/config.h"
#include "runtime/crc32c_kernels.h"
#include "runtime/log.h"

#include <array>
#include <atomic>
#include <cstring>
#include <string>

namespace ulmpi::rt {
namespace {

using namespace crc32c_detail;

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

// ---- SSE4.2 entry points ----

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

// ---- dispatch ----

using CopyKernel = std::uint32_t (*)(std::uint32_t, unsigned char*, const unsigned char*,
                                     std::size_t) noexcept;
struct Impl {
    std::uint32_t (*crc)(std::uint32_t, const unsigned char*, std::size_t) noexcept;
    CopyKernel copy;
    CopyKernel stream; // copy with non-temporal stores (or copy where there is none)
    const char* name;
};
constexpr Impl kSoftware{&sw_crc, &sw_copy, &sw_copy, "software (slicing-by-8)"};
constexpr Impl kSse42{&hw_crc, &hw_copy, &hw_copy, "sse4.2 (3-way)"};
constexpr Impl kAvx2{&fold256_crc, &fold256_copy, &fold256_stream,
                     "avx2 vpclmulqdq fold + sse4.2"};
constexpr Impl kAvx512{&fold512_crc, &fold512_copy, &fold512_stream,
                       "avx512 vpclmulqdq fold + sse4.2"};

bool cpu_has_sse42() noexcept
{
    __builtin_cpu_init(); // we may run from a static initializer before libgcc's
    return __builtin_cpu_supports("sse4.2") != 0;
}

// libgcc's avx2 and avx512f also require the OS to save the ymm / zmm
// registers.
bool cpu_has_avx2_fold() noexcept
{
    return cpu_has_sse42() && __builtin_cpu_supports("avx2") != 0 &&
           __builtin_cpu_supports("pclmul") != 0 && __builtin_cpu_supports("vpclmulqdq") != 0;
}

bool cpu_has_avx512_fold() noexcept
{
    return cpu_has_avx2_fold() && __builtin_cpu_supports("avx512f") != 0;
}

// nullptr when this CPU cannot run `which`.
const Impl* runnable(Crc32cImpl which) noexcept
{
    switch (which) {
    case Crc32cImpl::best:
        if (cpu_has_avx512_fold()) {
            return &kAvx512;
        }
        if (cpu_has_avx2_fold()) {
            return &kAvx2;
        }
        return cpu_has_sse42() ? &kSse42 : &kSoftware;
    case Crc32cImpl::avx512:
        return cpu_has_avx512_fold() ? &kAvx512 : nullptr;
    case Crc32cImpl::avx2:
        return cpu_has_avx2_fold() ? &kAvx2 : nullptr;
    case Crc32cImpl::sse42:
        return cpu_has_sse42() ? &kSse42 : nullptr;
    case Crc32cImpl::software:
        return &kSoftware;
    }
    return nullptr;
}

// Registered at load time; built on first use, so a checksum taken from
// another file's static initializer still finds it constructed.
const ChoiceParam& impl_param()
{
    static const ChoiceParam param{
        "crc32c_impl", "auto",
        "CRC32C kernel: auto (the fastest this CPU runs), avx512, avx2, sse42 or sw (software)",
        "auto|avx512|avx2|sse42|sw"};
    return param;
}
[[maybe_unused]] const ChoiceParam& g_register_impl_param = impl_param();

// The kernel at start: the parameter's, when this CPU runs it.
const Impl* configured_impl() noexcept
{
    const std::string& want = impl_param().get();
    Crc32cImpl which = Crc32cImpl::best;
    if (want == "avx512") {
        which = Crc32cImpl::avx512;
    } else if (want == "avx2") {
        which = Crc32cImpl::avx2;
    } else if (want == "sse42") {
        which = Crc32cImpl::sse42;
    } else if (want == "sw") {
        which = Crc32cImpl::software;
    }
    const Impl* p = runnable(which);
    if (p == nullptr) {
        p = runnable(Crc32cImpl::best);
        ULMPI_WARN("ULMPI_CRC32C_IMPL=%s: this CPU cannot run it; using %s", want.c_str(), p->name);
    }
    return p;
}

// Constant-initialized, so usable from any static initializer.
std::atomic<const Impl*> g_impl{nullptr};

inline const Impl* impl() noexcept
{
    const Impl* p = g_impl.load(std::memory_order_relaxed);
    if (p == nullptr) [[unlikely]] {
        p = configured_impl();
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

std::uint32_t crc32c_copy_cached(void* dst, const void* src, std::size_t len,
                                 std::uint32_t crc) noexcept
{
    constexpr std::size_t kPiece = 16384;
    const Impl* i = impl();
    std::uint32_t c = ~crc;
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (std::size_t at = 0; at < len; at += kPiece) {
        const std::size_t n = len - at < kPiece ? len - at : kPiece;
        std::memcpy(d + at, s + at, n);
        c = i->crc(c, d + at, n);
    }
    return ~c;
}

std::uint32_t crc32c_copy_stream(void* dst, const void* src, std::size_t len,
                                 std::uint32_t crc) noexcept
{
    return ~impl()->stream(~crc, static_cast<unsigned char*>(dst),
                           static_cast<const unsigned char*>(src), len);
}

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::size_t len_b) noexcept
{
    return mul_mod_p(x_pow_8n(len_b), crc_a) ^ crc_b;
}

const char* crc32c_implementation() noexcept { return impl()->name; }

bool crc32c_hardware_available() noexcept { return cpu_has_sse42(); }

bool crc32c_available(Crc32cImpl which) noexcept { return runnable(which) != nullptr; }

void crc32c_force_software(bool on) noexcept
{
    g_impl.store(on ? &kSoftware : configured_impl(), std::memory_order_relaxed);
}

bool crc32c_force(Crc32cImpl which) noexcept
{
    const Impl* p = runnable(which);
    if (p == nullptr) {
        return false;
    }
    g_impl.store(p, std::memory_order_relaxed);
    return true;
}

} // namespace ulmpi::rt
