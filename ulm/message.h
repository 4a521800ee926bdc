// Message descriptors. Who owns what:
//  * SendMsg / RecvMsg are created by Engine::isend / irecv from pools and
//    handed to the caller (the MPI layer's request). The caller reads
//    `complete` and the result fields, then calls Engine::release(). ULM frees
//    the descriptor once both the caller has released it and ULM no longer
//    needs it (a rendezvous still waiting for its fin, fragments still waiting
//    for acknowledgement).
//  * Unexpected holds a match fragment that arrived before its receive was
//    posted (header and payload copied out of the path's buffer). It is freed
//    when a receive matches it.
#pragma once

#include "runtime/intrusive_list.h"
#include "runtime/status.h"
#include "ulm/packer.h"
#include "ulm/types.h"
#include "ulm/wire.h"

#include <atomic>
#include <cstdint>

namespace ulmpi::path {
class Path;
}

namespace ulmpi::ulm {

using rt::Errc;

enum class SendMode : std::uint8_t { standard, synchronous, ready };

// MPI completion of a descriptor. With fine locks (engine.h, "Locking") a
// waiting thread reads it without any lock while another thread's progress
// sets it: set with release after every result field, read with acquire
// (both plain moves on x86, so the single-threaded path pays nothing).
class DoneFlag {
public:
    DoneFlag() = default;
    DoneFlag(const DoneFlag& o) : v_(bool(o)) {} // a snapshot (a predicate's result)
    DoneFlag& operator=(const DoneFlag& o) { return *this = bool(o); }
    DoneFlag& operator=(bool v)
    {
        v_.store(v, std::memory_order_release);
        return *this;
    }
    operator bool() const { return v_.load(std::memory_order_acquire); }

private:
    std::atomic<bool> v_{false};
};

// What a completed receive (or a probe) reports.
struct Envelope {
    int source = -1;           // world rank of the sender
    int tag = 0;
    std::uint64_t msg_len = 0; // bytes the sender sent
};

struct SendMsg {
    enum class State : std::uint8_t {
        queued,      // match fragment not sent yet (no resources)
        await_cts,   // rendezvous: waiting for the receiver
        sending,     // rendezvous: data fragments flowing
        await_fin,   // single copy: receiver is reading
        await_sync,  // eager Ssend: waiting for the match acknowledgement
        done,
    };

    rt::ListHook hook;         // peer's pending list
    DataRef data;
    std::uint64_t total = 0;
    int dst = -1;
    int tag = 0;
    ContextId ctx;
    SendMode mode = SendMode::standard;
    State state = State::queued;
    MsgSeq msg_seq;
    std::uint64_t id = 0;      // DescTable id (send_id on the wire)
    std::uint64_t recv_id = 0; // receiver's descriptor once the CTS came
    std::uint64_t next_offset = 0; // next data byte to send
    std::uint64_t limit = 0;       // bytes the receiver accepts
    std::uint32_t unacked = 0;     // reliability: fragments not yet acknowledged
    std::uint32_t holds = 0;       // replication: completions it still waits for
    std::uint64_t rep_seq = 0;     // replication: number in the stream to its logical rank
    DoneFlag complete;         // MPI completion: buffer may be reused
    bool released = false;     // the MPI layer no longer looks at it
    bool cancelled = false;
    Errc error = Errc::ok;
};

struct RecvMsg {
    rt::ListHook hook;         // posted list of its context
    DataRef data;
    std::uint64_t capacity = 0; // bytes the buffer holds
    int src = kAnySource;
    int tag = kAnyTag;
    ContextId ctx;
    std::uint64_t id = 0;       // DescTable id while a rendezvous is in flight
    Envelope env;               // filled at match
    std::uint64_t expected = 0; // min(msg_len, capacity)
    std::uint64_t received = 0;
    std::uint64_t send_id = 0;
    int peer = -1;              // process it matched from (the physical one under replication)
    std::uint64_t rep_seq = 0;  // replication: the message's number in its sender's stream
    bool matched = false;
    DoneFlag complete;
    bool released = false;
    bool cancelled = false;
    bool posted = false;        // on its context's posted list
    // A single-copy read into the buffer is under way (direct_read.h): set
    // when it starts, cleared (release) when the path has reported its end.
    DoneFlag reading;
    Errc error = Errc::ok;
};

// A match fragment that found no posted receive, or arrived ahead of its
// message sequence. Small payloads live inline; larger ones on the heap.
struct Unexpected {
    static constexpr std::uint32_t kInline = 256;

    rt::ListHook hook;
    MatchHeader hdr;
    int peer = -1;              // the process it came from
    int src = -1;               // the source it matches as (the logical rank under replication)
    std::uint64_t rep_seq = 0;  // replication: its number in its sender's stream
    path::Path* via = nullptr;  // the path it came by (a single-copy read goes back over it)
    std::uint32_t payload_len = 0;
    std::byte* heap = nullptr;
    alignas(16) std::byte inline_payload[kInline];

    const std::byte* payload() const { return heap != nullptr ? heap : inline_payload; }
    int source() const { return src; }
    int tag() const { return hdr.tag; }
    ContextId ctx() const { return ContextId(hdr.context); }
};

} // namespace ulmpi::ulm
