// Per-peer state of the engine: the paths that reach the peer, both sequence
// counters in each direction, fragments held back until their message
// sequence comes up, and work waiting for path resources.
#pragma once

#include "paths/path.h"
#include "runtime/intrusive_list.h"
#include "ulm/message.h"
#include "ulm/range_set.h"
#include "ulm/reliability.h"
#include "ulm/types.h"
#include "ulm/wire.h"

#include <cstdint>

namespace ulmpi::ulm {

// A control fragment (cts, fin, ack) that found no room on its path.
struct CtrlFrag {
    rt::ListHook hook;
    std::uint32_t len = 0;
    alignas(8) std::byte bytes[kMaxHeader];
};

struct PeerCounters {
    std::uint64_t msgs_sent = 0;
    std::uint64_t msgs_received = 0;
    std::uint64_t frags_sent = 0;
    std::uint64_t frags_received = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t unexpected = 0;   // messages that arrived before their receive
    std::uint64_t out_of_order = 0; // match fragments held ahead of sequence
    std::uint64_t bad_frags = 0;    // malformed fragments dropped
    // reliability
    std::uint64_t retransmits = 0;      // fragments sent again, for one of these reasons:
    std::uint64_t resent_timer = 0;     //   the retransmission timer expired
    std::uint64_t resent_fast = 0;      //   later fragments were acknowledged
    std::uint64_t resent_recovery = 0;  //   a partial ACK after a timeout showed a hole
    std::uint64_t resent_corrupt = 0;   //   the peer answered corrupt
    std::uint64_t crc_header_fail = 0;  // dropped: header checksum wrong
    std::uint64_t crc_payload_fail = 0; // answered corrupt: payload checksum wrong
    std::uint64_t duplicates = 0;       // dropped: already delivered
    std::uint64_t acks_sent = 0;            // ACK fragments
    std::uint64_t acks_received = 0;
    std::uint64_t piggy_acks_sent = 0;      // ACKs carried by other fragments (AckExt)
    std::uint64_t piggy_acks_received = 0;
    std::uint64_t corrupt_acks_received = 0;
};

struct Peer {
    static constexpr int kMaxPaths = 8;

    int rank = -1;
    path::Path* primary = nullptr;          // match and control fragments
    path::Path* paths[kMaxPaths] = {};      // all that reach the peer, by priority
    int npaths = 0;

    MsgSeq next_msg_out{1};                 // next message sequence we send
    MsgSeq expected_in{1};                  // next message sequence we match
    FragSeq next_frag_out{1};               // next fragment sequence we send

    rt::IntrusiveList<Unexpected, &Unexpected::hook> ahead; // sorted by msg_seq
    rt::IntrusiveList<SendMsg, &SendMsg::hook> pending;     // sends waiting, in order
    rt::IntrusiveList<CtrlFrag, &CtrlFrag::hook> ctrl_pending;
    rt::ListHook active_hook;               // on the engine's list of peers with work

    bool failed = false;
    PeerCounters counters;

    // Reliability, receiver side: what arrived from this peer.
    RangeSet received;                      // header intact
    RangeSet delivered;                     // payload intact and processed
    std::uint64_t ack_latest = 0;           // newest delivered seq not yet acknowledged
    bool ack_due = false;                   // an ACK is owed (on the engine's ack_due_ list)
    bool ack_urgent = false;                // ... and must not wait (see Engine::queue_ack)
    std::uint32_t ack_owed = 0;             // fragments it covers
    rt::Nanos ack_deadline = 0;             // when it goes out at the latest (0, -1: set in a later pass)
    rt::ListHook ack_hook;                  // on the engine's list of peers owed an ACK
    // Reliability, sender side: what waits for this peer's ACKs.
    SeqWindow unacked;
    RttEstimate rtt;
    rt::Nanos timer = 0;                    // retransmission timer (while `unacked` is not empty; 0: to be armed)
    std::uint64_t tx_count = 0;             // transmissions to the peer, first ones and resends
    std::uint64_t rtt_seq = 0;              // fragment timed for the round trip (0: none)
    rt::Nanos rtt_sent = 0;                 // ... when it left
    std::uint64_t next_rtt_seq = 1;         // the next one timed is at least this
    bool time_all = false;                  // time every fragment (a kernel path: see Engine::init)
    std::uint32_t backoff = 0;              // timer expiries in a row without progress
    std::uint64_t recover_seq = 0;          // after a timeout: last seq sent then (0: none)
    rt::ListHook unacked_hook;              // on the engine's list of peers with unacked fragments
};

} // namespace ulmpi::ulm
