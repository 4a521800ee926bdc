// The shared-memory path between ranks on one host. See shm_fifo.h for the
// FIFOs and shm_layout.h for the segment. Fragments of up to 112 bytes
// (header + payload) travel inside a FIFO slot; larger ones in a buffer of
// the sender's region, referenced from the slot and handed back by the
// receiver through its own FIFO towards the sender (every FIFO keeps a
// single writer). A rank polls only the FIFOs of the peers that rang its
// doorbell (shm_layout.h). Large rendezvous messages are read once, straight from the
// sender's memory, with process_vm_readv where the kernel allows it.
#pragma once

#include "paths/path.h"
#include "paths/shm/shm_fifo.h"
#include "paths/shm/shm_layout.h"
#include "paths/shm/shm_peer_maps.h"
#include "runtime/opt_lock.h"
#include "runtime/shm_segment.h"

#include <atomic>
#include <vector>

namespace ulmpi::path {

class ShmPath final : public Path {
public:
    explicit ShmPath(const rt::JobInfo& job);
    ~ShmPath() override;

    const PathInfo& info() const override { return info_; }
    Status open(rt::Bootstrap& boot) override;
    Status connect(rt::Bootstrap& boot) override;
    Status connected(rt::Bootstrap& boot) override;
    void close() override;
    void reserve_shared_area(std::size_t bytes) override;
    std::byte* shared_area(std::size_t* bytes) const override;
    Status reset_peer(int peer, rt::Bootstrap& boot) override;
    Status connect_peer(int peer, rt::Bootstrap& boot) override;
    bool can_become() const override { return true; }
    Status wipe_peer(int peer) override;
    Status become(int rank, int ready, rt::Bootstrap& boot) override;
    bool can_reach(int peer) const override;
    bool acquire(int peer, std::size_t len, TxBuffer& out) override;
    SendResult commit(int peer, const TxBuffer& buf, std::size_t len) override;
    std::size_t make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap) override;
    Status get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
               const iovec* local, int nlocal) override;
    int progress(Sink& sink) override;
    const char* describe() const override;

    // Whether process_vm_readv works between the ranks of this host.
    bool single_copy() const { return info_.has_get; }
    // How many local peers' FIFOs progress() polls (those that rang).
    std::uint32_t polled_peers() const { return nactive_.load(std::memory_order_relaxed); }
    // Threads (rt::fine_locks): each local peer's FIFO towards us is read by
    // one thread at a time (a poller that finds it busy skips it), its FIFO
    // from us is written under a lock held from acquire() to commit() and
    // by the buffer returns; the free lists of our buffers have a lock.
    bool concurrent() const override { return true; }

private:
    struct Local {
        int rank = -1;                   // world rank
        shm::FifoWriter to;              // my FIFO towards it
        shm::FifoReader from;            // its FIFO towards me
        std::vector<shm::FragRef> returns; // buffers to hand back when `to` has room
        bool ready = true;               // false while the peer is being replaced
        bool announced = false;          // my bit is set in its doorbell (under tx)
        bool polled = false;             // its FIFO is in active_ (under doorbell_lock_)
        rt::OptMutex rx;                 // reading `from` (try-locked by pollers)
        rt::OptMutex tx;                 // writing `to` and `returns`
    };

    // A spawned process: `rank` is one of my parents or of my MPI_COMM_WORLD.
    bool spawn_partner(int rank) const;
    void take_identity();
    int local_index(int world) const
    {
        return world >= 0 && static_cast<std::size_t>(world) < local_of_.size() ? local_of_[static_cast<std::size_t>(world)] : -1;
    }
    std::byte* at(std::size_t offset) const { return static_cast<std::byte*>(seg_.base()) + offset; }
    Status attach_segment();
    void announce(Local& l, std::uint32_t j);
    void answer_doorbell();
    void return_frag(Local& l, const shm::FragRef& ref);
    // Maps the pages of [offset, offset + len) of the segment now.
    bool prefaults() const;
    void prefault(std::size_t offset, std::size_t len);
    bool flush_returns(Local& l);

    PathInfo info_;
    const rt::JobInfo& job_;
    shm::SegmentLayout layout_;
    rt::ShmSegment seg_;
    std::string seg_name_;
    std::vector<int> local_of_;          // world rank -> local index or -1
    std::vector<Local> locals_;          // by local index
    std::uint32_t me_ = 0;               // my local index
    rt::OptMutex free_lock_;             // the two free lists and lent_
    std::vector<std::uint32_t> free_small_;
    std::vector<std::uint32_t> free_large_;
    // Per buffer of mine (small, large): the local index of the peer it was
    // sent to and not yet given back, or -1 (reset_peer takes them back).
    std::vector<std::int32_t> lent_[2];
    std::atomic<std::uint32_t> pending_returns_{0}; // total entries in Local::returns
    // The peers whose FIFOs towards me I poll (local indices, the first
    // nactive_ entries; sized for all, so a poller in another thread reads
    // it while answer_doorbell() appends), and the doorbell they rang.
    std::vector<std::uint32_t> active_;
    std::atomic<std::uint32_t> nactive_{0};
    shm::DoorbellHead* doorbell_; // set in the constructor, then by connect()
    std::atomic<std::uint64_t>* doorbell_bits_ = nullptr;
    std::atomic<std::uint64_t> rings_seen_{0}; // written under doorbell_lock_
    rt::OptMutex doorbell_lock_;
    std::string describe_;
    shm::PeerMaps peer_maps_; // senders' shared areas read with memcpy (get())
    bool open_ = false;
    // False in a forked process that became a rank this host's segment has
    // no region for (placed on another host: path.h, become()): it reaches
    // nobody, and polls a doorbell of its own that nobody rings.
    bool placed_ = true;
    shm::DoorbellHead quiet_bell_{};
};

} // namespace ulmpi::path
