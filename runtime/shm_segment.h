// A host's shared-memory segment. Two kinds:
//  - anonymous (memfd): our launcher makes one per job and host and hands
//    its descriptor to every process it starts there (ULMPI_SHM_FD); it has
//    no name, so nothing is left in /dev/shm however the job ends, even
//    when the launcher itself is killed (HostSegmentFd, create_in,
//    attach_fd);
//  - named (/dev/shm/<name>), for ranks another launcher started (srun,
//    PMIx, hydra): the creator sizes it, others attach, and unlink() removes
//    the name as soon as every process has attached.
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
    // Sizes the anonymous segment `fd` and maps it (the host's first rank);
    // attach_fd maps it as the first rank sized it (the others). `fd` stays
    // open: it is the caller's.
    Status create_in(int fd, std::size_t size);
    Status attach_fd(int fd, std::size_t size);
    void unlink() noexcept; // removes the name; mappings stay valid
    void detach() noexcept;

    void* base() const noexcept { return base_; }
    std::size_t size() const noexcept { return size_; }
    const std::string& name() const noexcept { return name_; }

private:
    Status map_fd(int fd, std::size_t size);

    void* base_ = nullptr;
    std::size_t size_ = 0;
    std::string name_;
    bool owner_ = false;
};

// The launcher's descriptor of a host's anonymous segment: made empty, once
// per job and host, inherited by every process started there (the host's
// first rank sizes it), closed when no process can join any more (the
// ranks' mappings keep the memory; the last one to go frees it).
class HostSegmentFd {
public:
    HostSegmentFd() = default;
    ~HostSegmentFd() { close(); }
    HostSegmentFd(const HostSegmentFd&) = delete;
    HostSegmentFd& operator=(const HostSegmentFd&) = delete;

    // false and `why` when the kernel refuses (the ranks then name one).
    bool make(std::string& why);
    int fd() const noexcept { return fd_; }
    void close() noexcept;

private:
    int fd_ = -1;
};

} // namespace ulmpi::rt
