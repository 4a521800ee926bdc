// The shared areas of other processes on this host that this process reads
// with memcpy (runtime/shared_region.h): a single-copy key that names such
// an area (its owner's pid, descriptor number, inode and offset) is read
// from a read-only mapping of /proc/<pid>/fd/<fd>, made at the first read
// and kept (with its descriptor, so that a mapping can grow after its owner
// died), instead of with process_vm_readv. The owner wrote the bytes before
// it sent the key, and the key came through a FIFO (release/acquire), so the
// copy sees them; the owner reuses them only once the read is acknowledged.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ulmpi::path::shm {

class PeerMaps {
public:
    PeerMaps() = default;
    ~PeerMaps();
    PeerMaps(const PeerMaps&) = delete;
    PeerMaps& operator=(const PeerMaps&) = delete;

    // Copies the bytes of file `fd` (inode `ino`) of process `pid` from
    // `offset` on into `local`. False: this process cannot map them (not
    // allowed, gone, another file): the caller reads some other way.
    bool copy(pid_t pid, int fd, std::uint64_t ino, std::uint64_t offset, const iovec* local,
              int nlocal);

    // At most this many areas stay mapped (the oldest is dropped).
    static constexpr std::size_t kMaxMaps = 16;

private:
    struct Map {
        pid_t pid = 0;
        int fd = -1;        // the owner's number
        std::uint64_t ino = 0;
        int mine = -1;      // my descriptor of the file
        const std::byte* base = nullptr;
        std::size_t size = 0;
    };
    Map* find(pid_t pid, int fd, std::uint64_t ino, std::uint64_t end);
    static bool map_to(Map& m, std::uint64_t end);
    static void drop(Map& m);

    std::mutex lock_;
    std::vector<Map> maps_; // oldest first
};

} // namespace ulmpi::path::shm
