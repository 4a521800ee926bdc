// The registration cache of the verbs path.
//
// Registering memory costs a system call and page pinning (tens of
// microseconds and more per megabyte), so registrations of user buffers for
// rendezvous are kept and found again by address: acquire(addr, len, access)
// returns a registration covering the range with at least that access,
// making one (of the whole pages, access widened to read + write) when none
// does. Entries live until the memory is released (verbs_memhook.h tells
// invalidate() before it goes), until the cache is over its byte budget
// (the least recently used entries not used for kQuiet go first), or until
// the path closes. The path's contract has no "release" for a key made by
// make_rkey, so an entry in use by a peer's RDMA read is never evicted by
// the budget while fresh; a program that frees a buffer during its own
// rendezvous is erroneous anyway.
//
// With the cache off (ULMPI_VERBS_REG_CACHE=off) every acquire registers
// anew and the entry is dropped kQuiet after its last use or at release.
//
// Thread safety: a mutex (invalidate() comes from any thread's munmap).
#pragma once

#include "paths/verbs/verbs_device.h"
#include "runtime/clock.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace ulmpi::path::verbs {

class RegCache {
public:
    static constexpr rt::Nanos kQuiet = 2000000000; // 2 s

    RegCache(Device& dev, bool enabled, std::uint64_t budget_bytes);
    ~RegCache();
    RegCache(const RegCache&) = delete;
    RegCache& operator=(const RegCache&) = delete;

    // A registration covering [addr, addr + len) with `acc` rights, or
    // nullptr (the device refused: no memory, bad address).
    Mr* acquire(const void* addr, std::size_t len, unsigned acc);
    // The range is being released: drop every entry that overlaps it.
    void invalidate(std::uintptr_t addr, std::size_t len);
    void clear();

    std::uint64_t hits() const { return hits_; }
    std::uint64_t misses() const { return misses_; }
    std::uint64_t invalidations() const { return invalidations_; }
    std::uint64_t bytes() const { return bytes_; }
    std::size_t entries() const;

private:
    struct Entry {
        std::uintptr_t start;
        std::uintptr_t end;
        Mr* mr;
        rt::Nanos used;
    };
    void drop_locked(std::multimap<std::uintptr_t, Entry>::iterator it);
    void evict_locked(rt::Nanos now);

    Device& dev_;
    bool enabled_;
    std::uint64_t budget_;
    mutable std::recursive_mutex mu_;
    std::multimap<std::uintptr_t, Entry> by_start_; // entries may overlap
    std::uintptr_t max_len_ = 0;               // longest entry (bounds the overlap search)
    std::uint64_t bytes_ = 0;
    std::uint64_t hits_ = 0;
    std::uint64_t misses_ = 0;
    std::uint64_t invalidations_ = 0;
};

} // namespace ulmpi::path::verbs
