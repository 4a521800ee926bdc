#include "runtime/notice_board.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <type_traits>
#include <unistd.h>

namespace ulmpi::rt {
namespace {

struct BoardHeader {
    std::uint32_t magic;
    std::uint16_t version;
    std::uint16_t reserved;
    std::uint32_t size;
    std::uint32_t nodes;
};
static_assert(sizeof(BoardHeader) == 16);
static_assert(std::has_unique_object_representations_v<BoardHeader>);

std::size_t words(int n) { return (static_cast<std::size_t>(n) + 63) / 64; }

} // namespace

NoticeBoard::~NoticeBoard()
{
    unmap();
    close_fd();
}

std::size_t NoticeBoard::bytes_for(int size, int nodes)
{
    return sizeof(BoardHeader) + 8 * (1 + words(nodes)) + 4 * static_cast<std::size_t>(size);
}

void NoticeBoard::bind(void* base, int size, int nodes)
{
    base_ = base;
    size_ = size;
    nodes_ = nodes;
    auto* p = static_cast<unsigned char*>(base) + sizeof(BoardHeader);
    // The page holds plain words; each is used only through an atomic.
    generation_ = reinterpret_cast<std::atomic<std::uint64_t>*>(p);
    nodes_bits_ = generation_ + 1;
    ranks_ = reinterpret_cast<std::atomic<std::uint32_t>*>(nodes_bits_ + words(nodes));
}

void NoticeBoard::unmap()
{
    if (base_ != nullptr) {
        ::munmap(base_, bytes_);
        base_ = nullptr;
        generation_ = nodes_bits_ = nullptr;
        ranks_ = nullptr;
    }
}

void NoticeBoard::close_fd()
{
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

Status NoticeBoard::create(int size, int nodes, std::string& why)
{
    if (size < 1 || nodes < 1) {
        why = "notice board: a job needs at least one rank and one host";
        return Errc::invalid_arg;
    }
    std::size_t bytes = bytes_for(size, nodes);
    int fd = ::memfd_create("ulmpi-notices", MFD_CLOEXEC);
    if (fd < 0) {
        why = std::string("memfd_create: ") + std::strerror(errno);
        return Errc::io_error;
    }
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        why = std::string("ftruncate of the notice board: ") + std::strerror(errno);
        ::close(fd);
        return Errc::no_memory;
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        why = std::string("mmap of the notice board: ") + std::strerror(errno);
        ::close(fd);
        return Errc::no_memory;
    }
    unmap();
    close_fd();
    // ftruncate zero-filled it: generation 0, nothing marked.
    BoardHeader h{kMagic, kVersion, 0, static_cast<std::uint32_t>(size),
                  static_cast<std::uint32_t>(nodes)};
    std::memcpy(p, &h, sizeof h);
    bytes_ = bytes;
    fd_ = fd;
    bind(p, size, nodes);
    return Errc::ok;
}

Status NoticeBoard::open(int fd, int size, int nodes, std::string& why)
{
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
        why = std::string("notice board descriptor: ") + std::strerror(errno);
        return Errc::invalid_arg;
    }
    std::size_t bytes = bytes_for(size, nodes);
    if (static_cast<std::size_t>(st.st_size) != bytes) {
        why = "notice board has " + std::to_string(st.st_size) + " bytes, a job of " +
              std::to_string(size) + " ranks on " + std::to_string(nodes) + " host(s) needs " +
              std::to_string(bytes);
        return Errc::protocol;
    }
    void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        why = std::string("mmap of the notice board: ") + std::strerror(errno);
        return Errc::no_memory;
    }
    BoardHeader h{};
    std::memcpy(&h, p, sizeof h);
    if (h.magic != kMagic || h.version != kVersion || h.size != static_cast<std::uint32_t>(size) ||
        h.nodes != static_cast<std::uint32_t>(nodes)) {
        ::munmap(p, bytes);
        why = "the notice board's header does not match this job";
        return Errc::protocol;
    }
    unmap();
    bytes_ = bytes;
    bind(p, size, nodes);
    return Errc::ok;
}

void NoticeBoard::mark_rank(int rank, int incarnation)
{
    if (ranks_ == nullptr || rank < 0 || rank >= size_ || incarnation < 0) {
        return;
    }
    ranks_[static_cast<std::size_t>(rank)].store(static_cast<std::uint32_t>(incarnation) + 1,
                                                 std::memory_order_relaxed);
    generation_->fetch_add(1, std::memory_order_release);
}

void NoticeBoard::clear_rank(int rank)
{
    if (ranks_ == nullptr || rank < 0 || rank >= size_) {
        return;
    }
    ranks_[static_cast<std::size_t>(rank)].store(0, std::memory_order_relaxed);
    generation_->fetch_add(1, std::memory_order_release);
}

void NoticeBoard::mark_node(int node)
{
    if (nodes_bits_ == nullptr || node < 0 || node >= nodes_) {
        return;
    }
    auto n = static_cast<std::size_t>(node);
    nodes_bits_[n / 64].fetch_or(std::uint64_t{1} << (n % 64), std::memory_order_relaxed);
    generation_->fetch_add(1, std::memory_order_release);
}

int NoticeBoard::failed_incarnation(int rank) const
{
    if (ranks_ == nullptr || rank < 0 || rank >= size_) {
        return -1;
    }
    return static_cast<int>(ranks_[static_cast<std::size_t>(rank)].load(std::memory_order_relaxed)) -
           1;
}

bool NoticeBoard::node_failed(int node) const
{
    if (nodes_bits_ == nullptr || node < 0 || node >= nodes_) {
        return false;
    }
    auto n = static_cast<std::size_t>(node);
    return (nodes_bits_[n / 64].load(std::memory_order_relaxed) >> (n % 64) & 1) != 0;
}

} // namespace ulmpi::rt
