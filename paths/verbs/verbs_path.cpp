#include "paths/verbs/verbs_path.h"

#include "paths/registry.h"
#include "paths/verbs/verbs_memhook.h"
#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ulmpi::path::verbs {
namespace {

const rt::SizeParam eager_param{"verbs_eager_limit", 8192,
                                "messages up to this size go eagerly over verbs (bounce buffers)"};
const rt::SizeParam buf_param{
    "verbs_buf_size", 16384,
    "bytes of a verbs receive or bounce buffer (8-byte path header + ULM fragment)"};
const rt::IntParam srq_param{"verbs_srq_depth", 512,
                             "receive buffers in the verbs shared receive queue, shared out "
                             "equally as credits (raised to one per peer)"};
const rt::IntParam send_bufs_param{"verbs_send_bufs", 256, "registered bounce buffers for verbs sends"};
const rt::IntParam qp_depth_param{"verbs_qp_depth", 128, "send queue depth of each verbs queue pair"};
const rt::SizeParam chunk_param{"verbs_read_chunk", 1u << 20,
                                "bytes of one RDMA read of a verbs rendezvous"};
const rt::IntParam timeout_param{
    "verbs_timeout", 14,
    "verbs transport timeout exponent: a try waits 4.096 us * 2^value (14: 67 ms), retry_count+1 tries"};
const rt::IntParam retry_param{"verbs_retry_count", 7,
                               "verbs transport retries before an error completion (0-7)"};
const rt::IntParam gid_param{"verbs_gid_index", -1,
                             "GID index of verbs ports (-1: index 0 on InfiniBand, a RoCE v2 GID on "
                             "Ethernet)"};
// A ThreadSanitizer build has no memory hooks (verbs_memhook.cpp), so a
// cached registration could outlive its memory there: the cache is off by
// default in that build.
#if defined(__SANITIZE_THREAD__)
constexpr bool kCacheDefault = false;
#else
constexpr bool kCacheDefault = true;
#endif
const rt::BoolParam cache_param{"verbs_reg_cache", kCacheDefault,
                                "keep registrations of rendezvous buffers (invalidated when the "
                                "memory is unmapped; malloc then keeps its memory)"};
const rt::SizeParam cache_max_param{"verbs_reg_cache_max", 0,
                                    "bytes of cached verbs registrations before idle ones go (0: no "
                                    "limit)"};
const rt::IntParam inline_param{"verbs_max_inline", 128,
                                "bytes of a verbs send the device copies at post time (inline)"};
const rt::TextParam device_param{
    "verbs_device", "",
    "where verbs devices come from: empty or ibv (libibverbs), soft:<library>[,args] (a test device)"};
const rt::TextParam devices_param{
    "verbs_devices", "",
    "verbs devices and ports to use, comma-separated (mlx5_0, mlx5_0:1); empty: every active port"};
const rt::IntParam rails_param{"verbs_max_rails", 4, "most verbs paths (active ports) per process"};
const rt::ChoiceParam everywhere_param{
    "verbs_everywhere", "auto",
    "verbs also reaches ranks on this host: auto (only when ULMPI_PATH_INCLUDE leaves shm out), on, off",
    "auto|on|off"};


// Every cache of the process hears of released memory.
std::mutex g_caches_mu;
std::vector<RegCache*> g_caches;

void on_release(void*, std::uintptr_t addr, std::size_t len)
{
    std::lock_guard<std::mutex> g(g_caches_mu);
    for (RegCache* c : g_caches) {
        c->invalidate(addr, len);
    }
}

void add_cache(RegCache* c)
{
    std::lock_guard<std::mutex> g(g_caches_mu);
    g_caches.push_back(c);
    if (g_caches.size() == 1 && !memhook_install(&on_release, nullptr)) {
        ULMPI_WARN("verbs: the memory hooks are not interposed (munmap is not ours); "
                   "set ULMPI_VERBS_REG_CACHE=off if buffers are unmapped and mapped again");
    }
}

void remove_cache(RegCache* c)
{
    std::lock_guard<std::mutex> g(g_caches_mu);
    g_caches.erase(std::remove(g_caches.begin(), g_caches.end(), c), g_caches.end());
    if (g_caches.empty()) {
        memhook_remove();
    }
}

// Anonymous page-aligned memory the path owns (straight from the kernel,
// so the memory hooks never see it).
std::byte* map_bytes(std::size_t len)
{
    long r = ::syscall(SYS_mmap, nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return r < 0 && r > -4096 ? nullptr : reinterpret_cast<std::byte*>(r);
}
void unmap_bytes(std::byte* p, std::size_t len)
{
    if (p != nullptr) {
        ::syscall(SYS_munmap, p, len);
    }
}

std::size_t round_page(std::size_t n) { return (n + 4095) & ~std::size_t{4095}; }

bool newer(std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b) > 0; }

struct VerbsRxFrag final : RxFrag {};

} // namespace

// Between shm (50) and ofi (20): self > shm > verbs > ofi > udp.
static const Registrar reg{"verbs", 30, &make_verbs_paths};

VerbsOptions verbs_options_from_params()
{
    VerbsOptions o;
    o.buf_size = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(buf_param.get(), 1024, 1u << 22));
    o.eager_limit = std::min<std::uint64_t>(eager_param.get(), o.buf_size);
    o.srq_depth = static_cast<std::uint32_t>(std::clamp<std::int64_t>(srq_param.get(), 1, 1 << 20));
    o.send_bufs = static_cast<std::uint32_t>(std::clamp<std::int64_t>(send_bufs_param.get(), 1, 1 << 20));
    o.qp_depth = static_cast<std::uint32_t>(std::clamp<std::int64_t>(qp_depth_param.get(), 4, 1 << 16));
    o.read_chunk = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(chunk_param.get(), 4096, 1u << 30));
    o.timeout = static_cast<std::uint8_t>(std::clamp<std::int64_t>(timeout_param.get(), 1, 31));
    o.retry_cnt = static_cast<std::uint8_t>(std::clamp<std::int64_t>(retry_param.get(), 0, 7));
    o.gid_index = static_cast<int>(std::clamp<std::int64_t>(gid_param.get(), -1, 255));
    o.reg_cache = cache_param.get();
    o.reg_budget = cache_max_param.get() == 0 ? ~std::uint64_t{0} : cache_max_param.get();
    o.max_inline = static_cast<std::uint32_t>(std::clamp<std::int64_t>(inline_param.get(), 0, 1024));
    const std::string& ev = everywhere_param.get();
    o.everywhere = ev == "on" || (ev == "auto" && !path_selected("shm"));
    return o;
}

VerbsPath::VerbsPath(const rt::JobInfo& job, std::shared_ptr<Device> dev, int port, int rail,
                     const VerbsOptions& opt)
    : job_(job), dev_(std::move(dev)), port_(port), rail_(rail), opt_(opt)
{
    name_ = "verbs" + std::to_string(rail);
    info_.name = name_.c_str();
    info_.latency_us = 2;
    info_.max_frag = opt_.buf_size - static_cast<std::uint32_t>(kHdr);
    info_.eager_limit = std::min<std::uint64_t>(opt_.eager_limit, info_.max_frag);
    // RC queue pairs deliver reliably and in order, and the link and
    // transport check every packet (ICRC/VCRC): ULM's acknowledgements and
    // checksums would only cost here, and a checksummed path cannot use the
    // RDMA read rendezvous (docs/verbs.md).
    info_.reliable_default = false;
    info_.has_get = true;
    info_.get_max = 0;
    info_.get_depth = kGetDepth;
    info_.order = PathInfo::Order::total;
    peers_.resize(static_cast<std::size_t>(job.size));
}

VerbsPath::~VerbsPath() { close(); }

bool VerbsPath::can_reach(int peer) const
{
    if (peer < 0 || static_cast<std::size_t>(peer) >= peers_.size()) {
        return false;
    }
    const Peer& p = peers_[static_cast<std::size_t>(peer)];
    return open_ && p.reach && !broken(p);
}

void VerbsPath::bump(std::uint64_t& counter, std::uint64_t n)
{
    if (rt::fine_locks()) [[unlikely]] {
        std::atomic_ref<std::uint64_t>(counter).fetch_add(n, std::memory_order_relaxed);
    } else {
        counter += n;
    }
}

bool VerbsPath::pool_empty() const
{
    rt::OptGuard g(pool_);
    return free_bufs_.empty();
}

std::uint32_t VerbsPath::qpn(int peer) const
{
    const Peer& p = peers_[static_cast<std::size_t>(peer)];
    return p.qp != nullptr ? p.qp->qpn : 0;
}

Status VerbsPath::open(rt::Bootstrap& boot)
{
    const DeviceAttr& da = dev_->attr();
    if (Status st = dev_->query_port(port_, opt_.gid_index, pattr_); !st.ok()) {
        return st;
    }
    const int npeers = std::max(1, job_.size - 1);
    depth_ = std::max<std::uint32_t>(opt_.srq_depth, static_cast<std::uint32_t>(npeers));
    depth_ = std::min<std::uint32_t>(depth_, da.max_srq_wr);
    depth_ = std::min<std::uint32_t>(depth_, da.max_cqe);
    if (depth_ < static_cast<std::uint32_t>(npeers)) {
        ULMPI_ERROR("verbs: %s takes %u receives in a shared queue, fewer than the %d peers",
                    da.name.c_str(), depth_, npeers);
        return Errc::no_memory;
    }
    share_ = depth_ / static_cast<std::uint32_t>(npeers);
    depth_ = share_ * static_cast<std::uint32_t>(npeers);
    opt_.qp_depth = std::min(opt_.qp_depth, da.max_qp_wr);
    std::uint64_t scq_depth = std::min<std::uint64_t>(
        da.max_cqe, static_cast<std::uint64_t>(npeers) * opt_.qp_depth);
    if (scq_depth < static_cast<std::uint64_t>(npeers) * opt_.qp_depth) {
        opt_.qp_depth = std::max<std::uint32_t>(4, static_cast<std::uint32_t>(scq_depth / npeers));
    }

    if (Status st = dev_->create_cq(static_cast<std::uint32_t>(scq_depth), scq_); !st.ok()) {
        return st;
    }
    if (Status st = dev_->create_cq(depth_, rcq_); !st.ok()) {
        return st;
    }
    if (Status st = dev_->create_srq(depth_, srq_); !st.ok()) {
        return st;
    }
    bufs_len_ = round_page(static_cast<std::size_t>(opt_.send_bufs) * opt_.buf_size);
    rbufs_len_ = round_page(static_cast<std::size_t>(depth_) * opt_.buf_size);
    grants_len_ = round_page(sizeof(Grant) * static_cast<std::size_t>(job_.size));
    bufs_ = map_bytes(bufs_len_);
    rbufs_ = map_bytes(rbufs_len_);
    auto* gin = map_bytes(grants_len_);
    auto* gout = map_bytes(grants_len_);
    if (bufs_ == nullptr || rbufs_ == nullptr || gin == nullptr || gout == nullptr) {
        return Errc::no_memory;
    }
    grants_in_ = reinterpret_cast<Grant*>(gin);
    grants_out_ = reinterpret_cast<Grant*>(gout);
    if (Status st = dev_->reg_mr(bufs_, bufs_len_, access::local_write, bufs_mr_); !st.ok()) {
        return st;
    }
    if (Status st = dev_->reg_mr(rbufs_, rbufs_len_, access::local_write, rbufs_mr_); !st.ok()) {
        return st;
    }
    if (Status st = dev_->reg_mr(grants_in_, grants_len_, access::local_write | access::remote_write,
                                 grants_in_mr_);
        !st.ok()) {
        return st;
    }
    if (Status st = dev_->reg_mr(grants_out_, grants_len_, access::local_write, grants_out_mr_); !st.ok()) {
        return st;
    }
    for (std::uint32_t i = opt_.send_bufs; i-- > 0;) {
        free_bufs_.push_back(i);
    }
    reads_.reset(kGetDepth, kGetDepth, kMaxPieces);
    reads_.on_ending([this](std::uint32_t, ReadTable::Read& q) { read_ending(q); });
    for (std::uint32_t i = 0; i < depth_; ++i) {
        Sge s{reinterpret_cast<std::uint64_t>(rbuf(i)), opt_.buf_size, rbufs_mr_->lkey};
        if (Status st = dev_->post_srq_recv(srq_, i, s); !st.ok()) {
            return st;
        }
    }

    std::random_device rd;
    psn_base_ = rd() & 0xffffffu;
    record_.assign(sizeof(PortAddr) + sizeof(std::uint32_t) * static_cast<std::size_t>(job_.size),
                   std::byte{0});
    PortAddr a{};
    a.version = kWireVersion;
    a.link = static_cast<std::uint8_t>(pattr_.link);
    a.lid = pattr_.lid;
    a.mtu = pattr_.active_mtu;
    std::memcpy(a.gid, pattr_.gid, 16);
    a.psn_base = psn_base_;
    a.credits = share_;
    a.grant_addr = reinterpret_cast<std::uint64_t>(grants_in_);
    a.grant_rkey = grants_in_mr_->rkey;
    a.size = static_cast<std::uint32_t>(job_.size);
    std::memcpy(record_.data(), &a, sizeof a);
    max_inline_ = opt_.max_inline;
    for (int r = 0; r < job_.size; ++r) {
        std::uint32_t q = 0;
        if (r != job_.rank) {
            Peer& p = peers_[static_cast<std::size_t>(r)];
            if (Status st = make_qp(r, p.qp); !st.ok()) {
                return st;
            }
            p.ring.assign(opt_.qp_depth, 0);
            p.inl.resize(max_inline_);
            q = p.qp->qpn;
            qpn_rank_.emplace_back(q, r);
        }
        std::memcpy(record_.data() + sizeof a + sizeof q * static_cast<std::size_t>(r), &q,
                    sizeof q);
    }
    std::sort(qpn_rank_.begin(), qpn_rank_.end());
    scratch_.resize(opt_.buf_size);
    info_.inline_max = max_inline_ > kHdr ? max_inline_ - static_cast<std::uint32_t>(kHdr) : 0;
    info_.bandwidth_mbs = pattr_.gbps > 0 ? pattr_.gbps * 1000 / 8 * 0.9 : 10000;
    cache_ = std::make_unique<RegCache>(*dev_, opt_.reg_cache, opt_.reg_budget);
    add_cache(cache_.get());
    char d[256];
    std::snprintf(d, sizeof d, "%s: %s port %d (%s%s, %.0f Gb/s, MTU %u), %u receives (%u per peer), inline %u",
                  name_.c_str(), da.name.c_str(), port_,
                  pattr_.link == LinkLayer::infiniband ? "InfiniBand, LID " : "Ethernet (RoCE), GID index ",
                  pattr_.link == LinkLayer::infiniband ? std::to_string(pattr_.lid).c_str()
                                                       : std::to_string(pattr_.gid_index).c_str(),
                  pattr_.gbps, pattr_.active_mtu, depth_, share_, info_.inline_max);
    describe_ = d;
    return boot.put("verbs." + std::to_string(rail_), record_.data(), record_.size());
}

Status VerbsPath::make_qp(int r, Qp*& out)
{
    const DeviceAttr& da = dev_->attr();
    QpCaps caps;
    caps.max_send_wr = opt_.qp_depth;
    caps.max_send_sge = std::min<std::uint32_t>(4, da.max_sge);
    caps.max_inline = max_inline_;
    Qp* qp = nullptr;
    if (Status st = dev_->create_qp(scq_, rcq_, srq_, caps, qp); !st.ok()) {
        ULMPI_ERROR("verbs: %s: no queue pair for rank %d (%s)", da.name.c_str(), r,
                    rt::errc_name(st.code()));
        return st;
    }
    if (open_ && caps.max_inline < max_inline_) {
        // ULM was told the inline size at the wire-up (info().inline_max).
        ULMPI_ERROR("verbs: %s: a new queue pair for rank %d takes %u bytes inline, not %u",
                    da.name.c_str(), r, caps.max_inline, max_inline_);
        dev_->destroy_qp(qp);
        return Errc::no_memory;
    }
    max_inline_ = std::min(max_inline_, caps.max_inline);
    if (Status st = dev_->modify_qp_init(qp, port_, access::remote_read | access::remote_write |
                                                        access::local_write);
        !st.ok()) {
        dev_->destroy_qp(qp);
        return st;
    }
    out = qp;
    return Errc::ok;
}

void VerbsPath::index_qpn(std::uint32_t q, int r)
{
    auto pos = std::lower_bound(qpn_rank_.begin(), qpn_rank_.end(), std::make_pair(q, -1));
    qpn_rank_.insert(pos, std::make_pair(q, r));
}

void VerbsPath::unindex_qpn(std::uint32_t q)
{
    auto it = std::lower_bound(qpn_rank_.begin(), qpn_rank_.end(), std::make_pair(q, -1));
    if (it != qpn_rank_.end() && it->first == q) {
        qpn_rank_.erase(it);
    }
}

Status VerbsPath::connect(rt::Bootstrap& boot)
{
    for (int r = 0; r < job_.size; ++r) {
        if (r == job_.rank) {
            continue;
        }
        bool reached = false;
        if (Status st = connect_one(r, boot, reached); !st.ok()) {
            return st;
        }
    }
    open_ = true;
    return Errc::ok;
}

Status VerbsPath::connect_one(int r, rt::Bootstrap& boot, bool& reached)
{
    reached = false;
    const bool same_host = job_.node_of_rank.size() == static_cast<std::size_t>(job_.size) &&
                           job_.node_of_rank[static_cast<std::size_t>(r)] == job_.node_id;
    if (same_host && !opt_.everywhere) {
        return Errc::ok; // shared memory's (its queue pair stays unused)
    }
    Peer& p = peers_[static_cast<std::size_t>(r)];
    std::vector<std::byte> v;
    if (!boot.get(r, "verbs." + std::to_string(rail_), v).ok() || v.size() < sizeof(PortAddr)) {
        return Errc::ok; // no such rail there
    }
    PortAddr a;
    std::memcpy(&a, v.data(), sizeof a);
    if (a.version != kWireVersion || a.size != static_cast<std::uint32_t>(job_.size) ||
        v.size() != sizeof a + sizeof(std::uint32_t) * a.size) {
        ULMPI_ERROR("verbs: rank %d published a %s record of another version or job size", r,
                    name_.c_str());
        return Errc::protocol;
    }
    if (a.link != static_cast<std::uint8_t>(pattr_.link)) {
        ULMPI_DEBUG("verbs: %s of rank %d is on another link layer", name_.c_str(), r);
        return Errc::ok;
    }
    std::uint32_t their = 0;
    std::memcpy(&their, v.data() + sizeof a + sizeof their * static_cast<std::size_t>(job_.rank),
                sizeof their);
    if (their == 0) {
        return Errc::ok;
    }
    RtrAttr rtr;
    rtr.dest_qpn = their;
    rtr.rq_psn = psn_of(a.psn_base, job_.rank);
    rtr.path_mtu = std::min(a.mtu, pattr_.active_mtu);
    rtr.dlid = a.lid;
    // Global routing on Ethernet, and on InfiniBand when the subnets differ.
    rtr.global = pattr_.link == LinkLayer::ethernet || std::memcmp(a.gid, pattr_.gid, 8) != 0;
    std::memcpy(rtr.dgid, a.gid, 16);
    rtr.sgid_index = static_cast<std::uint8_t>(pattr_.gid_index);
    rtr.max_dest_rd_atomic = static_cast<std::uint8_t>(
        std::clamp<std::uint32_t>(dev_->attr().max_qp_rd_atom, 1, 16));
    if (Status st = dev_->modify_qp_rtr(p.qp, rtr); !st.ok()) {
        ULMPI_ERROR("verbs: %s: queue pair to rank %d refused RTR (%s)", name_.c_str(), r,
                    rt::errc_name(st.code()));
        return st;
    }
    RtsAttr rts;
    rts.sq_psn = psn_of(psn_base_, r);
    rts.timeout = opt_.timeout;
    rts.retry_cnt = opt_.retry_cnt;
    rts.rnr_retry = 7;
    rts.max_rd_atomic = rtr.max_dest_rd_atomic;
    if (Status st = dev_->modify_qp_rts(p.qp, rts); !st.ok()) {
        ULMPI_ERROR("verbs: %s: queue pair to rank %d refused RTS (%s)", name_.c_str(), r,
                    rt::errc_name(st.code()));
        return st;
    }
    p.granted = a.credits;
    p.grant = share_;
    p.told = share_;
    p.grant_addr = a.grant_addr + sizeof(Grant) * static_cast<std::size_t>(job_.rank);
    p.grant_rkey = a.grant_rkey;
    p.reach = true;
    reached = true;
    return Errc::ok;
}

Status VerbsPath::reset_peer(int peer, rt::Bootstrap& boot)
{
    if (!open_ || peer < 0 || peer >= job_.size || peer == job_.rank) {
        return Errc::invalid_arg;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    // The new queue pair while the old one still exists: it cannot get the
    // old one's number (header: completions are told apart by it).
    Qp* fresh = nullptr;
    if (Status st = make_qp(peer, fresh); !st.ok()) {
        return st;
    }
    {
        // Its reads end (reported by the next progress()); their posted
        // pieces stay orphans until the old queue pair is destroyed.
        rt::OptGuard g(reads_lock_);
        reads_.abandon_peer(peer, Errc::io_error);
    }
    if (p.qp != nullptr) {
        (void)dev_->modify_qp_error(p.qp); // what is queued to the old process completes flushed
        unindex_qpn(p.qp->qpn);
        retired_.push_back(Retired{peer, p.qp, std::move(p.ring)});
    }
    p.restart(fresh, opt_.qp_depth);
    index_qpn(fresh->qpn, peer);
    // The old process's credit returns: the new one counts from nothing. No
    // write of the old one lands any more (its queue pair here is in error).
    grants_in_[peer] = Grant{0, 0};
    std::erase(down_due_, peer);
    std::erase(owed_, peer);
    poll_send(); // flushed completions of the old queue pair: recognised, ignored
    // The new process reads this before it connects (after the fence).
    const std::uint32_t q = fresh->qpn;
    std::memcpy(record_.data() + sizeof(PortAddr) + sizeof q * static_cast<std::size_t>(peer), &q,
                sizeof q);
    return boot.put("verbs." + std::to_string(rail_), record_.data(), record_.size());
}

Status VerbsPath::connect_peer(int peer, rt::Bootstrap& boot)
{
    if (!open_ || peer < 0 || peer >= job_.size || peer == job_.rank) {
        return Errc::invalid_arg;
    }
    destroy_retired(peer); // the fence's progress has drained their completions
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (p.reach) {
        // Known since the wire-up (or broken: a queue pair in error is
        // connected again only through reset_peer).
        return p.broken ? Errc::unreachable : Errc::ok;
    }
    if (p.qp == nullptr || dev_->qp_state(p.qp) != QpState::init) {
        return Errc::unreachable;
    }
    bool reached = false;
    if (Status st = connect_one(peer, boot, reached); !st.ok()) {
        return st;
    }
    return reached ? Errc::ok : Errc::unreachable;
}

void VerbsPath::destroy_retired(int peer)
{
    std::erase_if(retired_, [&](Retired& r) {
        if (peer >= 0 && r.peer != peer) {
            return false;
        }
        dev_->destroy_qp(r.qp); // the device touches none of its buffers after this
        for (std::uint32_t t : r.ring) {
            if (t != 0 && t != kReadTok && !is_piece(t)) {
                free_bufs_.push_back(t - 1);
            }
        }
        free_pieces(r.ring);
        return true;
    });
}

void VerbsPath::close()
{
    destroy_retired(-1);
    if (cache_ != nullptr) {
        remove_cache(cache_.get());
        cache_.reset();
    }
    for (Peer& p : peers_) {
        if (p.qp != nullptr) {
            dev_->destroy_qp(p.qp);
            p.qp = nullptr;
        }
    }
    for (Mr** m : {&bufs_mr_, &rbufs_mr_, &grants_in_mr_, &grants_out_mr_}) {
        if (*m != nullptr) {
            dev_->dereg_mr(*m);
            *m = nullptr;
        }
    }
    if (srq_ != nullptr) {
        dev_->destroy_srq(srq_);
        srq_ = nullptr;
    }
    for (Cq** c : {&scq_, &rcq_}) {
        if (*c != nullptr) {
            dev_->destroy_cq(*c);
            *c = nullptr;
        }
    }
    unmap_bytes(bufs_, bufs_len_);
    unmap_bytes(rbufs_, rbufs_len_);
    unmap_bytes(reinterpret_cast<std::byte*>(grants_in_), grants_len_);
    unmap_bytes(reinterpret_cast<std::byte*>(grants_out_), grants_len_);
    bufs_ = rbufs_ = nullptr;
    grants_in_ = grants_out_ = nullptr;
    // No queue pair is left to complete a read: nothing is in flight.
    reads_.reset(0, 0, 0);
    open_ = false;
}

void VerbsPath::refresh_grant(int peer)
{
    const volatile Grant* g = &grants_in_[peer];
    std::uint64_t v = g->value;
    std::uint64_t c = g->check;
    if (c == ~v) {
        Peer& p = peers_[static_cast<std::size_t>(peer)];
        auto nv = static_cast<std::uint32_t>(v);
        if (newer(nv, p.granted)) {
            p.granted = nv;
        }
    }
}

std::uint32_t VerbsPath::credits(int peer)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    rt::OptGuard hold(p.lock);
    refresh_grant(peer);
    return p.granted - p.sent;
}

bool VerbsPath::post(int peer, SendWr& wr, std::uint32_t token)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    const bool must = token != 0 || wr.op == Op::rdma_read || p.posted - p.last_signaled >= opt_.qp_depth / 2;
    wr.signaled = wr.signaled || must;
    wr.wr_id = (static_cast<std::uint64_t>(peer) << 32) | (p.posted & 0xffffffffu);
    Status st = dev_->post_send(p.qp, wr);
    if (!st.ok()) {
        break_peer(peer, st.code() == Errc::again ? "send queue full" : "post refused");
        return false;
    }
    p.ring[p.posted % opt_.qp_depth] = token;
    if (wr.signaled) {
        p.last_signaled = p.posted;
    }
    ++p.posted;
    return true;
}

void VerbsPath::write_grant(int peer)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (p.broken || !port_up_) {
        return;
    }
    if (!has_slot(p)) {
        rt::OptGuard g(misc_);
        owed_.push_back(peer); // progress() tries again
        return;
    }
    Grant& g = grants_out_[peer];
    g.value = p.grant;
    g.check = ~g.value;
    Sge s{reinterpret_cast<std::uint64_t>(&g), sizeof g, grants_out_mr_->lkey};
    SendWr wr;
    wr.op = Op::rdma_write;
    wr.signaled = false;
    wr.inline_data = max_inline_ >= sizeof g;
    wr.sg = &s;
    wr.nsge = 1;
    wr.remote_addr = p.grant_addr;
    wr.rkey = p.grant_rkey;
    if (post(peer, wr, 0)) {
        p.told = p.grant;
        bump(credit_writes_);
    }
}

bool VerbsPath::acquire(int peer, std::size_t len, TxBuffer& out)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    auto fail = [&] {
        out.data = scratch_.data() + kHdr;
        out.cap = scratch_.size() - kHdr;
        out.token = kFailTok; // commit() answers failed (the peer's lock is not held)
        return true;
    };
    if (!p.reach || len > info_.max_frag) {
        return fail();
    }
    // Held until commit() on success ("Threads").
    p.lock.lock();
    if (p.broken || !port_up_) {
        p.lock.unlock();
        return fail();
    }
    if (p.sent == p.granted) {
        refresh_grant(peer);
        if (p.sent == p.granted) {
            p.lock.unlock();
            bump(credit_stalls_);
            bump(counters_.send_again);
            return false;
        }
    }
    const bool inl = len + kHdr <= max_inline_;
    if (!has_slot(p) || (!inl && pool_empty())) {
        p.lock.unlock(); // the send queue's reader takes the peer locks
        poll_send();
        p.lock.lock();
        if (p.broken) {
            p.lock.unlock();
            return fail();
        }
        if (!has_slot(p) || (!inl && pool_empty())) {
            p.lock.unlock();
            bump(counters_.send_again);
            return false;
        }
    }
    if (inl) {
        out.data = p.inl.data() + kHdr;
        out.cap = max_inline_ - kHdr;
        out.token = kInlineTok;
        return true;
    }
    std::uint32_t i;
    {
        rt::OptGuard g(pool_);
        if (free_bufs_.empty()) { // another peer's sender took the last one
            i = ~std::uint32_t{0};
        } else {
            i = free_bufs_.back();
            free_bufs_.pop_back();
        }
    }
    if (i == ~std::uint32_t{0}) {
        p.lock.unlock();
        bump(counters_.send_again);
        return false;
    }
    out.data = buf(i) + kHdr;
    out.cap = opt_.buf_size - kHdr;
    out.token = i;
    return true;
}

SendResult VerbsPath::commit(int peer, const TxBuffer& b, std::size_t len)
{
    if (b.token == kFailTok) {
        return SendResult::failed;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    const bool inl = b.token == kInlineTok;
    std::byte* start = b.data - kHdr;
    FragHeader h{kWireVersion, kFrag, 0, p.grant};
    std::memcpy(start, &h, sizeof h);
    Sge s{reinterpret_cast<std::uint64_t>(start), static_cast<std::uint32_t>(len + kHdr),
          inl ? 0u : bufs_mr_->lkey};
    SendWr wr;
    wr.op = Op::send;
    wr.signaled = false;
    wr.inline_data = inl;
    wr.sg = &s;
    wr.nsge = 1;
    const auto token = inl ? 0u : static_cast<std::uint32_t>(b.token) + 1;
    if (!post(peer, wr, token)) {
        p.lock.unlock();
        if (!inl) {
            rt::OptGuard g(pool_);
            free_bufs_.push_back(static_cast<std::uint32_t>(b.token));
        }
        return SendResult::failed;
    }
    p.told = p.grant;
    ++p.sent;
    p.lock.unlock(); // taken by acquire()
    bump(counters_.frags_sent);
    bump(counters_.bytes_sent, len);
    return SendResult::done;
}

VerbsPath::Peer* VerbsPath::peer_of_qpn(std::uint32_t q, int& rank)
{
    auto it = std::lower_bound(qpn_rank_.begin(), qpn_rank_.end(), std::make_pair(q, -1));
    if (it == qpn_rank_.end() || it->first != q) {
        return nullptr;
    }
    rank = it->second;
    return &peers_[static_cast<std::size_t>(rank)];
}

void VerbsPath::break_peer(int peer, const char* why)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (p.broken) {
        return;
    }
    ULMPI_DEBUG("verbs: %s to rank %d broken: %s", name_.c_str(), peer, why);
    std::atomic_ref<bool>(p.broken).store(true, std::memory_order_relaxed);
    if (p.qp != nullptr) {
        (void)dev_->modify_qp_error(p.qp); // flush what is still queued
    }
    rt::OptGuard g(misc_);
    down_due_.push_back(peer);
}

void VerbsPath::break_all(const char* why)
{
    for (int r = 0; r < job_.size; ++r) {
        Peer& p = peers_[static_cast<std::size_t>(r)];
        if (p.reach) {
            rt::OptGuard hold(p.lock);
            break_peer(r, why);
        }
    }
}

void VerbsPath::on_send_wc(const Wc& wc)
{
    const int peer = static_cast<int>(wc.wr_id >> 32);
    if (peer < 0 || peer >= job_.size) {
        return;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (p.qp == nullptr || wc.qp_num != p.qp->qpn) {
        return; // of a replaced process's queue pair (reset_peer): nothing of ours
    }
    rt::OptGuard hold(p.lock);
    if (wc.status != WcStatus::success) {
        bump(error_wcs_);
        if (wc.status != WcStatus::wr_flush_err) {
            ULMPI_DEBUG("verbs: %s: error completion to rank %d: %s", name_.c_str(), peer,
                        wc_status_name(wc.status));
        }
        break_peer(peer, wc_status_name(wc.status));
    }
    // Everything up to this request is complete (in order per queue pair).
    const auto ahead = static_cast<std::uint32_t>(wc.wr_id) - static_cast<std::uint32_t>(p.done);
    const std::uint64_t upto = p.done + ahead;
    while (p.done <= upto && p.done < p.posted) {
        std::uint32_t& t = p.ring[p.done % opt_.qp_depth];
        if (is_piece(t)) {
            // Requests before the one completed here succeeded (in order).
            on_piece_done(t - kPieceTok, p.done == upto ? wc.status : WcStatus::success);
        } else if (t != 0 && t != kReadTok) {
            rt::OptGuard g(pool_);
            free_bufs_.push_back(t - 1);
        }
        t = 0;
        ++p.done;
    }
}

int VerbsPath::poll_send()
{
    const bool fine = rt::fine_locks();
    if (fine) [[unlikely]] {
        if (scq_busy_.exchange(true, std::memory_order_acquire)) {
            return 0; // another thread reads it and completes what it finds
        }
    }
    Wc wc[16];
    int total = 0;
    for (;;) {
        int n = dev_->poll_cq(scq_, wc, 16);
        if (n < 0) {
            ULMPI_ERROR("verbs: %s: send completion queue overrun", name_.c_str());
            break_all("completion queue overrun");
            break;
        }
        for (int i = 0; i < n; ++i) {
            on_send_wc(wc[i]);
        }
        total += n;
        if (n < 16) {
            break;
        }
    }
    if (fine) [[unlikely]] {
        scq_busy_.store(false, std::memory_order_release);
    }
    return total;
}

void VerbsPath::handle_event(const AsyncEvent& ev)
{
    ULMPI_DEBUG("verbs: %s: event %s (port %d, qp %u)", name_.c_str(), async_kind_name(ev.kind), ev.port,
                ev.qp_num);
    switch (ev.kind) {
    case AsyncEvent::Kind::port_error:
        if (ev.port == port_ && port_up_) {
            port_up_ = false;
            port_news_ = true;
        }
        break;
    case AsyncEvent::Kind::port_active:
        if (ev.port == port_ && !port_up_) {
            port_up_ = true;
            port_news_ = true;
        }
        break;
    case AsyncEvent::Kind::qp_fatal:
    case AsyncEvent::Kind::qp_access_error: {
        int r = -1;
        if (Peer* p = peer_of_qpn(ev.qp_num, r); p != nullptr) {
            rt::OptGuard hold(p->lock);
            break_peer(r, async_kind_name(ev.kind));
        }
        break;
    }
    case AsyncEvent::Kind::cq_error:
    case AsyncEvent::Kind::device_fatal:
        break_all(async_kind_name(ev.kind));
        break;
    default:
        break;
    }
}

int VerbsPath::progress(Sink& sink)
{
    if (!open_) {
        return 0;
    }
    if (rt::fine_locks()) [[unlikely]] {
        // Any thread reads the send queue; one at a time the receive side.
        if (rcq_busy_.exchange(true, std::memory_order_acquire)) {
            return poll_send();
        }
        const int n = progress_rx(sink);
        rcq_busy_.store(false, std::memory_order_release);
        return n;
    }
    return progress_rx(sink);
}

int VerbsPath::progress_rx(Sink& sink)
{
    int n = 0;
    if ((++event_tick_ & 63) == 0) {
        AsyncEvent ev;
        while (dev_->poll_async(ev)) {
            handle_event(ev);
        }
    }
    Wc wc[32];
    int got = dev_->poll_cq(rcq_, wc, 32);
    if (got < 0) {
        ULMPI_ERROR("verbs: %s: receive completion queue overrun", name_.c_str());
        AsyncEvent ev;
        ev.kind = AsyncEvent::Kind::cq_error;
        handle_event(ev);
        got = 0;
    }
    for (int i = 0; i < got; ++i) {
        const Wc& w = wc[i];
        const auto idx = static_cast<std::uint32_t>(w.wr_id);
        int r = -1;
        Peer* p = peer_of_qpn(w.qp_num, r);
        if (w.status == WcStatus::success && p != nullptr && w.byte_len >= kHdr) {
            FragHeader h;
            std::memcpy(&h, rbuf(idx), sizeof h);
            if (h.version == kWireVersion && h.kind == kFrag) {
                {
                    rt::OptGuard hold(p->lock);
                    if (newer(h.grant, p->granted)) {
                        p->granted = h.grant;
                    }
                }
                VerbsRxFrag rx;
                rx.peer = r;
                rx.data = rbuf(idx) + kHdr;
                rx.len = w.byte_len - kHdr;
                bump(counters_.frags_received);
                bump(counters_.bytes_received, rx.len);
                sink.on_frag(*this, rx);
                ++n;
            } else {
                ULMPI_WARN("verbs: %s: fragment of another version from rank %d dropped", name_.c_str(), r);
            }
        } else if (w.status != WcStatus::success && p != nullptr) {
            bump(error_wcs_);
            rt::OptGuard hold(p->lock);
            break_peer(r, wc_status_name(w.status));
        }
        Sge s{reinterpret_cast<std::uint64_t>(rbuf(idx)), opt_.buf_size, rbufs_mr_->lkey};
        if (!dev_->post_srq_recv(srq_, idx, s).ok()) {
            ULMPI_ERROR("verbs: %s: cannot post a receive again", name_.c_str());
        }
        if (p != nullptr) {
            rt::OptGuard hold(p->lock);
            if (!p->broken) {
                ++p->grant;
                if (p->grant - p->told >= std::max<std::uint32_t>(1, share_ / 2)) {
                    write_grant(r);
                }
            }
        }
    }
    poll_send();
    pump_reads();
    report_reads(sink);
    std::vector<int> again;
    {
        rt::OptGuard g(misc_);
        if (!owed_.empty()) {
            again.swap(owed_);
        }
    }
    for (int r : again) {
        Peer& p = peers_[static_cast<std::size_t>(r)];
        rt::OptGuard hold(p.lock);
        if (p.grant != p.told) {
            write_grant(r);
        }
    }
    if (port_news_.load(std::memory_order_acquire)) {
        port_news_.store(false, std::memory_order_relaxed);
        if (port_up_) {
            for (int r = 0; r < job_.size; ++r) {
                Peer& p = peers_[static_cast<std::size_t>(r)];
                if (p.reach && !broken(p) && p.told_down && dev_->qp_state(p.qp) == QpState::rts) {
                    p.told_down = false;
                    sink.on_path_up(*this, r);
                }
            }
        } else {
            for (int r = 0; r < job_.size; ++r) {
                Peer& p = peers_[static_cast<std::size_t>(r)];
                if (p.reach && !p.told_down) {
                    p.told_down = true;
                    sink.on_path_down(*this, r);
                }
            }
        }
    }
    for (;;) {
        int r;
        {
            rt::OptGuard g(misc_);
            if (down_due_.empty()) {
                break;
            }
            r = down_due_.back();
            down_due_.pop_back();
        }
        Peer& p = peers_[static_cast<std::size_t>(r)];
        if (!p.told_down) {
            p.told_down = true;
            sink.on_path_down(*this, r);
        }
    }
    return n;
}

std::vector<std::unique_ptr<Path>> make_verbs_paths(const rt::JobInfo& job)
{
    std::vector<std::unique_ptr<Path>> out;
    const VerbsOptions opt = verbs_options_from_params();
    if (!opt.everywhere && job.num_nodes <= 1) {
        // One host: shm and self do it all, and libibverbs is not loaded.
        return out;
    }
    std::string why;
    std::unique_ptr<Provider> prov = make_provider(device_param.get(), job, why);
    if (prov == nullptr) {
        ULMPI_DEBUG("verbs: no provider: %s", why.c_str());
        return out;
    }
    std::vector<std::string> names = prov->devices(why);
    if (names.empty()) {
        ULMPI_DEBUG("verbs: no device: %s", why.c_str());
        return out;
    }
    // ULMPI_VERBS_DEVICES: name or name:port entries.
    std::vector<std::pair<std::string, int>> want;
    {
        std::string list = devices_param.get();
        std::size_t pos = 0;
        while (pos < list.size()) {
            std::size_t e = list.find(',', pos);
            if (e == std::string::npos) {
                e = list.size();
            }
            std::string w = list.substr(pos, e - pos);
            pos = e + 1;
            if (w.empty()) {
                continue;
            }
            std::size_t c = w.find(':');
            want.emplace_back(w.substr(0, c), c == std::string::npos ? 0 : std::atoi(w.c_str() + c + 1));
        }
    }
    const int max_rails = static_cast<int>(std::max<std::int64_t>(1, rails_param.get()));
    int rail = 0;
    for (const std::string& n : names) {
        bool named = want.empty() || std::any_of(want.begin(), want.end(), [&](auto& w) { return w.first == n; });
        if (!named) {
            continue;
        }
        std::shared_ptr<Device> dev = prov->open(n, why);
        if (dev == nullptr) {
            ULMPI_DEBUG("verbs: cannot open %s: %s", n.c_str(), why.c_str());
            continue;
        }
        for (int port = 1; port <= dev->attr().ports && rail < max_rails; ++port) {
            bool port_named = want.empty() || std::any_of(want.begin(), want.end(), [&](auto& w) {
                                  return w.first == n && (w.second == 0 || w.second == port);
                              });
            PortAttr pa;
            if (!port_named || !dev->query_port(port, opt.gid_index, pa).ok() || pa.state != PortState::active) {
                continue;
            }
            out.push_back(std::make_unique<VerbsPath>(job, dev, port, rail, opt));
            ++rail;
        }
    }
    return out;
}

} // namespace ulmpi::path::verbs
