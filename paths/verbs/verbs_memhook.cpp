#include "paths/verbs/verbs_memhook.h"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ulmpi::path::verbs {
namespace {

std::atomic<ReleaseFn> g_fn{nullptr};
std::atomic<void*> g_ctx{nullptr};
std::atomic<std::uint64_t> g_events{0};
thread_local bool t_inside = false;

[[maybe_unused]] void released(void* addr, std::size_t len)
{
    ReleaseFn fn = g_fn.load(std::memory_order_acquire);
    if (fn == nullptr || t_inside || addr == nullptr || len == 0) {
        return;
    }
    t_inside = true;
    g_events.fetch_add(1, std::memory_order_relaxed);
    fn(g_ctx.load(std::memory_order_acquire), reinterpret_cast<std::uintptr_t>(addr), len);
    t_inside = false;
}

[[maybe_unused]] long result(long r)
{
    if (r < 0 && r > -4096) {
        errno = static_cast<int>(-r);
        return -1;
    }
    return r;
}

} // namespace

bool memhook_install(ReleaseFn fn, void* ctx)
{
    g_ctx.store(ctx, std::memory_order_release);
    g_fn.store(fn, std::memory_order_release);
    // Keep malloc from handing memory back behind the hooks' back.
    (void)::mallopt(M_MMAP_MAX, 0);
    (void)::mallopt(M_TRIM_THRESHOLD, -1);
    return memhook_interposed();
}

void memhook_remove()
{
    g_fn.store(nullptr, std::memory_order_release);
    g_ctx.store(nullptr, std::memory_order_release);
}

bool memhook_interposed()
{
#if defined(__SANITIZE_THREAD__)
    return false; // no hooks in a ThreadSanitizer build (below)
#else
    void* sym = ::dlsym(RTLD_DEFAULT, "munmap");
    return sym == reinterpret_cast<void*>(&::munmap);
#endif
}

std::uint64_t memhook_events() { return g_events.load(std::memory_order_relaxed); }

} // namespace ulmpi::path::verbs

// The interposed entry points. They keep libc's contract (errno, return
// values) and call the kernel themselves.
//
// Not in a ThreadSanitizer build: its runtime intercepts these calls itself
// and maps memory before it can run instrumented code, so a program whose
// own binary defines mmap (a test linked with paths/) died in TSan's start-up
// calling ours. The registration cache is off there (memhook_interposed()).
#if !defined(__SANITIZE_THREAD__)
extern "C" {

__attribute__((visibility("default"))) int munmap(void* addr, size_t len)
{
    ulmpi::path::verbs::released(addr, len);
    return static_cast<int>(ulmpi::path::verbs::result(::syscall(SYS_munmap, addr, len)));
}

__attribute__((visibility("default"))) void* mremap(void* old, size_t old_len, size_t new_len, int flags, ...)
{
    void* target = nullptr;
    if ((flags & MREMAP_FIXED) != 0) {
        va_list ap;
        va_start(ap, flags);
        target = va_arg(ap, void*);
        va_end(ap);
        ulmpi::path::verbs::released(target, new_len);
    }
    // The pages move (or the range shrinks): what was registered there is gone.
    ulmpi::path::verbs::released(old, old_len);
    long r = ::syscall(SYS_mremap, old, old_len, new_len, flags, target);
    return reinterpret_cast<void*>(ulmpi::path::verbs::result(r));
}

__attribute__((visibility("default"))) int madvise(void* addr, size_t len, int advice)
{
    if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE) {
        ulmpi::path::verbs::released(addr, len);
    }
    return static_cast<int>(ulmpi::path::verbs::result(::syscall(SYS_madvise, addr, len, advice)));
}

__attribute__((visibility("default"))) int shmdt(const void* addr)
{
    // The segment's size is not known here; a detach releases at least its
    // first page, and the cache drops every registration starting in it.
    ulmpi::path::verbs::released(const_cast<void*>(addr), 1);
    return static_cast<int>(ulmpi::path::verbs::result(::syscall(SYS_shmdt, addr)));
}

// With _FILE_OFFSET_BITS=64 the headers rename mmap to mmap64; asm labels
// name both symbols explicitly (they are one function in glibc on 64-bit).
void* ulmpi_hook_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap");
void* ulmpi_hook_mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap64");

__attribute__((visibility("default"))) void* ulmpi_hook_mmap(void* addr, size_t len, int prot, int flags, int fd,
                                                             off_t off)
{
    if ((flags & MAP_FIXED) != 0) {
        ulmpi::path::verbs::released(addr, len);
    }
    long r = ::syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return reinterpret_cast<void*>(ulmpi::path::verbs::result(r));
}

__attribute__((visibility("default"))) void* ulmpi_hook_mmap64(void* addr, size_t len, int prot, int flags, int fd,
                                                               off_t off)
{
    return ulmpi_hook_mmap(addr, len, prot, flags, fd, off);
}

} // extern "C"
#endif // !__SANITIZE_THREAD__
