#include "ft/intra/stage.h"

#include <sys/mman.h>

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

Stage::~Stage() { release(); }

Stage& process_stage()
{
    static Stage s;
    return s;
}

void Stage::release()
{
    if (base_ != nullptr) {
        ::munmap(base_, cap_);
    }
    base_ = nullptr;
    cap_ = 0;
    huge_ = false;
}

bool Stage::reserve(std::uint64_t bytes)
{
    if (bytes <= cap_) {
        return true;
    }
    release();
    const std::uint64_t cap = (bytes + kHuge - 1) / kHuge * kHuge;
    // Map one huge page more than needed and trim both ends to a kHuge
    // aligned area: the kernel backs an aligned 2 MiB extent with one page.
    const std::uint64_t len = cap + kHuge;
    void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        return false;
    }
    const auto raw = reinterpret_cast<std::uintptr_t>(m);
    const std::uintptr_t base = (raw + kHuge - 1) / kHuge * kHuge;
    if (base > raw) {
        ::munmap(m, base - raw);
    }
    const std::uintptr_t tail = base + cap;
    if (raw + len > tail) {
        ::munmap(reinterpret_cast<void*>(tail), raw + len - tail);
    }
    base_ = reinterpret_cast<std::byte*>(base);
    cap_ = cap;
    huge_ = ::madvise(base_, cap_, MADV_HUGEPAGE) == 0;
    return true;
}

} // namespace ulmpi::intra
