// Small helpers shared by the collective algorithms: typed buffer arithmetic,
// local typed copies, and power-of-two arithmetic.
#pragma once

#include "mpi/datatype/datatype.h"
#include "ulm/packer.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ulmpi::mpi::coll {

// Address of element i of a buffer of type t.
inline void* elem(void* buf, std::uint64_t i, const Datatype* t)
{
    return static_cast<std::byte*>(buf) + static_cast<std::int64_t>(i) * t->extent();
}
inline const void* elem(const void* buf, std::uint64_t i, const Datatype* t)
{
    return static_cast<const std::byte*>(buf) + static_cast<std::int64_t>(i) * t->extent();
}
inline void* byte_at(void* buf, std::uint64_t off) { return static_cast<std::byte*>(buf) + off; }
inline const void* byte_at(const void* buf, std::uint64_t off)
{
    return static_cast<const std::byte*>(buf) + off;
}

// Copies `bytes` bytes of packed data from one typed buffer into another.
inline void copy_packed(const ulm::DataRef& src, const ulm::DataRef& dst, std::uint64_t bytes)
{
    std::byte* s = src.contiguous_base();
    std::byte* d = dst.contiguous_base();
    if (s != nullptr && d != nullptr) {
        if (bytes != 0 && s != d) {
            std::memcpy(d, s, bytes);
        }
        return;
    }
    std::uint64_t pos = 0;
    ulm::for_each_segment(src, 0, bytes, [&](std::byte* p, std::size_t len) {
        ulm::unpack(dst, pos, p, len);
        pos += len;
    });
}

// The predefined MPI_BYTE datatype (packed scratch buffers).
const Datatype* byte_type();

inline bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }
// Largest power of two <= n (n >= 1).
inline int pow2_floor(int n)
{
    int p = 1;
    while (p * 2 <= n) {
        p *= 2;
    }
    return p;
}
inline int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n) {
        ++k;
    }
    return k;
}
inline int mod(int a, int n) { return ((a % n) + n) % n; }

} // namespace ulmpi::mpi::coll
