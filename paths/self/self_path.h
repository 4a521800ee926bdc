// The self path: messages a process sends to itself. Fragments wait in a
// local queue until progress() hands them to ULM; single-copy rendezvous is a
// plain memcpy from the sender's buffer.
#pragma once

#include "paths/path.h"
#include "runtime/opt_lock.h"

#include <atomic>
#include <deque>
#include <memory>
#include <vector>

namespace ulmpi::path {

class SelfPath final : public Path {
public:
    explicit SelfPath(int my_rank);
    const PathInfo& info() const override { return info_; }
    Status open(rt::Bootstrap& boot) override;
    Status connect(rt::Bootstrap& boot) override;
    void close() override;
    bool can_reach(int peer) const override { return peer == rank_; }
    bool can_become() const override { return true; }
    Status wipe_peer(int) override { return Errc::ok; }
    Status become(int rank, int, rt::Bootstrap&) override
    {
        rank_ = rank;
        return Errc::ok;
    }
    bool acquire(int peer, std::size_t len, TxBuffer& out) override;
    SendResult commit(int peer, const TxBuffer& buf, std::size_t len) override;
    std::size_t make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap) override;
    Status get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
               const iovec* local, int nlocal) override;
    int progress(Sink& sink) override;
    // Threads (rt::fine_locks): one poller at a time (rx_), the queue and
    // the buffers under q_; a fragment is delivered outside q_, so the
    // sink may send to itself again from on_frag.
    bool concurrent() const override { return true; }

private:
    struct Frag {
        std::vector<std::byte> bytes;
        std::size_t len = 0;
    };
    PathInfo info_;
    int rank_;
    std::deque<Frag*> queue_;
    std::vector<Frag*> free_;
    std::vector<std::unique_ptr<Frag>> all_;
    rt::OptMutex rx_;
    rt::OptMutex q_;
    std::atomic<std::size_t> queued_{0}; // queue_.size(), readable without q_
};

} // namespace ulmpi::path
