#include "paths/udp/udp_path.h"

#include "paths/registry.h"
#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ulmpi::path {

using udp::Header;

namespace {

const rt::TextParam if_param{
    "udp_if", "",
    "interfaces the udp path binds, comma-separated (empty: see udp_subnet; else loopback for a "
    "one-host job, the first non-loopback interface that is up otherwise)"};
const rt::TextParam subnet_param{"udp_subnet", "",
                                 "IPv4 subnets such as 10.0.0.0/24, comma-separated: the udp path "
                                 "binds every interface in them"};
const rt::SizeParam frag_param{
    "udp_frag_size", 0,
    "bytes of a udp datagram (24-byte path header + ULM fragment); 0: the largest that needs no IP "
    "fragmentation on the smallest MTU of the job; more lets IP fragment"};
const rt::SizeParam eager_param{
    "udp_eager_limit", 0,
    "messages up to this size go eagerly over udp (0: what fits one datagram)"};
const rt::SizeParam sndbuf_param{"udp_sndbuf", 4u << 20,
                                 "SO_SNDBUF of each udp socket (SO_SNDBUFFORCE where allowed)"};
const rt::SizeParam rcvbuf_param{"udp_rcvbuf", 16u << 20,
                                 "SO_RCVBUF of each udp socket (SO_RCVBUFFORCE where allowed)"};
const rt::ChoiceParam everywhere_param{
    "udp_everywhere", "auto",
    "udp also between ranks of one host: auto (when shm is not in ULMPI_PATH_INCLUDE), on, off",
    "auto|on|off"};
const rt::ChoiceParam peek_param{
    "udp_peek", "bulk",
    "udp sockets whose datagrams are peeked and scattered into the user buffer: bulk (the long "
    "socket), all (also the short one)",
    "bulk|all"};
const rt::ChoiceParam stripe_param{"udp_stripe", "rr",
                                   "bulk fragments over several interfaces: rr (round robin per "
                                   "fragment), first (first pair only)",
                                   "rr|first"};
const rt::SizeParam window_param{
    "udp_window", 0,
    "bytes (plus 1 KiB per datagram) a rank may have in flight to one peer on one udp socket "
    "before it waits for credit (0: half the receive buffer the kernel grants, shared by the "
    "peers, at most a quarter to one)"};
const rt::SizeParam control_window_param{
    "udp_control_window", 0,
    "the same as udp_window for the short socket (eager messages and control); 0: as udp_window"};
const rt::IntParam probe_param{
    "udp_window_probe_us", 1000,
    "a udp window shut this long (microseconds) lets one datagram through (a credit was lost)"};
const rt::ChoiceParam gso_param{
    "udp_gso", "on",
    "bulk udp datagrams to one peer sent in batches with one sendmsg (UDP GSO: the kernel splits "
    "them into datagrams of equal size, each with its own header): on, off",
    "on|off"};
const rt::ChoiceParam gro_param{
    "udp_gro", "on",
    "the long udp socket reads coalesced datagrams (UDP_GRO) into a bounce buffer and splits them; "
    "off: it peeks and scatters each payload into the user buffer",
    "on|off"};
const rt::IntParam batch_param{"udp_rx_batch", 64,
                               "datagrams read from each udp socket per progress call"};
const rt::ChoiceParam rails_param{
    "udp_rails", "each",
    "with several interfaces: each is a path of its own, striped and failed over by ULM (each), "
    "or one path round-robins over them (one)",
    "each|one"};

constexpr std::size_t kHdr = sizeof(Header);
constexpr std::size_t kMaxDatagram = 65507;
constexpr std::size_t kMinDatagram = kHdr + kMaxFragHeader + 64;
constexpr int kMaxRxIov = 128;
// Datagrams in one GSO send: the kernel's UDP_MAX_SEGMENTS (64 before Linux
// 6.10), and all of them at most one IP datagram's worth of bytes.
constexpr int kMaxGsoSegs = 64;
constexpr std::size_t kMaxBatch = kMaxDatagram;
constexpr std::size_t kGroBuf = 1u << 17; // GRO coalesces at most 64 KiB

const Registrar reg{"udp", 10, &make_udp_paths};

struct WholeFrag final : RxFrag {};


// Copies n bytes from src into the iovecs, starting `skip` bytes into them.
std::size_t scatter(const std::byte* src, std::size_t n, const iovec* iov, int iovcnt,
                    std::size_t skip)
{
    std::size_t done = 0;
    for (int i = 0; i < iovcnt && done < n; ++i) {
        std::size_t len = iov[i].iov_len;
        if (skip >= len) {
            skip -= len;
            continue;
        }
        std::size_t take = std::min(len - skip, n - done);
        std::memcpy(static_cast<std::byte*>(iov[i].iov_base) + skip, src + done, take);
        done += take;
        skip = 0;
    }
    return done;
}

int set_buffer(int fd, int force_opt, int opt, std::uint64_t want)
{
    int v = static_cast<int>(std::min<std::uint64_t>(want, 1u << 30));
    if (::setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof v) != 0) {
        (void)::setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v); // capped by net.core.*mem_max
    }
    int got = 0;
    socklen_t len = sizeof got;
    (void)::getsockopt(fd, SOL_SOCKET, opt, &got, &len);
    return got;
}

std::string size_text(std::uint64_t n)
{
    char b[32];
    if (n >= (1u << 20) && n % (1u << 20) == 0) {
        std::snprintf(b, sizeof b, "%" PRIu64 "M", n >> 20);
    } else if (n >= 1024 && n % 1024 == 0) {
        std::snprintf(b, sizeof b, "%" PRIu64 "K", n >> 10);
    } else {
        std::snprintf(b, sizeof b, "%" PRIu64, n);
    }
    return b;
}

} // namespace

// ---------------------------------------------------------------------------

struct UdpPath::TxSlot {
    std::unique_ptr<std::byte[]> bytes; // our header, then the ULM fragment
    std::size_t len = 0;                // ULM bytes
    int peer = -1;
    Lane lane = Lane::control;
    udp::Pair pair;
};

// A peeked datagram: `data` holds our header's successor (ULM's header), the
// payload is read by read_payload() straight off the socket.
class UdpPath::RxDatagram final : public RxFrag {
public:
    RxDatagram(UdpPath& path, Sock& s) : path_(path), sock_(s), fd_(s.fd) {}
    std::size_t read_payload(std::size_t offset, const iovec* iov, int iovcnt) override
    {
        return path_.read_datagram(*this, offset, iov, iovcnt);
    }

    UdpPath& path_;
    Sock& sock_; // its scratch buffers
    int fd_;
    std::size_t hlen = 0;      // ULM's header length (0: unknown, payload unreadable)
    bool consumed = false;     // recvmsg done
    std::size_t valid = 0;     // payload bytes the datagram really had
    std::size_t direct_lo = 0; // payload range the first call scattered into its iovecs
    std::size_t direct_hi = 0;
};

bool udp_options_from_params(UdpOptions& out, std::string& why)
{
    (void)why;
    out.ifaces = if_param.get();
    out.subnets = subnet_param.get();
    out.frag_size = frag_param.get();
    out.eager_limit = eager_param.get();
    out.sndbuf = sndbuf_param.get();
    out.rcvbuf = rcvbuf_param.get();
    const std::string& ev = everywhere_param.get();
    out.everywhere = ev == "on" || (ev == "auto" && !path_selected("shm"));
    out.peek_all = peek_param.get() == "all";
    out.stripe = stripe_param.get() == "rr";
    out.rx_batch = static_cast<int>(std::clamp<std::int64_t>(batch_param.get(), 1, 4096));
    out.window = window_param.get();
    out.control_window = control_window_param.get();
    out.probe_us = std::clamp<std::int64_t>(probe_param.get(), 1, 10000000);
    out.gso = gso_param.get() == "on";
    out.gro = gro_param.get() == "on";
    return true;
}

std::vector<std::unique_ptr<Path>> make_udp_paths(const rt::JobInfo& job)
{
    std::vector<std::unique_ptr<Path>> out;
    UdpOptions opt;
    std::string why;
    if (!udp_options_from_params(opt, why)) {
        ULMPI_ERROR("udp path: %s", why.c_str());
        return out;
    }
    if (!opt.everywhere && job.num_nodes <= 1) {
        return out; // one host: shm and self do it all
    }
    std::vector<udp::Iface> all;
    std::vector<udp::Iface> chosen;
    if (rails_param.get() == "each" && udp::list_ifaces(all, why) &&
        udp::select_ifaces(all, opt.ifaces, opt.subnets, job.num_nodes <= 1, chosen, why) &&
        chosen.size() > 1) {
        for (std::size_t k = 0; k < chosen.size(); ++k) {
            UdpOptions one = opt;
            one.ifaces = chosen[k].name;
            one.subnets.clear();
            one.rail = static_cast<int>(k);
            one.rails = static_cast<int>(chosen.size());
            out.push_back(std::make_unique<UdpPath>(job, one));
        }
        return out;
    }
    // One interface, or one path over all (a selection error is reported
    // by open()).
    out.push_back(std::make_unique<UdpPath>(job, opt));
    return out;
}

std::string udp_addr_key(int rail)
{
    return rail == 0 ? std::string("udp.addr") : "udp.addr." + std::to_string(rail);
}

UdpPath::UdpPath(const rt::JobInfo& job, const UdpOptions& opt) : job_(job), opt_(opt)
{
    name_ = opt_.rails > 1 ? "udp" + std::to_string(opt_.rail) : "udp";
    info_.name = name_.c_str();
    info_.bandwidth_mbs = 1000;
    info_.latency_us = 20;
    info_.max_frag = static_cast<std::uint32_t>(kMaxDatagram - kHdr); // set in connect()
    info_.inline_max = info_.max_frag;
    info_.eager_limit = 0;
    info_.reliable_default = true;
    info_.has_get = false;
    info_.kernel_delivery = true;
}

UdpPath::~UdpPath() { close(); }

Status UdpPath::open(rt::Bootstrap& boot)
{
    const char* secret = std::getenv("ULMPI_JOB_SECRET"); // docs/launcher.md
    if (secret == nullptr || *secret == '\0') {
        ULMPI_DEBUG("udp: no ULMPI_JOB_SECRET; the job token derives from the job id only");
    }
    token_ = udp::job_token(secret != nullptr ? secret : "", job_.jobid);

    std::vector<udp::Iface> all;
    std::string why;
    if (!udp::list_ifaces(all, why) ||
        !udp::select_ifaces(all, opt_.ifaces, opt_.subnets, job_.num_nodes <= 1, ifaces_, why)) {
        ULMPI_ERROR("udp path: %s", why.c_str());
        return Errc::io_error;
    }
    if (Status st = open_sockets(); !st.ok()) {
        return st;
    }
    std::vector<std::byte> rec = udp::encode_endpoints(mine_);
    return boot.put(udp_addr_key(opt_.rail), rec.data(), rec.size());
}

// Two sockets per chosen interface, bound to a port the kernel picks; their
// endpoints in mine_.
Status UdpPath::open_sockets()
{
    socks_.clear();
    socks_.resize(ifaces_.size() * 2);
    mine_.assign(ifaces_.size(), udp::Endpoint{});
    for (std::size_t i = 0; i < ifaces_.size(); ++i) {
        mine_[i].ip = ifaces_[i].ip;
        mine_[i].mask = ifaces_[i].mask;
        mine_[i].mtu = ifaces_[i].mtu;
        for (int lane = 0; lane < 2; ++lane) {
            Sock& s = socks_[i * 2 + static_cast<std::size_t>(lane)];
            s.lane = static_cast<Lane>(lane);
            s.iface = static_cast<int>(i);
            s.fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (s.fd < 0) {
                ULMPI_ERROR("udp path: socket: %s", std::strerror(errno));
                return Errc::io_error;
            }
            actual_sndbuf_ = set_buffer(s.fd, SO_SNDBUFFORCE, SO_SNDBUF, opt_.sndbuf);
            actual_rcvbuf_ = set_buffer(s.fd, SO_RCVBUFFORCE, SO_RCVBUF, opt_.rcvbuf);
            // Never set DF: a datagram larger than some link's MTU is
            // fragmented on the way rather than lost for good.
            int pmtu = IP_PMTUDISC_DONT;
            (void)::setsockopt(s.fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(ifaces_[i].ip);
            a.sin_port = 0;
            socklen_t alen = sizeof a;
            if (::bind(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
                ::getsockname(s.fd, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
                ULMPI_ERROR("udp path: cannot bind a socket on %s (%s): %s",
                            ifaces_[i].name.c_str(), udp::ip_text(ifaces_[i].ip).c_str(),
                            std::strerror(errno));
                return Errc::io_error;
            }
            mine_[i].port[lane] = ntohs(a.sin_port);
            if (s.lane == Lane::bulk) {
                int one = 1;
                if (opt_.gro) {
                    s.gro = ::setsockopt(s.fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
                    gro_why_ = s.gro ? "on" : "refused by the kernel";
                }
                int zero = 0; // probes UDP_SEGMENT; sizes go with each send
                if (opt_.gso &&
                    ::setsockopt(s.fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof zero) != 0) {
                    gso_why_ = "refused by the kernel";
                } else if (opt_.gso && i == 0) {
                    gso_why_ = "on";
                }
            }
        }
    }
    return Errc::ok;
}

// Reads rank r's addresses and makes its routes; false when it published
// none (a spawn slot without a process, a rank without udp).
bool UdpPath::load_peer(int r, rt::Bootstrap& boot, std::uint32_t& mtu)
{
    const int n = job_.size;
    PeerAddr& p = peers_[static_cast<std::size_t>(r)];
    const bool other_host = job_.node_of_rank.size() == static_cast<std::size_t>(n) &&
                            job_.node_of_rank[static_cast<std::size_t>(r)] != job_.node_id;
    if (r == job_.rank && opt_.rails == 1) {
        p.eps = mine_;
    } else {
        // Every rail's endpoints, the peer's rail k (ours) first: on a
        // shared subnet, rail k feeds rail k.
        std::vector<std::vector<udp::Endpoint>> by_rail;
        for (int k = 0; k < static_cast<int>(udp::kMaxIfaces); ++k) {
            std::vector<std::byte> v;
            std::vector<udp::Endpoint> eps;
            if (!boot.get(r, udp_addr_key(k), v).ok()) {
                break;
            }
            if (!udp::decode_endpoints(v.data(), v.size(), eps)) {
                by_rail.clear();
                break;
            }
            by_rail.push_back(std::move(eps));
        }
        if (by_rail.empty()) {
            ULMPI_DEBUG("udp: rank %d published no usable address", r);
            return false;
        }
        const std::size_t first = static_cast<std::size_t>(opt_.rail) % by_rail.size();
        for (std::size_t i = 0; i < by_rail.size(); ++i) {
            const auto& eps = by_rail[(first + i) % by_rail.size()];
            p.eps.insert(p.eps.end(), eps.begin(), eps.end());
        }
    }
    for (const udp::Endpoint& e : p.eps) {
        mtu = std::min(mtu, e.mtu);
    }
    for (int lane = 0; lane < 2; ++lane) {
        for (const udp::Endpoint& e : p.eps) {
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(e.ip);
            a.sin_port = htons(e.port[lane]);
            p.to[lane].push_back(a);
        }
    }
    p.pairs = udp::make_pairs(mine_, p.eps);
    // A peer on my host whose shared-memory segment I have no place in
    // (or it has none in mine: a replica re-created by fork on another
    // host than the one it was placed on) is reached over udp too.
    const bool no_segment = r != job_.rank && !job_.placed_node_of_rank.empty() &&
                            !job_.same_segment(job_.rank, r);
    p.reach = opt_.everywhere || other_host || no_segment;
    return true;
}

Status UdpPath::connect(rt::Bootstrap& boot)
{
    const int n = job_.size;
    peers_.assign(static_cast<std::size_t>(n), PeerAddr{});
    std::uint32_t mtu = 65536;
    for (const udp::Endpoint& e : mine_) {
        mtu = std::min(mtu, e.mtu);
    }
    int reachable = 0;
    for (int r = 0; r < n; ++r) {
        if (load_peer(r, boot, mtu)) {
            reachable += peers_[static_cast<std::size_t>(r)].reach ? 1 : 0;
        }
    }

    std::size_t datagram = opt_.frag_size != 0 ? opt_.frag_size : udp::udp_room(mtu);
    frag_explicit_ = opt_.frag_size != 0;
    datagram = std::clamp(datagram, kMinDatagram, kMaxDatagram);
    info_.max_frag = static_cast<std::uint32_t>(datagram - kHdr);
    info_.inline_max = info_.max_frag;
    info_.eager_limit = opt_.eager_limit != 0 ? opt_.eager_limit : info_.max_frag;
    info_.bandwidth_mbs = 1000.0 * static_cast<double>(mine_.size());
    // A socket per lane; bulk fragments striped over several interface
    // pairs may overtake each other as well.
    info_.order = opt_.stripe && mine_.size() > 1 ? PathInfo::Order::none : PathInfo::Order::per_lane;
    slot_bytes_ = kHdr + info_.max_frag;
    // Half the receive buffer shared by the peers that may send to it at
    // once, but never more than a quarter to one peer.
    const auto rcv = static_cast<std::uint64_t>(actual_rcvbuf_);
    const int me_too = peers_[static_cast<std::size_t>(job_.rank)].reach ? 1 : 0;
    const auto senders = static_cast<std::uint64_t>(std::max(1, reachable - me_too));
    const std::uint64_t auto_window = std::clamp<std::uint64_t>(
        rcv / 2 / senders, std::max<std::uint64_t>(256u << 10, 4 * datagram),
        std::max<std::uint64_t>(rcv / 4, 4 * datagram));
    auto fit = [&](std::uint64_t w) {
        return static_cast<std::uint32_t>(
            std::clamp<std::uint64_t>(w != 0 ? w : auto_window, 2 * datagram, 1u << 30));
    };
    window_[1] = fit(opt_.window);
    window_[0] = fit(opt_.control_window != 0 ? opt_.control_window : opt_.window);
    probe_ns_ = opt_.probe_us * 1000;
    datagram_ = datagram;
    mtu_ = mtu;
    fit_sockets();
    flow_ = std::make_unique<rt::OptMutex[]>(static_cast<std::size_t>(n));
    open_ = true;
    ULMPI_INFO("udp: %s; reaches %d of %d ranks", describe(), reachable, n);
    return Errc::ok;
}

void UdpPath::fit_sockets()
{
    // GSO: the kernel refuses segments longer than the route's MTU, and a
    // batch of one datagram (loopback's 64 KiB ones) gains nothing.
    gso_segs_ = 0;
    if (std::strcmp(gso_why_, "on") == 0) {
        if (datagram_ + 28 > mtu_) {
            gso_why_ = "off: datagrams exceed the MTU";
        } else if (kMaxBatch / datagram_ < 2) {
            gso_why_ = "off: one datagram fills a batch";
        } else {
            gso_segs_ = static_cast<int>(std::min<std::size_t>(kMaxGsoSegs, kMaxBatch / datagram_));
            for (Sock& s : socks_) {
                if (s.lane == Lane::bulk) {
                    s.batch.bytes = std::make_unique<std::byte[]>(kMaxBatch);
                }
            }
        }
    }
    // GRO: worth its bounce copy only when several datagrams fit 64 KiB;
    // otherwise (loopback) the payload is scattered straight into the user
    // buffer after a peek.
    if (gro() && kMaxBatch / datagram_ < 2) {
        for (Sock& s : socks_) {
            int zero = 0;
            if (s.gro) {
                (void)::setsockopt(s.fd, SOL_UDP, UDP_GRO, &zero, sizeof zero);
                s.gro = false;
            }
        }
        gro_why_ = "off: one datagram fills 64 KiB";
    }
    for (Sock& s : socks_) {
        // What receive() reads into, for this socket's way of reading.
        if (s.gro) {
            s.gro_buf.assign(kGroBuf, std::byte{0});
        } else if (s.lane == Lane::bulk || opt_.peek_all) {
            s.stash.assign(65536, std::byte{0});
            s.peek.assign(kHdr + kMaxFragHeader, std::byte{0});
            s.head.assign(kHdr + kMaxFragHeader, std::byte{0});
        } else {
            s.whole.assign(65536, std::byte{0});
        }
    }
}

void UdpPath::close_sockets()
{
    for (Sock& s : socks_) {
        if (s.fd >= 0) {
            ::close(s.fd);
            s.fd = -1;
        }
        s.stall = nullptr;
        s.batch.head = s.batch.fill = 0;
        s.batch.count = 0;
        s.batch.sealed = false;
    }
    tx_free_.clear();
    for (auto& t : tx_all_) {
        tx_free_.push_back(t.get());
    }
}

void UdpPath::close()
{
    close_sockets();
    open_ = false;
}

Status UdpPath::wipe_peer(int)
{
    return Errc::ok; // nothing of a peer lives in memory shared with it
}

// Replica recovery, in the new process (path.h, become()): the sockets are
// the forking process's (closing them here leaves them to it), and so is
// everything staged on them and every peer's flow-control state.
Status UdpPath::become(int rank, int ready, rt::Bootstrap& boot)
{
    if (!open_) {
        return Errc::ok;
    }
    if (rank != job_.rank) {
        return Errc::invalid_arg; // the bootstrap made this process `rank` first
    }
    close_sockets();
    if (Status st = open_sockets(); !st.ok()) {
        open_ = false;
        return st;
    }
    fit_sockets();
    std::vector<std::byte> rec = udp::encode_endpoints(mine_);
    if (Status st = boot.put(udp_addr_key(opt_.rail), rec.data(), rec.size()); !st.ok()) {
        open_ = false;
        return st;
    }
    // Every peer's route from my new sockets (my address for myself), its
    // reach from where I run now, and fresh flow-control marks.
    for (int r = 0; r < job_.size; ++r) {
        PeerAddr& p = peers_[static_cast<std::size_t>(r)];
        if (r == rank || p.eps.empty()) {
            p = PeerAddr{};
            std::uint32_t mtu = mtu_;
            if (r == rank) {
                (void)load_peer(r, boot, mtu);
            }
            continue;
        }
        PeerAddr fresh;
        fresh.eps = std::move(p.eps);
        fresh.to[0] = std::move(p.to[0]);
        fresh.to[1] = std::move(p.to[1]);
        fresh.pairs = udp::make_pairs(mine_, fresh.eps);
        const bool other_host = job_.node_of_rank.size() == static_cast<std::size_t>(job_.size) &&
                                job_.node_of_rank[static_cast<std::size_t>(r)] != job_.node_id;
        const bool no_segment = !job_.placed_node_of_rank.empty() && !job_.same_segment(rank, r);
        fresh.reach = opt_.everywhere || other_host || no_segment;
        fresh.held = r != ready;
        p = std::move(fresh);
    }
    credit_due_.clear();
    down_due_.clear();
    any_credit_due_.store(false, std::memory_order_relaxed);
    any_down_due_.store(false, std::memory_order_relaxed);
    return Errc::ok;
}

Status UdpPath::reset_peer(int peer, rt::Bootstrap&)
{
    if (!open_ || peer < 0 || static_cast<std::size_t>(peer) >= peers_.size() ||
        peer == job_.rank) {
        return Errc::invalid_arg;
    }
    // Nothing is sent to it until connect_peer() (can_reach() is false), and
    // datagrams from its old addresses are not accepted (known_source()).
    // Datagrams already queued on a socket go to the old address and are
    // lost there; the new process would refuse their epoch anyway (ULM).
    peers_[static_cast<std::size_t>(peer)] = PeerAddr{};
    std::erase(credit_due_, peer);
    std::erase(down_due_, peer);
    return Errc::ok;
}

Status UdpPath::connect_peer(int peer, rt::Bootstrap& boot)
{
    if (!open_ || peer < 0 || static_cast<std::size_t>(peer) >= peers_.size() ||
        peer == job_.rank) {
        return Errc::invalid_arg;
    }
    if (peers_[static_cast<std::size_t>(peer)].reach) {
        peers_[static_cast<std::size_t>(peer)].held = false; // a new process's peer
        return Errc::ok; // known since the wire-up
    }
    // A process spawned into a slot after the wire-up (MPI_Comm_spawn): its
    // addresses are in the bootstrap now. Its datagrams fit: the job's
    // interfaces share the MTU the wire-up found.
    std::uint32_t mtu = 65536;
    peers_[static_cast<std::size_t>(peer)] = PeerAddr{};
    if (!load_peer(peer, boot, mtu)) {
        return Errc::unreachable;
    }
    return Errc::ok;
}

bool UdpPath::can_reach(int peer) const
{
    return open_ && peer >= 0 && static_cast<std::size_t>(peer) < peers_.size() &&
           peers_[static_cast<std::size_t>(peer)].reach;
}

std::size_t UdpPath::stalled() const
{
    std::size_t n = 0;
    for (const Sock& s : socks_) {
        rt::OptGuard g(s.tx);
        n += (s.stall != nullptr ? 1 : 0) + static_cast<std::size_t>(s.batch.count);
    }
    return n;
}

bool UdpPath::gro() const
{
    for (const Sock& s : socks_) {
        if (s.gro) {
            return true;
        }
    }
    return false;
}

void UdpPath::bump(std::uint64_t& counter, std::uint64_t n)
{
    if (rt::fine_locks()) [[unlikely]] {
        std::atomic_ref<std::uint64_t>(counter).fetch_add(n, std::memory_order_relaxed);
    } else {
        counter += n;
    }
}

// Under flow(peer).
const udp::Pair& UdpPath::route(PeerAddr& p, Lane lane)
{
    if (lane == Lane::control || !opt_.stripe || p.pairs.size() == 1) {
        return p.pairs.front();
    }
    return p.pairs[p.rr++ % p.pairs.size()];
}

// Under flow(peer).
void UdpPath::fill_header(Header& h, int peer, Lane lane, std::size_t len)
{
    PeerAddr& p = peers_[static_cast<std::size_t>(peer)];
    const auto l = static_cast<std::size_t>(lane);
    h.magic = udp::kMagic;
    h.version = udp::kVersion;
    h.lane = static_cast<std::uint8_t>(lane);
    h.pad = 0;
    h.src = static_cast<std::uint32_t>(job_.rank);
    h.dst = static_cast<std::uint32_t>(peer);
    h.token = token_;
    if (len != kCreditOnly) {
        p.sent_end[l] += static_cast<std::uint32_t>(len) + kDatagramCost;
        h.stream = p.sent_end[l];
    } else {
        h.stream = 0; // a header-only credit takes no window and asks for no credit back
    }
    for (std::size_t k = 0; k < 2; ++k) {
        h.credit[k] = p.seen_end[k];
        p.credit_told[k] = p.seen_end[k];
    }
    h.pad2 = 0;
}

// Whether a datagram of `len` ULM bytes may go to the peer on `lane` now.
// Under flow(peer).
bool UdpPath::window_open(PeerAddr& p, Lane lane, std::size_t len)
{
    const auto l = static_cast<std::size_t>(lane);
    const std::uint32_t in_flight = p.sent_end[l] - p.acked_end[l];
    // Fragments no longer than a header (ACKs, cts, fin, but also tiny eager
    // messages) may go a little past the window: an ACK is rarely held up, a
    // flood of tiny messages still is.
    const std::uint64_t limit =
        std::uint64_t{window_[l]} + (len <= kMaxFragHeader ? kSmallSlack : 0);
    if (in_flight == 0 || in_flight + len + kDatagramCost <= limit) {
        p.shut_since[l] = 0;
        return true;
    }
    const std::int64_t now = rt::now_ns();
    if (p.shut_since[l] == 0) {
        p.shut_since[l] = now;
        bump(window_stalls_);
        return false;
    }
    if (now - p.shut_since[l] < probe_ns_) {
        return false;
    }
    p.shut_since[l] = now; // no credit for a while: one datagram goes, its mark asks again
    bump(probes_);
    return true;
}

// Whether the peer needs a header-only credit now: we owe half a window, or
// have owed anything for kCreditDelayNs without sending the peer a datagram
// (its window may be shut waiting for it: ACKs that carried the credit were
// lost, or ours are held by our own window to it). Under flow(peer).
bool UdpPath::owes_credit(const PeerAddr& p, std::int64_t now) const
{
    const std::uint32_t owed[2] = {p.seen_end[0] - p.credit_told[0],
                                   p.seen_end[1] - p.credit_told[1]};
    if (owed[0] == 0 && owed[1] == 0) {
        return false;
    }
    return owed[0] >= window_[0] / 2 || owed[1] >= window_[1] / 2 ||
           now - p.owed_since >= kCreditDelayNs;
}

// The flow-control fields of an accepted datagram from `src`.
void UdpPath::took_header(const Header& h, int src, Lane lane)
{
    rt::OptGuard g(flow(src));
    PeerAddr& p = peers_[static_cast<std::size_t>(src)];
    for (std::size_t k = 0; k < 2; ++k) {
        if (udp::serial_after(h.credit[k], p.acked_end[k]) &&
            !udp::serial_after(h.credit[k], p.sent_end[k])) {
            p.acked_end[k] = h.credit[k];
            p.shut_since[k] = 0;
        }
    }
    const auto l = static_cast<std::size_t>(lane);
    if (h.stream != 0 && udp::serial_after(h.stream, p.seen_end[l])) {
        p.seen_end[l] = h.stream;
        if (!p.credit_due) {
            p.credit_due = true;
            p.owed_since = rt::now_ns();
            rt::OptGuard m(misc_);
            credit_due_.push_back(src);
            any_credit_due_.store(true, std::memory_order_relaxed);
        }
    }
}

// Header-only credits to the peers that need one (owes_credit); peers
// told since (a datagram to them carried it) leave the list. Under chores_:
// the list is taken whole, worked on under each peer's flow lock, and what
// is still owed goes back.
void UdpPath::send_credits()
{
    {
        rt::OptGuard m(misc_);
        credit_work_.swap(credit_due_);
        any_credit_due_.store(false, std::memory_order_relaxed);
    }
    const std::int64_t now = rt::now_ns();
    std::size_t keep = 0;
    for (std::size_t i = 0; i < credit_work_.size(); ++i) {
        const int peer = credit_work_[i];
        rt::OptGuard g(flow(peer));
        PeerAddr& p = peers_[static_cast<std::size_t>(peer)];
        if (p.seen_end[0] == p.credit_told[0] && p.seen_end[1] == p.credit_told[1]) {
            p.credit_due = false;
            continue;
        }
        if (!owes_credit(p, now)) {
            credit_work_[keep++] = peer;
            continue;
        }
        const std::uint32_t told[2] = {p.credit_told[0], p.credit_told[1]};
        Header h;
        fill_header(h, peer, Lane::control, kCreditOnly);
        const udp::Pair& pair = p.pairs.front();
        // No stall slot nor batch is touched: the socket's send lock is
        // not needed for one header.
        ssize_t r;
        do {
            r = ::sendto(sock(pair.local, Lane::control).fd, &h, sizeof h, 0,
                         reinterpret_cast<const sockaddr*>(&p.to[0][pair.remote]),
                         sizeof(sockaddr_in));
        } while (r < 0 && errno == EINTR);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
            p.credit_told[0] = told[0]; // not sent: still owed
            p.credit_told[1] = told[1];
            credit_work_[keep++] = peer;
            continue;
        }
        p.credit_due = false;
        bump(credits_sent_);
    }
    credit_work_.resize(keep);
    if (keep > 0) {
        rt::OptGuard m(misc_);
        credit_due_.insert(credit_due_.end(), credit_work_.begin(), credit_work_.end());
        any_credit_due_.store(true, std::memory_order_relaxed);
    }
    credit_work_.clear();
}

// A network error on send: the datagram is lost (ULM resends it).
void UdpPath::lost(int err, int peer)
{
    bump(send_errors_);
    rt::OptGuard m(misc_);
    if ((err == ENETUNREACH || err == ENETDOWN || err == EHOSTUNREACH || err == EADDRNOTAVAIL) &&
        peer >= 0 && static_cast<std::size_t>(peer) < peers_.size() &&
        !peers_[static_cast<std::size_t>(peer)].down_due) {
        peers_[static_cast<std::size_t>(peer)].down_due = true;
        down_due_.push_back(peer);
        any_down_due_.store(true, std::memory_order_relaxed);
    }
    if (err != last_errno_) {
        last_errno_ = err;
        ULMPI_INFO("udp: sending to rank %d: %s (counted as a lost datagram)", peer,
                   std::strerror(err));
    }
}

// True when the slot is finished with (sent, or lost to a network error);
// false when the socket has no room now. Under s.tx.
bool UdpPath::send_slot(Sock& s, TxSlot* slot)
{
    const sockaddr_in& to = peers_[static_cast<std::size_t>(slot->peer)]
                                .to[static_cast<int>(slot->lane)][slot->pair.remote];
    for (;;) {
        ssize_t r = ::sendto(s.fd, slot->bytes.get(), kHdr + slot->len, 0,
                             reinterpret_cast<const sockaddr*>(&to), sizeof to);
        if (r >= 0) {
            bump(counters_.frags_sent);
            bump(counters_.bytes_sent, slot->len);
            return true;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
            return false;
        }
        lost(errno, slot->peer);
        return true;
    }
}

void UdpPath::free_slot(TxSlot* slot)
{
    rt::OptGuard g(slots_);
    tx_free_.push_back(slot);
}

// Under s.tx.
bool UdpPath::flush(Sock& s)
{
    if (s.stall != nullptr && send_slot(s, s.stall)) {
        free_slot(s.stall);
        s.stall = nullptr;
    }
    return s.stall == nullptr;
}

// The kernel will not take GSO sends on this route: datagrams one by one.
void UdpPath::gso_refused(int err)
{
    ULMPI_INFO("udp: the kernel refused a GSO send (%s); sending datagrams one by one",
               std::strerror(err));
    rt::OptGuard m(misc_);
    gso_segs_.store(0, std::memory_order_relaxed);
    gso_why_ = "refused by the kernel";
}

// Sends what the socket's batch holds: one sendmsg with UDP_SEGMENT for
// several datagrams, a plain one for a single datagram (or once GSO was
// refused). True when the batch is empty; false when the socket has no room
// now (the batch is sealed and waits, acquire() answers `again`). Under s.tx.
bool UdpPath::flush_batch(Sock& s)
{
    Batch& b = s.batch;
    while (b.count > 0) {
        const bool gso = b.count > 1 && this->gso();
        const std::size_t n = gso ? b.fill - b.head : udp::gro_segment(b.fill, b.seg, b.head);
        const int segs = gso ? b.count : 1;
        sockaddr_in to = peers_[static_cast<std::size_t>(b.peer)].to[1][static_cast<std::size_t>(b.remote)];
        iovec v{b.bytes.get() + b.head, n};
        msghdr m{};
        m.msg_name = &to;
        m.msg_namelen = sizeof to;
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(std::uint16_t))] = {};
        if (gso) {
            m.msg_control = ctl;
            m.msg_controllen = sizeof ctl;
            cmsghdr* c = CMSG_FIRSTHDR(&m);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
            const auto seg = static_cast<std::uint16_t>(b.seg);
            std::memcpy(CMSG_DATA(c), &seg, sizeof seg);
        }
        ssize_t r = ::sendmsg(s.fd, &m, 0);
        if (r >= 0) {
            bump(counters_.frags_sent, static_cast<std::uint64_t>(segs));
            bump(counters_.bytes_sent, n - kHdr * static_cast<std::size_t>(segs));
            if (gso) {
                bump(gso_sends_);
                bump(gso_datagrams_, static_cast<std::uint64_t>(segs));
            }
            b.head += n;
            b.count -= segs;
            continue;
        }
        const int err = errno;
        if (err == EINTR) {
            continue;
        }
        if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
            b.sealed = true;
            return false;
        }
        if (gso && (err == EINVAL || err == EIO || err == ENOPROTOOPT || err == EOPNOTSUPP ||
                    err == EMSGSIZE)) {
            gso_refused(err);
            continue;
        }
        lost(err, b.peer);
        bump(send_errors_, static_cast<std::uint64_t>(segs - 1));
        b.head += n;
        b.count -= segs;
    }
    b.head = b.fill = 0;
    b.seg = 0;
    b.sealed = false;
    return true;
}

// Sends every staged batch and stalled datagram whose socket is not busy (a
// thread that holds one sends them itself); returns how many went.
int UdpPath::flush_batches()
{
    int n = 0;
    for (Sock& s : socks_) {
        if (!s.tx.try_lock()) {
            continue;
        }
        if (s.stall != nullptr) {
            n += flush(s) ? 1 : 0;
        }
        if (s.batch.count > 0) {
            n += flush_batch(s) ? 1 : 0;
        }
        s.tx.unlock();
    }
    return n;
}

// True: the caller holds the socket's send lock until commit() (see
// "Threads").
bool UdpPath::acquire(int peer, std::size_t len, TxBuffer& out)
{
    if (len > info_.max_frag || !can_reach(peer)) {
        return false; // ULM never asks for more than info().max_frag
    }
    PeerAddr& p = peers_[static_cast<std::size_t>(peer)];
    if (p.held) [[unlikely]] {
        bump(counters_.send_again); // a new process's peer that does not know it yet
        return false;
    }
    bool open = false;
    udp::Pair pair;
    {
        rt::OptGuard g(flow(peer));
        open = window_open(p, out.lane, len);
        if (open) {
            pair = route(p, out.lane);
        }
    }
    if (!open) {
        if (out.lane == Lane::bulk) {
            (void)flush_batches(); // what waits staged must go for credit to come back
        }
        bump(counters_.send_again);
        return false;
    }
    Sock& s = sock(pair.local, out.lane);
    s.tx.lock();
    if (s.stall != nullptr && !flush(s)) {
        s.tx.unlock();
        bump(counters_.send_again);
        return false;
    }
    Batch& b = s.batch;
    const std::size_t dg = kHdr + len;
    const int segs = gso_segs_.load(std::memory_order_relaxed);
    const bool batch = out.lane == Lane::bulk && segs > 1;
    if (b.count > 0 &&
        (!batch || b.sealed || b.peer != peer || b.remote != pair.remote ||
         b.count >= segs || dg > b.seg || b.fill + dg > kMaxBatch) &&
        !flush_batch(s)) {
        s.tx.unlock();
        bump(counters_.send_again);
        return false;
    }
    if (batch) {
        // Staged behind the datagrams already batched for this peer.
        if (b.count == 0) {
            b.peer = peer;
            b.remote = pair.remote;
        }
        out.data = b.bytes.get() + b.fill + kHdr;
        out.cap = b.count > 0 ? b.seg - kHdr : kMaxBatch - kHdr;
        out.token = (static_cast<std::uintptr_t>(&s - socks_.data()) << 1) | 1;
        return true;
    }
    TxSlot* slot = nullptr;
    {
        rt::OptGuard g(slots_);
        if (tx_free_.empty()) {
            auto fresh = std::make_unique<TxSlot>();
            fresh->bytes = std::make_unique<std::byte[]>(slot_bytes_);
            tx_free_.push_back(fresh.get());
            tx_all_.push_back(std::move(fresh));
        }
        slot = tx_free_.back();
        tx_free_.pop_back();
    }
    slot->peer = peer;
    slot->lane = out.lane;
    slot->pair = pair;
    out.data = slot->bytes.get() + kHdr;
    out.cap = info_.max_frag;
    out.token = reinterpret_cast<std::uintptr_t>(slot);
    return true;
}

// Releases the socket's send lock that acquire() took.
SendResult UdpPath::commit(int peer, const TxBuffer& buf, std::size_t len)
{
    if ((buf.token & 1) != 0) {
        Sock& s = socks_[buf.token >> 1];
        Batch& b = s.batch;
        ULMPI_ASSERT(b.peer == peer && len <= buf.cap && !b.sealed);
        Header h;
        {
            rt::OptGuard g(flow(peer));
            fill_header(h, peer, Lane::bulk, len);
        }
        std::memcpy(b.bytes.get() + b.fill, &h, sizeof h);
        const std::size_t dg = kHdr + len;
        if (b.count == 0) {
            b.seg = dg;
        }
        b.fill += dg;
        ++b.count;
        // A shorter datagram ends a GSO batch; a full one goes at once.
        if (dg < b.seg || b.count >= gso_segs_.load(std::memory_order_relaxed) ||
            b.fill + b.seg > kMaxBatch) {
            b.sealed = true;
            (void)flush_batch(s);
        }
        s.tx.unlock();
        return SendResult::done;
    }
    auto* slot = reinterpret_cast<TxSlot*>(buf.token);
    ULMPI_ASSERT(slot != nullptr && slot->peer == peer && len <= info_.max_frag);
    slot->len = len;
    Header h;
    {
        rt::OptGuard g(flow(peer));
        fill_header(h, peer, slot->lane, len);
    }
    std::memcpy(slot->bytes.get(), &h, sizeof h);
    Sock& s = sock(slot->pair.local, slot->lane);
    if (send_slot(s, slot)) {
        free_slot(slot);
    } else {
        s.stall = slot; // acquire() made sure the socket had none
    }
    s.tx.unlock();
    return SendResult::done;
}

SendResult UdpPath::send(int peer, const iovec* iov, int iovcnt, Lane lane)
{
    std::size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) {
        total += iov[i].iov_len;
    }
    if (total > info_.max_frag || !can_reach(peer)) {
        return SendResult::failed;
    }
    if (peers_[static_cast<std::size_t>(peer)].held) [[unlikely]] {
        bump(counters_.send_again);
        return SendResult::again;
    }
    if (iovcnt > 63) {
        return Path::send(peer, iov, iovcnt, lane); // through a staging buffer
    }
    PeerAddr& p = peers_[static_cast<std::size_t>(peer)];
    bool open = false;
    udp::Pair pair;
    {
        rt::OptGuard g(flow(peer));
        open = window_open(p, lane, total);
        if (open) {
            pair = route(p, lane);
        }
    }
    if (!open) {
        bump(counters_.send_again);
        return SendResult::again;
    }
    Sock& s = sock(pair.local, lane);
    rt::OptGuard tx(s.tx);
    if ((s.stall != nullptr && !flush(s)) || (s.batch.count > 0 && !flush_batch(s))) {
        bump(counters_.send_again);
        return SendResult::again;
    }
    Header h;
    {
        rt::OptGuard g(flow(peer));
        fill_header(h, peer, lane, total);
    }
    iovec v[64];
    v[0] = {&h, sizeof h};
    std::copy(iov, iov + iovcnt, v + 1);
    sockaddr_in to = p.to[static_cast<int>(lane)][pair.remote];
    msghdr m{};
    m.msg_name = &to;
    m.msg_namelen = sizeof to;
    m.msg_iov = v;
    m.msg_iovlen = static_cast<std::size_t>(iovcnt) + 1;
    for (;;) {
        ssize_t r = ::sendmsg(s.fd, &m, 0);
        if (r >= 0) {
            bump(counters_.frags_sent);
            bump(counters_.bytes_sent, total);
            return SendResult::done;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
            rt::OptGuard g(flow(peer));
            p.sent_end[static_cast<std::size_t>(lane)] -=
                static_cast<std::uint32_t>(total) + kDatagramCost; // not sent after all
            bump(counters_.send_again);
            return SendResult::again;
        }
        lost(errno, peer);
        return SendResult::done;
    }
}

bool UdpPath::known_source(int peer, Lane lane, const sockaddr_in& from) const
{
    const auto& eps = peers_[static_cast<std::size_t>(peer)].eps;
    const std::uint32_t ip = ntohl(from.sin_addr.s_addr);
    const std::uint16_t port = ntohs(from.sin_port);
    for (const udp::Endpoint& e : eps) {
        if (e.ip == ip && e.port[static_cast<int>(lane)] == port) {
            return true;
        }
    }
    return false;
}

void UdpPath::discard(int fd)
{
    std::byte b[1];
    while (::recv(fd, b, sizeof b, MSG_DONTWAIT) < 0 && errno == EINTR) {
    }
}

// Checks a datagram (header, source, length) and takes its flow-control
// fields. True when it carries a fragment for ULM; a refused one is counted,
// a header-only credit has nothing more.
bool UdpPath::accept(const Sock& s, const std::byte* d, std::size_t len, const sockaddr_in& from,
                     bool truncated, int& src)
{
    udp::Verdict verdict = udp::check_header(d, len, static_cast<std::uint8_t>(s.lane), token_,
                                             job_.rank, job_.size, &src);
    if (verdict == udp::Verdict::ok &&
        (!known_source(src, s.lane, from) || peers_[static_cast<std::size_t>(src)].held)) {
        verdict = udp::Verdict::address; // (held: read once connect_peer() says it knows me)
    }
    if (verdict == udp::Verdict::ok && (len - kHdr > info_.max_frag || truncated)) {
        verdict = udp::Verdict::oversize;
    }
    if (verdict != udp::Verdict::ok) {
        {
            rt::OptGuard m(misc_);
            refused_.count(verdict);
        }
        ULMPI_DEBUG("udp: refused a %zu-byte datagram from %s:%u (%s)", len,
                    udp::ip_text(ntohl(from.sin_addr.s_addr)).c_str(), ntohs(from.sin_port),
                    verdict == udp::Verdict::token      ? "not this job's token"
                    : verdict == udp::Verdict::rank     ? "ranks do not fit"
                    : verdict == udp::Verdict::address  ? "not the sender's address"
                    : verdict == udp::Verdict::oversize ? "too long"
                                                        : "malformed");
        return false;
    }
    Header h;
    std::memcpy(&h, d, sizeof h);
    took_header(h, src, s.lane);
    if (len == kHdr) {
        return false; // a credit: nothing for ULM
    }
    bump(counters_.frags_received);
    bump(counters_.bytes_received, len - kHdr);
    return true;
}

// Under s.rx.
int UdpPath::receive(Sock& s, Sink& sink)
{
    if (s.gro) {
        return receive_gro(s, sink);
    }
    return receive_peeked(s, sink, s.lane == Lane::bulk || opt_.peek_all);
}

int UdpPath::receive_peeked(Sock& s, Sink& sink, bool peek)
{
    int n = 0;
    for (int k = 0; k < opt_.rx_batch; ++k) {
        sockaddr_in from{};
        iovec v{};
        v.iov_base = peek ? s.peek.data() : s.whole.data();
        v.iov_len = peek ? s.peek.size() : s.whole.size();
        msghdr m{};
        m.msg_name = &from;
        m.msg_namelen = sizeof from;
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        // With MSG_TRUNC a peek answers the datagram's real length.
        ssize_t got = ::recvmsg(s.fd, &m, MSG_DONTWAIT | (peek ? MSG_PEEK | MSG_TRUNC : 0));
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            break; // EAGAIN: nothing more now (a pending ICMP error is cleared by reading it)
        }
        const auto len = static_cast<std::size_t>(got);
        int src = -1;
        if (!accept(s, static_cast<const std::byte*>(v.iov_base), len, from,
                    !peek && (m.msg_flags & MSG_TRUNC) != 0, src)) {
            if (peek) {
                discard(s.fd);
            }
            continue;
        }
        ++n;
        if (!peek) {
            WholeFrag f;
            f.peer = src;
            f.data = s.whole.data() + kHdr;
            f.len = len - kHdr;
            f.addressable = true;
            sink.on_frag(*this, f);
            continue;
        }
        RxDatagram rx(*this, s);
        rx.peer = src;
        rx.data = s.peek.data() + kHdr;
        rx.len = len - kHdr;
        rx.addressable = false;
        rx.hlen = frag_header_length(rx.data, rx.len);
        sink.on_frag(*this, rx);
        if (!rx.consumed) {
            discard(s.fd);
        }
    }
    return n;
}

// The long socket with UDP_GRO: one recvmsg may return several datagrams of
// one sender back to back (a cmsg gives their size, the last may be
// shorter); each is checked on its own and goes up whole and addressable
// (ULM copies the payload out, fused with its CRC check). Under s.rx.
int UdpPath::receive_gro(Sock& s, Sink& sink)
{
    int n = 0;
    for (int k = 0; k < opt_.rx_batch;) {
        sockaddr_in from{};
        iovec v{s.gro_buf.data(), s.gro_buf.size()};
        alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))];
        msghdr m{};
        m.msg_name = &from;
        m.msg_namelen = sizeof from;
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        ssize_t got = ::recvmsg(s.fd, &m, MSG_DONTWAIT);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        const auto len = static_cast<std::size_t>(got);
        std::size_t seg = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                int g = 0;
                std::memcpy(&g, CMSG_DATA(c), sizeof g);
                seg = g > 0 ? static_cast<std::size_t>(g) : 0;
            }
        }
        const bool truncated = (m.msg_flags & MSG_TRUNC) != 0;
        if (seg != 0 && seg < len) {
            bump(gro_reads_);
            bump(gro_datagrams_, (len + seg - 1) / seg);
        }
        std::size_t dl = 0;
        for (std::size_t off = 0; (dl = udp::gro_segment(len, seg, off)) != 0; off += dl) {
            ++k;
            int src = -1;
            const bool last = off + dl == len;
            if (!accept(s, s.gro_buf.data() + off, dl, from, truncated && last, src)) {
                continue;
            }
            ++n;
            WholeFrag f;
            f.peer = src;
            f.data = s.gro_buf.data() + off + kHdr;
            f.len = dl - kHdr;
            f.addressable = true;
            sink.on_frag(*this, f);
        }
    }
    return n;
}

// Under the socket's rx lock (the datagram's on_frag runs inside it).
std::size_t UdpPath::read_datagram(RxDatagram& rx, std::size_t offset, const iovec* iov, int iovcnt)
{
    if (rx.hlen == 0 || rx.len <= rx.hlen || iovcnt <= 0) {
        return 0;
    }
    std::vector<std::byte>& stash = rx.sock_.stash;
    const std::size_t plen = rx.len - rx.hlen;
    if (offset >= plen) {
        return 0;
    }
    std::size_t want = 0;
    for (int i = 0; i < iovcnt; ++i) {
        want += iov[i].iov_len;
    }
    want = std::min(want, plen - offset);

    if (rx.consumed) {
        // A later slice: from the stash. Bytes the first call scattered
        // went to its iovecs only.
        if (offset < rx.direct_hi && offset + want > rx.direct_lo) {
            ULMPI_DEBUG("udp: payload bytes [%zu, %zu) were read once already", offset,
                        offset + want);
            return 0;
        }
        std::size_t avail = offset < rx.valid ? std::min(want, rx.valid - offset) : 0;
        return scatter(stash.data() + offset, avail, iov, iovcnt, 0);
    }

    // The first call: one recvmsg takes the whole datagram. Headers into
    // scratch, payload [0, offset) and what the iovecs do not cover into the
    // stash, the rest straight into the iovecs.
    const std::size_t head = kHdr + rx.hlen;
    iovec v[kMaxRxIov + 3];
    int n = 0;
    v[n++] = {rx.sock_.head.data(), head};
    if (offset > 0) {
        v[n++] = {stash.data(), offset};
    }
    std::size_t covered = 0;
    for (int i = 0; i < iovcnt && covered < want && n < kMaxRxIov + 1; ++i) {
        std::size_t take = std::min(iov[i].iov_len, want - covered);
        if (take == 0) {
            continue;
        }
        v[n++] = {iov[i].iov_base, take};
        covered += take;
    }
    if (offset + covered < plen) {
        v[n++] = {stash.data() + offset + covered, plen - offset - covered};
    }
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = static_cast<std::size_t>(n);
    ssize_t got;
    do {
        got = ::recvmsg(rx.fd_, &m, MSG_DONTWAIT);
    } while (got < 0 && errno == EINTR);
    rx.consumed = true;
    rx.direct_lo = offset;
    rx.direct_hi = offset + covered;
    const std::size_t body =
        got > static_cast<ssize_t>(head) ? static_cast<std::size_t>(got) - head : 0;
    rx.valid = std::min(body, plen);
    if (rx.valid < offset + covered) {
        return rx.valid > offset ? rx.valid - offset : 0; // shorter than it said (cannot happen)
    }
    std::size_t done = covered;
    if (covered < want) {
        // More iovecs than one recvmsg takes: the rest comes from the stash.
        std::size_t more = std::min(want - covered, rx.valid - offset - covered);
        done += scatter(stash.data() + offset + covered, more, iov, iovcnt, covered);
    }
    return done;
}

// Threads ("Threads" in udp_path.h): the sends that wait (batches, stalled
// datagrams, credits) by one thread at a time, each socket read by one
// thread at a time; a busy one is left to the thread that has it.
int UdpPath::progress(Sink& sink)
{
    int n = 0;
    if (chores_.try_lock()) {
        n += flush_batches();
        if (any_credit_due_.load(std::memory_order_relaxed)) {
            send_credits();
        }
        chores_.unlock();
    }
    for (Sock& s : socks_) {
        if (s.rx.try_lock()) {
            n += receive(s, sink);
            s.rx.unlock();
        }
    }
    if (chores_.try_lock()) {
        (void)flush_batches(); // data fragments ULM sent from on_frag()
        chores_.unlock();
    }
    if (any_down_due_.load(std::memory_order_relaxed)) [[unlikely]] {
        report_down(sink);
    }
    return n;
}

void UdpPath::report_down(Sink& sink)
{
    std::vector<int> peers;
    {
        rt::OptGuard m(misc_);
        peers.swap(down_due_);
        any_down_due_.store(false, std::memory_order_relaxed);
        for (int peer : peers) {
            peers_[static_cast<std::size_t>(peer)].down_due = false;
        }
    }
    for (int peer : peers) {
        sink.on_path_down(*this, peer);
    }
}

const char* UdpPath::describe() const
{
    std::string d = "udp:";
    for (std::size_t i = 0; i < ifaces_.size(); ++i) {
        d += (i == 0 ? " " : ", ") + ifaces_[i].name + " " + udp::ip_text(mine_[i].ip) +
             " (short :" + std::to_string(mine_[i].port[0]) +
             ", long :" + std::to_string(mine_[i].port[1]) + ")";
    }
    d += "; datagrams up to " + std::to_string(info_.max_frag + kHdr) +
         (frag_explicit_ ? " bytes (ULMPI_UDP_FRAG_SIZE)" : " bytes (no IP fragmentation)") +
         ", eager " + size_text(info_.eager_limit) + ", sndbuf " +
         size_text(static_cast<std::uint64_t>(actual_sndbuf_)) + " rcvbuf " +
         size_text(static_cast<std::uint64_t>(actual_rcvbuf_)) +
         (opt_.everywhere ? ", also within a host" : "") + (opt_.peek_all ? ", peek all" : "");
    d += ", window " + size_text(window_[0]) + "/" + size_text(window_[1]);
    d += gso() ? "; GSO batches of up to " + std::to_string(gso_segs_.load()) + " datagrams"
                       : std::string("; GSO ") + (std::strcmp(gso_why_, "on") == 0 ? "off" : gso_why_);
    d += gro() ? "; GRO on" : std::string("; GRO ") + gro_why_ + ", bulk peeked";
    char tail[512];
    std::snprintf(
        tail, sizeof tail,
        "; sent %" PRIu64 " datagrams in %" PRIu64 " GSO batches, read %" PRIu64
        " in %" PRIu64 " GRO reads"
        "; window shut %" PRIu64 " times (probes %" PRIu64 ", credits %" PRIu64 ")"
        "; refused %" PRIu64 " datagrams (token %" PRIu64 ", address %" PRIu64 ", rank %" PRIu64
        ", malformed %" PRIu64 ", oversize %" PRIu64 "); send errors %" PRIu64,
        gso_datagrams_, gso_sends_, gro_datagrams_, gro_reads_, window_stalls_, probes_,
        credits_sent_, refused_.total(), refused_.token, refused_.address,
        refused_.rank, refused_.malformed, refused_.oversize, send_errors_);
    describe_ = d + tail;
    return describe_.c_str();
}

} // namespace ulmpi::path
