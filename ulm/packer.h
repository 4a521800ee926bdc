// Flattened datatypes: how ULM sees user memory.
//
// The MPI datatype engine flattens every committed type into a Layout: the
// runs (displacement, length) of one element in type-map order, with
// adjacent runs merged, plus the element's data size and extent. A buffer is
// (base, count, layout); its packed stream is the concatenation of the runs
// of element 0, 1, ... count-1, element i starting at base + i * extent.
//
// ULM moves bytes of the packed stream by position, so a fragment at any
// offset is packed or unpacked without walking the type again, and the same
// walk yields gather/scatter lists (iovecs) for paths that copy themselves
// (recvmsg scatter, process_vm_readv). A contiguous layout is one run whose
// length equals the extent: every operation becomes one memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sys/uio.h>

namespace ulmpi::ulm {

struct Run {
    std::int64_t disp;
    std::uint64_t len;
};

struct Layout {
    std::uint64_t size = 0;   // data bytes in one element
    std::int64_t extent = 0;  // distance between consecutive elements
    std::uint32_t nruns = 0;
    const Run* runs = nullptr;
    const std::uint64_t* prefix = nullptr; // nruns + 1 entries: bytes before run i
    bool contiguous = false;  // nruns == 1 && runs[0].len == extent (or count <= 1)
};

// A typed buffer: the unit ULM sends from and receives into.
struct DataRef {
    void* base = nullptr;
    std::uint64_t count = 0;
    const Layout* layout = nullptr;

    std::uint64_t bytes() const { return layout == nullptr ? 0 : count * layout->size; }
    // Base of the packed stream when the whole buffer is one block; else nullptr.
    std::byte* contiguous_base() const
    {
        if (layout == nullptr) {
            return nullptr;
        }
        if (layout->contiguous || (count <= 1 && layout->nruns == 1)) {
            return static_cast<std::byte*>(base) + (layout->nruns ? layout->runs[0].disp : 0);
        }
        return nullptr;
    }
};

namespace detail {
// Index of the run containing byte `within` of an element (0 <= within < size).
std::uint32_t find_run(const Layout& l, std::uint64_t within);
} // namespace detail

// Calls fn(std::byte* ptr, std::size_t len) for each memory segment that holds
// packed bytes [pos, pos + n) of `ref`, in order.
template <class Fn> void for_each_segment(const DataRef& ref, std::uint64_t pos, std::uint64_t n, Fn&& fn)
{
    if (n == 0) {
        return;
    }
    if (std::byte* b = ref.contiguous_base()) {
        fn(b + pos, static_cast<std::size_t>(n));
        return;
    }
    const Layout& l = *ref.layout;
    std::uint64_t elem = pos / l.size;
    std::uint64_t within = pos % l.size;
    std::uint32_t r = detail::find_run(l, within);
    std::uint64_t in_run = within - l.prefix[r];
    auto* base = static_cast<std::byte*>(ref.base);
    while (n > 0) {
        const Run& run = l.runs[r];
        std::uint64_t take = run.len - in_run;
        if (take > n) {
            take = n;
        }
        fn(base + static_cast<std::int64_t>(elem) * l.extent + run.disp +
               static_cast<std::int64_t>(in_run),
           static_cast<std::size_t>(take));
        n -= take;
        in_run = 0;
        if (++r == l.nruns) {
            r = 0;
            ++elem;
        }
    }
}

// pack() and unpack() of a buffer that is not one block (packer.cpp).
void pack_walk(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n);
void unpack_walk(const DataRef& ref, std::uint64_t pos, const void* src, std::uint64_t n);

// Packed bytes [pos, pos + n) of ref -> dst. A contiguous buffer (every
// small message of a predefined type) is one memcpy here, without the
// out-of-line walk over the runs.
inline void pack(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n)
{
    if (ref.layout != nullptr && ref.layout->contiguous) [[likely]] {
        if (n != 0) {
            std::memcpy(dst, static_cast<const std::byte*>(ref.base) + ref.layout->runs[0].disp + pos, n);
        }
        return;
    }
    pack_walk(ref, pos, dst, n);
}

// src -> packed bytes [pos, pos + n) of ref.
inline void unpack(const DataRef& ref, std::uint64_t pos, const void* src, std::uint64_t n)
{
    if (ref.layout != nullptr && ref.layout->contiguous) [[likely]] {
        if (n != 0) {
            std::memcpy(static_cast<std::byte*>(ref.base) + ref.layout->runs[0].disp + pos, src, n);
        }
        return;
    }
    unpack_walk(ref, pos, src, n);
}

// pack/unpack that also return the CRC32C of the moved bytes (one pass).
std::uint32_t pack_crc(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n,
                       std::uint32_t crc = 0);
// pack_crc() into memory another process reads next: whole 64-byte lines
// of `dst` are written past this core's caches (rt::crc32c_copy_stream),
// and every byte is in memory when it returns.
std::uint32_t pack_crc_stream(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n,
                              std::uint32_t crc = 0);
std::uint32_t unpack_crc(const DataRef& ref, std::uint64_t pos, const void* src, std::uint64_t n,
                         std::uint32_t crc = 0);
// pack_crc() by rt::crc32c_copy_cached: for the sender's data of messages
// of kCachedCopyMin bytes and more over shared memory, which stream through
// a few fragment buffers that the two cores hand back and forth (2 vCPU AMD
// EPYC with reliability on, 4 MiB ping-pong: streamed 238-270 us depending
// on the VM's state, fused in place 136-540, this 171-238; docs/benchmarks.md
// 2026-11-28 "cost per message"). The receiver copies out with the fused
// unpack_crc(): its destination is its own buffer, which no other core
// holds, and one pass over the fragment beat two (4 MiB streaming, AVX2
// kernel: -32 % against reliability off with memcpy then CRC, -20 % fused;
// docs/benchmarks.md "fewer clock reads").
inline constexpr std::uint64_t kCachedCopyMin = std::uint64_t{2} << 20;
std::uint32_t pack_crc_cached(const DataRef& ref, std::uint64_t pos, void* dst, std::uint64_t n,
                              std::uint32_t crc = 0);

// The layout of plain bytes (size 1, extent 1): DataRef{p, n, &bytes_layout()}
// is n contiguous bytes at p.
const Layout& bytes_layout();

// Fills up to `max` iovecs covering packed bytes [pos, pos + n). Returns the
// number used; *covered tells how many bytes they cover (< n when max ran out).
int to_iovec(const DataRef& ref, std::uint64_t pos, std::uint64_t n, iovec* iov, int max,
             std::uint64_t* covered);

} // namespace ulmpi::ulm
