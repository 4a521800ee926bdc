// Memory-release hooks for the verbs registration cache.
//
// A registration pins pages; when the program gives its memory back to the
// kernel and maps new memory at the same address, a cached registration of
// that address would make the device read (or write) the old pages. So the
// cache must hear of every release. How:
//
//  * libmpi (and any program linked with paths/) defines munmap, mremap,
//    madvise, shmdt and mmap (MAP_FIXED replaces what was mapped). The
//    dynamic linker binds the program's and every other library's calls to
//    ours (libmpi.so exports them: mpi/libmpi.map); ours tell the listeners
//    (before the pages go) and then make the system call.
//  * glibc's malloc reaches munmap, madvise and brk through internal
//    aliases no symbol can intercept. So, while the cache is on, malloc is
//    told (mallopt) never to give memory back: M_MMAP_MAX 0 (large blocks
//    from the heap, not from their own mappings) and M_TRIM_THRESHOLD off
//    (the heap never shrinks). Memory freed stays mapped to the same pages
//    and is found again by address with its registration still right.
//    Open MPI's "leave pinned" and MVAPICH took the same road.
//  * Not covered (docs/verbs.md): blocks glibc mapped on its own before
//    MPI_Init and freed after it, a program that calls brk/sbrk itself to
//    shrink the heap, and raw system calls. ULMPI_VERBS_REG_CACHE=off
//    registers every rendezvous buffer anew and is always safe.
//
// Why not the kernel: userfaultfd can report unmaps (UFFD_EVENT_UNMAP,
// REMOVE) but the unmapping thread then waits until the event is read,
// which needs a thread of ours; on-demand paging (ODP) registrations follow
// the page tables and need no cache invalidation at all, but only some
// devices offer it (a later step, docs/verbs.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ulmpi::path::verbs {

// Called with a range about to be released (before the system call). Must
// not allocate through malloc in ways that re-enter itself; may deregister.
using ReleaseFn = void (*)(void* ctx, std::uintptr_t addr, std::size_t len);

// Installs the listener (one per process: the registration cache) and
// switches malloc to keep its memory (mallopt). Returns false when the
// hooks are not in this binary's symbol table (no interposition happened).
bool memhook_install(ReleaseFn fn, void* ctx);
void memhook_remove();
// Whether our munmap is the one the program's calls reach.
bool memhook_interposed();
// Releases seen by the hooks (for tests and ulmpi_info).
std::uint64_t memhook_events();

} // namespace ulmpi::path::verbs
