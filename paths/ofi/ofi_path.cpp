// The ofi path's resources: fabric, domain, completion queue, address
// vector, endpoint, the send and receive buffers and their registration;
// the wire-up (open, connect) and close.
#include "paths/ofi/ofi_path.h"
#include "paths/ofi/ofi_util.h"

#include "runtime/log.h"

#include <rdma/fi_cm.h>

#include <algorithm>
#include <cstring>
#include <sched.h>
#include <sys/mman.h>

namespace ulmpi::path::ofi {
namespace {

std::byte* map_bytes(std::size_t len)
{
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

std::size_t round_page(std::size_t n) { return (n + 4095) & ~std::size_t{4095}; }

} // namespace

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
    info_.get_depth = info_.has_get ? kGetDepth : 0;
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
    if (fi_->ep_attr->max_msg_size >= 4096 && fi_->ep_attr->max_msg_size < opt_.read_chunk) {
        opt_.read_chunk = static_cast<std::uint32_t>(fi_->ep_attr->max_msg_size);
    }
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
    for (std::uint32_t i = kMaxReads; i-- > 0;) {
        read_ops_[i].kind = Op::Kind::read;
        read_ops_[i].index = i;
    }
    reads_.reset(kGetDepth + kSyncGets, kGetDepth, kMaxReads);
    reads_.on_ending([this](std::uint32_t i, ReadTable::Read& q) { read_ending(i, q); });
    locals_.assign(kGetDepth + kSyncGets, {});
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
    for (std::vector<fid_mr*>& mrs : locals_) {
        for (fid_mr*& mr : mrs) {
            close_fid(mr);
        }
        mrs.clear();
    }
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
    // Reads still under way end unreported: nothing polls the provider now.
    reads_.reset(0, 0, 0);
    open_ = false;
}

bool OfiPath::needs_polling() const
{
    if (!open_) {
        return false;
    }
    // Hints, read without locks (a pass more or less of polling).
    if (free_n_.load(std::memory_order_relaxed) < tx_ops_.size() ||
        backlogged_n_.load(std::memory_order_relaxed) != 0 ||
        arrived_hint_.load(std::memory_order_relaxed) ||
        reads_.used() != 0) {
        return true; // arrived_: polled by one thread, not yet handed up by the deliverer
    }
    const rt::Nanos at = exposed_at_.load(std::memory_order_relaxed);
    return at != 0 && rt::now_ns() - at < kExposedNs;
}

} // namespace ulmpi::path::ofi
