#include "paths/verbs/verbs_ibv_lib.h"

#include "runtime/dl_lib.h"

#include <cstdint>
#include <cstring>
#include <dlfcn.h>

namespace ulmpi::path::verbs::ibv_lib {
namespace {

Api g_api{};
rt::DlOnce g_lib;
using rt::dl_sym;

void load_once(rt::DlOnce& lib)
{
    // RTLD_GLOBAL: the provider libraries libibverbs loads (libmlx5, librxe,
    // ...) expect its symbols, as when it is linked.
    void* h = ::dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
        const char* e = ::dlerror();
        lib.why = std::string("cannot load libibverbs.so.1 (Debian: libibverbs1): ") +
                  (e != nullptr ? e : "?");
        return;
    }
    Api a{};
    if (!dl_sym(h, "ibv_get_device_list", a.get_device_list) ||
        !dl_sym(h, "ibv_free_device_list", a.free_device_list) ||
        !dl_sym(h, "ibv_get_device_name", a.get_device_name) ||
        !dl_sym(h, "ibv_open_device", a.open_device) ||
        !dl_sym(h, "ibv_close_device", a.close_device) ||
        !dl_sym(h, "ibv_alloc_pd", a.alloc_pd) || !dl_sym(h, "ibv_dealloc_pd", a.dealloc_pd) ||
        !dl_sym(h, "ibv_query_device", a.query_device) ||
        !dl_sym(h, "ibv_query_port", a.query_port_compat) ||
        !dl_sym(h, "ibv_query_gid", a.query_gid) ||
        !dl_sym(h, "_ibv_query_gid_ex", a.query_gid_ex) ||
        !dl_sym(h, "ibv_create_cq", a.create_cq) ||
        !dl_sym(h, "ibv_destroy_cq", a.destroy_cq) || !dl_sym(h, "ibv_create_srq", a.create_srq) ||
        !dl_sym(h, "ibv_destroy_srq", a.destroy_srq) || !dl_sym(h, "ibv_create_qp", a.create_qp) ||
        !dl_sym(h, "ibv_destroy_qp", a.destroy_qp) || !dl_sym(h, "ibv_modify_qp", a.modify_qp) ||
        !dl_sym(h, "ibv_query_qp", a.query_qp) || !dl_sym(h, "ibv_reg_mr_iova2", a.reg_mr_iova2) ||
        !dl_sym(h, "ibv_dereg_mr", a.dereg_mr) ||
        !dl_sym(h, "ibv_get_async_event", a.get_async_event) ||
        !dl_sym(h, "ibv_ack_async_event", a.ack_async_event)) {
        lib.why = "the libibverbs.so.1 that was loaded lacks ibv_reg_mr_iova2, _ibv_query_gid_ex "
                  "or another function the verbs path calls (rdma-core 34 or later is needed)";
        return;
    }
    // Kept loaded for the life of the process: devices run its code.
    g_api = a;
    lib.loaded = true;
}

} // namespace

bool load(std::string& why) { return g_lib.load(load_once, why); }

const Api& api() { return g_api; }

int query_port(ibv_context* ctx, std::uint8_t port, ibv_port_attr* attr)
{
    verbs_context* vctx = verbs_get_ctx_op(ctx, query_port);
    if (vctx == nullptr) {
        std::memset(attr, 0, sizeof *attr);
        return g_api.query_port_compat(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
    }
    return vctx->query_port(ctx, port, attr, sizeof *attr);
}

int query_gid_ex(ibv_context* ctx, std::uint32_t port, std::uint32_t index, ibv_gid_entry* entry,
                 std::uint32_t flags)
{
    return g_api.query_gid_ex(ctx, port, index, entry, flags, sizeof *entry);
}

ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t len, int access)
{
    return g_api.reg_mr_iova2(pd, addr, len, reinterpret_cast<std::uintptr_t>(addr),
                              static_cast<unsigned>(access));
}

} // namespace ulmpi::path::verbs::ibv_lib
