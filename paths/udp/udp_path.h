// The udp path: ranks on different hosts (or, for testing, on any host) over
// UDP/IPv4, in the spirit of LA-MPI's two-socket design. ULM makes it
// reliable (reliable_default: CRC32C, ACKs, retransmission); the path only
// moves datagrams and keeps strangers out.
//
// Sockets. Every rank binds two non-blocking UDP sockets on each interface
// it uses (udp_addr.h says which): the short socket takes Lane::control
// (eager messages, first fragments of long ones, cts/fin/ACKs), the long
// socket Lane::bulk (data fragments of messages the receiver has already
// matched, so it never holds data nobody asked for). Both ports of every
// interface are published through the bootstrap ("udp.addr").
//
// Datagrams are [udp::Header][ULM fragment] (udp_wire.h). A datagram whose
// header is not this job's (magic, version, lane, token, ranks), that comes
// from an address its sender rank did not publish, or that is longer than
// any fragment, is consumed, counted in Refusals and never reaches ULM.
//
// Sending. acquire() hands out a staging buffer with room for our header in
// front; commit() fills the header and sends it with one sendto(). When the
// socket buffer is full (EAGAIN) the datagram stays on that socket's stall
// slot and acquire() answers `again` for that socket until progress() has
// sent it: ULM queues meanwhile, nothing is dropped for lack of room. The
// gathered send() (used by the lossy decorator) sends header + iovecs with
// one sendmsg() and answers `again` without keeping anything. Errors a
// network makes (unreachable, down) count as a lost datagram; ULM resends.
// On the long socket, datagrams to one peer endpoint are staged back to back
// in the socket's Batch and go with one sendmsg() carrying UDP_SEGMENT (UDP
// GSO): the kernel cuts the batch into datagrams of the first one's size
// (the last may be shorter), each with the header and ULM fragment we wrote,
// so loss and checks stay per datagram. A batch goes when full, when a
// shorter datagram ends it, when the next one cannot join it (another peer
// endpoint, longer), when a window shuts, and at the start and end of every
// progress(). ULMPI_UDP_GSO=off, datagrams beyond the MTU, or a kernel that
// refuses UDP_SEGMENT: datagram by datagram.
//
// Flow control. ULM streams every data fragment of a matched message at
// once, and eager messages as fast as the program posts them; over UDP
// nothing pushes back (on loopback and veth a send never blocks), so a burst
// larger than the receiver's socket buffer is dropped by its kernel and
// resent by ULM. So, per peer and lane, every datagram carries the sender's
// running cost sent so far (`stream`: ULM bytes plus kDatagramCost, about
// what a small datagram takes of the receiver's buffer), every datagram the
// other way carries the highest marks seen (`credit`; ULM's ACKs bring them
// back for free), and acquire() answers `again` while more than the window
// (ULMPI_UDP_WINDOW, ULMPI_UDP_CONTROL_WINDOW) is neither credited nor
// overtaken by a later datagram (a lost datagram does not hold the window:
// a later one's mark passes it). Header-sized fragments (ACKs, cts, fin,
// tiny eager messages: the path cannot tell them apart) may go kSmallSlack
// past the window. A receiver that owes half a window, or has owed anything
// for kCreditDelayNs without a datagram to the sender carrying it, sends a
// header-only credit (which takes no window itself). A window shut for
// ULMPI_UDP_WINDOW_PROBE_US (every credit lost) lets one datagram go.
//
// Receiving. With Ethernet-sized datagrams the long socket has UDP_GRO: one
// recvmsg() returns several datagrams of one sender into a bounce buffer
// (a cmsg gives their size); each is cut out (udp::gro_segment), checked
// on its own and goes up whole and addressable (ULM copies the payload out
// with its CRC check). Otherwise (ULMPI_UDP_GRO=off, refused, or 64 KiB
// datagrams that never coalesce) the long socket is peeked: the first bytes (our header and
// ULM's header) go up as a non-addressable RxFrag; if ULM calls
// read_payload(), one recvmsg() scatters the payload straight into ULM's
// iovecs (the user buffer), with our header and ULM's into scratch memory
// and bytes the iovecs do not cover into a stash that later calls read from.
// A datagram ULM did not read is discarded after on_frag(). The short
// socket reads each datagram whole with one recvmsg() and hands it up as
// addressable: ULM copies eager and control payloads out of the fragment
// anyway, so a peek there would only cost a system call (ULMPI_UDP_PEEK=all
// peeks both sockets).
//
// Rails. With several interfaces chosen (ULMPI_UDP_IF, ULMPI_UDP_SUBNET) each
// interface is a path of its own (udp0, udp1, ...: ULMPI_UDP_RAILS=each),
// so that ULM's per-peer link stripes over them by their measured rates and
// fails over from one to the others; rail k publishes its endpoint as
// "udp.addr" (k = 0) or "udp.addr.k" and sends to the peer's endpoint on
// its own subnet, preferring the peer's rail k there. ULMPI_UDP_RAILS=one
// keeps them in one path that round-robins bulk fragments itself (no
// fail-over between them). A send the kernel refuses for a reason of the
// local network (ENETUNREACH, ENETDOWN, EHOSTUNREACH, EADDRNOTAVAIL: the
// interface went down) is reported to ULM (Sink::on_path_down) at the
// next progress(); the datagram counts as lost and ULM resends it.
//
// Fragment size. By default the largest datagram that needs no IP
// fragmentation on the smallest MTU among the job's chosen interfaces
// (1472 bytes on a 1500-byte Ethernet, 65507 on loopback): with fragmentation
// one lost IP fragment loses the whole datagram, and Linux keeps incomplete
// datagrams for 30 s (net.ipv4.ipfrag_time) and drops every new fragment
// once they fill ipfrag_high_thresh, so sustained loss could stall a job.
// ULMPI_UDP_FRAG_SIZE allows larger datagrams explicitly (IP fragments them).
//
// Threads (concurrent(): ULM's fine mode, ulm/engine.h "Locking"). Locks,
// outermost first; all are rt::OptMutex (nothing below MULTIPLE):
//   Sock::rx     one poller per socket (try_lock: a busy socket is skipped),
//                held while its datagrams go up to ULM, which handles each
//                under the sender's peer lock; a socket's datagrams reach
//                ULM in the order they arrived.
//   chores_      one thread at a time sends what progress() sends (staged
//                batches, stalled datagrams, credits); try_lock.
//   Sock::tx     the socket's send side (stall slot, GSO batch): held from
//                acquire() to commit() (ULM sends under the peer's lock, so
//                threads sending to different peers over different sockets
//                run at once, over one socket one after the other), and
//                by send().
//   flow_[peer]  the peer's flow-control marks and route (PeerAddr).
//   leaves       misc_ (the lists of peers owed a credit or a down report,
//                refusal counts, the last error), slots_ (free TxSlots).
// Counters are bumped with relaxed atomic adds when the locks are on.
#pragma once

#include "paths/path.h"
#include "paths/udp/udp_addr.h"
#include "paths/udp/udp_wire.h"
#include "runtime/opt_lock.h"

#include <atomic>
#include <memory>
#include <netinet/in.h>
#include <string>
#include <vector>

namespace ulmpi::path {

struct UdpOptions {
    std::string ifaces;            // ULMPI_UDP_IF
    std::string subnets;           // ULMPI_UDP_SUBNET
    std::uint64_t frag_size = 0;   // datagram payload incl. our header; 0: from the MTU
    std::uint64_t eager_limit = 0; // 0: what fits one fragment
    std::uint64_t sndbuf = 4u << 20;
    std::uint64_t rcvbuf = 16u << 20;
    bool everywhere = false;          // also ranks on my host (and myself)
    bool peek_all = false;            // peek (non-addressable) on the short socket too
    bool stripe = true;               // bulk fragments round-robin over interface pairs
    int rx_batch = 64;                // datagrams read per socket per progress()
    std::uint64_t window = 0;         // cost in flight per peer and lane; 0: from the rcvbuf
    std::uint64_t control_window = 0; // the short socket's; 0: as window
    std::int64_t probe_us = 1000;     // a shut window lets one datagram through after this
    bool gso = true;                  // bulk datagrams batched into one UDP_SEGMENT send
    bool gro = true;                  // long socket reads coalesced datagrams (UDP_GRO)
    int rail = 0;                     // this path's index among the job's udp rails
    int rails = 1;                    // udp paths per process (one per interface, or one for all)
};

// ULMPI_UDP_* parameters as options; `why` names a malformed one.
bool udp_options_from_params(UdpOptions& out, std::string& why);

class UdpPath final : public Path {
public:
    // What a datagram costs the window besides its bytes (a small datagram
    // takes about this much of the receiver's socket buffer).
    static constexpr std::uint32_t kDatagramCost = 1024;
    // How far past the window header-sized fragments may go.
    static constexpr std::uint32_t kSmallSlack = 64 * (kMaxFragHeader + kDatagramCost);
    // Credit owed this long with no datagram to carry it goes on its own.
    static constexpr std::int64_t kCreditDelayNs = 100000;

    UdpPath(const rt::JobInfo& job, const UdpOptions& opt);
    ~UdpPath() override;

    const PathInfo& info() const override { return info_; }
    Status open(rt::Bootstrap& boot) override;
    Status connect(rt::Bootstrap& boot) override;
    void close() override;
    bool can_reach(int peer) const override;
    // A process spawned after the wire-up (MPI_Comm_spawn): its addresses.
    // A peer replaced by a new process (FT-MPI REBUILD, a spawn slot used
    // again): its addresses and flow-control marks go; connect_peer()
    // reads the new process's from the bootstrap.
    Status reset_peer(int peer, rt::Bootstrap& boot) override;
    Status connect_peer(int peer, rt::Bootstrap& boot) override;
    // Replica recovery (path.h): the forked process closes the forking
    // process's sockets (they stay the forking process's), opens its own
    // and puts their addresses as `rank`'s; every peer's route and
    // flow-control marks start afresh, and nothing is sent to or taken
    // from a peer but `ready` until connect_peer(peer).
    bool can_become() const override { return true; }
    bool become_publishes() const override { return true; }
    Status wipe_peer(int peer) override;
    Status become(int rank, int ready, rt::Bootstrap& boot) override;
    bool acquire(int peer, std::size_t len, TxBuffer& out) override;
    SendResult commit(int peer, const TxBuffer& buf, std::size_t len) override;
    SendResult send(int peer, const iovec* iov, int iovcnt, Lane lane = Lane::control) override;
    int progress(Sink& sink) override;
    const char* describe() const override;
    // Several threads at once: see "Threads" above.
    bool concurrent() const override { return true; }

    // For tests and --stats.
    const udp::Refusals& refusals() const { return refused_; }
    std::uint64_t send_errors() const { return send_errors_; }
    const std::vector<udp::Endpoint>& endpoints() const { return mine_; }
    std::uint64_t token() const { return token_; }
    std::size_t stalled() const; // datagrams waiting for socket room
    // UDP GSO / GRO: batches sent and the datagrams in them, reads that
    // returned several datagrams and the datagrams in them.
    bool gso() const { return gso_segs_.load(std::memory_order_relaxed) > 1; }
    bool gro() const;
    std::uint64_t gso_sends() const { return gso_sends_; }
    std::uint64_t gso_datagrams() const { return gso_datagrams_; }
    std::uint64_t gro_reads() const { return gro_reads_; }
    std::uint64_t gro_datagrams() const { return gro_datagrams_; }
    // Flow control: acquire()/send() refusals for a full window, datagrams let
    // through a window that stayed shut, header-only credits sent.
    std::uint64_t window_stalls() const { return window_stalls_; }
    std::uint64_t window_probes() const { return probes_; }
    std::uint64_t credits_sent() const { return credits_sent_; }
    std::uint64_t window(Lane lane = Lane::bulk) const
    {
        return window_[static_cast<std::size_t>(lane)];
    }

private:
    struct TxSlot; // a staged datagram
    // Consecutive bulk datagrams to one peer endpoint, back to back, sent
    // with one sendmsg() as a UDP GSO batch: all `seg` bytes but the last.
    struct Batch {
        std::unique_ptr<std::byte[]> bytes; // kMaxBatch bytes
        std::size_t head = 0;  // bytes before this are sent (fallback to single sends)
        std::size_t fill = 0;  // bytes staged
        std::size_t seg = 0;   // datagram size (our header + ULM bytes)
        int count = 0;         // datagrams staged
        int peer = -1;
        int remote = -1;       // peer endpoint
        bool sealed = false;   // no more datagrams: last one short, or the socket was full
    };
    struct Sock {
        int fd = -1;
        Lane lane = Lane::control;
        int iface = 0;
        TxSlot* stall = nullptr; // sent when the socket has room again
        Batch batch;             // bulk sockets with GSO
        bool gro = false;        // UDP_GRO granted
        mutable rt::OptMutex rx; // one poller at a time ("Threads")
        mutable rt::OptMutex tx; // the send side, from acquire() to commit()
        // Receive scratch (each socket its own, so two sockets are read at once):
        std::vector<std::byte> whole; // whole datagrams (short socket)
        std::vector<std::byte> peek;  // our header + ULM's header
        std::vector<std::byte> head;  // the same bytes again, consumed by read_payload
        std::vector<std::byte> stash; // payload bytes ULM's iovecs did not cover
        std::vector<std::byte> gro_buf; // coalesced datagrams (long socket with UDP_GRO)
    };
    struct PeerAddr {
        std::vector<udp::Endpoint> eps;
        std::vector<sockaddr_in> to[2]; // by lane, per peer endpoint
        std::vector<udp::Pair> pairs;
        std::uint32_t rr = 0;
        bool reach = false;
        bool held = false;       // a new process's peer, until connect_peer()
        bool credit_due = false; // on credit_due_
        bool down_due = false;   // on down_due_: a local network error to report
        // By lane, in cost units modulo 2^32:
        std::uint32_t sent_end[2] = {0, 0};    // sent to the peer
        std::uint32_t acked_end[2] = {0, 0};   // of that, what the peer says it has seen
        std::uint32_t seen_end[2] = {0, 0};    // highest stream mark seen from the peer
        std::uint32_t credit_told[2] = {0, 0}; // seen_end as last told to the peer
        std::int64_t shut_since[2] = {0, 0};   // window shut since (ns), 0: open
        std::int64_t owed_since = 0;           // credit owed since (ns), while credit_due
    };
    class RxDatagram;
    bool load_peer(int r, rt::Bootstrap& boot, std::uint32_t& mtu);
    // Two sockets per chosen interface, bound (open(), become()).
    Status open_sockets();
    // GSO, GRO and the receive scratch of every socket, for datagrams of
    // datagram_ bytes over the job's smallest MTU mtu_ (connect(), become()).
    void fit_sockets();
    void close_sockets();

    Sock& sock(int iface, Lane lane)
    {
        return socks_[static_cast<std::size_t>(iface) * 2 + static_cast<std::size_t>(lane)];
    }
    // The pair a fragment to `peer` on `lane` takes now.
    const udp::Pair& route(PeerAddr& p, Lane lane);
    bool flush(Sock& s);
    bool flush_batch(Sock& s);
    int flush_batches();
    void gso_refused(int err);
    bool send_slot(Sock& s, TxSlot* slot);
    void free_slot(TxSlot* slot);
    // `len` ULM bytes follow the header, or kCreditOnly: none, a credit.
    void fill_header(udp::Header& h, int peer, Lane lane, std::size_t len);
    static constexpr std::size_t kCreditOnly = ~std::size_t{0};
    bool window_open(PeerAddr& p, Lane lane, std::size_t len);
    bool owes_credit(const PeerAddr& p, std::int64_t now) const;
    void took_header(const udp::Header& h, int src, Lane lane);
    void send_credits();
    void lost(int err, int peer);
    void report_down(Sink& sink);
    int receive(Sock& s, Sink& sink);
    int receive_peeked(Sock& s, Sink& sink, bool peek);
    rt::OptMutex& flow(int peer) { return flow_[static_cast<std::size_t>(peer)]; }
    static void bump(std::uint64_t& counter, std::uint64_t n = 1);
    int receive_gro(Sock& s, Sink& sink);
    bool accept(const Sock& s, const std::byte* d, std::size_t len, const sockaddr_in& from,
                bool truncated, int& src);
    bool known_source(int peer, Lane lane, const sockaddr_in& from) const;
    std::size_t read_datagram(RxDatagram& rx, std::size_t offset, const iovec* iov, int iovcnt);
    void discard(int fd);

    const rt::JobInfo& job_;
    UdpOptions opt_;
    PathInfo info_;
    std::uint64_t token_ = 0;
    std::vector<udp::Iface> ifaces_;
    std::vector<udp::Endpoint> mine_;
    std::vector<Sock> socks_; // 2 per interface: [2i] short, [2i + 1] long
    std::vector<PeerAddr> peers_;
    std::unique_ptr<rt::OptMutex[]> flow_; // per peer ("Threads")
    rt::OptMutex chores_;
    rt::OptMutex misc_;
    rt::OptMutex slots_;
    std::atomic<bool> any_credit_due_{false}; // credit_due_ is not empty
    std::atomic<bool> any_down_due_{false};   // down_due_ is not empty
    std::vector<int> credit_work_;            // send_credits()'s copy (under chores_)
    int actual_sndbuf_ = 0;
    int actual_rcvbuf_ = 0;
    std::size_t datagram_ = 0; // our header + ULM bytes, at most
    std::uint32_t mtu_ = 0;    // the smallest among the job's interfaces
    bool frag_explicit_ = false;

    std::vector<std::unique_ptr<TxSlot>> tx_all_;
    std::vector<TxSlot*> tx_free_;
    std::size_t slot_bytes_ = 0;

    std::atomic<int> gso_segs_{0}; // datagrams per GSO batch; 0: GSO off
    const char* gso_why_ = "off";  // why GSO is off
    const char* gro_why_ = "off";  // why GRO is off
    std::uint64_t gso_sends_ = 0;  // batches sent with one sendmsg
    std::uint64_t gso_datagrams_ = 0;
    std::uint64_t gro_reads_ = 0;  // recvmsg calls that returned several datagrams
    std::uint64_t gro_datagrams_ = 0;

    std::uint32_t window_[2] = {0, 0}; // by lane
    std::int64_t probe_ns_ = 0;
    std::vector<int> credit_due_; // peers owed a header-only credit
    std::vector<int> down_due_;   // peers whose sends failed for a local network reason
    std::string name_;
    std::uint64_t window_stalls_ = 0;
    std::uint64_t probes_ = 0;
    std::uint64_t credits_sent_ = 0;

    udp::Refusals refused_;
    std::uint64_t send_errors_ = 0;
    int last_errno_ = 0;
    mutable std::string describe_;
    bool open_ = false;
};

std::vector<std::unique_ptr<Path>> make_udp_paths(const rt::JobInfo& job);
// The bootstrap key of rail k's endpoints.
std::string udp_addr_key(int rail);

} // namespace ulmpi::path
