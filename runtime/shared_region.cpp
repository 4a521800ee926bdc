#include "runtime/shared_region.h"

#include <atomic>
#include <mutex>

namespace ulmpi::rt {

namespace {

struct Region {
    const std::byte* base = nullptr;
    std::size_t len = 0;
    int fd = -1;
    std::uint64_t ino = 0;
};

std::mutex g_lock;
Region g_regions[kMaxSharedRegions];
std::atomic<std::uint64_t> g_read{0};

} // namespace

bool register_shared(const void* base, std::size_t len, int fd, std::uint64_t ino)
{
    const std::lock_guard<std::mutex> hold(g_lock);
    Region* free_slot = nullptr;
    for (Region& r : g_regions) {
        if (r.base == base || (r.base == nullptr && free_slot == nullptr)) {
            free_slot = &r;
            if (r.base == base) {
                break;
            }
        }
    }
    if (free_slot == nullptr) {
        return false;
    }
    *free_slot = Region{static_cast<const std::byte*>(base), len, fd, ino};
    return true;
}

void unregister_shared(const void* base)
{
    const std::lock_guard<std::mutex> hold(g_lock);
    for (Region& r : g_regions) {
        if (r.base == base) {
            r = Region{};
        }
    }
}

bool find_shared(const void* p, std::size_t len, SharedRef* out)
{
    const auto* b = static_cast<const std::byte*>(p);
    const std::lock_guard<std::mutex> hold(g_lock);
    for (const Region& r : g_regions) {
        if (r.base != nullptr && b >= r.base && len <= r.len &&
            static_cast<std::size_t>(b - r.base) <= r.len - len) {
            *out = SharedRef{r.fd, r.ino, static_cast<std::uint64_t>(b - r.base)};
            return true;
        }
    }
    return false;
}

void count_shared_read(std::uint64_t bytes) { g_read.fetch_add(bytes, std::memory_order_relaxed); }

std::uint64_t shared_read_bytes() { return g_read.load(std::memory_order_relaxed); }

} // namespace ulmpi::rt
