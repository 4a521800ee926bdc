// The one interface through which the verbs path reaches an RDMA device.
//
// It is the small part of libibverbs the path uses, in our own types: open a
// device, query a port, create completion queues, a shared receive queue and
// reliable-connected queue pairs, walk a queue pair through its states
// (reset -> init -> rtr -> rts, error), register memory, post sends, RDMA
// reads and writes and receives, poll completions, read asynchronous events.
// Two implementations exist:
//
//  * the real one over libibverbs (verbs_ibv.cpp), the product;
//  * a software device for tests (tests/verbs/soft_device.*), which behaves
//    as the hardware documents (queue pair states, receives consumed in
//    order, keys and bounds checked, completions in order per queue pair,
//    error completions flushing the queue pair, ports going down) between
//    processes of one host over shared memory. It is never part of libmpi:
//    a test loads it by naming it in ULMPI_VERBS_DEVICE=soft:<library>.
//
// Semantics follow the verbs specification, so the path written against this
// interface runs unchanged on both. Handles (Cq, Srq, Qp, Mr) are owned by
// the device that made them and destroyed through it.
#pragma once

#include "runtime/bootstrap.h"
#include "runtime/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ulmpi::path::verbs {

using rt::Errc;
using rt::Status;

enum class LinkLayer : std::uint8_t { infiniband, ethernet };
enum class PortState : std::uint8_t { down, init, armed, active, other };
enum class QpState : std::uint8_t { reset, init, rtr, rts, error };

// Memory access rights of a registration (IBV_ACCESS_*).
namespace access {
inline constexpr unsigned local_write = 1u;
inline constexpr unsigned remote_write = 2u;
inline constexpr unsigned remote_read = 4u;
} // namespace access

struct DeviceAttr {
    std::string name;
    int ports = 0;                // numbered 1..ports
    std::uint32_t max_qp_wr = 0;  // send queue depth
    std::uint32_t max_srq_wr = 0;
    std::uint32_t max_cqe = 0;
    std::uint32_t max_sge = 0;
    std::uint32_t max_qp_rd_atom = 0; // RDMA reads in flight per queue pair
    std::uint64_t max_mr_size = 0;
    std::uint64_t max_msg_size = 0;
};

struct PortAttr {
    PortState state = PortState::down;
    LinkLayer link = LinkLayer::infiniband;
    std::uint16_t lid = 0;
    std::uint32_t active_mtu = 0; // bytes: 256, 512, 1024, 2048 or 4096
    std::uint8_t gid[16] = {};    // the GID used for this port (zero: none)
    int gid_index = 0;            // its index (auto: RoCE v2 and IPv4 first on Ethernet)
    double gbps = 0;              // signalling rate (width x speed)
};

// Destination of a reliable connection (what modify_qp_rtr needs).
struct RtrAttr {
    std::uint32_t dest_qpn = 0;
    std::uint32_t rq_psn = 0;
    std::uint32_t path_mtu = 0; // bytes
    std::uint16_t dlid = 0;     // InfiniBand
    bool global = false;        // route by GID (RoCE always, InfiniBand across subnets)
    std::uint8_t dgid[16] = {};
    std::uint8_t sgid_index = 0;
    std::uint8_t max_dest_rd_atomic = 1;
    std::uint8_t min_rnr_timer = 12;
};

struct RtsAttr {
    std::uint32_t sq_psn = 0;
    std::uint8_t timeout = 14;   // 4.096 us * 2^timeout per try
    std::uint8_t retry_cnt = 7;
    std::uint8_t rnr_retry = 7;  // 7: retry forever
    std::uint8_t max_rd_atomic = 1;
};

struct QpCaps {
    std::uint32_t max_send_wr = 0;
    std::uint32_t max_send_sge = 1;
    std::uint32_t max_inline = 0;
};

enum class Op : std::uint8_t { send, rdma_write, rdma_read, recv };

enum class WcStatus : std::uint8_t {
    success,
    loc_len_err,
    loc_qp_op_err,
    loc_prot_err,
    wr_flush_err,
    bad_resp_err,
    loc_access_err,
    rem_inv_req_err,
    rem_access_err,
    rem_op_err,
    retry_exc_err,
    rnr_retry_exc_err,
    fatal_err,
    general_err,
};
const char* wc_status_name(WcStatus s) noexcept;

struct Sge {
    std::uint64_t addr = 0;
    std::uint32_t length = 0;
    std::uint32_t lkey = 0;
};

struct SendWr {
    std::uint64_t wr_id = 0;
    Op op = Op::send;
    bool signaled = true;
    bool inline_data = false; // the data is copied at post time; lkeys are not used
    const Sge* sg = nullptr;
    int nsge = 0;
    std::uint64_t remote_addr = 0; // RDMA read/write
    std::uint32_t rkey = 0;
};

struct Wc {
    std::uint64_t wr_id = 0;
    WcStatus status = WcStatus::success;
    Op op = Op::send;
    std::uint32_t byte_len = 0;
    std::uint32_t qp_num = 0;
    std::uint32_t vendor_err = 0;
};

struct AsyncEvent {
    enum class Kind : std::uint8_t {
        port_active,
        port_error,
        qp_fatal,        // a queue pair went to error on its own
        qp_access_error, // a peer's request broke our keys or bounds
        qp_last_wqe,
        srq_limit,
        cq_error,
        device_fatal,
        other,
    };
    Kind kind = Kind::other;
    int port = 0;
    std::uint32_t qp_num = 0;
};
const char* async_kind_name(AsyncEvent::Kind k) noexcept;

// Handles. An implementation derives from them.
class Cq {
public:
    virtual ~Cq() = default;
};
class Srq {
public:
    virtual ~Srq() = default;
};
class Qp {
public:
    virtual ~Qp() = default;
    std::uint32_t qpn = 0;
};
class Mr {
public:
    virtual ~Mr() = default;
    void* addr = nullptr;
    std::size_t length = 0;
    std::uint32_t lkey = 0;
    std::uint32_t rkey = 0;
    unsigned access = 0;
};

class Device {
public:
    Device() = default;
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    virtual ~Device() = default;

    virtual const DeviceAttr& attr() const = 0;
    // gid_index -1: choose (index 0 on InfiniBand; on Ethernet a RoCE v2
    // GID, IPv4-mapped first).
    virtual Status query_port(int port, int gid_index, PortAttr& out) = 0;

    virtual Status create_cq(std::uint32_t depth, Cq*& out) = 0;
    virtual void destroy_cq(Cq* cq) = 0;
    virtual Status create_srq(std::uint32_t depth, Srq*& out) = 0;
    virtual void destroy_srq(Srq* srq) = 0;
    // A reliable-connected queue pair in the reset state whose receives come
    // from `srq`. `caps` is what is asked; on success it holds what was granted.
    virtual Status create_qp(Cq* send_cq, Cq* recv_cq, Srq* srq, QpCaps& caps, Qp*& out) = 0;
    virtual void destroy_qp(Qp* qp) = 0;
    virtual Status modify_qp_init(Qp* qp, int port, unsigned access) = 0;
    virtual Status modify_qp_rtr(Qp* qp, const RtrAttr& attr) = 0;
    virtual Status modify_qp_rts(Qp* qp, const RtsAttr& attr) = 0;
    virtual Status modify_qp_error(Qp* qp) = 0;
    virtual Status modify_qp_reset(Qp* qp) = 0;
    virtual QpState qp_state(Qp* qp) = 0;

    virtual Status reg_mr(void* addr, std::size_t len, unsigned access, Mr*& out) = 0;
    virtual void dereg_mr(Mr* mr) = 0;

    // again: the queue is full. Other errors: the request is malformed or the
    // queue pair's state forbids it (nothing was posted).
    virtual Status post_send(Qp* qp, const SendWr& wr) = 0;
    virtual Status post_srq_recv(Srq* srq, std::uint64_t wr_id, const Sge& sge) = 0;
    // Up to `max` completions; -1 when the queue is broken (overrun).
    virtual int poll_cq(Cq* cq, Wc* out, int max) = 0;
    // Non-blocking: true and `ev` when an asynchronous event waits.
    virtual bool poll_async(AsyncEvent& ev) = 0;
};

// Where devices come from: libibverbs, or a software device a test names.
class Provider {
public:
    virtual ~Provider() = default;
    virtual const char* name() const = 0;
    // Names of the devices present; empty with `why` when there are none.
    virtual std::vector<std::string> devices(std::string& why) = 0;
    virtual std::unique_ptr<Device> open(const std::string& device, std::string& why) = 0;
};

// The provider ULMPI_VERBS_DEVICE selects: "" or "ibv" (libibverbs), or
// "soft:<library>[,<args>]" (a software device in a shared object, for
// tests). nullptr with `why` when it cannot be had.
std::unique_ptr<Provider> make_provider(const std::string& spec, const rt::JobInfo& job,
                                        std::string& why);
// libibverbs' provider; loads the library first (verbs_ibv_lib.h): nullptr
// with `why` when it cannot.
std::unique_ptr<Provider> make_ibv_provider(std::string& why);

// Symbol a software-device library exports (extern "C"): returns a provider
// made with new (the caller owns it) or nullptr, writing a reason into `why`.
using SoftProviderFn = Provider* (*)(const char* args, const char* jobid, char* why,
                                     std::size_t why_len);
inline constexpr const char* kSoftProviderSymbol = "ulmpi_verbs_soft_provider";

} // namespace ulmpi::path::verbs
