// The real device: verbs_device.h over rdma-core's libibverbs, which
// make_ibv_provider() loads (verbs_ibv_lib.h).
#include "paths/verbs/verbs_device.h"
#include "paths/verbs/verbs_ibv_lib.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sys/stat.h>

namespace ulmpi::path::verbs {
namespace {

const ibv_lib::Api& lib() { return ibv_lib::api(); }

class IbvCq final : public Cq {
public:
    ibv_cq* cq = nullptr;
};
class IbvSrq final : public Srq {
public:
    ibv_srq* srq = nullptr;
};
class IbvQp final : public Qp {
public:
    ibv_qp* qp = nullptr;
    int port = 1;
};
class IbvMr final : public Mr {
public:
    ibv_mr* mr = nullptr;
};

Status from_errno(int e)
{
    switch (e) {
    case 0: return Errc::ok;
    case ENOMEM:
    case ENOSPC: return Errc::no_memory;
    case EAGAIN: return Errc::again;
    case EINVAL: return Errc::invalid_arg;
    case EOPNOTSUPP: return Errc::not_supported;
    default: return Errc::io_error;
    }
}

int ibv_access(unsigned a)
{
    return ((a & access::local_write) != 0 ? IBV_ACCESS_LOCAL_WRITE : 0) |
           ((a & access::remote_write) != 0 ? IBV_ACCESS_REMOTE_WRITE : 0) |
           ((a & access::remote_read) != 0 ? IBV_ACCESS_REMOTE_READ : 0);
}

std::uint32_t mtu_bytes(ibv_mtu m)
{
    switch (m) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
    }
    return 1024;
}

ibv_mtu mtu_enum(std::uint32_t b)
{
    return b >= 4096 ? IBV_MTU_4096 : b >= 2048 ? IBV_MTU_2048 : b >= 1024 ? IBV_MTU_1024 : b >= 512 ? IBV_MTU_512 : IBV_MTU_256;
}

double port_gbps(const ibv_port_attr& pa)
{
    double lanes = 1;
    switch (pa.active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
    }
    double lane = 2.5;
    switch (pa.active_speed) {
    case 1: lane = 2.5; break;
    case 2: lane = 5; break;
    case 4: lane = 10; break;
    case 8: lane = 10.3125; break;
    case 16: lane = 14.0625; break;
    case 32: lane = 25.78125; break;
    case 64: lane = 50; break;
    case 128: lane = 100; break;
    default: break;
    }
    return lanes * lane;
}

WcStatus wc_status(ibv_wc_status s)
{
    switch (s) {
    case IBV_WC_SUCCESS: return WcStatus::success;
    case IBV_WC_LOC_LEN_ERR: return WcStatus::loc_len_err;
    case IBV_WC_LOC_QP_OP_ERR: return WcStatus::loc_qp_op_err;
    case IBV_WC_LOC_PROT_ERR: return WcStatus::loc_prot_err;
    case IBV_WC_WR_FLUSH_ERR: return WcStatus::wr_flush_err;
    case IBV_WC_BAD_RESP_ERR: return WcStatus::bad_resp_err;
    case IBV_WC_LOC_ACCESS_ERR: return WcStatus::loc_access_err;
    case IBV_WC_REM_INV_REQ_ERR: return WcStatus::rem_inv_req_err;
    case IBV_WC_REM_ACCESS_ERR: return WcStatus::rem_access_err;
    case IBV_WC_REM_OP_ERR: return WcStatus::rem_op_err;
    case IBV_WC_RETRY_EXC_ERR: return WcStatus::retry_exc_err;
    case IBV_WC_RNR_RETRY_EXC_ERR: return WcStatus::rnr_retry_exc_err;
    case IBV_WC_FATAL_ERR: return WcStatus::fatal_err;
    default: return WcStatus::general_err;
    }
}

Op wc_op(ibv_wc_opcode o)
{
    switch (o) {
    case IBV_WC_RDMA_WRITE: return Op::rdma_write;
    case IBV_WC_RDMA_READ: return Op::rdma_read;
    case IBV_WC_RECV: return Op::recv;
    default: return Op::send;
    }
}

class IbvDevice final : public Device {
public:
    IbvDevice(ibv_context* ctx, ibv_pd* pd) : ctx_(ctx), pd_(pd) {}
    ~IbvDevice() override
    {
        lib().dealloc_pd(pd_);
        lib().close_device(ctx_);
    }
    bool start(std::string& why)
    {
        ibv_device_attr a{};
        if (int e = lib().query_device(ctx_, &a); e != 0) {
            why = std::string("ibv_query_device: ") + std::strerror(e);
            return false;
        }
        attr_.name = lib().get_device_name(ctx_->device);
        attr_.ports = a.phys_port_cnt;
        attr_.max_qp_wr = static_cast<std::uint32_t>(a.max_qp_wr);
        attr_.max_srq_wr = static_cast<std::uint32_t>(a.max_srq_wr);
        attr_.max_cqe = static_cast<std::uint32_t>(a.max_cqe);
        attr_.max_sge = static_cast<std::uint32_t>(a.max_sge);
        // Reads in flight: what the device answers and what it may start.
        attr_.max_qp_rd_atom = static_cast<std::uint32_t>(std::min(a.max_qp_rd_atom, a.max_qp_init_rd_atom));
        attr_.max_mr_size = a.max_mr_size;
        attr_.max_msg_size = std::uint64_t{1} << 31;
        int fl = ::fcntl(ctx_->async_fd, F_GETFL);
        (void)::fcntl(ctx_->async_fd, F_SETFL, fl | O_NONBLOCK);
        return true;
    }

    const DeviceAttr& attr() const override { return attr_; }

    Status query_port(int port, int gid_index, PortAttr& out) override
    {
        ibv_port_attr pa{};
        if (int e = ibv_lib::query_port(ctx_, static_cast<std::uint8_t>(port), &pa); e != 0) {
            return from_errno(e);
        }
        out = PortAttr{};
        switch (pa.state) {
        case IBV_PORT_ACTIVE: out.state = PortState::active; break;
        case IBV_PORT_INIT: out.state = PortState::init; break;
        case IBV_PORT_ARMED: out.state = PortState::armed; break;
        case IBV_PORT_DOWN: out.state = PortState::down; break;
        default: out.state = PortState::other; break;
        }
        out.link = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? LinkLayer::ethernet : LinkLayer::infiniband;
        out.lid = pa.lid;
        out.active_mtu = mtu_bytes(pa.active_mtu);
        out.gbps = port_gbps(pa);
        int idx = gid_index;
        if (idx < 0) {
            idx = 0;
            if (out.link == LinkLayer::ethernet) {
                int v2 = -1;
                for (int i = 0; i < pa.gid_tbl_len; ++i) {
                    ibv_gid_entry en{};
                    if (ibv_lib::query_gid_ex(ctx_, static_cast<std::uint32_t>(port), static_cast<std::uint32_t>(i), &en, 0) != 0 ||
                        en.gid_type != IBV_GID_TYPE_ROCE_V2) {
                        continue;
                    }
                    const std::uint8_t* r = en.gid.raw;
                    bool v4 = std::all_of(r, r + 10, [](std::uint8_t b) { return b == 0; }) && r[10] == 0xff && r[11] == 0xff;
                    if (v4) {
                        v2 = i;
                        break;
                    }
                    if (v2 < 0) {
                        v2 = i;
                    }
                }
                idx = v2 < 0 ? 0 : v2;
            }
        }
        ibv_gid g{};
        if (lib().query_gid(ctx_, static_cast<std::uint8_t>(port), idx, &g) == 0) {
            std::memcpy(out.gid, g.raw, 16);
        }
        out.gid_index = idx;
        return Errc::ok;
    }

    Status create_cq(std::uint32_t depth, Cq*& out) override
    {
        ibv_cq* c = lib().create_cq(ctx_, static_cast<int>(depth), nullptr, nullptr, 0);
        if (c == nullptr) {
            return from_errno(errno);
        }
        auto* w = new IbvCq;
        w->cq = c;
        out = w;
        return Errc::ok;
    }
    void destroy_cq(Cq* cq) override
    {
        auto* w = static_cast<IbvCq*>(cq);
        lib().destroy_cq(w->cq);
        delete w;
    }

    Status create_srq(std::uint32_t depth, Srq*& out) override
    {
        ibv_srq_init_attr a{};
        a.attr.max_wr = depth;
        a.attr.max_sge = 1;
        ibv_srq* s = lib().create_srq(pd_, &a);
        if (s == nullptr) {
            return from_errno(errno);
        }
        auto* w = new IbvSrq;
        w->srq = s;
        out = w;
        return Errc::ok;
    }
    void destroy_srq(Srq* srq) override
    {
        auto* w = static_cast<IbvSrq*>(srq);
        lib().destroy_srq(w->srq);
        delete w;
    }

    Status create_qp(Cq* send_cq, Cq* recv_cq, Srq* srq, QpCaps& caps, Qp*& out) override
    {
        ibv_qp_init_attr a{};
        a.send_cq = static_cast<IbvCq*>(send_cq)->cq;
        a.recv_cq = static_cast<IbvCq*>(recv_cq)->cq;
        a.srq = static_cast<IbvSrq*>(srq)->srq;
        a.qp_type = IBV_QPT_RC;
        a.sq_sig_all = 0;
        ibv_qp* q = nullptr;
        // Some devices refuse a large inline size: ask for less until granted.
        for (std::uint32_t inl = caps.max_inline;; inl /= 2) {
            a.cap.max_send_wr = caps.max_send_wr;
            a.cap.max_send_sge = caps.max_send_sge;
            a.cap.max_inline_data = inl;
            q = lib().create_qp(pd_, &a);
            if (q != nullptr || inl == 0) {
                break;
            }
        }
        if (q == nullptr) {
            return from_errno(errno);
        }
        caps.max_send_wr = a.cap.max_send_wr;
        caps.max_send_sge = a.cap.max_send_sge;
        caps.max_inline = a.cap.max_inline_data;
        auto* w = new IbvQp;
        w->qp = q;
        w->qpn = q->qp_num;
        out = w;
        return Errc::ok;
    }
    void destroy_qp(Qp* qp) override
    {
        auto* w = static_cast<IbvQp*>(qp);
        lib().destroy_qp(w->qp);
        delete w;
    }

    Status modify_qp_init(Qp* qp, int port, unsigned acc) override
    {
        auto* w = static_cast<IbvQp*>(qp);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = static_cast<std::uint8_t>(port);
        a.qp_access_flags = static_cast<unsigned>(ibv_access(acc));
        w->port = port;
        return from_errno(lib().modify_qp(w->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    }

    Status modify_qp_rtr(Qp* qp, const RtrAttr& r) override
    {
        auto* w = static_cast<IbvQp*>(qp);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = mtu_enum(r.path_mtu);
        a.dest_qp_num = r.dest_qpn;
        a.rq_psn = r.rq_psn;
        a.max_dest_rd_atomic = r.max_dest_rd_atomic;
        a.min_rnr_timer = r.min_rnr_timer;
        a.ah_attr.dlid = r.dlid;
        a.ah_attr.sl = 0;
        a.ah_attr.src_path_bits = 0;
        a.ah_attr.port_num = static_cast<std::uint8_t>(w->port);
        if (r.global) {
            a.ah_attr.is_global = 1;
            std::memcpy(a.ah_attr.grh.dgid.raw, r.dgid, 16);
            a.ah_attr.grh.sgid_index = r.sgid_index;
            a.ah_attr.grh.hop_limit = 64;
        }
        return from_errno(lib().modify_qp(w->qp, &a,
                                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
    }

    Status modify_qp_rts(Qp* qp, const RtsAttr& r) override
    {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = r.sq_psn;
        a.timeout = r.timeout;
        a.retry_cnt = r.retry_cnt;
        a.rnr_retry = r.rnr_retry;
        a.max_rd_atomic = r.max_rd_atomic;
        return from_errno(lib().modify_qp(static_cast<IbvQp*>(qp)->qp, &a,
                                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
    }

    Status modify_qp_error(Qp* qp) override
    {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        return from_errno(lib().modify_qp(static_cast<IbvQp*>(qp)->qp, &a, IBV_QP_STATE));
    }

    Status modify_qp_reset(Qp* qp) override
    {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RESET;
        return from_errno(lib().modify_qp(static_cast<IbvQp*>(qp)->qp, &a, IBV_QP_STATE));
    }

    QpState qp_state(Qp* qp) override
    {
        ibv_qp_attr a{};
        ibv_qp_init_attr i{};
        if (lib().query_qp(static_cast<IbvQp*>(qp)->qp, &a, IBV_QP_STATE, &i) != 0) {
            return QpState::error;
        }
        switch (a.qp_state) {
        case IBV_QPS_RESET: return QpState::reset;
        case IBV_QPS_INIT: return QpState::init;
        case IBV_QPS_RTR: return QpState::rtr;
        case IBV_QPS_RTS: return QpState::rts;
        default: return QpState::error;
        }
    }

    Status reg_mr(void* addr, std::size_t len, unsigned acc, Mr*& out) override
    {
        ibv_mr* m = ibv_lib::reg_mr(pd_, addr, len, ibv_access(acc));
        if (m == nullptr) {
            return from_errno(errno);
        }
        auto* w = new IbvMr;
        w->mr = m;
        w->addr = addr;
        w->length = len;
        w->lkey = m->lkey;
        w->rkey = m->rkey;
        w->access = acc;
        out = w;
        return Errc::ok;
    }
    void dereg_mr(Mr* mr) override
    {
        auto* w = static_cast<IbvMr*>(mr);
        lib().dereg_mr(w->mr);
        delete w;
    }

    Status post_send(Qp* qp, const SendWr& wr) override
    {
        ibv_sge sg[16];
        if (wr.nsge < 0 || wr.nsge > 16) {
            return Errc::invalid_arg;
        }
        for (int i = 0; i < wr.nsge; ++i) {
            sg[i].addr = wr.sg[i].addr;
            sg[i].length = wr.sg[i].length;
            sg[i].lkey = wr.sg[i].lkey;
        }
        ibv_send_wr w{};
        w.wr_id = wr.wr_id;
        w.sg_list = sg;
        w.num_sge = wr.nsge;
        switch (wr.op) {
        case Op::send: w.opcode = IBV_WR_SEND; break;
        case Op::rdma_write: w.opcode = IBV_WR_RDMA_WRITE; break;
        case Op::rdma_read: w.opcode = IBV_WR_RDMA_READ; break;
        default: return Errc::invalid_arg;
        }
        w.send_flags = (wr.signaled ? static_cast<unsigned>(IBV_SEND_SIGNALED) : 0u) |
                       (wr.inline_data ? static_cast<unsigned>(IBV_SEND_INLINE) : 0u);
        w.wr.rdma.remote_addr = wr.remote_addr;
        w.wr.rdma.rkey = wr.rkey;
        ibv_send_wr* bad = nullptr;
        int e = ibv_post_send(static_cast<IbvQp*>(qp)->qp, &w, &bad);
        return e == ENOMEM ? Status(Errc::again) : from_errno(e);
    }

    Status post_srq_recv(Srq* srq, std::uint64_t wr_id, const Sge& s) override
    {
        ibv_sge sg{s.addr, s.length, s.lkey};
        ibv_recv_wr w{};
        w.wr_id = wr_id;
        w.sg_list = &sg;
        w.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        int e = ibv_post_srq_recv(static_cast<IbvSrq*>(srq)->srq, &w, &bad);
        return e == ENOMEM ? Status(Errc::again) : from_errno(e);
    }

    int poll_cq(Cq* cq, Wc* out, int max) override
    {
        ibv_wc wc[32];
        int n = ibv_poll_cq(static_cast<IbvCq*>(cq)->cq, std::min(max, 32), wc);
        if (n < 0) {
            return -1;
        }
        for (int i = 0; i < n; ++i) {
            out[i].wr_id = wc[i].wr_id;
            out[i].status = wc_status(wc[i].status);
            out[i].op = wc_op(wc[i].opcode);
            out[i].byte_len = wc[i].byte_len;
            out[i].qp_num = wc[i].qp_num;
            out[i].vendor_err = wc[i].vendor_err;
        }
        return n;
    }

    bool poll_async(AsyncEvent& ev) override
    {
        ibv_async_event e{};
        if (lib().get_async_event(ctx_, &e) != 0) {
            return false; // EAGAIN: none
        }
        ev = AsyncEvent{};
        switch (e.event_type) {
        case IBV_EVENT_PORT_ACTIVE: ev.kind = AsyncEvent::Kind::port_active; ev.port = e.element.port_num; break;
        case IBV_EVENT_PORT_ERR: ev.kind = AsyncEvent::Kind::port_error; ev.port = e.element.port_num; break;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
            ev.kind = AsyncEvent::Kind::qp_fatal;
            ev.qp_num = e.element.qp->qp_num;
            break;
        case IBV_EVENT_QP_ACCESS_ERR:
            ev.kind = AsyncEvent::Kind::qp_access_error;
            ev.qp_num = e.element.qp->qp_num;
            break;
        case IBV_EVENT_QP_LAST_WQE_REACHED:
            ev.kind = AsyncEvent::Kind::qp_last_wqe;
            ev.qp_num = e.element.qp->qp_num;
            break;
        case IBV_EVENT_SRQ_LIMIT_REACHED: ev.kind = AsyncEvent::Kind::srq_limit; break;
        case IBV_EVENT_CQ_ERR: ev.kind = AsyncEvent::Kind::cq_error; break;
        case IBV_EVENT_DEVICE_FATAL: ev.kind = AsyncEvent::Kind::device_fatal; break;
        default: ev.kind = AsyncEvent::Kind::other; break;
        }
        lib().ack_async_event(&e);
        return true;
    }

private:
    ibv_context* ctx_;
    ibv_pd* pd_;
    DeviceAttr attr_;
};

// Why libibverbs lists no device on this machine.
std::string why_no_device()
{
    struct stat st {};
    if (::stat("/sys/class/infiniband", &st) != 0) {
        return "no RDMA device: the kernel has no RDMA support loaded (/sys/class/infiniband is missing: "
               "no ib_core/ib_uverbs modules, no rxe or siw soft-RoCE)";
    }
    if (::stat("/dev/infiniband/uverbs0", &st) != 0) {
        return "no RDMA device: /sys/class/infiniband exists but /dev/infiniband/uverbs0 does not "
               "(ib_uverbs not loaded, or not visible in this container)";
    }
    return "no RDMA device: libibverbs found no usable device (is the provider package for the HCA, "
           "ibverbs-providers, installed?)";
}

class IbvProvider final : public Provider {
public:
    const char* name() const override { return "ibv"; }
    std::vector<std::string> devices(std::string& why) override
    {
        int n = 0;
        ibv_device** list = lib().get_device_list(&n);
        std::vector<std::string> out;
        for (int i = 0; list != nullptr && i < n; ++i) {
            out.emplace_back(lib().get_device_name(list[i]));
        }
        if (list != nullptr) {
            lib().free_device_list(list);
        }
        if (out.empty()) {
            why = why_no_device();
        }
        return out;
    }
    std::unique_ptr<Device> open(const std::string& device, std::string& why) override
    {
        int n = 0;
        ibv_device** list = lib().get_device_list(&n);
        ibv_context* ctx = nullptr;
        for (int i = 0; list != nullptr && i < n; ++i) {
            if (device == lib().get_device_name(list[i])) {
                ctx = lib().open_device(list[i]);
                if (ctx == nullptr) {
                    why = "ibv_open_device(" + device + "): " + std::strerror(errno);
                }
                break;
            }
        }
        if (list != nullptr) {
            lib().free_device_list(list);
        }
        if (ctx == nullptr) {
            if (why.empty()) {
                why = "no device " + device;
            }
            return nullptr;
        }
        ibv_pd* pd = lib().alloc_pd(ctx);
        if (pd == nullptr) {
            why = "ibv_alloc_pd(" + device + "): " + std::strerror(errno);
            lib().close_device(ctx);
            return nullptr;
        }
        auto d = std::make_unique<IbvDevice>(ctx, pd);
        if (!d->start(why)) {
            return nullptr;
        }
        return d;
    }
};

} // namespace

std::unique_ptr<Provider> make_ibv_provider(std::string& why)
{
    if (!ibv_lib::load(why)) {
        return nullptr;
    }
    return std::make_unique<IbvProvider>();
}

} // namespace ulmpi::path::verbs
