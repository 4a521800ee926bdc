// Single-copy rendezvous (flag::get): the prefix ULM puts in front of a
// path's remote key, and a read of a message under way over a path that
// starts reads without waiting (path::Path::start_get, PathInfo::get_depth).
//
// The receiver of a get match fragment starts the read of the whole
// message (in slices of kMaxIov segments of its buffer) and returns to
// progress at once: the reads of one message and of the messages after it
// are in flight together, up to the path's depth. Each slice ends with
// Sink::on_get_done (Engine::on_get_done); when every slice has ended the
// message is checked (CRC32C, over a checksummed rail), answered with fin
// and completed. A slice that fails (the path went down, the sender's key
// expired, the bytes did not check) ends the read once the others have
// ended, and the receiver asks the sender to stream the message instead
// (cts), over whatever rails the link still has: fail-over as for any
// stream. The receive stays incomplete while the path may write into its
// buffer (RecvMsg::reading); Engine::withdraw waits for that. Over a link
// of several rails the read lands in a bounce buffer first
// (DirectRead::bounce): a read the link gives up (LinkSet::watch_reads) may
// still be written by the provider after it was reported (Path::
// orphan_reads), so only the bounce buffer is exposed to that; single-rail
// links read straight into the receive buffer.
#pragma once

#include "runtime/intrusive_list.h"
#include "ulm/packer.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ulmpi::path {
class Path;
}

namespace ulmpi::ulm {

struct RecvMsg;

// In front of a path's remote key in a get match fragment.
struct GetPrefix {
    std::uint32_t crc;     // CRC32C of the whole message (when checked)
    std::uint32_t checked; // 1: the receiver checks the bytes it read against crc
};
static_assert(sizeof(GetPrefix) == 8);

inline constexpr int kMaxIov = 64;           // segments of one slice (a path call)
inline constexpr std::size_t kMaxGetKey = 256; // key bytes a match fragment carries at most
inline constexpr std::uint64_t kMinReadRun = 256; // mean bytes per piece of a buffer worth reading into

// Whether a receive buffer is worth a direct read: each path call reads at
// most kMaxIov pieces of it, so a buffer in short pieces (a strided vector of
// single ints) fills faster from streamed fragments unpacked by memcpy.
// MPICH's pt2pt/pingping (dtpools' layouts, 1 MiB into runs of one int) took
// 191 s read, 18 s streamed. The sender's side: a read is offered only for a
// message of at least get_min bytes in at most kMaxIov pieces.
inline bool reads_well(const DataRef& d)
{
    const Layout* l = d.layout;
    if (l == nullptr || l->nruns == 0 || d.contiguous_base() != nullptr) {
        return true;
    }
    return l->size >= kMinReadRun * l->nruns;
}

struct DirectRead {
    rt::ListHook hook;        // Engine::reads_waiting_ (the path's depth was full)
    RecvMsg* r = nullptr;
    path::Path* via = nullptr;
    int src = -1;             // the sender's process
    int incarnation = 0;      // the sender's, when the read started
    std::uint64_t send_id = 0;
    GetPrefix pre{};
    std::uint32_t keylen = 0; // the path's key (after the prefix)
    std::uint64_t pos = 0;    // next byte of the message to start reading
    std::uint32_t inflight = 0; // slices started, not ended
    bool failed = false;
    bool waiting = false;     // on reads_waiting_, or being taken off it
    // Over a link of several rails the read may be given up (the link saw
    // it stall: LinkSet::watch_reads) and the message streamed over another
    // rail, while the provider can still complete pieces it had posted: the
    // read then lands here, and is copied out (with its CRC32C) once whole.
    std::unique_ptr<std::byte[]> bounce;
    alignas(8) std::byte key[kMaxGetKey];
};

} // namespace ulmpi::ulm
