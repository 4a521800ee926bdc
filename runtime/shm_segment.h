// A named POSIX shared-memory segment (/dev/shm/<name>). The creator sizes it;
// others attach. unlink() removes the name as soon as every process has
// attached, so nothing is left behind however the job ends afterwards.
#pragma once

#include "runtime/status.h"

#include <cstddef>
#include <string>

namespace ulmpi::rt {

class ShmSegment {
public:
    ShmSegment() = default;
    ~ShmSegment();
    ShmSegment(const ShmSegment&) = delete;
    ShmSegment& operator=(const ShmSegment&) = delete;

    Status create(const std::string& name, std::size_t size);
    Status attach(const std::string& name, std::size_t size);
    void unlink() noexcept; // removes the name; mappings stay valid
    void detach() noexcept;

    void* base() const noexcept { return base_; }
    std::size_t size() const noexcept { return size_; }
    const std::string& name() const noexcept { return name_; }

private:
    void* base_ = nullptr;
    std::size_t size_ = 0;
    std::string name_;
    bool owner_ = false;
};

} // namespace ulmpi::rt
