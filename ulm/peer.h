// Per-peer state of the engine: the paths that reach the peer, both sequence
// counters in each direction, fragments held back until their message
// sequence comes up, and work waiting for path resources.
#pragma once

#include "paths/path.h"
#include "runtime/intrusive_list.h"
#include "ulm/message.h"
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
};

} // namespace ulmpi::ulm
