#include "paths/shm/shm_peer_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace ulmpi::path::shm {

PeerMaps::~PeerMaps()
{
    for (Map& m : maps_) {
        drop(m);
    }
}

void PeerMaps::drop(Map& m)
{
    if (m.base != nullptr) {
        ::munmap(const_cast<std::byte*>(m.base), m.size);
    }
    if (m.mine >= 0) {
        ::close(m.mine);
    }
    m = Map{};
}

// (Re)maps the whole file, which must hold `end` bytes (its owner grows it,
// never shrinks it).
bool PeerMaps::map_to(Map& m, std::uint64_t end)
{
    struct stat sb {};
    if (::fstat(m.mine, &sb) != 0 || static_cast<std::uint64_t>(sb.st_size) < end) {
        return false;
    }
    const auto size = static_cast<std::size_t>(sb.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, m.mine, 0);
    if (p == MAP_FAILED) {
        return false;
    }
    if (m.base != nullptr) {
        ::munmap(const_cast<std::byte*>(m.base), m.size);
    }
    m.base = static_cast<const std::byte*>(p);
    m.size = size;
    return true;
}

PeerMaps::Map* PeerMaps::find(pid_t pid, int fd, std::uint64_t ino, std::uint64_t end)
{
    for (Map& m : maps_) {
        if (m.pid == pid && m.fd == fd && m.ino == ino) {
            return end <= m.size || map_to(m, end) ? &m : nullptr;
        }
    }
    char name[64];
    std::snprintf(name, sizeof name, "/proc/%d/fd/%d", static_cast<int>(pid), fd);
    Map m;
    m.pid = pid;
    m.fd = fd;
    m.ino = ino;
    m.mine = ::open(name, O_RDONLY | O_CLOEXEC);
    struct stat sb {};
    if (m.mine < 0 || ::fstat(m.mine, &sb) != 0 || static_cast<std::uint64_t>(sb.st_ino) != ino ||
        !map_to(m, end)) {
        drop(m);
        return nullptr;
    }
    if (maps_.size() >= kMaxMaps) {
        drop(maps_.front());
        maps_.erase(maps_.begin());
    }
    maps_.push_back(m);
    return &maps_.back();
}

bool PeerMaps::copy(pid_t pid, int fd, std::uint64_t ino, std::uint64_t offset, const iovec* local,
                    int nlocal)
{
    std::uint64_t want = 0;
    for (int i = 0; i < nlocal; ++i) {
        want += local[i].iov_len;
    }
    const std::lock_guard<std::mutex> hold(lock_);
    const Map* m = find(pid, fd, ino, offset + want);
    if (m == nullptr) {
        return false;
    }
    const std::byte* from = m->base + offset;
    for (int i = 0; i < nlocal; ++i) {
        std::memcpy(local[i].iov_base, from, local[i].iov_len);
        from += local[i].iov_len;
    }
    return true;
}

} // namespace ulmpi::path::shm
