#include "ulm/packer.h"

#include "runtime/crc32c.h"

namespace ulmpi::ulm {
namespace detail {

std::uint32_t find_run(const Layout& l, std::uint64_t within)
{
    // Largest r with prefix[r] <= within; prefix[0] == 0.
    std::uint32_t lo = 0;
    std::uint32_t hi = l.nruns; // prefix[nruns] == size > within
    while (hi - lo > 1) {
        std::uint32_t mid = lo + (hi - lo) / 2;
        if (l.prefix[mid] <= within) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

} // namespace detail

void pack_walk(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n)
{
    auto* out = static_cast<std::byte*>(dst);
    for_each_segment(ref, pos, n, [&](std::byte* p, std::size_t len) {
        std::memcpy(out, p, len);
        out += len;
    });
}

void unpack_walk(const DataRef& ref, std::uint64_t pos, const void* src, std::uint64_t n)
{
    const auto* in = static_cast<const std::byte*>(src);
    for_each_segment(ref, pos, n, [&](std::byte* p, std::size_t len) {
        std::memcpy(p, in, len);
        in += len;
    });
}

namespace {

// One copy-and-checksum kernel of runtime/crc32c.h: fused, fused with
// non-temporal stores, or memcpy then CRC from cache.
using CopyCrc = std::uint32_t (*)(void*, const void*, std::size_t, std::uint32_t) noexcept;

// The packed bytes [pos, pos + n) of ref -> dst through `Kernel`, segment by
// segment, chaining the CRC (the kernel is a constant: a direct call).
template <CopyCrc Kernel>
std::uint32_t pack_with(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n,
                        std::uint32_t crc)
{
    auto* out = static_cast<std::byte*>(dst);
    for_each_segment(ref, pos, n, [&](std::byte* p, std::size_t len) {
        crc = Kernel(out, p, len, crc);
        out += len;
    });
    return crc;
}

// src -> the packed bytes [pos, pos + n) of ref through `Kernel`.
template <CopyCrc Kernel>
std::uint32_t unpack_with(const DataRef& ref, std::uint64_t pos, const void* src, std::uint64_t n,
                          std::uint32_t crc)
{
    const auto* in = static_cast<const std::byte*>(src);
    for_each_segment(ref, pos, n, [&](std::byte* p, std::size_t len) {
        crc = Kernel(p, in, len, crc);
        in += len;
    });
    return crc;
}

} // namespace

std::uint32_t pack_crc(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n,
                       std::uint32_t crc)
{
    return pack_with<&rt::crc32c_copy>(ref, pos, dst, n, crc);
}

std::uint32_t pack_crc_stream(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n,
                              std::uint32_t crc)
{
    return pack_with<&rt::crc32c_copy_stream>(ref, pos, dst, n, crc);
}

std::uint32_t pack_crc_cached(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n,
                              std::uint32_t crc)
{
    return pack_with<&rt::crc32c_copy_cached>(ref, pos, dst, n, crc);
}

std::uint32_t unpack_crc(const DataRef& ref, std::uint64_t pos, const void* src, std::uint64_t n,
                         std::uint32_t crc)
{
    return unpack_with<&rt::crc32c_copy>(ref, pos, src, n, crc);
}

int to_iovec(const DataRef& ref, std::uint64_t pos, std::uint64_t n, iovec* iov, int max,
             std::uint64_t* covered)
{
    int used = 0;
    std::uint64_t done = 0;
    if (n == 0 || max <= 0) {
        *covered = 0;
        return 0;
    }
    // Walk segments; stop filling once `max` is reached (merging adjacent ones).
    bool full = false;
    for_each_segment(ref, pos, n, [&](std::byte* p, std::size_t len) {
        if (full) {
            return;
        }
        if (used > 0 && static_cast<std::byte*>(iov[used - 1].iov_base) + iov[used - 1].iov_len == p) {
            iov[used - 1].iov_len += len;
        } else if (used < max) {
            iov[used].iov_base = p;
            iov[used].iov_len = len;
            ++used;
        } else {
            full = true;
            return;
        }
        done += len;
    });
    *covered = done;
    return used;
}

const Layout& bytes_layout()
{
    static const Run run{0, 1};
    static const std::uint64_t prefix[2] = {0, 1};
    static const Layout layout{1, 1, 1, &run, prefix, true};
    return layout;
}

} // namespace ulmpi::ulm
