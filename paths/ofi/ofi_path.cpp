#include "paths/ofi/ofi_path.h"

#include "paths/registry.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <cstring>
#include <sched.h>
#include <sys/mman.h>

namespace ulmpi::path::ofi {
namespace {

const rt::TextParam provider_param{
    "ofi_provider", "",
    "libfabric provider of the ofi path (tcp;ofi_rxm, udp;ofi_rxd, shm, ...); empty: the first "
    "fi_getinfo offers (never ofi_mrail)"};
const rt::TextParam iface_param{
    "ofi_iface", "",
    "libfabric domain (interface) of the ofi path (lo, eth1, ...); empty: loopback for a job on "
    "one host, else the first other one"};
const rt::ChoiceParam rma_param{
    "ofi_rma", "auto",
    "single-copy rendezvous by fi_read: auto (where the provider reads), on (only such "
    "providers), off",
    "auto|on|off"};
const rt::SizeParam eager_param{"ofi_eager_limit", 16384,
                                "messages up to this size go eagerly over ofi"};
const rt::SizeParam buf_param{"ofi_buf_size", 65536,
                              "bytes of an ofi send or receive buffer (8-byte path header + ULM "
                              "fragment)"};
const rt::IntParam rx_param{"ofi_rx_bufs", 64, "receive buffers the ofi path keeps posted"};
const rt::IntParam tx_param{"ofi_tx_bufs", 64, "send buffers of the ofi path"};
const rt::SizeParam chunk_param{"ofi_read_chunk", 1u << 20, "bytes of one fi_read of a rendezvous"};
const rt::IntParam rkey_param{"ofi_rkey_cache", 256,
                              "registrations for remote reads the ofi path keeps for reuse"};
const rt::IntParam timeout_param{
    "ofi_send_timeout_ms", 10000,
    "an ofi send not complete after this many ms reports the path to that peer down (back up "
    "when a send completes)"};
const rt::ChoiceParam everywhere_param{
    "ofi_everywhere", "auto",
    "ofi also reaches ranks on this host: auto (only when ULMPI_PATH_INCLUDE leaves shm out), on, "
    "off",
    "auto|on|off"};

// Between verbs (30) and udp (10): self > shm > verbs > ofi > udp.
const Registrar reg{"ofi", 20, &make_ofi_paths};

constexpr rt::Nanos kSecond = 1000000000;
constexpr rt::Nanos kMrIdle = 30 * kSecond; // a cached registration unused this long goes
constexpr rt::Nanos kReadLimit = 60 * kSecond;
constexpr std::uint32_t kMaxReads = 64;     // fi_read operations in flight per get()
// After make_rkey(), how long the path asks the waiting rank not to sleep:
// the peer reads our memory through the provider's progress in our calls
// (rxm over tcp), and a rank that sleeps 200 us between polls holds every
// read that long. Long enough for a receiver that posts late, short enough
// that an idle rank sleeps again soon.
constexpr rt::Nanos kExposedNs = kSecond;

struct OfiRxFrag final : RxFrag {};

std::byte* map_bytes(std::size_t len)
{
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

std::size_t round_page(std::size_t n) { return (n + 4095) & ~std::size_t{4095}; }

bool key_error(int err)
{
    return err == FI_EACCES || err == FI_EKEYREJECTED || err == FI_EINVAL || err == FI_EFAULT ||
           err == FI_EPERM;
}

template <class F> void close_fid(F*& f)
{
    if (f != nullptr) {
        (void)fi_close(&f->fid);
        f = nullptr;
    }
}

} // namespace

OfiOptions ofi_options_from_params()
{
    OfiOptions o;
    o.provider = provider_param.get();
    o.iface = iface_param.get();
    const std::string& rma = rma_param.get();
    o.rma = rma == "on" ? RmaWish::on : rma == "off" ? RmaWish::off : RmaWish::automatic;
    o.buf_size = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(buf_param.get(), 1024, 1u << 22));
    o.eager_limit = std::min<std::uint64_t>(eager_param.get(), o.buf_size);
    o.rx_bufs = static_cast<std::uint32_t>(std::clamp<std::int64_t>(rx_param.get(), 2, 1 << 16));
    o.tx_bufs = static_cast<std::uint32_t>(std::clamp<std::int64_t>(tx_param.get(), 2, 1 << 16));
    o.read_chunk = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(chunk_param.get(), 4096, 1u << 30));
    o.rkey_cache = static_cast<std::uint32_t>(std::clamp<std::int64_t>(rkey_param.get(), 1, 1 << 16));
    o.send_timeout_ms = static_cast<std::uint32_t>(std::clamp<std::int64_t>(timeout_param.get(), 1, 1 << 30));
    const std::string& ev = everywhere_param.get();
    o.everywhere = ev == "on" || (ev == "auto" && !path_selected("shm"));
    return o;
}

OfiPath::OfiPath(const rt::JobInfo& job, fi_info* info, const OfiOptions& opt)
    : job_(job), fi_(info), opt_(opt)
{
    const bool shm = std::strstr(fi_->fabric_attr->prov_name, "shm") != nullptr;
    info_.name = "ofi";
    info_.bandwidth_mbs = shm ? 5000 : 1000;
    info_.latency_us = shm ? 2 : 20;
    info_.max_frag = opt_.buf_size - static_cast<std::uint32_t>(kHdr);
    info_.eager_limit = std::min<std::uint64_t>(opt_.eager_limit, info_.max_frag);
    // The provider delivers reliably, yet ULM's checksum is end to end (it
    // catches what a transport does not: I/O bus and memory errors), and a
    // checksum needs ULM's resends behind it.
    info_.reliable_default = true;
    info_.can_fail = !shm;
    info_.has_get = (fi_->caps & FI_READ) != 0;
    info_.get_max = 0;
    // FI_ORDER_SAS orders where the data lands, not when the receive
    // completes: rxm and rxd complete a message above their own eager size
    // (rxm: 16 KiB) only after its rendezvous, so a later small one
    // overtakes it (the conformance suite saw it). No order is promised.
    info_.order = PathInfo::Order::none;
    info_.kernel_delivery = !shm;
    // FI_EP_RDM is reliable, and a provider never drops for lack of room (it
    // answers -FI_EAGAIN): no pacing by ULM (PathInfo::lossless).
    info_.lossless = true;
    // Never more sends of ours in flight than the provider's transmit queue.
    if (fi_->tx_attr->size >= 2 && fi_->tx_attr->size < opt_.tx_bufs) {
        opt_.tx_bufs = static_cast<std::uint32_t>(fi_->tx_attr->size);
    }
    inject_max_ = fi_->tx_attr->inject_size;
    info_.inline_max = inject_max_ > kHdr ? static_cast<std::uint32_t>(inject_max_ - kHdr) : 0;
    job_tag_ = job_hash(job.jobid);
    peers_.resize(static_cast<std::size_t>(job.size));
}

OfiPath::~OfiPath()
{
    close();
    lib::freeinfo(fi_);
}

const char* OfiPath::provider() const { return fi_->fabric_attr->prov_name; }

std::unique_ptr<OfiPath> OfiPath::create(const rt::JobInfo& job, fi_info* info, const OfiOptions& opt,
                                         std::string& why)
{
    std::unique_ptr<OfiPath> p(new OfiPath(job, info, opt));
    if (!p->init_resources(why).ok()) {
        return nullptr;
    }
    return p;
}

Status OfiPath::init_resources(std::string& why)
{
    auto fail = [&](const char* what, int rc) {
        why = std::string(what) + ": " + lib::strerror(-rc);
        return Status(Errc::io_error);
    };
    if (int rc = lib::fabric(fi_->fabric_attr, &fabric_, nullptr); rc != 0) {
        return fail("fi_fabric", rc);
    }
    if (int rc = fi_domain(fabric_, fi_, &domain_, nullptr); rc != 0) {
        return fail("fi_domain", rc);
    }
    // One completion queue for sends, reads and receives: every fi_cq_read
    // drives the provider's progress (rxm over tcp polls its sockets), so
    // two queues cost two passes, and two system calls, per progress().
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_MSG;
    cq.wait_obj = FI_WAIT_NONE;
    cq.size = std::max<std::size_t>(fi_->tx_attr->size + fi_->rx_attr->size,
                                    opt_.tx_bufs + kMaxReads + opt_.rx_bufs + 128);
    if (int rc = fi_cq_open(domain_, &cq, &cq_, nullptr); rc != 0) {
        return fail("fi_cq_open", rc);
    }
    fi_av_attr av{};
    av.type = fi_->domain_attr->av_type != FI_AV_UNSPEC ? fi_->domain_attr->av_type : FI_AV_TABLE;
    av.count = static_cast<std::size_t>(job_.size);
    if (int rc = fi_av_open(domain_, &av, &av_, nullptr); rc != 0) {
        return fail("fi_av_open", rc);
    }
    if (int rc = fi_endpoint(domain_, fi_, &ep_, nullptr); rc != 0) {
        return fail("fi_endpoint", rc);
    }
    if (int rc = fi_ep_bind(ep_, &av_->fid, 0); rc != 0) {
        return fail("fi_ep_bind (address vector)", rc);
    }
    if (int rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV); rc != 0) {
        return fail("fi_ep_bind (completion queue)", rc);
    }
    if (TxCredits::needed(fi_) && !credits_.open(domain_, ep_, fi_->tx_attr->size, why)) {
        return Errc::io_error;
    }
    if (int rc = fi_enable(ep_); rc != 0) {
        return fail("fi_enable", rc);
    }
    tx_len_ = round_page(std::size_t{opt_.tx_bufs} * opt_.buf_size);
    rx_len_ = round_page(std::size_t{opt_.rx_bufs} * opt_.buf_size);
    tx_mem_ = map_bytes(tx_len_);
    rx_mem_ = map_bytes(rx_len_);
    if (tx_mem_ == nullptr || rx_mem_ == nullptr) {
        why = "no memory for buffers";
        return Errc::no_memory;
    }
    if ((fi_->domain_attr->mr_mode & FI_MR_LOCAL) != 0) {
        if (!register_mr(tx_mem_, tx_len_, FI_SEND, tx_mr_).ok() ||
            !register_mr(rx_mem_, rx_len_, FI_RECV, rx_mr_).ok()) {
            why = "cannot register the send and receive buffers";
            return Errc::io_error;
        }
    }
    tx_ops_.resize(opt_.tx_bufs);
    rx_ops_.resize(opt_.rx_bufs);
    read_ops_.resize(kMaxReads);
    for (std::uint32_t i = opt_.tx_bufs; i-- > 0;) {
        tx_ops_[i].kind = Op::Kind::send;
        tx_ops_[i].index = i;
        free_tx_.push_back(i);
    }
    free_n_.store(free_tx_.size(), std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < opt_.rx_bufs; ++i) {
        rx_ops_[i].kind = Op::Kind::recv;
        rx_ops_[i].index = i;
    }
    for (std::uint32_t i = 0; i < kMaxReads; ++i) {
        read_ops_[i].kind = Op::Kind::read;
        read_ops_[i].index = i;
        read_ops_[i].done = true; // free (not claimed)
    }
    scratch_.resize(opt_.buf_size);
    describe_ = "ofi: " + describe_info(fi_) + ", fragments up to " + std::to_string(info_.max_frag) +
                " bytes, eager " + std::to_string(info_.eager_limit) + ", inject " +
                std::to_string(inject_max_) + ", " + std::to_string(opt_.rx_bufs) + " receives posted";
    return Errc::ok;
}

void* OfiPath::tx_desc() const { return tx_mr_ != nullptr ? fi_mr_desc(tx_mr_) : nullptr; }
void* OfiPath::rx_desc() const { return rx_mr_ != nullptr ? fi_mr_desc(rx_mr_) : nullptr; }

Status OfiPath::register_mr(const void* addr, std::size_t len, std::uint64_t access, fid_mr*& out)
{
    out = nullptr;
    rt::OptGuard g(dom_);
    int rc = fi_mr_reg(domain_, addr, len, access, 0, next_key_++, 0, &out, nullptr);
    if (rc == 0 && (fi_->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0) {
        rc = fi_mr_bind(out, &ep_->fid, 0);
        if (rc == 0) {
            rc = fi_mr_enable(out);
        }
    }
    if (rc != 0) {
        ULMPI_DEBUG("ofi: cannot register %zu bytes: %s", len, lib::strerror(-rc));
        close_fid(out);
        return Errc::io_error;
    }
    return Errc::ok;
}

bool OfiPath::post_recv(std::uint32_t i)
{
    ssize_t rc;
    {
        rt::OptGuard g(dom_);
        rc = fi_recv(ep_, rxb(i), opt_.buf_size, rx_desc(), FI_ADDR_UNSPEC, &rx_ops_[i].ctx);
    }
    if (rc == 0) {
        return true;
    }
    if (rc != -FI_EAGAIN) {
        ULMPI_ERROR("ofi: cannot post a receive: %s", lib::strerror(static_cast<int>(-rc)));
    }
    rt::OptGuard g(rxq_);
    repost_.push_back(i);
    repost_hint_.store(true, std::memory_order_release);
    return false;
}

void OfiPath::bump(std::uint64_t& counter, std::uint64_t n)
{
    if (rt::fine_locks()) [[unlikely]] {
        std::atomic_ref<std::uint64_t>(counter).fetch_add(n, std::memory_order_relaxed);
    } else {
        counter += n;
    }
}

std::uint32_t OfiPath::take_free_tx()
{
    rt::OptGuard g(pool_);
    if (free_tx_.empty()) {
        return ~std::uint32_t{0};
    }
    const std::uint32_t i = free_tx_.back();
    free_tx_.pop_back();
    free_n_.store(free_tx_.size(), std::memory_order_relaxed);
    return i;
}

void OfiPath::set_queued(Peer& p)
{
    std::atomic_ref<std::size_t>(p.queued).store(p.backlog.size(), std::memory_order_release);
}

void OfiPath::give_free_tx(std::uint32_t i)
{
    rt::OptGuard g(pool_);
    free_tx_.push_back(i);
    free_n_.store(free_tx_.size(), std::memory_order_relaxed);
}

Status OfiPath::open(rt::Bootstrap& boot)
{
    for (std::uint32_t i = 0; i < opt_.rx_bufs; ++i) {
        if (!post_recv(i) && repost_.size() == opt_.rx_bufs) {
            return Errc::io_error;
        }
    }
    std::byte name[512];
    std::size_t len = sizeof name;
    if (int rc = fi_getname(&ep_->fid, name, &len); rc != 0) {
        ULMPI_ERROR("ofi: fi_getname: %s", lib::strerror(-rc));
        return Errc::io_error;
    }
    std::vector<std::byte> rec(sizeof(AddrRecord) + len);
    AddrRecord a{kWireVersion, 0, static_cast<std::uint16_t>(len), job_hash(provider())};
    std::memcpy(rec.data(), &a, sizeof a);
    std::memcpy(rec.data() + sizeof a, name, len);
    return boot.put("ofi.addr", rec.data(), rec.size());
}

Status OfiPath::connect(rt::Bootstrap& boot)
{
    int reached = 0;
    for (int r = 0; r < job_.size; ++r) {
        if (r == job_.rank || !serves(r)) {
            continue;
        }
        const Insert got = insert_peer(r, boot);
        if (got == Insert::bad) {
            return Errc::protocol;
        }
        reached += got == Insert::reached ? 1 : 0;
    }
    ULMPI_DEBUG("ofi: %s, reaches %d of %d peers", describe_.c_str(), reached, job_.size - 1);
    open_ = true;
    return Errc::ok;
}

bool OfiPath::serves(int r) const
{
    const bool shm = std::strstr(provider(), "shm") != nullptr;
    const bool same_host = job_.node_of_rank.size() == static_cast<std::size_t>(job_.size) &&
                           job_.node_of_rank[static_cast<std::size_t>(r)] == job_.node_id;
    return !((same_host && !opt_.everywhere) || (!same_host && shm));
}

OfiPath::Insert OfiPath::insert_peer(int r, rt::Bootstrap& boot)
{
    std::vector<std::byte> v;
    if (!boot.get(r, "ofi.addr", v).ok() || v.size() < sizeof(AddrRecord)) {
        return Insert::skipped; // no ofi path there
    }
    AddrRecord a;
    std::memcpy(&a, v.data(), sizeof a);
    if (a.version != kWireVersion || v.size() != sizeof a + a.addr_len) {
        ULMPI_ERROR("ofi: rank %d published an address of another version", r);
        return Insert::bad;
    }
    if (a.provider_hash != job_hash(provider())) {
        ULMPI_DEBUG("ofi: rank %d uses another provider than %s", r, provider());
        return Insert::skipped;
    }
    Peer& p = peers_[static_cast<std::size_t>(r)];
    int n;
    {
        rt::OptGuard g(dom_);
        n = fi_av_insert(av_, v.data() + sizeof a, 1, &p.addr, 0, nullptr);
    }
    if (n != 1) {
        ULMPI_WARN("ofi: the address of rank %d is refused by %s", r, provider());
        p.addr = FI_ADDR_UNSPEC;
        return Insert::skipped;
    }
    p.reach = true;
    return Insert::reached;
}

Status OfiPath::reset_peer(int peer, rt::Bootstrap&)
{
    if (!open_ || peer < 0 || peer >= job_.size || peer == job_.rank) {
        return Errc::invalid_arg;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    rt::OptGuard hold(p.lock);
    for (const Pending& b : p.backlog) {
        give_free_tx(b.buf);
    }
    p.backlog.clear();
    set_queued(p);
    {
        rt::OptGuard g(misc_);
        std::erase(backlogged_, peer);
        backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
        if (p.down) {
            downs_any_.store(--downs_ > 0, std::memory_order_relaxed);
        }
        p.down = p.down_due = p.up_due = false;
    }
    // Operations in flight to the old process complete as the provider
    // decides; they no longer speak for the peer (on_tx, check_stuck).
    {
        rt::OptGuard g(dom_);
        for (Op& op : tx_ops_) {
            if (op.peer == peer) {
                op.peer = -1;
            }
        }
        if (p.addr != FI_ADDR_UNSPEC) {
            if (int rc = fi_av_remove(av_, &p.addr, 1, 0); rc != 0) {
                ULMPI_DEBUG("ofi: removing the address of rank %d: %s", peer, lib::strerror(-rc));
            }
        }
    }
    {
        rt::OptGuard g(reads_);
        for (Op& op : read_ops_) {
            if (op.peer == peer) {
                op.peer = -1;
            }
        }
    }
    p.addr = FI_ADDR_UNSPEC;
    p.reach = false;
    return Errc::ok;
}

Status OfiPath::connect_peer(int peer, rt::Bootstrap& boot)
{
    if (!open_ || peer < 0 || peer >= job_.size || peer == job_.rank) {
        return Errc::invalid_arg;
    }
    if (peers_[static_cast<std::size_t>(peer)].reach) {
        return Errc::ok; // known since the wire-up
    }
    if (!serves(peer)) {
        return Errc::unreachable;
    }
    switch (insert_peer(peer, boot)) {
    case Insert::reached:
        return Errc::ok;
    case Insert::bad:
        return Errc::protocol;
    case Insert::skipped:
        break;
    }
    return Errc::unreachable;
}

void OfiPath::close()
{
    // Sends still in flight over rxm are given a bounded time to complete
    // first (not over shm, whose completions may point into a peer already
    // gone): libfabric 1.17's rxm crashed inside fi_close(ep) with sends queued on
    // a connection (path_conformance closes_with_fragments_in_flight,
    // ofi_tcp, 4 runs in 12). Then the endpoint, before the buffers and
    // registrations the provider may still touch until it is closed.
    if (ep_ != nullptr && cq_ != nullptr && fi_ != nullptr &&
        std::strstr(fi_->fabric_attr->prov_name, "ofi_rxm") != nullptr) {
        const rt::Nanos until = rt::now_ns() + 200000000;
        auto in_flight = [&] {
            rt::OptGuard g(pool_);
            return free_tx_.size() < tx_ops_.size();
        };
        while (in_flight() && rt::now_ns() < until) {
            if (poll_cq(nullptr) == 0) {
                ::sched_yield();
            }
        }
    }
    close_fid(ep_);
    credits_.close();
    for (Reg& r : mrs_) {
        close_fid(r.mr);
    }
    mrs_.clear();
    close_fid(tx_mr_);
    close_fid(rx_mr_);
    close_fid(av_);
    close_fid(cq_);
    close_fid(domain_);
    close_fid(fabric_);
    if (tx_mem_ != nullptr) {
        ::munmap(tx_mem_, tx_len_);
        tx_mem_ = nullptr;
    }
    if (rx_mem_ != nullptr) {
        ::munmap(rx_mem_, rx_len_);
        rx_mem_ = nullptr;
    }
    for (Peer& p : peers_) {
        p.backlog.clear();
        set_queued(p);
    }
    backlogged_.clear();
    backlogged_n_.store(0, std::memory_order_relaxed);
    arrived_.clear();
    arrived_hint_.store(false, std::memory_order_relaxed);
    open_ = false;
}

bool OfiPath::can_reach(int peer) const
{
    return open_ && peer >= 0 && peer < job_.size && peers_[static_cast<std::size_t>(peer)].reach;
}

bool OfiPath::acquire(int peer, std::size_t len, TxBuffer& out)
{
    if (!can_reach(peer) || len > info_.max_frag) {
        out.data = scratch_.data() + kHdr;
        out.cap = scratch_.size() - kHdr;
        out.token = kFailTok; // commit() answers failed
        return true;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (queued(p) != 0) [[unlikely]] {
        rt::OptGuard hold(p.lock);
        if (!p.backlog.empty()) {
            flush_backlog(peer);
            if (!p.backlog.empty()) {
                bump(counters_.send_again);
                return false;
            }
        }
    }
    std::uint32_t i = take_free_tx();
    if (i == ~std::uint32_t{0}) {
        poll_cq(nullptr);
        i = take_free_tx();
        if (i == ~std::uint32_t{0}) {
            bump(counters_.send_again);
            return false;
        }
    }
    out.data = txb(i) + kHdr;
    out.cap = opt_.buf_size - kHdr;
    out.token = i;
    return true;
}

SendResult OfiPath::send_now(std::uint32_t buf, int peer, std::size_t len)
{
    const fi_addr_t to = peers_[static_cast<std::size_t>(peer)].addr;
    for (int attempt = 0;; ++attempt) {
        ssize_t rc;
        if (len <= inject_max_) {
            {
                rt::OptGuard g(dom_);
                rc = -FI_EAGAIN; // no transmit entry left (rxd: ofi_tx_credits.h)
                if (credits_.take()) {
                    rc = fi_inject(ep_, txb(buf), len, to);
                    if (rc != 0) {
                        credits_.give_back();
                    }
                }
            }
            if (rc == 0) {
                give_free_tx(buf);
            }
        } else {
            Op& op = tx_ops_[buf];
            const rt::Nanos now = rt::now_ns();
            rt::OptGuard g(dom_); // op's fields: check_stuck() reads them under dom_
            op.peer = peer;
            op.busy = true;
            op.posted = now;
            rc = -FI_EAGAIN; // no transmit entry left (rxd: ofi_tx_credits.h)
            if (credits_.take()) {
                rc = fi_send(ep_, txb(buf), len, tx_desc(), to, &op.ctx);
                if (rc != 0) {
                    credits_.give_back();
                }
            }
            if (rc != 0) {
                op.busy = false;
            }
        }
        if (rc == 0) {
            return SendResult::done;
        }
        if (rc != -FI_EAGAIN) {
            give_free_tx(buf);
            mark_down(peer, lib::strerror(static_cast<int>(-rc)));
            return SendResult::failed;
        }
        if (attempt == 2) {
            return SendResult::again;
        }
        poll_cq(nullptr); // drives the provider's progress
    }
}

SendResult OfiPath::commit(int peer, const TxBuffer& b, std::size_t len)
{
    if (b.token == kFailTok) {
        return SendResult::failed;
    }
    const auto i = static_cast<std::uint32_t>(b.token);
    const FragHeader h = frag_header(static_cast<std::uint32_t>(job_.rank), job_tag_);
    std::memcpy(txb(i), &h, sizeof h);
    const std::size_t total = len + kHdr;
    bump(counters_.frags_sent);
    bump(counters_.bytes_sent, len);
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    // An empty backlog stays empty while we send (only this peer's sender,
    // one at a time, fills it), so the common case takes no lock.
    bool sent_again = false;
    if (queued(p) == 0) [[likely]] {
        const SendResult r = send_now(i, peer, total);
        if (r != SendResult::again) {
            return r;
        }
        sent_again = true;
    }
    rt::OptGuard hold(p.lock);
    if (!sent_again && p.backlog.empty()) { // flushed meanwhile
        const SendResult r = send_now(i, peer, total);
        if (r != SendResult::again) {
            return r;
        }
        sent_again = true;
    }
    if (sent_again) {
        rt::OptGuard g(misc_);
        backlogged_.push_back(peer);
        backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
    }
    p.backlog.push_back({i, total, rt::now_ns()}); // goes in order from progress()
    set_queued(p);
    return SendResult::done;
}

void OfiPath::flush_backlog(int peer)
{
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    while (!p.backlog.empty()) {
        const Pending b = p.backlog.front();
        const SendResult r = send_now(b.buf, peer, b.len);
        if (r == SendResult::again) {
            return;
        }
        p.backlog.pop_front(); // sent, or failed: the peer is reported down and ULM resends
        set_queued(p);
    }
}

void OfiPath::flush_backlogs()
{
    if (!rt::fine_locks()) {
        for (std::size_t k = 0; k < backlogged_.size();) {
            const int peer = backlogged_[k];
            flush_backlog(peer);
            if (peers_[static_cast<std::size_t>(peer)].backlog.empty()) {
                backlogged_[k] = backlogged_.back();
                backlogged_.pop_back();
            } else {
                ++k;
            }
        }
        backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
        return;
    }
    std::vector<int> peers;
    {
        rt::OptGuard g(misc_);
        peers = backlogged_;
    }
    for (int peer : peers) {
        Peer& p = peers_[static_cast<std::size_t>(peer)];
        if (!p.lock.try_lock()) {
            continue; // its sender flushes it (acquire)
        }
        flush_backlog(peer);
        if (p.backlog.empty()) {
            rt::OptGuard g(misc_);
            std::erase(backlogged_, peer);
            backlogged_n_.store(backlogged_.size(), std::memory_order_relaxed);
        }
        p.lock.unlock();
    }
}

std::size_t OfiPath::backlog() const
{
    std::size_t n = 0;
    for (const Peer& p : peers_) {
        rt::OptGuard g(const_cast<rt::OptMutex&>(p.lock));
        n += p.backlog.size();
    }
    return n;
}

void OfiPath::mark_down(int peer, const char* why)
{
    if (peer < 0 || peer >= job_.size) {
        return;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    rt::OptGuard g(misc_);
    if (!p.down) {
        ULMPI_DEBUG("ofi: rank %d unreachable over %s: %s", peer, provider(), why);
        p.down = true;
        p.down_due = true;
        p.up_due = false;
        downs_any_.store(++downs_ > 0, std::memory_order_relaxed);
        any_news_.store(true, std::memory_order_release);
    }
}

void OfiPath::on_tx(Op& op, int err)
{
    if (op.kind == Op::Kind::send) {
        const int peer = op.peer; // op.busy was cleared under dom_ (poll_cq)
        give_free_tx(op.index);
        if (err != 0) {
            mark_down(peer, lib::strerror(err));
        } else if (peer >= 0 && downs_any_.load(std::memory_order_relaxed)) [[unlikely]] {
            Peer& p = peers_[static_cast<std::size_t>(peer)];
            rt::OptGuard g(misc_);
            if (p.down) {
                p.down = false;
                p.down_due = false;
                p.up_due = true;
                downs_any_.store(--downs_ > 0, std::memory_order_relaxed);
                any_news_.store(true, std::memory_order_release);
            }
        }
    } else if (op.kind == Op::Kind::read) {
        int peer;
        {
            rt::OptGuard g(reads_);
            op.done = true;
            op.err = err;
            peer = op.peer;
            if (op.orphan) {
                op.orphan = false;
                op.claimed = false;
            }
        }
        if (err != 0 && !key_error(err)) {
            mark_down(peer, lib::strerror(err));
        }
    }
}

void OfiPath::on_recv(std::uint32_t i, std::size_t len, Sink& sink)
{
    FragHeader h;
    std::memcpy(&h, rxb(i), sizeof h);
    const std::uint32_t src = frag_src(h);
    const bool ok = len >= kHdr && h.version == kWireVersion && h.job == job_tag_ &&
                    src < static_cast<std::uint32_t>(job_.size) && peers_[src].reach;
    if (ok) {
        OfiRxFrag rx;
        rx.peer = static_cast<int>(src);
        rx.data = rxb(i) + kHdr;
        rx.len = len - kHdr;
        ++counters_.frags_received; // one thread at a time hands receives up
        counters_.bytes_received += rx.len;
        sink.on_frag(*this, rx);
    } else {
        ++refused_;
    }
    post_recv(i);
}

void OfiPath::on_error_cqe(const fi_cq_err_entry& err)
{
    ++error_cqes_;
    Op* op = static_cast<Op*>(err.op_context);
    if (op == nullptr) {
        ULMPI_DEBUG("ofi: error completion without context: %s", lib::strerror(err.err));
    } else if (op->kind == Op::Kind::recv) {
        if (err.err != FI_ECANCELED) {
            ULMPI_DEBUG("ofi: receive completed with an error: %s", lib::strerror(err.err));
        }
        post_recv(op->index);
    } else {
        on_tx(*op, err.err != 0 ? err.err : FI_EIO);
    }
}

int OfiPath::poll_cq_plain(Sink* sink)
{
    fi_cq_msg_entry e[16];
    int total = 0;
    for (int round = 0; round < 8; ++round) {
        const ssize_t n = fi_cq_read(cq_, e, 16);
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            if (fi_cq_readerr(cq_, &err, 0) == 1) {
                if (auto* op = static_cast<Op*>(err.op_context); op != nullptr) {
                    op->busy = false; // (a receive's is never set)
                }
                on_error_cqe(err);
                ++total;
            }
            continue;
        }
        if (n <= 0) {
            break;
        }
        for (ssize_t k = 0; k < n; ++k) {
            Op& op = *static_cast<Op*>(e[k].op_context);
            if (op.kind != Op::Kind::recv) {
                op.busy = false;
                on_tx(op, 0);
            } else if (sink != nullptr && arrived_.empty()) {
                on_recv(op.index, e[k].len, *sink);
                ++delivered_;
            } else {
                // Polled where nothing can take it (acquire, get, close): it
                // goes up, in order, from the next progress() (the hint: in
                // case that one runs with the locks on, after MPI_Init_thread).
                arrived_.push_back({op.index, e[k].len});
                arrived_hint_.store(true, std::memory_order_relaxed);
            }
        }
        total += static_cast<int>(n);
        if (n < 16) {
            break;
        }
    }
    return total;
}

int OfiPath::poll_cq(Sink* sink, std::vector<Arrived>* mine)
{
    const bool fine = rt::fine_locks();
    if (!fine) [[likely]] {
        return poll_cq_plain(sink);
    }
    if (fine) [[unlikely]] {
        if (cq_busy_.exchange(true, std::memory_order_acquire)) {
            return 0; // another thread reads it and completes what it finds
        }
        sink = nullptr; // receives go up from the deliverer ("Threads")
    }
    fi_cq_msg_entry e[16];
    int total = 0;
    for (int round = 0; round < 8; ++round) {
        ssize_t n;
        {
            rt::OptGuard g(dom_);
            n = fi_cq_read(cq_, e, 16);
            // A send's fields are dom_'s (send_now, check_stuck).
            for (ssize_t k = 0; k < n; ++k) {
                Op& op = *static_cast<Op*>(e[k].op_context);
                if (op.kind == Op::Kind::send) {
                    op.busy = false;
                }
            }
        }
        if (n == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            ssize_t got;
            {
                rt::OptGuard g(dom_);
                got = fi_cq_readerr(cq_, &err, 0);
                auto* op = static_cast<Op*>(err.op_context);
                if (got == 1 && op != nullptr && op->kind == Op::Kind::send) {
                    op->busy = false;
                }
            }
            if (got == 1) {
                on_error_cqe(err); // a send's busy mark was cleared under dom_
                ++total;
            }
            continue;
        }
        if (n <= 0) {
            break;
        }
        for (ssize_t k = 0; k < n; ++k) {
            Op& op = *static_cast<Op*>(e[k].op_context);
            if (op.kind != Op::Kind::recv) {
                on_tx(op, 0);
            } else if (sink != nullptr && arrived_.empty()) {
                on_recv(op.index, e[k].len, *sink);
                ++delivered_;
            } else if (mine != nullptr && !arrived_hint_.load(std::memory_order_relaxed)) {
                // The deliverer's own poll, nothing polled before it waiting
                // (those were queued under cq_busy_, which we hold now).
                mine->push_back({op.index, e[k].len});
            } else {
                // Polled where nothing can take it (acquire, get, close, or
                // any thread with locks on): it goes up, in order, from the
                // next progress().
                rt::OptGuard g(rxq_);
                arrived_.push_back({op.index, e[k].len});
                arrived_hint_.store(true, std::memory_order_release);
            }
        }
        total += static_cast<int>(n);
        if (n < 16) {
            break;
        }
    }
    if (fine) [[unlikely]] {
        cq_busy_.store(false, std::memory_order_release);
    }
    return total;
}

int OfiPath::deliver_arrived(Sink& sink)
{
    int n = 0;
    while (arrived_hint_.load(std::memory_order_acquire)) {
        {
            rt::OptGuard g(rxq_);
            held_.swap(arrived_);
            arrived_hint_.store(false, std::memory_order_relaxed);
        }
        for (const Arrived& a : held_) {
            on_recv(a.buf, a.len, sink);
            ++n;
        }
        held_.clear();
    }
    return n;
}

int OfiPath::progress(Sink& sink)
{
    if (!open_) {
        return 0;
    }
    if (rt::fine_locks()) [[unlikely]] {
        // Any thread reads the completion queue (its sends and reads
        // complete); one at a time hands the receives up and does the chores.
        if (delivering_.exchange(true, std::memory_order_acquire)) {
            return poll_cq(nullptr);
        }
        int delivered = deliver_arrived(sink);
        const int polled = poll_cq(nullptr, &mine_);
        // What this poll found, after what others polled before it (those
        // went to arrived_, and so did ours from then on); then what others
        // polled since.
        for (const Arrived& a : mine_) {
            on_recv(a.buf, a.len, sink);
            ++delivered;
        }
        mine_.clear();
        delivered += deliver_arrived(sink);
        chores(sink);
        delivering_.store(false, std::memory_order_release);
        return delivered > 0 ? delivered : polled;
    }
    delivered_ = 0;
    if (!arrived_.empty()) [[unlikely]] {
        held_.swap(arrived_);
        for (const Arrived& a : held_) {
            on_recv(a.buf, a.len, sink);
            ++delivered_;
        }
        held_.clear();
    }
    poll_cq_plain(&sink);
    const int delivered = delivered_;
    chores_plain(sink);
    return delivered;
}

void OfiPath::chores_plain(Sink& sink)
{
    if (!repost_.empty()) [[unlikely]] {
        std::vector<std::uint32_t> again;
        again.swap(repost_);
        for (std::uint32_t i : again) {
            post_recv(i);
        }
    }
    if (!backlogged_.empty()) [[unlikely]] {
        flush_backlogs();
    }
    if ((++tick_ & 255) == 0) {
        const rt::Nanos now = rt::now_ns();
        check_stuck(now);
        if ((tick_ & 1023) == 0 && !mrs_.empty()) {
            expire_mrs(now);
        }
    }
    if (any_news_.load(std::memory_order_relaxed)) [[unlikely]] {
        chores(sink); // the reports (their code is shared)
    }
}

void OfiPath::chores(Sink& sink)
{
    if (repost_hint_.load(std::memory_order_acquire)) [[unlikely]] {
        std::vector<std::uint32_t> again;
        {
            rt::OptGuard g(rxq_);
            again.swap(repost_);
            repost_hint_.store(false, std::memory_order_relaxed);
        }
        for (std::uint32_t i : again) {
            post_recv(i);
        }
    }
    if (backlogged_n_.load(std::memory_order_relaxed) != 0) {
        flush_backlogs();
    }
    if ((++tick_ & 255) == 0) {
        const rt::Nanos now = rt::now_ns();
        check_stuck(now);
        if ((tick_ & 1023) == 0) {
            expire_mrs(now);
        }
    }
    if (any_news_.load(std::memory_order_acquire)) {
        any_news_.store(false, std::memory_order_relaxed);
        std::vector<std::pair<int, bool>> news; // (peer, up)
        {
            rt::OptGuard g(misc_);
            for (int r = 0; r < job_.size; ++r) {
                Peer& p = peers_[static_cast<std::size_t>(r)];
                if (p.down_due) {
                    p.down_due = false;
                    news.emplace_back(r, false);
                }
                if (p.up_due) {
                    p.up_due = false;
                    news.emplace_back(r, true);
                }
            }
        }
        for (const auto& [r, up] : news) {
            if (up) {
                sink.on_path_up(*this, r);
            } else {
                sink.on_path_down(*this, r);
            }
        }
    }
}

void OfiPath::check_stuck(rt::Nanos now)
{
    const rt::Nanos limit = static_cast<rt::Nanos>(opt_.send_timeout_ms) * 1000000;
    std::vector<int> late;
    {
        rt::OptGuard g(dom_);
        for (const Op& op : tx_ops_) {
            if (op.busy && op.peer >= 0 && now - op.posted > limit) {
                late.push_back(op.peer);
            }
        }
    }
    std::vector<int> peers;
    {
        rt::OptGuard g(misc_);
        peers = backlogged_;
    }
    for (int peer : peers) {
        Peer& p = peers_[static_cast<std::size_t>(peer)];
        if (!p.lock.try_lock()) {
            continue; // its sender is at it; next time
        }
        if (!p.backlog.empty() && now - p.backlog.front().since > limit) {
            late.push_back(~peer); // refused, not stuck in flight
        }
        p.lock.unlock();
    }
    for (int l : late) {
        const int peer = l >= 0 ? l : ~l;
        bool down;
        {
            rt::OptGuard g(misc_);
            down = peers_[static_cast<std::size_t>(peer)].down;
        }
        if (!down) {
            mark_down(peer, l >= 0 ? "a send did not complete in time"
                                   : "the provider refused sends for too long");
        }
    }
}

fid_mr* OfiPath::cached_mr(const void* addr, std::size_t len)
{
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    const rt::Nanos now = rt::now_ns();
    rt::OptGuard hold(mrs_lock_);
    for (Reg& r : mrs_) {
        if (r.addr == a && r.len == len) {
            r.used = now;
            return r.mr;
        }
    }
    fid_mr* mr = nullptr;
    if (!register_mr(addr, len, FI_REMOTE_READ, mr).ok()) {
        return nullptr;
    }
    if (mrs_.size() >= opt_.rkey_cache) {
        // The least recently used goes (a read of it still to come fails
        // with a key error, and ULM streams that message instead).
        auto lru = std::min_element(mrs_.begin(), mrs_.end(),
                                    [](const Reg& x, const Reg& y) { return x.used < y.used; });
        rt::OptGuard g(dom_);
        close_fid(lru->mr);
        *lru = Reg{a, len, mr, now};
    } else {
        mrs_.push_back(Reg{a, len, mr, now});
    }
    return mr;
}

void OfiPath::expire_mrs(rt::Nanos now)
{
    rt::OptGuard hold(mrs_lock_);
    if (mrs_.empty()) {
        return;
    }
    auto old = [&](Reg& r) {
        if (now - r.used > kMrIdle) {
            rt::OptGuard g(dom_);
            close_fid(r.mr);
            return true;
        }
        return false;
    };
    mrs_.erase(std::remove_if(mrs_.begin(), mrs_.end(), old), mrs_.end());
}

bool OfiPath::needs_polling() const
{
    if (!open_) {
        return false;
    }
    // Hints, read without locks (a pass more or less of polling).
    if (free_n_.load(std::memory_order_relaxed) < tx_ops_.size() ||
        backlogged_n_.load(std::memory_order_relaxed) != 0 ||
        arrived_hint_.load(std::memory_order_relaxed)) {
        return true; // arrived_: polled by one thread, not yet handed up by the deliverer
    }
    const rt::Nanos at = exposed_at_.load(std::memory_order_relaxed);
    return at != 0 && rt::now_ns() - at < kExposedNs;
}

std::size_t OfiPath::make_rkey(const iovec* iov, int iovcnt, void* out, std::size_t cap)
{
    const std::size_t need = sizeof(RkeyHead) + static_cast<std::size_t>(iovcnt) * sizeof(RkeyEntry);
    if (!open_ || !info_.has_get || need > cap || iovcnt <= 0) {
        return 0;
    }
    auto* o = static_cast<std::byte*>(out);
    const RkeyHead head{static_cast<std::uint32_t>(iovcnt), kWireVersion};
    std::memcpy(o, &head, sizeof head);
    for (int i = 0; i < iovcnt; ++i) {
        RkeyEntry e{reinterpret_cast<std::uint64_t>(iov[i].iov_base), iov[i].iov_len, 0};
        if (iov[i].iov_len > 0) {
            fid_mr* mr = cached_mr(iov[i].iov_base, iov[i].iov_len);
            if (mr == nullptr) {
                return 0;
            }
            e.key = fi_mr_key(mr);
        }
        std::memcpy(o + sizeof head + static_cast<std::size_t>(i) * sizeof e, &e, sizeof e);
    }
    exposed_at_.store(rt::now_ns(), std::memory_order_relaxed);
    return need;
}

Status OfiPath::get(int peer, const void* rkey, std::size_t rkey_len, std::uint64_t remote_offset,
                    const iovec* local, int nlocal)
{
    if (!info_.has_get || peer < 0 || peer >= job_.size || rkey_len < sizeof(RkeyHead)) {
        return Errc::protocol;
    }
    Peer& p = peers_[static_cast<std::size_t>(peer)];
    if (!p.reach) {
        return Errc::unreachable;
    }
    const auto* k = static_cast<const std::byte*>(rkey);
    RkeyHead head;
    std::memcpy(&head, k, sizeof head);
    if (head.version != kWireVersion || rkey_len != sizeof head + std::size_t{head.n} * sizeof(RkeyEntry)) {
        return Errc::protocol;
    }
    auto entry = [&](std::size_t i) {
        RkeyEntry e;
        std::memcpy(&e, k + sizeof head + i * sizeof e, sizeof e);
        return e;
    };
    const bool virt = (fi_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    const bool local_mr = (fi_->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
    std::size_t ri = 0;
    std::uint64_t ro = remote_offset;
    while (ri < head.n && ro >= entry(ri).len) {
        ro -= entry(ri).len;
        ++ri;
    }
    std::vector<fid_mr*> locals; // only where the provider wants local registration
    Status result = Errc::ok;
    std::uint64_t bytes = 0;
    const rt::Nanos limit = rt::now_ns() + kReadLimit;
    // The read slots this call holds (several threads may read at once, for
    // different peers: each waits for its own reads only).
    std::vector<std::uint32_t> mine;
    auto settle = [&](const Op& o) {
        if (o.err != 0 && result.ok()) {
            result = key_error(o.err) ? Errc::protocol : Errc::io_error;
        }
    };
    // Settles and frees this call's completed slots; answers how many are
    // still in flight.
    auto reap = [&] {
        rt::OptGuard g(reads_);
        std::size_t busy = 0;
        for (std::size_t k = 0; k < mine.size();) {
            Op& o = read_ops_[mine[k]];
            if (o.done) {
                settle(o);
                o.err = 0;
                o.claimed = false;
                mine[k] = mine.back();
                mine.pop_back();
            } else {
                ++busy;
                ++k;
            }
        }
        return busy;
    };
    auto claim = [&]() -> Op* {
        rt::OptGuard g(reads_);
        for (Op& o : read_ops_) {
            if (!o.claimed) {
                o.claimed = true;
                o.done = false;
                o.err = 0;
                o.peer = peer;
                mine.push_back(o.index);
                return &o;
            }
        }
        return nullptr;
    };
    for (int li = 0; li < nlocal && result.ok(); ++li) {
        if (local[li].iov_len == 0) {
            continue;
        }
        void* desc = nullptr;
        if (local_mr) {
            fid_mr* mr = nullptr;
            if (!register_mr(local[li].iov_base, local[li].iov_len, FI_READ, mr).ok()) {
                result = Errc::no_memory;
                break;
            }
            locals.push_back(mr);
            desc = fi_mr_desc(mr);
        }
        std::uint64_t lo = 0;
        while (lo < local[li].iov_len && result.ok()) {
            if (ri >= head.n) {
                result = Errc::protocol; // the key covers less than asked
                break;
            }
            const RkeyEntry re = entry(ri);
            const std::uint64_t n = std::min<std::uint64_t>({local[li].iov_len - lo, re.len - ro, opt_.read_chunk});
            Op* slot = claim();
            while (slot == nullptr) {
                reap();
                slot = claim();
                if (slot != nullptr || rt::now_ns() > limit) {
                    break;
                }
                if (poll_cq(nullptr) == 0) {
                    ::sched_yield(); // the peer serving the reads may need this CPU
                }
            }
            if (slot == nullptr) {
                mark_down(peer, "remote reads did not complete in 60 s");
                result = Errc::timeout;
                break;
            }
            const std::uint64_t raddr = (virt ? re.addr : 0) + ro;
            ssize_t rc;
            for (;;) {
                {
                    rt::OptGuard g(dom_);
                    rc = fi_read(ep_, static_cast<std::byte*>(local[li].iov_base) + lo, n, desc,
                                 p.addr, raddr, re.key, &slot->ctx);
                }
                if (rc != -FI_EAGAIN || rt::now_ns() >= limit) {
                    break;
                }
                if (poll_cq(nullptr) == 0 && rt::fine_locks()) {
                    ::sched_yield(); // another thread reads the queue
                }
            }
            if (rc != 0) {
                rt::OptGuard g(reads_);
                slot->done = true;
                mark_down(peer, lib::strerror(static_cast<int>(-rc)));
                result = Errc::io_error;
                break;
            }
            bytes += n;
            lo += n;
            ro += n;
            if (ro == re.len) {
                ++ri;
                ro = 0;
            }
        }
    }
    // Wait for every read posted (they write into the caller's memory).
    while (reap() > 0) {
        if (poll_cq(nullptr) == 0) {
            ::sched_yield();
        }
        if (rt::now_ns() > limit) {
            mark_down(peer, "remote reads did not complete in 60 s");
            result = Errc::timeout;
            rt::OptGuard g(reads_);
            for (std::uint32_t i : mine) {
                read_ops_[i].orphan = true; // freed at its completion (on_tx)
            }
            break;
        }
    }
    for (fid_mr*& mr : locals) {
        rt::OptGuard g(dom_);
        close_fid(mr);
    }
    if (result.ok()) {
        bump(counters_.gets);
        bump(counters_.get_bytes, bytes);
    }
    return result;
}

std::vector<std::unique_ptr<Path>> make_ofi_paths(const rt::JobInfo& job)
{
    std::vector<std::unique_ptr<Path>> out;
    const OfiOptions opt = ofi_options_from_params();
    if (!opt.everywhere && job.num_nodes <= 1) {
        return out; // one host: shm and self do it all
    }
    if (static_cast<std::uint64_t>(job.size) > kMaxRanks) {
        ULMPI_WARN("ofi: %d ranks are more than its fragment header names (%u); the ofi path is "
                   "skipped", job.size, kMaxRanks);
        return out;
    }
    ProviderWish wish;
    wish.provider = opt.provider;
    wish.iface = opt.iface;
    wish.rma = opt.rma;
    wish.one_host = job.num_nodes <= 1;
    std::string why;
    fi_info* info = choose_provider(wish, why);
    if (info == nullptr) {
        ULMPI_WARN("ofi: no usable provider (%s); the ofi path is skipped", why.c_str());
        return out;
    }
    const std::string what = describe_info(info);
    std::unique_ptr<OfiPath> p = OfiPath::create(job, info, opt, why);
    if (p == nullptr) {
        ULMPI_WARN("ofi: %s does not open (%s); the ofi path is skipped", what.c_str(), why.c_str());
        return out;
    }
    out.push_back(std::move(p));
    return out;
}

} // namespace ulmpi::path::ofi
