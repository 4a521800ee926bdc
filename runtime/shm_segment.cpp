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

} // namespace ulmpi::rt
