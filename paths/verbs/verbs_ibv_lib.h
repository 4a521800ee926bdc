// libibverbs, loaded with dlopen when the verbs path opens the real device
// (ULMPI_VERBS_DEVICE empty or "ibv"), not linked into libmpi: libibverbs.so.1
// brings libnl-3 and libnl-route-3 with it, and loading them in every rank of
// every job, RDMA device or not, cost each process dynamic-linking time
// (docs/scaling.md). Only the headers are used at build time.
//
// The inline functions of verbs.h that call into the library
// (ibv_query_port, ibv_query_gid_ex, ibv_reg_mr) have their equivalents
// here; the data-path ones (ibv_post_send, ibv_poll_cq, ...) call through
// the device's operation table and need nothing.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace ulmpi::path::verbs::ibv_lib {

// The functions of libibverbs the ibv device calls, typed from verbs.h.
struct Api {
    decltype(&::ibv_get_device_list) get_device_list;
    decltype(&::ibv_free_device_list) free_device_list;
    decltype(&::ibv_get_device_name) get_device_name;
    decltype(&::ibv_open_device) open_device;
    decltype(&::ibv_close_device) close_device;
    decltype(&::ibv_alloc_pd) alloc_pd;
    decltype(&::ibv_dealloc_pd) dealloc_pd;
    decltype(&::ibv_query_device) query_device;
    decltype(&::ibv_query_port) query_port_compat; // behind ibv_query_port's inline part
    decltype(&::ibv_query_gid) query_gid;
    decltype(&::_ibv_query_gid_ex) query_gid_ex;
    decltype(&::ibv_create_cq) create_cq;
    decltype(&::ibv_destroy_cq) destroy_cq;
    decltype(&::ibv_create_srq) create_srq;
    decltype(&::ibv_destroy_srq) destroy_srq;
    decltype(&::ibv_create_qp) create_qp;
    decltype(&::ibv_destroy_qp) destroy_qp;
    decltype(&::ibv_modify_qp) modify_qp;
    decltype(&::ibv_query_qp) query_qp;
    decltype(&::ibv_reg_mr_iova2) reg_mr_iova2;
    decltype(&::ibv_dereg_mr) dereg_mr;
    decltype(&::ibv_get_async_event) get_async_event;
    decltype(&::ibv_ack_async_event) ack_async_event;
};

// Loads libibverbs once (thread-safe); false with the reason when it cannot.
bool load(std::string& why);
// The functions; only after load() answered true.
const Api& api();

// ibv_query_port: the device's extended query when it has one, else the
// library's compatible entry point (what verbs.h's inline wrapper does).
int query_port(ibv_context* ctx, std::uint8_t port, ibv_port_attr* attr);
// ibv_query_gid_ex of verbs.h.
int query_gid_ex(ibv_context* ctx, std::uint32_t port, std::uint32_t index, ibv_gid_entry* entry,
                 std::uint32_t flags);
// ibv_reg_mr of verbs.h: the region's I/O virtual address is its address.
ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t len, int access);

} // namespace ulmpi::path::verbs::ibv_lib
