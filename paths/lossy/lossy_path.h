// The lossy decorator: fault injection for ULM's reliability layer.
//
// LossyPath wraps any path (make_paths applies it to every created path that
// ULMPI_PATH_LOSSY_PATHS selects, when ULMPI_PATH_LOSSY is set) and, in both
// directions, makes fragments suffer the faults of a real network:
//
//   drop      the fragment vanishes
//   dup       it is delivered twice (byte-identical)
//   reorder   it is held back and released after 1..depth later fragments
//             of the same pair (or after hold_us if none comes)
//   delay     it is held for a random time in (0, hold_us]
//   corrupt   1 to 4 distinct random bits are flipped, either in the header
//             or in the payload (chosen uniformly when both exist)
//
// Each fragment suffers at most one fault: a draw u in [0, 1) picks the kind
// from the cumulative rates (so `drop:0.05` drops 5% of the fragments; the
// rates add up to at most 1). Draws come from one seeded generator per
// (direction, path, peer) whose seed is derived from `seed ^ rank`: ranks
// differ, and a run is reproducible as far as each pair's fragment order is.
//
// Send side: acquire() hands out one of the decorator's staging buffers;
// commit() decides the fate of the fragment and forwards it to the inner
// path's gathered send() once or twice, or holds it. An inner `again` keeps
// the fragment queued here (per-peer order is kept) and it is retried from
// progress() or the next commit(); acquire() answers `again` upward only
// when the decorator's own queue (`queue` fragments) is full. Held
// fragments leave only while this process calls progress() (ULM's
// reliability keeps finalize progressing until everything is acknowledged).
// Receive side: progress() passes the inner path a Sink of ours. A fragment
// that is not faulted goes up untouched (no copy); a dropped one is not
// delivered; any other fault first copies it into private memory (the inner
// path's buffer is never written), then corrupts, duplicates or holds it.
// get()/make_rkey() pass straight through, and so does info() except that
// a decorator that reorders or delays says it keeps no order; describe() says
// "lossy(<inner describe>) <rates>; injected <counts>".
//
// The split between header and payload is ULM's wire format, which paths/
// must not include: ULM installs it with set_lossy_header_length(). Until it
// does, the first min(len, kLossyFallbackHeader) bytes count as the header,
// and non-addressable received fragments are only ever dropped (their
// header length is needed to copy them).
#pragma once

#include "paths/path.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ulmpi::path {

// Parsed ULMPI_PATH_LOSSY ("drop:0.05,corrupt:0.01,dup:0.01,reorder:0.05,
// delay:0.01,seed:7"; optional hold_us, depth, queue).
struct LossyConfig {
    double drop = 0;
    double corrupt = 0;
    double dup = 0;
    double reorder = 0;
    double delay = 0;
    std::uint64_t seed = 1;
    std::uint32_t hold_us = 500;   // longest hold of a delayed or reordered fragment
    std::uint32_t depth = 3;       // a reordered fragment lets 1..depth later ones pass
    std::uint32_t queue = 1024;    // fragments the decorator may hold or queue per direction
    bool tx = true;                // fault what this rank sends
    bool rx = true;                // fault what this rank receives
};

// Parses the ULMPI_PATH_LOSSY text (the direction has its own parameter).
// False with a one-line reason naming what is wrong. Keys not given keep the
// values `out` has.
bool parse_lossy_spec(std::string_view text, LossyConfig& out, std::string& why);

struct LossyFaults {
    std::uint64_t frags = 0;             // fragments seen in this direction
    std::uint64_t dropped = 0;
    std::uint64_t duplicated = 0;
    std::uint64_t reordered = 0;
    std::uint64_t delayed = 0;
    std::uint64_t corrupted_header = 0;
    std::uint64_t corrupted_payload = 0;

    std::uint64_t injected() const
    {
        return dropped + duplicated + reordered + delayed + corrupted_header + corrupted_payload;
    }
    LossyFaults& operator+=(const LossyFaults& o);
};

struct LossyCounters {
    LossyFaults tx;
    LossyFaults rx;
    LossyFaults total() const
    {
        LossyFaults t = tx;
        t += rx;
        return t;
    }
};

// Faults injected by every lossy decorator created in this process (also
// after they are destroyed), and a reset for tests.
LossyCounters lossy_counters();
void reset_lossy_counters();

// ULM's header length of a fragment (0 when the bytes are not a fragment it
// knows). `data` holds at least the header (all `len` bytes when addressable).
using HeaderLengthFn = std::size_t (*)(const std::byte* data, std::size_t len);
void set_lossy_header_length(HeaderLengthFn fn);
inline constexpr std::size_t kLossyFallbackHeader = 32;

class LossyPath final : public Path {
public:
    LossyPath(std::unique_ptr<Path> inner, const LossyConfig& cfg, int my_rank);
    ~LossyPath() override;

    const PathInfo& info() const override;
    Status open(rt::Bootstrap& boot) override { return inner_->open(boot); }
    Status connect(rt::Bootstrap& boot) override { return inner_->connect(boot); }
    Status connected(rt::Bootstrap& boot) override { return inner_->connected(boot); }
    void close() override;
    // Fragments still held for the old process carry its epoch: ULM refuses them.
    Status reset_peer(int peer, rt::Bootstrap& boot) override
    {
        return inner_->reset_peer(peer, boot);
    }
    Status connect_peer(int peer, rt::Bootstrap& boot) override
    {
        return inner_->connect_peer(peer, boot);
    }
    bool can_reach(int peer) const override { return inner_->can_reach(peer); }

    bool acquire(int peer, std::size_t len, TxBuffer& out) override;
    SendResult commit(int peer, const TxBuffer& buf, std::size_t len) override;

    std::size_t make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap) override
    {
        return inner_->make_rkey(iov, iovcnt, out, cap);
    }
    Status get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
               const iovec* local, int nlocal) override;
    // Straight through; the end comes up through the decorator's sink, and
    // is counted there (gets_started_ keeps each read's bytes until then).
    Status start_get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                     const iovec* local, int nlocal, std::uint64_t token) override;

    int progress(Sink& sink) override;
    const char* describe() const override;

    Path& inner() { return *inner_; }
    const LossyConfig& config() const { return cfg_; }
    const LossyCounters& faults() const { return faults_; }
    // Fragments the decorator holds or queues now (both directions).
    std::size_t held() const;

private:
    enum class Fault : std::uint8_t { none, drop, corrupt, dup, reorder, delay };
    enum Dir : std::uint8_t { tx_dir = 0, rx_dir = 1 };

    struct TxFrag;  // a staged outgoing fragment
    struct RxCopy;  // a private copy of a received fragment
    struct Hold {   // a held fragment (either direction) and when it goes
        void* frag; // TxFrag* or RxCopy*
        int peer;
        std::uint32_t passes; // later fragments of the pair still to let pass (reorder)
        std::int64_t due_ns;  // release time
    };
    class RxSink;

    std::uint64_t next(Dir d, int peer);
    Fault draw(Dir d, int peer);
    void bump(Dir d, std::uint64_t LossyFaults::*what);
    void corrupt(Dir d, int peer, std::byte* data, std::size_t len, std::size_t hlen);
    void hold(Dir d, void* frag, int peer, Fault fault);
    void passed(Dir d, int peer);

    // send side
    TxFrag* take_tx();
    void free_tx(TxFrag* f);
    SendResult forward(TxFrag* f);
    int pump();
    int release_tx(bool force_oldest);

    // receive side
    void on_rx(Sink& sink, RxFrag& frag);
    void on_get_done(Sink& sink, std::uint64_t token, Status st);
    RxCopy* copy_rx(RxFrag& frag, std::size_t hlen);
    void deliver(Sink& sink, const RxCopy* c);
    void free_rx(RxCopy* c);
    int release_rx(Sink& sink, bool force_oldest);

    std::unique_ptr<Path> inner_;
    LossyConfig cfg_;
    int rank_;
    // Cumulative thresholds of the draw, scaled to 2^64.
    mutable PathInfo info_; // the inner path's, refreshed by info()
    std::uint64_t t_drop_ = 0, t_corrupt_ = 0, t_dup_ = 0, t_reorder_ = 0, t_delay_ = 0;
    bool any_fault_ = false;
    std::uint64_t base_[2] = {0, 0};
    std::vector<std::uint64_t> streams_[2]; // generator state by peer; 0: not seeded yet

    std::vector<std::pair<std::uint64_t, std::uint64_t>> gets_started_; // (token, bytes)
    std::vector<std::unique_ptr<TxFrag>> tx_all_;
    std::vector<TxFrag*> tx_free_;
    TxFrag* tx_acquired_ = nullptr;  // handed out by acquire(), not committed yet
    std::size_t tx_in_use_ = 0;      // acquired + queued + held
    std::vector<TxFrag*> ready_;     // waiting for the inner path, oldest first
    std::vector<TxFrag*> ready_scratch_;
    std::vector<std::uint32_t> queued_of_peer_; // entries of ready_ by peer
    std::vector<int> blocked_;                  // peers that answered `again` in one pump
    std::vector<Hold> held_[2];                 // oldest first

    std::vector<std::unique_ptr<RxCopy>> rx_all_;
    std::vector<RxCopy*> rx_free_;

    LossyCounters faults_;
    mutable std::string describe_;
};

// The registered decorator: wraps `inner` when ULMPI_PATH_LOSSY is set and
// ULMPI_PATH_LOSSY_PATHS selects it; otherwise returns it unchanged.
std::unique_ptr<Path> lossy_decorate(std::unique_ptr<Path> inner, const rt::JobInfo& job);

} // namespace ulmpi::path
