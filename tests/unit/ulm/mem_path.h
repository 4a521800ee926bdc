// MemPath: an in-memory path for tests (implements paths/path.h). All
// MemPaths of one MemFabric live in one process; a committed fragment is
// copied into the receiving path's inbox and handed to that path's sink on
// its next progress().
//
// Knobs that make the engine's hard cases happen on demand:
//   capacity          fragments in flight towards one peer (not yet
//                     delivered); beyond it acquire() answers again
//   order             deliver the inbox first-in-first-out, newest first, or
//                     in a seeded random order
//   max_per_progress  deliver at most this many fragments per progress()
//   paused            deliver nothing (fragments wait: a delay)
//   has_get/fail_get  single-copy reads (memcpy from the sender's memory)
//   get_depth         start_get() too: reads queued (at most this many, then
//                     again), each copied and reported (on_get_done) by a
//                     later progress(), one per call; fail_get is read then,
//                     so a test can fail a path in the middle of a read;
//                     fail_get_after fails every read after that many;
//                     corrupt_gets: the first that many reads land with a
//                     byte flipped (a memory or bus error the path missed)
//   reliable          PathInfo::reliable_default (ULM acknowledges and
//                     retransmits), and then seeded faults on committed
//                     fragments: drop, duplicate, corrupt (one byte flipped)
//   unaddressable     which fragments come up non-addressable (ULM must pull
//                     their payload through RxFrag::read_payload): none, data
//                     fragments only, or all of them
//   max_bytes_per_progress
//                     deliver at most this many bytes per progress() (a
//                     bandwidth: the rails of a multi-rail test differ so)
//   refuse_send       commit() answers `failed` (the path knows it cannot
//                     reach the peer: a link down on this side)
//   latency_us, bandwidth_mbs, inline_max, line_bytes, line_skew
//                     what info() claims
// Several MemPaths of one rank (rails) live on separate fabrics and publish
// their address under their own name.
// The fabric logs every committed fragment so tests can inspect headers.
#pragma once

#include "paths/path.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

namespace ulmpi::test {

class MemPath;

struct FragRecord {
    int src;
    int dst;
    std::vector<std::byte> bytes;
};

struct MemFabric {
    std::recursive_mutex mu; // wire-up runs on several threads
    std::vector<MemPath*> by_rank;
    std::vector<FragRecord> log; // every committed fragment, in commit order
    bool logging = true;
};

enum class Order { fifo, newest_first, random };
enum class Unaddressable { none, data, all };

struct MemPathOptions {
    std::uint64_t eager_limit = 1024;
    std::uint32_t max_frag = 4096;
    bool has_get = false;
    std::uint64_t get_max = 0; // PathInfo::get_max
    std::uint32_t get_depth = 0; // PathInfo::get_depth (start_get)
    std::size_t fail_get_after = ~std::size_t{0}; // reads (get or start_get) that succeed
    std::size_t corrupt_gets = 0; // the first reads that land with their first byte flipped
    std::size_t capacity = 0; // 0: unlimited
    Order order = Order::fifo;
    // What info() claims about order; default: total for fifo, none otherwise.
    std::optional<path::PathInfo::Order> claim_order;
    std::uint32_t seed = 1;
    std::size_t max_per_progress = 0; // 0: all that are queued
    Unaddressable unaddressable = Unaddressable::none;
    bool reach_self = true;
    bool reliable = false;
    double drop = 0; // probabilities per committed fragment
    double duplicate = 0;
    double corrupt = 0;
    const char* name = "mem";
    std::size_t max_bytes_per_progress = 0; // 0: no limit
    bool refuse_send = false;
    double latency_us = 1;
    double bandwidth_mbs = 1000;
    std::uint32_t inline_max = 64;
    std::uint32_t line_bytes = 0; // PathInfo::line_bytes (0: no lines)
    std::uint32_t line_skew = 0;
    // Chosen faults (deterministic tests): called for every committed
    // fragment with its bytes (which it may damage); returns how many copies
    // arrive: 0 drops it, 2 duplicates it. Applied before the random faults.
    std::function<int(int src, int dst, std::vector<std::byte>& bytes)> fault;
};

class MemPath final : public path::Path {
public:
    MemPath(MemFabric& fabric, int rank, MemPathOptions opt = {});
    ~MemPath() override;

    const path::PathInfo& info() const override { return info_; }
    rt::Status open(rt::Bootstrap& boot) override;
    rt::Status connect(rt::Bootstrap& boot) override;
    void close() override;
    bool can_reach(int peer) const override;
    bool acquire(int peer, std::size_t len, path::TxBuffer& out) override;
    path::SendResult commit(int peer, const path::TxBuffer& buf, std::size_t len) override;
    std::size_t make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap) override;
    rt::Status get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                   const iovec* local, int nlocal) override;
    rt::Status start_get(int peer, const void* rkey, std::size_t rkey_len,
                         std::uint64_t remote_offset, const iovec* local, int nlocal,
                         std::uint64_t token) override;
    int progress(path::Sink& sink) override;

    // Test controls.
    MemPathOptions& options() { return opt_; }
    void set_paused(bool on) { paused_ = on; }
    void set_fail_get(bool on) { fail_get_ = on; }
    // start_get() reads stay in flight while held (a link down under them).
    void set_hold_reads(bool on) { hold_reads_ = on; }
    // abandon_gets() reports the reads with io_error and keeps them as
    // orphans; land_orphans() copies them now, as a provider completing
    // them late would (into the memory they were started with).
    bool abandon_gets(int peer) override;
    std::size_t orphan_reads() const override { return orphans_.size(); }
    void land_orphans();
    std::size_t inbox_size() const { return inbox_.size(); }
    std::size_t in_flight_to(int peer) const { return in_flight_[static_cast<std::size_t>(peer)]; }
    // Queues raw bytes as if `from` had sent them (no flow-control credit).
    void inject(int from, const std::byte* bytes, std::size_t len);
    // Acquires larger than max_frag, or commits larger than acquired: the
    // engine broke the contract.
    std::size_t contract_violations() const { return violations_; }
    std::size_t gets() const { return gets_; }
    // start_get() reads queued at most at once, and ended with an error.
    std::size_t max_gets_queued() const { return max_queued_; }
    std::size_t gets_failed() const { return gets_failed_; }
    std::size_t gets_corrupted() const { return gets_corrupted_; }
    struct Faults {
        std::size_t dropped = 0;
        std::size_t duplicated = 0;
        std::size_t corrupted = 0;
    };
    const Faults& faults() const { return faults_; }
    bool open_called() const { return opened_; }

private:
    struct Frag {
        std::vector<std::byte> bytes;
        std::size_t len = 0;
        std::size_t cap = 0;
        int src = -1;
        bool credited = false;
    };
    Frag* new_frag(std::size_t len);
    void free_frag(Frag* f);
    void deliver(Frag* f, path::Sink& sink);
    // get()'s copy, for get() and start_get() at their end.
    rt::Status copy_get(const std::vector<std::byte>& key, std::uint64_t remote_offset,
                        const std::vector<iovec>& local);
    struct Read {
        std::vector<std::byte> key;
        std::uint64_t offset = 0;
        std::vector<iovec> local;
        std::uint64_t token = 0;
    };
    std::deque<Read> reads_;
    std::vector<Read> orphans_;
    std::vector<std::uint64_t> given_up_; // tokens to report with io_error
    bool hold_reads_ = false;
    std::size_t max_queued_ = 0;
    std::size_t gets_failed_ = 0;
    std::size_t gets_corrupted_ = 0;
    std::size_t reads_ended_ = 0;

    MemFabric& fabric_;
    int rank_;
    MemPathOptions opt_;
    path::PathInfo info_;
    std::vector<bool> reach_;
    std::vector<std::size_t> in_flight_;
    std::deque<Frag*> inbox_;
    std::vector<std::unique_ptr<Frag>> all_;
    std::vector<Frag*> free_;
    std::mt19937 rng_;
    bool paused_ = false;
    bool fail_get_ = false;
    bool opened_ = false;
    std::size_t violations_ = 0;
    Faults faults_;
    std::size_t gets_ = 0;
};

} // namespace ulmpi::test
