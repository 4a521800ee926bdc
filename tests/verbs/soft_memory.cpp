#include "tests/verbs/soft_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ulmpi::soft {
namespace {

// Copies whole pages of the process's memory: they hold bytes outside any
// allocation (heap around a registered buffer), which AddressSanitizer
// would take for an overflow of the buffer. Not instrumented, word by word
// through volatile so that the compiler makes no (intercepted) memcpy of it.
__attribute__((no_sanitize("address"))) void copy_pages(void* dst, const void* src, std::size_t n)
{
    auto* d = static_cast<volatile std::uint64_t*>(dst);
    const auto* s = static_cast<const volatile std::uint64_t*>(src);
    for (std::size_t i = 0; i < n / sizeof(std::uint64_t); ++i) {
        d[i] = s[i];
    }
}

} // namespace

namespace {

// Straight to the kernel: the verbs path's memory hooks (munmap, mmap with
// MAP_FIXED) must not see the device's own page moves as the program's.
void* raw_mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t off)
{
    long r = ::syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return r < 0 && r > -4096 ? MAP_FAILED : reinterpret_cast<void*>(r);
}

} // namespace

SoftMemory::~SoftMemory()
{
    if (base_ != nullptr) {
        ::syscall(SYS_munmap, base_, pool_pages_ * kPage);
    }
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

bool SoftMemory::open(std::size_t pool_bytes, std::string& why)
{
    fd_ = static_cast<int>(::syscall(SYS_memfd_create, "ulmpi-soft-pool", 0u));
    if (fd_ < 0) {
        why = std::string("memfd_create: ") + std::strerror(errno);
        return false;
    }
    pool_pages_ = pool_bytes / kPage;
    if (::ftruncate(fd_, static_cast<off_t>(pool_pages_ * kPage)) != 0) {
        why = std::string("ftruncate of the soft pool: ") + std::strerror(errno);
        return false;
    }
    struct stat st {};
    (void)::fstat(fd_, &st);
    inode_ = st.st_ino;
    void* p = raw_mmap(nullptr, pool_pages_ * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
        why = std::string("mmap of the soft pool: ") + std::strerror(errno);
        return false;
    }
    base_ = static_cast<std::byte*>(p);
    return true;
}

bool SoftMemory::read_maps(std::vector<Vma>& out) const
{
    int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    std::string text;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    out.clear();
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) {
            eol = text.size();
        }
        std::string line = text.substr(pos, eol - pos);
        pos = eol + 1;
        unsigned long s = 0, e = 0, off = 0, ino = 0;
        char perms[8] = {};
        char dev[32] = {};
        int name_at = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %31s %lu %n", &s, &e, perms, &off, dev, &ino,
                        &name_at) < 6) {
            continue;
        }
        Vma v{};
        v.start = s;
        v.end = e;
        v.offset = off;
        v.inode = ino;
        v.readable = perms[0] == 'r';
        v.writable = perms[1] == 'w';
        v.exec = perms[2] == 'x';
        v.shared = perms[3] == 's';
        v.stack = line.find("[stack]") != std::string::npos;
        out.push_back(v);
    }
    return true;
}

bool SoftMemory::alloc_run(std::size_t n, std::uint64_t& first)
{
    if (next_ + n <= pool_pages_) {
        first = next_;
        next_ += n;
        used_ += n;
        return true;
    }
    return false;
}

void SoftMemory::free_page(std::uint64_t idx)
{
    refs_.erase(idx);
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(idx * kPage),
                      static_cast<off_t>(kPage));
    free_.push_back(idx);
    --used_;
}

bool SoftMemory::mapped_somewhere(std::uint64_t idx, const std::vector<Vma>& maps) const
{
    const std::uint64_t off = idx * kPage;
    for (const Vma& v : maps) {
        if (v.inode != inode_ || v.start == pool_base()) {
            continue;
        }
        if (off >= v.offset && off < v.offset + (v.end - v.start)) {
            return true;
        }
    }
    return false;
}

void SoftMemory::reclaim(const std::vector<Vma>& maps)
{
    // Every allocated pool page not held and not mapped goes back.
    std::vector<bool> mapped(next_, false);
    for (const Vma& v : maps) {
        if (v.inode != inode_ || v.start == pool_base()) {
            continue;
        }
        for (std::uint64_t o = v.offset; o < v.offset + (v.end - v.start); o += kPage) {
            if (o / kPage < next_) {
                mapped[o / kPage] = true;
            }
        }
    }
    std::vector<bool> is_free(next_, false);
    for (std::uint64_t f : free_) {
        is_free[f] = true;
    }
    for (std::uint64_t i = 0; i < next_; ++i) {
        if (!mapped[i] && !is_free[i] && refs_.find(i) == refs_.end()) {
            free_page(i);
        }
    }
}

int SoftMemory::pin(std::uintptr_t addr, std::size_t len, std::vector<PageRef>& pages)
{
    const std::uintptr_t a = addr & ~(kPage - 1);
    const std::uintptr_t b = (addr + std::max<std::size_t>(len, 1) + kPage - 1) & ~(kPage - 1);
    const std::size_t n = (b - a) / kPage;
    pages.assign(n, kInPlace);
    std::vector<Vma> maps;
    if (!read_maps(maps)) {
        return EIO;
    }
    std::vector<bool> done(n, false);
    std::vector<std::uint64_t> held;
    auto fail = [&](int err) {
        for (std::uint64_t idx : held) {
            if (--refs_[idx] == 0) {
                refs_.erase(idx);
            }
        }
        pages.clear();
        return err;
    };
    for (const Vma& v : maps) {
        std::uintptr_t s = std::max(a, v.start);
        std::uintptr_t e = std::min(b, v.end);
        if (s >= e) {
            continue;
        }
        if (!v.readable && !v.writable) {
            return fail(EFAULT); // PROT_NONE: a device could not pin it either
        }
        const std::size_t k0 = (s - a) / kPage;
        const std::size_t k = (e - s) / kPage;
        if (v.inode == inode_ && v.start != pool_base()) {
            for (std::size_t i = 0; i < k; ++i) {
                std::uint64_t idx = (v.offset + (s - v.start)) / kPage + i;
                pages[k0 + i] = idx;
                ++refs_[idx];
                held.push_back(idx);
                done[k0 + i] = true;
            }
            continue;
        }
        if (v.shared || v.stack || !v.readable) {
            for (std::size_t i = 0; i < k; ++i) {
                done[k0 + i] = true; // stays in place
            }
            continue;
        }
        const int prot = (v.readable ? PROT_READ : 0) | (v.writable ? PROT_WRITE : 0) |
                         (v.exec ? PROT_EXEC : 0);
        std::uint64_t first = 0;
        if (!alloc_run(k, first)) {
            reclaim(maps);
            if (free_.size() < k) {
                return fail(ENOMEM);
            }
            // Page by page from the reclaimed ones.
            for (std::size_t i = 0; i < k; ++i) {
                std::uint64_t idx = free_.back();
                free_.pop_back();
                ++used_;
                std::uintptr_t va = s + i * kPage;
                copy_pages(base_ + idx * kPage, reinterpret_cast<const void*>(va), kPage);
                if (raw_mmap(reinterpret_cast<void*>(va), kPage, prot, MAP_SHARED | MAP_FIXED, fd_,
                             static_cast<off_t>(idx * kPage)) == MAP_FAILED) {
                    return fail(errno);
                }
                pages[k0 + i] = idx;
                ++refs_[idx];
                held.push_back(idx);
                done[k0 + i] = true;
            }
            continue;
        }
        copy_pages(base_ + first * kPage, reinterpret_cast<const void*>(s), k * kPage);
        if (raw_mmap(reinterpret_cast<void*>(s), k * kPage, prot, MAP_SHARED | MAP_FIXED, fd_,
                     static_cast<off_t>(first * kPage)) == MAP_FAILED) {
            return fail(errno);
        }
        for (std::size_t i = 0; i < k; ++i) {
            pages[k0 + i] = first + i;
            ++refs_[first + i];
            held.push_back(first + i);
            done[k0 + i] = true;
        }
    }
    if (std::find(done.begin(), done.end(), false) != done.end()) {
        return fail(EFAULT); // part of the range is not mapped
    }
    return 0;
}

void SoftMemory::unpin(std::uintptr_t addr, const std::vector<PageRef>& pages)
{
    (void)addr;
    std::vector<std::uint64_t> released;
    for (PageRef p : pages) {
        if (p == kInPlace) {
            continue;
        }
        auto it = refs_.find(p);
        if (it != refs_.end() && --it->second == 0) {
            refs_.erase(it);
            released.push_back(p);
        }
    }
    if (released.empty()) {
        return;
    }
    std::vector<Vma> maps;
    if (!read_maps(maps)) {
        return;
    }
    for (std::uint64_t idx : released) {
        if (!mapped_somewhere(idx, maps)) {
            free_page(idx);
        }
    }
}

} // namespace ulmpi::soft
