// NoticeBoard: how a launcher tells the ranks of its host that a process
// failed, at the cost of one memory load per progress call.
//
// The launcher of a host (mpirun for its own ranks, ulmpi_daemon on another
// host) creates one small shared page per job with memfd_create: no name in
// /dev/shm, so nothing can be left behind however the job ends. The ranks it
// forks inherit the descriptor (ULMPI_NOTICE_FD), map the page read-only and
// close it. Only fault-tolerant jobs (`ft` = ulfm) get a board.
//
//     u32 magic  u16 version  u16 reserved  u32 size (ranks)  u32 nodes
//     u64 generation                       one writer; only grows
//     u64 failed_node[ceil(nodes / 64)]    bit n: every rank of node n failed
//     u32 failed_rank[size]                0: rank r is not marked; k + 1:
//                                          its process of incarnation k failed
//
// The incarnation says which process of a rank failed: a rank whose process
// was replaced (FT-MPI REBUILD, a re-created replica, a spawn slot used
// again) may still carry the mark of the dead one, and a reader that has
// taken in the new process knows the mark is not about it (NoticeFilter).
//
// Writer (one thread of one process): writes the words, then adds 1 to the
// generation with release order. Reader: loads the generation with acquire
// order; when it differs from the last one seen, every word written before
// that increment is visible. The launcher sends the EVENT frame on the
// bootstrap connection first and writes the board after, so a rank that sees
// the new generation usually finds the frame (and its detail) already in its
// socket; the words alone are enough when it does not.
#pragma once

#include "runtime/status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ulmpi::rt {

class NoticeBoard {
public:
    static constexpr std::uint32_t kMagic = 0x4e4f5449; // "NOTI"
    static constexpr std::uint16_t kVersion = 2;

    NoticeBoard() = default;
    ~NoticeBoard();
    NoticeBoard(const NoticeBoard&) = delete;
    NoticeBoard& operator=(const NoticeBoard&) = delete;

    // Writer: a new board for a job of `size` ranks on `nodes` hosts. The
    // descriptor (fd()) is close-on-exec; a spawner passes it on explicitly.
    Status create(int size, int nodes, std::string& why);
    // Reader: maps the board behind `fd` read-only (the caller closes fd)
    // and checks that it is one for `size` ranks and `nodes` hosts.
    Status open(int fd, int size, int nodes, std::string& why);

    bool valid() const { return base_ != nullptr; }
    int fd() const { return fd_; }   // writer only; -1 for a reader
    void close_fd();                 // writer: once every rank is started

    // Writer side. mark_rank: the process of `rank` in `incarnation` failed.
    // clear_rank: the rank was replaced by a new process; a reader that has
    // recorded the failure keeps it until told otherwise
    // (Bootstrap::revived), one that had not sees nothing.
    void mark_rank(int rank, int incarnation);
    void clear_rank(int rank);
    void mark_node(int node);

    // Reader side.
    const std::atomic<std::uint64_t>* generation_word() const { return generation_; }
    std::uint64_t generation() const
    {
        return generation_ == nullptr ? 0 : generation_->load(std::memory_order_acquire);
    }
    // The incarnation of `rank` whose failure is marked, -1: none.
    int failed_incarnation(int rank) const;
    bool rank_failed(int rank) const { return failed_incarnation(rank) >= 0; }
    bool node_failed(int node) const;
    int size() const { return size_; }
    int nodes() const { return nodes_; }

private:
    static std::size_t bytes_for(int size, int nodes);
    void bind(void* base, int size, int nodes);
    void unmap();

    void* base_ = nullptr;
    std::size_t bytes_ = 0;
    int fd_ = -1;
    int size_ = 0;
    int nodes_ = 0;
    std::atomic<std::uint64_t>* generation_ = nullptr;
    std::atomic<std::uint64_t>* nodes_bits_ = nullptr;
    std::atomic<std::uint32_t>* ranks_ = nullptr;
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the notice board needs lock-free atomics in shared memory");

} // namespace ulmpi::rt
