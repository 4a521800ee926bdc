#include "paths/verbs/verbs_regcache.h"

#include "runtime/log.h"

#include <unistd.h>

namespace ulmpi::path::verbs {
namespace {

std::uintptr_t page_size()
{
    static const auto p = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    return p;
}

} // namespace

RegCache::RegCache(Device& dev, bool enabled, std::uint64_t budget_bytes)
    : dev_(dev), enabled_(enabled), budget_(budget_bytes)
{
}

RegCache::~RegCache() { clear(); }

std::size_t RegCache::entries() const
{
    std::lock_guard<std::recursive_mutex> g(mu_);
    return by_start_.size();
}

void RegCache::drop_locked(std::multimap<std::uintptr_t, Entry>::iterator it)
{
    bytes_ -= it->second.end - it->second.start;
    dev_.dereg_mr(it->second.mr);
    by_start_.erase(it);
}

void RegCache::clear()
{
    std::lock_guard<std::recursive_mutex> g(mu_);
    while (!by_start_.empty()) {
        drop_locked(by_start_.begin());
    }
    max_len_ = 0;
}

void RegCache::evict_locked(rt::Nanos now)
{
    // Without the cache, entries live only while a peer may still read them.
    for (auto it = by_start_.begin(); it != by_start_.end();) {
        auto next = std::next(it);
        const bool quiet = now - it->second.used > kQuiet;
        if (quiet && (!enabled_ || bytes_ > budget_)) {
            drop_locked(it);
        }
        it = next;
    }
}

Mr* RegCache::acquire(const void* addr, std::size_t len, unsigned acc)
{
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    const std::uintptr_t b = a + (len == 0 ? 1 : len);
    const rt::Nanos now = rt::now_ns();
    std::lock_guard<std::recursive_mutex> g(mu_);
    if (enabled_) {
        // An entry covering [a, b) starts at or before a, within max_len_.
        auto it = by_start_.upper_bound(a);
        while (it != by_start_.begin()) {
            --it;
            Entry& e = it->second;
            if (a - e.start > max_len_) {
                break;
            }
            if (e.start <= a && b <= e.end && (e.mr->access & acc) == acc) {
                e.used = now;
                ++hits_;
                return e.mr;
            }
        }
    }
    ++misses_;
    const std::uintptr_t ps = page_size();
    const std::uintptr_t start = a & ~(ps - 1);
    const std::uintptr_t end = (b + ps - 1) & ~(ps - 1);
    const unsigned rights = access::local_write | access::remote_read | access::remote_write | acc;
    Mr* mr = nullptr;
    Status st = dev_.reg_mr(reinterpret_cast<void*>(start), end - start, rights, mr);
    if (st.code() == Errc::no_memory) {
        evict_locked(now);
        st = dev_.reg_mr(reinterpret_cast<void*>(start), end - start, rights, mr);
    }
    if (!st.ok()) {
        // Read-only memory (a constant send buffer) cannot take write rights.
        st = dev_.reg_mr(reinterpret_cast<void*>(start), end - start, acc | access::remote_read, mr);
    }
    if (!st.ok()) {
        ULMPI_DEBUG("verbs: registering %zu bytes at %p failed: %s", static_cast<std::size_t>(end - start),
                    reinterpret_cast<void*>(start), rt::errc_name(st.code()));
        return nullptr;
    }
    by_start_.emplace(start, Entry{start, end, mr, now});
    bytes_ += end - start;
    if (end - start > max_len_) {
        max_len_ = end - start;
    }
    evict_locked(now);
    return mr;
}

void RegCache::invalidate(std::uintptr_t addr, std::size_t len)
{
    const std::uintptr_t b = addr + len;
    std::lock_guard<std::recursive_mutex> g(mu_);
    if (by_start_.empty()) {
        return;
    }
    // Entries overlapping [addr, b): start < b and end > addr.
    auto it = by_start_.lower_bound(addr > max_len_ ? addr - max_len_ : 0);
    while (it != by_start_.end() && it->second.start < b) {
        auto next = std::next(it);
        if (it->second.end > addr) {
            ++invalidations_;
            drop_locked(it);
        }
        it = next;
    }
}

} // namespace ulmpi::path::verbs
