// A rail: one path to one peer, as that peer's link sees it (link.h).
//
// A rail is up, or down. It is declared down by its own evidence: the path
// says so (Sink::on_path_down, a send answered `failed`), or an ACK showed
// one of its fragments missing (the fragment after LIDS, or a clear bit of
// the SACK map) and it made no progress for a deadline while ACKs freed
// fragments sent on another rail. A fragment that is merely not mentioned
// (its ACK lost, and the later maps start above it) says nothing against
// its rail, nor does a peer that is merely heard, or paused. A down rail carries nothing but probes, at growing
// intervals, until one is answered; then it is up again.
//
// What the link measures on each rail, for striping:
//   inflight  bytes sent on it and not yet acknowledged (a fragment counts
//             on the rail of its last transmission only)
//   rate      delivery rate in bytes per microsecond: bytes acknowledged
//             over a sampling interval while the rail was busy (a rail that
//             waits for data tells nothing about its speed); it starts at
//             the path's nominal bandwidth, follows a slower rail down and
//             a faster one up
//   srtt      round trip of fragments sent on it (and of its probes), and
//             the shortest one seen, which sizes the in-flight cap (the
//             smoothed one grows with the queue the cap is meant to bound)
#pragma once

#include "paths/path.h"
#include "runtime/clock.h"

#include <cstdint>

namespace ulmpi::ulm {

struct RailCounters {
    std::uint64_t frags_sent = 0;     // first transmissions and resends
    std::uint64_t bytes_sent = 0;     // payload bytes
    std::uint64_t resends = 0;        // of which resends
    std::uint64_t frags_received = 0;
    std::uint64_t bytes_received = 0; // fragment bytes (header included)
    std::uint64_t downs = 0;          // times declared down
    std::uint64_t ups = 0;            // times taken back after a probe was answered
    std::uint64_t probes = 0;         // probes sent while down
    std::uint64_t reads_given_up = 0; // times its stalled reads were given up (failed over)
};

struct Rail {
    enum class State : std::uint8_t { up, down };

    path::Path* path = nullptr;
    State state = State::up;
    bool reliable = false;          // fragments sent over it are kept until acknowledged
    bool standby = false;           // much slower than the peer's best: used only when no faster rail is up
    bool checksum = false;          // CRC32C on fragments sent over this rail
    bool streamed = false;          // path::PathInfo::streamed_tx: rendezvous data is
                                    // packed into its buffers with non-temporal stores
    std::uint32_t max_frag = 0;     // path's largest fragment (header + payload)
    std::uint32_t inline_max = 0;   // path::PathInfo::inline_max, line_bytes, line_skew
    std::uint32_t line_bytes = 0;
    std::uint32_t line_skew = 0;

    // Whether `more` bytes would cost a fragment of `n` bytes one more line
    // transfer, or its inline room (path::PathInfo::line_bytes).
    bool costs_a_line(std::uint32_t n, std::uint32_t more) const
    {
        if (line_bytes == 0 || n > inline_max) {
            return false;
        }
        if (n + more > inline_max) {
            return true;
        }
        const std::uint32_t lines = (n + line_skew + line_bytes - 1) / line_bytes;
        return (n + more + line_skew + line_bytes - 1) / line_bytes > lines;
    }

    // In flight.
    std::uint64_t inflight = 0;     // bytes (payload + header) not yet acknowledged
    std::uint32_t inflight_frags = 0;
    rt::Nanos progress_at = 0;      // last ACK progress, or when inflight became non-zero
    rt::Nanos acked_at = 0;         // last ACK that freed fragments sent on it
    rt::Nanos missing_at = 0;       // first ACK since its last progress that showed one of its
                                    // fragments missing (LIDS + 1, or a clear bit of the map)

    // Measured.
    double rate = 0;                // bytes per microsecond (MB/s)
    rt::Nanos srtt = 0;             // 0: no sample yet
    rt::Nanos min_rtt = 0;          // shortest round trip seen (0: none yet)
    std::uint64_t acked = 0;        // bytes acknowledged in all
    std::uint64_t sample_acked = 0; // `acked` at sample_start
    rt::Nanos sample_start = 0;
    bool sample_busy = true;        // never short of data since sample_start

    // Single-copy reads over it from the peer (ulm/direct_read.h): messages
    // being read and their bytes, the last time one of them moved; a read
    // that moves nothing for a while has the rail asked (a probe) whether it
    // still carries anything (LinkSet::watch_reads).
    std::uint32_t reads = 0;
    std::uint64_t read_bytes = 0;
    rt::Nanos read_progress_at = 0;
    std::uint64_t read_probe = 0;   // nonce of the probe asked, 0: none
    rt::Nanos read_probe_at = 0;
    bool reads_lost = false;        // its reads were given up (until none is left)

    // Down: probing.
    rt::Nanos next_probe = 0;
    rt::Nanos probe_interval = 0;
    std::uint64_t probe_nonce = 0;
    const char* down_reason = "";

    RailCounters counters;

    bool up() const { return state == State::up; }
    double latency_us() const
    {
        return srtt != 0 ? static_cast<double>(srtt) / 1e3 : path->info().latency_us;
    }
};

} // namespace ulmpi::ulm
