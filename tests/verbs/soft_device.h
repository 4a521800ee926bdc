// The software verbs device: a test double of an RDMA device (an HCA), for
// the verbs path's tests on machines without one. Not a product path: it
// lives in tests/, and libmpi reaches it only when ULMPI_VERBS_DEVICE names
// its shared object (tests/verbs/soft_module.cpp).
//
// A fabric is one shared-memory segment (/dev/shm/verbs-soft-<name>) that
// every process of a test or MPI job opens: it holds the ports, the queue
// pairs, shared receive queues, completion queues and memory registrations
// of all of them, under one process-shared robust mutex. Each process keeps
// its own send queues (in its memory) and pool of pinned pages
// (soft_memory.h).
//
// What it does, as the verbs specification has it:
//  * queue pairs are reliable connected, created in reset and moved through
//    init -> rtr -> rts (other transitions fail); posting a send before rts
//    fails; path MTU above the port's fails.
//  * a request is carried only when its destination queue pair is connected
//    back to the sender (rtr/rts, its dest_qpn is ours), addressed right
//    (the port's LID, or its GID when routed globally) and the PSNs agree
//    (the sender's next sq_psn is the receiver's next rq_psn); otherwise,
//    as on a wire where nobody answers, it is retried until the transport
//    timeout (4.096 us * 2^timeout * (retry_cnt + 1)) and completes with
//    retry_exc_err.
//  * sends consume the destination's shared receive queue in posting order;
//    an empty queue is an RNR NAK: retried forever with rnr_retry 7, else
//    rnr_retry_exc_err. A receive buffer too short: loc_len_err at the
//    receiver, rem_inv_req_err at the sender.
//  * RDMA read and write check the remote key (it must be the destination
//    process's, live, with the access asked for, covering the range):
//    rem_access_err otherwise, and the responder's queue pair goes to error
//    with a qp_access_error event. Local keys are checked (loc_prot_err).
//  * work requests of a queue pair complete in order; an error completion
//    moves the queue pair to error and every request after it completes
//    with wr_flush_err (signaled or not).
//  * ports go down and up (set_port_state, from any process): requests
//    over a down port wait until the transport timeout; every process with
//    the port open gets port_error / port_active events.
//  * a test can inject an error completion on a queue pair's n-th next
//    request (inject_error).
//
// The data itself moves with process_vm_readv/writev between pinned pages,
// one-sided: the responder does nothing.
#pragma once

#include "paths/verbs/verbs_device.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ulmpi::soft {

struct FabricOptions {
    std::string name;             // segment /dev/shm/verbs-soft-<name>
    int devices = 1;              // soft0, soft1, ...
    int ports = 1;                // per device
    path::verbs::LinkLayer link = path::verbs::LinkLayer::infiniband;
    std::uint32_t max_inline = 128;
    std::uint32_t mtu = 4096;
    std::size_t pool_bytes = std::size_t{4} << 30; // per process, sparse
};

// Parses "name=X,devices=N,ports=N,link=ib|eth,inline=N,mtu=N,pool=BYTES";
// an unset name becomes `jobid`. False with `why` on a malformed word.
bool parse_options(const std::string& args, const std::string& jobid, FabricOptions& out,
                   std::string& why);

std::unique_ptr<path::verbs::Provider> make_soft_provider(const FabricOptions& opt);

// Test control, from any process that can open the fabric by name.
bool set_port_state(const std::string& fabric, int device, int port, bool active);
bool inject_error(const std::string& fabric, std::uint32_t qpn, std::uint32_t after,
                  path::verbs::WcStatus status);
struct FabricCounters {
    std::uint64_t sends = 0;
    std::uint64_t reads = 0;
    std::uint64_t writes = 0;
    std::uint64_t bytes = 0;
    std::uint64_t rnr_naks = 0;      // sends that found no receive posted
    std::uint64_t retry_exceeded = 0;
    std::uint64_t access_errors = 0;
    std::uint64_t flushed = 0;
};
bool counters(const std::string& fabric, FabricCounters& out);
void unlink_fabric(const std::string& fabric);

} // namespace ulmpi::soft
