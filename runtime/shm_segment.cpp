#include "runtime/shm_segment.h"

#include "runtime/log.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ulmpi::rt {

ShmSegment::~ShmSegment() { detach(); }

Status ShmSegment::create(const std::string& name, std::size_t size)
{
    int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        // A stale segment of a crashed job with the same id: replace it.
        ::shm_unlink(name.c_str());
        fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0) {
        ULMPI_ERROR("shm_open(%s): %s", name.c_str(), std::strerror(errno));
        return Errc::io_error;
    }
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        ULMPI_ERROR("ftruncate(%s, %zu): %s (is /dev/shm large enough?)", name.c_str(), size,
                    std::strerror(errno));
        ::close(fd);
        ::shm_unlink(name.c_str());
        return Errc::no_memory;
    }
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        ULMPI_ERROR("mmap(%s, %zu): %s", name.c_str(), size, std::strerror(errno));
        ::shm_unlink(name.c_str());
        return Errc::no_memory;
    }
    base_ = p;
    size_ = size;
    name_ = name;
    owner_ = true;
    return Errc::ok;
}

Status ShmSegment::attach(const std::string& name, std::size_t size)
{
    int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) {
        ULMPI_ERROR("shm_open(%s): %s", name.c_str(), std::strerror(errno));
        return Errc::io_error;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < size) {
        ULMPI_ERROR("shared segment %s is smaller than expected", name.c_str());
        ::close(fd);
        return Errc::protocol;
    }
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        ULMPI_ERROR("mmap(%s, %zu): %s", name.c_str(), size, std::strerror(errno));
        return Errc::no_memory;
    }
    base_ = p;
    size_ = size;
    name_ = name;
    owner_ = false;
    return Errc::ok;
}

Status ShmSegment::create_in(int fd, std::size_t size)
{
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        ULMPI_ERROR("sizing the host's shared memory (descriptor %d) to %zu bytes: %s", fd, size,
                    std::strerror(errno));
        return errno == EBADF || errno == EINVAL ? Errc::invalid_arg : Errc::no_memory;
    }
    return map_fd(fd, size);
}

Status ShmSegment::attach_fd(int fd, std::size_t size)
{
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ULMPI_ERROR("the host's shared memory (descriptor %d): %s", fd, std::strerror(errno));
        return Errc::invalid_arg;
    }
    if (static_cast<std::size_t>(st.st_size) < size) {
        ULMPI_ERROR("the host's shared memory (descriptor %d) has %lld bytes, %zu expected (are "
                    "all ranks started with the same ULMPI_SHM_* parameters?)",
                    fd, static_cast<long long>(st.st_size), size);
        return Errc::protocol;
    }
    return map_fd(fd, size);
}

Status ShmSegment::map_fd(int fd, std::size_t size)
{
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        ULMPI_ERROR("mmap of the host's shared memory (%zu bytes): %s", size, std::strerror(errno));
        return Errc::no_memory;
    }
    detach();
    base_ = p;
    size_ = size;
    name_.clear();
    owner_ = false;
    return Errc::ok;
}

void ShmSegment::unlink() noexcept
{
    if (!name_.empty()) {
        ::shm_unlink(name_.c_str()); // ENOENT when another process did it first
    }
}

void ShmSegment::detach() noexcept
{
    if (base_ != nullptr) {
        ::munmap(base_, size_);
        base_ = nullptr;
        size_ = 0;
    }
}

bool HostSegmentFd::make(std::string& why)
{
    close();
    fd_ = ::memfd_create("ulmpi-shm", MFD_CLOEXEC);
    if (fd_ < 0) {
        why = std::string("memfd_create: ") + std::strerror(errno);
        return false;
    }
    return true;
}

void HostSegmentFd::close() noexcept
{
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

} // namespace ulmpi::rt
