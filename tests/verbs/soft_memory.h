// Pinned memory for the software verbs device (tests only).
//
// A real device pins the pages of a registration: it keeps the physical
// pages it found at registration time, whatever the process does to its
// address space afterwards. A buffer unmapped (or freed to the kernel) and
// mapped again at the same address gets new pages, and a read through the
// old registration still returns the old pages' bytes. That is the hazard
// the verbs path's registration cache must avoid, so the software device
// reproduces it instead of reading the current mapping:
//
// Every process keeps a pool: one memfd (sparse, ULMPI soft "physical
// memory"), mapped once whole at `pool_base()` (the direct map, like the
// kernel's). Registering private memory moves its pages into the pool: the
// bytes are copied into fresh pool pages, which are then mapped (MAP_SHARED,
// MAP_FIXED) over the same addresses with the same protection. The program
// sees no difference; the registration records the pool pages, and readers
// (this process or a peer through process_vm_readv of the direct map) use
// them. When the program unmaps the range, the pool pages stay as long as a
// registration holds them; a new mapping at that address is not in the pool
// and a stale registration reads the old bytes, as on hardware.
//
// Pages that are already in the pool (another live or past registration)
// are shared, counted per pool page. Pages that cannot move stay in place
// (read through their address): shared mappings (they are someone else's
// memory too) and the main thread's stack (it grows down into its mapping).
// A pool page nobody holds and nobody maps is reclaimed (its memory punched
// out) at deregistration or when the pool runs out.
//
// Limits (a test device): moving pages races with other threads writing the
// same pages at that moment; pool pages are MAP_SHARED, so a process forked
// after registering shares them with its child (open the device after
// fork, as ibv_fork_init users must too) and madvise(MADV_DONTNEED) on them
// keeps their bytes instead of zeroing them; and pinning part of a mapping
// splits it, so an mremap of a range that spans pinned and unpinned pages
// fails (EFAULT) where hardware would let it move.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ulmpi::soft {

// One page of a registration: a pool page, or kInPlace (read the address).
using PageRef = std::uint64_t;
inline constexpr PageRef kInPlace = ~PageRef{0};

class SoftMemory {
public:
    SoftMemory() = default;
    ~SoftMemory();
    SoftMemory(const SoftMemory&) = delete;
    SoftMemory& operator=(const SoftMemory&) = delete;

    bool open(std::size_t pool_bytes, std::string& why);
    std::uintptr_t pool_base() const { return reinterpret_cast<std::uintptr_t>(base_); }
    static std::size_t page() { return kPage; }

    // Pins the pages of [addr, addr + len): fills `pages` (one per page from
    // the page holding addr). errno-style error (0 ok).
    int pin(std::uintptr_t addr, std::size_t len, std::vector<PageRef>& pages);
    void unpin(std::uintptr_t addr, const std::vector<PageRef>& pages);

    std::size_t pool_pages_used() const { return used_; }

private:
    static constexpr std::size_t kPage = 4096;
    struct Vma {
        std::uintptr_t start, end;
        std::uint64_t offset;
        std::uint64_t inode;
        bool shared, readable, writable, exec, stack;
    };
    bool read_maps(std::vector<Vma>& out) const;
    bool alloc_run(std::size_t n, std::uint64_t& first);
    void free_page(std::uint64_t idx);
    void reclaim(const std::vector<Vma>& maps);
    bool mapped_somewhere(std::uint64_t idx, const std::vector<Vma>& maps) const;

    int fd_ = -1;
    std::byte* base_ = nullptr;
    std::size_t pool_pages_ = 0;
    std::uint64_t inode_ = 0;
    std::uint64_t next_ = 0;                 // bump allocator
    std::vector<std::uint64_t> free_;        // reclaimed pages
    std::unordered_map<std::uint64_t, std::uint32_t> refs_; // pool page -> registrations
    std::size_t used_ = 0;
};

} // namespace ulmpi::soft
