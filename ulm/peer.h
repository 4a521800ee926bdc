// Per-peer state of the protocols: the message sequence numbers that keep
// MPI's order between the pair, match fragments held back until their turn,
// sends waiting for path resources, and message counters. Everything about
// the peer that is not about messages (paths, fragment sequence numbers,
// reliability, lifetime) is its Link (link.h).
#pragma once

#include "runtime/intrusive_list.h"
#include "runtime/opt_lock.h"
#include "ulm/link.h"
#include "ulm/message.h"
#include "ulm/types.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ulmpi::ulm {

struct MsgCounters {
    std::uint64_t msgs_sent = 0;
    std::uint64_t msgs_received = 0;
    std::uint64_t bytes_received = 0; // message bytes delivered
    std::uint64_t unexpected = 0;     // messages that arrived before their receive
    std::uint64_t out_of_order = 0;   // match fragments held ahead of sequence
    std::uint64_t get_crc_reused = 0; // single-copy sends that took another's CRC32C (make_get_key)
};

// Everything counted about one peer (Engine::counters).
struct PeerCounters : MsgCounters, LinkCounters {};

struct Peer {
    int rank = -1;
    MsgSeq next_msg_out{1};                 // next message sequence we send
    MsgSeq expected_in{1};                  // next message sequence we match

    rt::IntrusiveList<Unexpected, &Unexpected::hook> ahead; // sorted by msg_seq
    rt::IntrusiveList<SendMsg, &SendMsg::hook> pending;     // sends waiting, in order
    rt::ListHook active_hook;               // on the engine's list of peers with work
    MsgCounters counters;
    std::vector<std::byte> bounce;          // payloads of non-addressable fragments from it
    // The CRC32C of the last single-copy send's bytes to it (Engine::
    // make_get_key): valid for another send of the same bytes while that
    // send (`send_id`) is still under way, since MPI forbids changing a
    // send buffer until its send completes.
    struct GetCrc {
        std::uint64_t send_id = 0;
        const std::byte* base = nullptr;
        std::uint64_t len = 0;
        std::uint32_t crc = 0;
    } get_crc;
    // With fine locks: guards this Peer, its Link and the sends to it
    // (engine.h, "Locking").
    rt::OptMutex lock;
};

} // namespace ulmpi::ulm
