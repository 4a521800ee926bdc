// The path contract: what ULM may ask of a Send and Receive Layer path.
//
// A path moves bytes between two processes and knows nothing of tags,
// communicators or MPI. It owns its resources (rings, sockets, queues), its
// flow control and its fragment size. ULM builds every fragment (a ULM header
// followed by payload) and hands it to the path in one of two ways:
//
//  * buffered: acquire(peer, len) gives path-owned memory (a shared-memory
//    slot, a staging buffer); ULM writes the header and packs the payload into
//    it (fusing the copy with the checksum), then commit() sends it.
//  * gathered: send(peer, iov) sends a header and a payload gather list; the
//    path copies (or the kernel does) before returning `done`.
//
// A path that cannot take a fragment now answers `again`; ULM queues and
// retries from progress(). Nothing is ever dropped for lack of resources.
//
// Received fragments go up through the Sink that ULM implements. The header is
// contiguous; the payload is either addressable (shared memory) or read by ULM
// through RxFrag::read_payload (datagrams scattered straight into the user
// buffer). The fragment is only valid during the on_frag() call.
//
// Single copy: a path may offer get(): ULM sends a small remote key (made by
// make_rkey on the sender) and the receiver reads the sender's memory
// directly (process_vm_readv on shm, RDMA read on verbs, fi_read on ofi).
// A path whose reads take a network round trip also offers start_get()
// (PathInfo::get_depth > 0): the read is posted and the call returns; the
// path reports its end through Sink::on_get_done() from a later progress(),
// so that ULM keeps several reads (of one message and of several) in flight.
#pragma once

#include "runtime/bootstrap.h"
#include "runtime/status.h"

#include <cstddef>
#include <cstdint>
#include <sys/uio.h>

namespace ulmpi::path {

using rt::Errc;
using rt::Status;

struct PathInfo {
    const char* name = "";
    double bandwidth_mbs = 0;     // striping weight
    double latency_us = 0;
    std::uint32_t max_frag = 0;   // largest fragment (header + payload) the path takes
    std::uint32_t inline_max = 0; // fragments up to this size are cheapest (no buffer)
    // Fragments up to inline_max are written into cache lines of line_bytes,
    // after line_skew bytes of the path's own (shm: 64-byte lines of a FIFO
    // slot behind its 8-byte header), and every line more is one more
    // transfer between the cores. ULM then leaves out an optional 8-byte
    // piggy-backed ACK that would cost a fragment a line (or its inline
    // room): the ACK waits for a later fragment. 0: no such steps.
    std::uint32_t line_bytes = 0;
    std::uint32_t line_skew = 0;
    std::uint64_t eager_limit = 0;
    bool reliable_default = false; // ULM reliability on by default over this path
    // The path can fail while both processes live (a network: a cable, a
    // port, a switch). ULM keeps the fragments of every such path to a peer
    // that has several, so that they survive a fail-over, even where the
    // path is reliable by itself. Self and shared memory share the
    // processes' fate: false.
    bool can_fail = true;
    bool has_get = false;          // get() usable (single copy rendezvous)
    std::uint64_t get_max = 0;     // largest message worth a get() (0: any size)
    // start_get() usable: reads (start_get() calls) the path keeps in
    // flight at once before it answers `again`. 0: only get().
    std::uint32_t get_depth = 0;
    // Arrival order of fragments to one peer, when none is lost: one order
    // for everything (a FIFO), per lane (a socket per lane), or none
    // (striped). ULM resends a fragment early only when a fragment sent after
    // it in the same order has been acknowledged.
    enum class Order : std::uint8_t { total, per_lane, none };
    Order order = Order::total;
    // Fragments reach the peer through this machine's kernel network stack
    // (sockets): a waiting rank must not spin without giving the CPU away,
    // or the kernel's deferred network work (veth, loopback) waits for it.
    bool kernel_delivery = false;
    // Nothing is dropped for lack of room on the way: the transport below
    // the path has flow control end to end (TCP's window under libfabric's
    // rxm, rxd's own window, a shared-memory queue). ULM then does not pace
    // the path's bulk data (ulm_pace): the transport already keeps queues
    // bounded, and ULM's cap only stalled it.
    bool lossless = false;
    // Another process reads a fragment's bytes next, straight from the
    // transmit buffer (shared memory): ULM writes large checksummed
    // payloads into it with non-temporal stores (rt::crc32c_copy_stream),
    // so the reader fetches them from memory, not from the writer's cache.
    bool streamed_tx = false;
};

// Counters every path keeps; ULM adds its own per peer.
struct PathCounters {
    std::uint64_t frags_sent = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t frags_received = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t send_again = 0;   // times the path answered `again`
    std::uint64_t gets = 0;
    std::uint64_t get_bytes = 0;
};

class RxFrag {
public:
    int peer = -1;                       // sender's world rank
    const std::byte* data = nullptr;     // header, then payload when addressable
    std::size_t len = 0;                 // header + payload bytes
    bool addressable = true;             // payload can be read at data + header length
    // Copies payload bytes [offset, offset + total of iov) into iov (for paths
    // whose payload is not addressable). Returns bytes copied. ULM may call it
    // several times with increasing offsets (in slices of iovecs); a datagram
    // path reads the whole datagram at the first call, scattering what the
    // iovecs cover and keeping the rest for the following calls. A fragment
    // whose payload ULM never reads is discarded by the path after on_frag().
    virtual std::size_t read_payload(std::size_t offset, const iovec* iov, int iovcnt);

protected:
    ~RxFrag() = default;
};

// Where ULM's header of a fragment ends, for paths that split header and
// payload themselves (a datagram path scatters the payload of a
// non-addressable fragment into ULM's iovecs, so it must know where the
// payload starts) without reading ULM's wire format. `data` holds the first
// `len` bytes of the fragment (at least kMaxFragHeader of them when the
// fragment is that long). ULM installs the function at init; until then, or
// for bytes that are not a fragment ULM knows, the answer is 0.
using FragHeaderLengthFn = std::size_t (*)(const std::byte* data, std::size_t len);
void set_frag_header_length(FragHeaderLengthFn fn);
std::size_t frag_header_length(const std::byte* data, std::size_t len);
inline constexpr std::size_t kMaxFragHeader = 128; // ULM's headers are never longer

class Path;

class Sink {
public:
    virtual void on_frag(Path& path, RxFrag& frag) = 0;
    // Evidence the path has of its own: it cannot reach `peer` now (a link
    // or port went down, error completions), or it can again (the port came
    // back). `peer` -1 means every peer. ULM's per-peer link decides what to
    // do (fail over to another path, probe, take the path back); the path
    // keeps working as well as it can and never drops a fragment silently
    // because of it.
    virtual void on_path_down(Path& path, int peer) = 0;
    virtual void on_path_up(Path& path, int peer) = 0;
    // The end of a read started by path.start_get(..., token): exactly one
    // call per read the path accepted, from its progress() (never from
    // start_get() itself). ok: every byte landed. Otherwise what it wrote
    // is undefined, and the path wrote nothing since: a key error
    // (protocol: the sender's registration is gone) does not blame the
    // path; an error of the transport also went up as on_path_down(). A
    // sink that never calls start_get() never receives it.
    virtual void on_get_done(Path& path, std::uint64_t token, Status st)
    {
        (void)path, (void)token, (void)st;
    }

protected:
    ~Sink() = default;
};

// What a fragment is, for paths that keep traffic apart (udp: a socket for
// control and first fragments, another for data of messages already
// matched, which never needs unbounded buffering).
enum class Lane : std::uint8_t { control, bulk };

struct TxBuffer {
    std::byte* data = nullptr; // room for `cap` bytes
    std::size_t cap = 0;
    std::uintptr_t token = 0;  // path-private
    Lane lane = Lane::control; // set by the caller before acquire()
};

// done: the fragment left (or will: the path owns it now). again: no room
// now; nothing was consumed, ULM queues and retries. failed: the path knows
// it cannot reach the peer now (the local link is down, the endpoint is in
// error); the fragment did not leave, and ULM sends it over another path.
enum class SendResult : std::uint8_t { done, again, failed };

class Path {
public:
    Path() = default;
    Path(const Path&) = delete;
    Path& operator=(const Path&) = delete;
    virtual ~Path() = default;

    virtual const PathInfo& info() const = 0;
    // Wire-up, in three steps around bootstrap fences:
    //   open(): create resources, put() addresses.       [fence]
    //   connect(): read peers' addresses, attach.          [fence]
    //   connected(): clean up names (unlink files), start.
    virtual Status open(rt::Bootstrap& boot) = 0;
    virtual Status connect(rt::Bootstrap& boot) = 0;
    virtual Status connected(rt::Bootstrap& boot) { (void)boot; return Errc::ok; }
    virtual void close() = 0;
    // A region of the host's shared memory for the layers above, among the
    // job's ranks of this host (the MPI layer keeps MPI_COMM_WORLD's
    // collectives there), reserved during the wire-up so that using it needs
    // no agreement of its own: reserve before open(), every local rank the
    // same size; after connect(), shared_area() gives it (zeroed, the same
    // memory at every local rank) or nullptr when this path keeps none.
    virtual void reserve_shared_area(std::size_t bytes) { (void)bytes; }
    virtual std::byte* shared_area(std::size_t* bytes) const
    {
        (void)bytes;
        return nullptr;
    }

    // A peer replaced by a new process (FT-MPI REBUILD), in two steps around
    // the fence that the new process joins (its own wire-up is open/connect
    // as usual, knowing it is a respawned process by JobInfo::incarnation):
    //   reset_peer(): the old process is dead; forget everything about it
    //     (queued fragments, buffers it held, its addresses) and send or
    //     accept nothing with it until connect_peer(). A path whose address
    //     for the peer is per peer (verbs: a queue pair per peer) makes a new
    //     one here and put()s it, so that the new process reads it after the
    //     fence.                                            [fence]
    //   connect_peer(): read the new process's addresses, attach to it.
    //     Also called without reset_peer() for a process spawned into a slot
    //     that no process held (MPI_Comm_spawn): what the path published at
    //     its wire-up for that slot is what the new process reads.
    // not_supported: this path cannot take a new process for a peer.
    virtual Status reset_peer(int peer, rt::Bootstrap& boot)
    {
        (void)peer, (void)boot;
        return Errc::not_supported;
    }
    virtual Status connect_peer(int peer, rt::Bootstrap& boot)
    {
        (void)peer, (void)boot;
        return Errc::not_supported;
    }

    // Replica recovery (ft/rep, docs/replication.md "Recovery"): a process
    // forks a new process for a dead peer, which takes the dead one's place.
    //   wipe_peer(): in the forking process, after reset_peer(peer): clear
    //     what the dead process left in memory this path shares with it (shm:
    //     its FIFOs and buffers), so the new process starts from nothing.
    //   become(): in the new process (a copy of the forking one): this path
    //     now serves process `rank`. Nothing is sent to or read from any
    //     peer but `ready` (the forking process) until connect_peer(peer).
    //     The new process runs on the forking process's host, which may not
    //     be where `rank` was placed (rt::JobInfo::same_segment): a path
    //     that cannot serve `rank` there reaches nobody afterwards (shm:
    //     the host's segment has no region for it). A path whose addresses
    //     are the process's own (udp: its sockets) leaves the forking
    //     process's alone, makes new ones and put()s them as `rank`'s
    //     (become_publishes()); the forking process reads them in
    //     connect_peer() once they are stored (Bootstrap::sync), and every
    //     other peer after its reset_peer() (Bootstrap::forget).
    // can_become(): the path can do both (shm, self, udp); a path that
    // cannot is closed in the new process if it reaches no peer, else
    // recovery is refused.
    virtual bool can_become() const { return false; }
    virtual bool become_publishes() const { return false; }
    virtual Status wipe_peer(int peer)
    {
        (void)peer;
        return Errc::not_supported;
    }
    virtual Status become(int rank, int ready, rt::Bootstrap& boot)
    {
        (void)rank, (void)ready, (void)boot;
        return Errc::not_supported;
    }

    virtual bool can_reach(int peer) const = 0;

    // Buffered send. acquire() returns false (again) when no room now.
    virtual bool acquire(int peer, std::size_t len, TxBuffer& out) = 0;
    virtual SendResult commit(int peer, const TxBuffer& buf, std::size_t len) = 0;
    // Gathered send; the default packs into acquire()d memory.
    virtual SendResult send(int peer, const iovec* iov, int iovcnt, Lane lane = Lane::control);

    // Single copy. make_rkey describes local memory for a peer to read (returns
    // the key length, 0 when the memory cannot be described in `cap` bytes);
    // get() reads `local` total bytes from the remote memory, starting at
    // byte `remote_offset` of the described region.
    virtual std::size_t make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap)
    {
        (void)iov, (void)iovcnt, (void)out, (void)cap;
        return 0;
    }
    virtual Status get(int peer, const void* rkey, std::size_t rkey_len,
                       std::uint64_t remote_offset, const iovec* local, int nlocal)
    {
        (void)peer, (void)rkey, (void)rkey_len, (void)remote_offset, (void)local, (void)nlocal;
        return Errc::not_supported;
    }
    // get() without waiting (PathInfo::get_depth > 0). ok: the read is
    // under way; the path keeps what it needs of the key and of `local`'s
    // list (not the memory: that is written until the end), and reports
    // the end once to the sink of its progress() as on_get_done(token).
    // again: `get_depth` reads are in flight; nothing started, try after
    // an on_get_done. Any other error: nothing started, nothing reported
    // (a key that does not cover the read, a peer the path cannot reach).
    virtual Status start_get(int peer, const void* rkey, std::size_t rkey_len,
                             std::uint64_t remote_offset, const iovec* local, int nlocal,
                             std::uint64_t token)
    {
        (void)peer, (void)rkey, (void)rkey_len, (void)remote_offset, (void)local, (void)nlocal,
            (void)token;
        return Errc::not_supported;
    }
    // The reads from `peer` started by start_get and not yet reported are
    // given up (the link saw them stall while the peer answered over another
    // path): each is reported by a later progress() with an error. Their
    // memory may still be written by pieces the provider had posted, until
    // orphan_reads() is 0 again (a provider cannot always take back a posted
    // read). False: the path cannot give reads up; they end as they will.
    virtual bool abandon_gets(int peer)
    {
        (void)peer;
        return false;
    }
    // Pieces of reads that ended without them (given up, timed out) and that
    // the provider may still complete, writing into their memory.
    virtual std::size_t orphan_reads() const { return 0; }

    // Delivers received fragments to the sink; returns how many.
    virtual int progress(Sink& sink) = 0;

    // Work under way that only this process's progress() calls advance,
    // though no fragment may come of it for a while (a libfabric provider
    // with manual progress: sends in flight, a peer reading our memory):
    // a waiting rank then yields the CPU between polls but does not sleep.
    virtual bool needs_polling() const { return false; }

    // Whether the path may be driven by several threads at once when
    // rt::fine_locks() is on: acquire()/commit()/get() for different peers
    // (ULM serializes those for one peer), progress() in several threads,
    // each beside sends. A path that says so guards its shared state with
    // rt::OptMutex (it may hold a lock from acquire() to commit(): ULM
    // always commits what it acquired, and acquires nothing in between);
    // progress() must hand the fragments of one peer on one lane to the
    // sink in order, from one thread at a time (shm: per FIFO, udp: per
    // socket). Others are driven by one thread at a time (ULM then keeps
    // one lock for the engine).
    virtual bool concurrent() const { return false; }

    // Whether a path is used for a peer (up, suspect, down, probed again) is
    // the per-peer link's business in ULM, not the path's.
    const PathCounters& counters() const { return counters_; }
    // One line for ulmpi_info / --stats about how this path moves data.
    virtual const char* describe() const { return info().name; }

protected:
    PathCounters counters_;
};

} // namespace ulmpi::path
