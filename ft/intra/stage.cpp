#include "ft/intra/stage.h"

#include "runtime/shared_region.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ulmpi::intra {

StagePlan plan_stage(const std::vector<std::uint64_t>& sizes, std::uint64_t min, std::uint64_t max)
{
    StagePlan p;
    p.offset.assign(sizes.size(), kDirect);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (min == 0 || sizes[i] < min) {
            continue;
        }
        const std::uint64_t at = (p.bytes + kStageAlign - 1) / kStageAlign * kStageAlign;
        if (at > max || sizes[i] > max - at) {
            continue; // a later, smaller update may still fit
        }
        p.offset[i] = at;
        p.bytes = at + sizes[i];
    }
    return p;
}

bool thp_madvise_mode(const char* text)
{
    return text != nullptr && std::strstr(text, "[madvise]") != nullptr;
}

Stage::~Stage()
{
    if (owner_ == ::getpid()) {
        release();
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
}

Stage& process_stage()
{
    static Stage s;
    return s;
}

void Stage::release()
{
    if (base_ != nullptr) {
        if (fd_ >= 0) {
            rt::unregister_shared(base_);
        }
        ::munmap(base_, cap_);
    }
    base_ = nullptr;
    cap_ = 0;
    huge_ = false;
}

bool Stage::can_share()
{
    static const bool ok = [] {
        const int fd = ::memfd_create("ulmpi-intra-probe", MFD_CLOEXEC);
        if (fd < 0) {
            return false;
        }
        ::close(fd);
        return true;
    }();
    return ok;
}

namespace {

// A kHuge aligned range of `cap` bytes of address space (nothing mapped in
// it yet: PROT_NONE), or nullptr. The kernel backs an aligned 2 MiB extent
// with one huge page where it may.
std::byte* aligned_range(std::uint64_t cap)
{
    const std::uint64_t len = cap + Stage::kHuge;
    void* m = ::mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        return nullptr;
    }
    const auto raw = reinterpret_cast<std::uintptr_t>(m);
    const std::uintptr_t base = (raw + Stage::kHuge - 1) / Stage::kHuge * Stage::kHuge;
    if (base > raw) {
        ::munmap(m, base - raw);
    }
    const std::uintptr_t tail = base + cap;
    if (raw + len > tail) {
        ::munmap(reinterpret_cast<void*>(tail), raw + len - tail);
    }
    return reinterpret_cast<std::byte*>(base);
}

} // namespace

bool Stage::map_shared(std::uint64_t cap)
{
    struct stat sb {};
    if (::ftruncate(fd_, static_cast<off_t>(cap)) != 0 || ::fstat(fd_, &sb) != 0) {
        return false;
    }
    std::byte* at = aligned_range(cap);
    if (at == nullptr) {
        return false;
    }
    // Populated now: neither this process nor the sibling that maps it
    // takes page faults in a section.
    void* m = ::mmap(at, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd_, 0);
    if (m == MAP_FAILED) {
        ::munmap(at, cap);
        return false;
    }
    base_ = at;
    cap_ = cap;
    (void)::madvise(base_, cap_, MADV_HUGEPAGE); // (taken where shmem_enabled allows)
    (void)rt::register_shared(base_, cap_, fd_, static_cast<std::uint64_t>(sb.st_ino));
    return true;
}

bool Stage::map_private(std::uint64_t cap)
{
    std::byte* at = aligned_range(cap);
    if (at == nullptr) {
        return false;
    }
    void* m = ::mmap(at, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (m == MAP_FAILED) {
        ::munmap(at, cap);
        return false;
    }
    base_ = at;
    cap_ = cap;
    huge_ = ::madvise(base_, cap_, MADV_HUGEPAGE) == 0;
    return true;
}

bool Stage::reserve(std::uint64_t bytes, bool share)
{
    if (owner_ != ::getpid()) {
        // A fork's child (or the first call): what it inherited stays its
        // parent's. Its mapping of the parent's memfd would share the pages.
        if (base_ != nullptr) {
            if (fd_ >= 0) {
                rt::unregister_shared(base_);
            }
            ::munmap(base_, cap_);
        }
        if (fd_ >= 0) {
            ::close(fd_);
        }
        base_ = nullptr;
        cap_ = 0;
        huge_ = false;
        fd_ = -1;
        share_failed_ = false;
        owner_ = ::getpid();
    }
    // (A shared area that could not be made is not tried again.)
    const bool want_shared = share && can_share() && !share_failed_;
    if (bytes <= cap_ && want_shared == (fd_ >= 0)) {
        return true;
    }
    const std::uint64_t cap = (std::max(bytes, cap_) + kHuge - 1) / kHuge * kHuge;
    release();
    if (!share && fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (want_shared && fd_ < 0) {
        fd_ = ::memfd_create("ulmpi-intra-stage", MFD_CLOEXEC);
    }
    if (fd_ >= 0) {
        if (map_shared(cap)) {
            return true;
        }
        ::close(fd_);
        fd_ = -1;
    }
    share_failed_ = share_failed_ || want_shared;
    return map_private(cap);
}

} // namespace ulmpi::intra
