// Memory this process shares by file descriptor (a memfd it mapped
// MAP_SHARED), so that a process on the same host can map the same pages
// and read them with memcpy rather than with process_vm_readv, which pins
// every page it reads (docs/intra_parallelization.md, "Staging").
//
// The owner of such an area registers it here; the shared-memory path
// (paths/shm) looks up the memory of a single-copy send in this table and,
// when the whole send lies in one registered area, puts the area's
// descriptor number, inode and offset in the key it sends, so that the
// receiver maps /proc/<pid>/fd/<fd> (once, kept) and copies from there.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ulmpi::rt {

struct SharedRef {
    int fd = -1;             // the owner's descriptor of the file
    std::uint64_t ino = 0;   // its inode (tells a reused descriptor number apart)
    std::uint64_t offset = 0; // of the looked-up bytes in the file
};

// Registers [base, base + len) as the mapping of file `fd` from offset 0
// (replaces an area registered at `base`). At most kMaxSharedRegions.
bool register_shared(const void* base, std::size_t len, int fd, std::uint64_t ino);
void unregister_shared(const void* base);
// Whether [p, p + len) lies within one registered area; `out` then says
// where in its file.
bool find_shared(const void* p, std::size_t len, SharedRef* out);

inline constexpr int kMaxSharedRegions = 8;

// Bytes this process read from other processes' shared areas with memcpy
// (counted by the reader; intra_profile prints them).
void count_shared_read(std::uint64_t bytes);
std::uint64_t shared_read_bytes();

} // namespace ulmpi::rt
