#include "runtime/pmix_lib.h"

#include "runtime/dl_lib.h"

#include <cstdlib>
#include <dlfcn.h>

namespace ulmpi::rt::pmix_lib {
namespace {

Api g_api{};
DlOnce g_lib;

void load_once(DlOnce& lib)
{
    // Where meson found libpmix (Debian keeps it off the loader's path, in
    // .../pmix2/lib), then wherever the loader finds it.
    std::string first = std::string(ULMPI_PMIX_LIBDIR) + "/libpmix.so.2";
    // RTLD_GLOBAL: libpmix loads plugins of its own (pmix_mca_*.so) that
    // expect its symbols, as when it is linked.
    void* h = ::dlopen(first.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
        h = ::dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
    }
    if (h == nullptr) {
        const char* e = ::dlerror();
        lib.why = "cannot load libpmix.so.2 (tried " + first + " and the loader's path): " +
                  (e != nullptr ? e : "?");
        return;
    }
    Api a{};
    if (!dl_sym(h, "PMIx_Init", a.init) || !dl_sym(h, "PMIx_Finalize", a.finalize) ||
        !dl_sym(h, "PMIx_Abort", a.abort) || !dl_sym(h, "PMIx_Put", a.put) ||
        !dl_sym(h, "PMIx_Commit", a.commit) || !dl_sym(h, "PMIx_Fence", a.fence) ||
        !dl_sym(h, "PMIx_Fence_nb", a.fence_nb) || !dl_sym(h, "PMIx_Get", a.get) ||
        !dl_sym(h, "PMIx_Resolve_nodes", a.resolve_nodes) ||
        !dl_sym(h, "PMIx_Resolve_peers", a.resolve_peers) ||
        !dl_sym(h, "PMIx_Register_event_handler", a.register_event_handler) ||
        !dl_sym(h, "PMIx_Deregister_event_handler", a.deregister_event_handler) ||
        !dl_sym(h, "PMIx_Error_string", a.error_string) ||
        !dl_sym(h, "PMIx_Info_load", a.info_load) ||
        !dl_sym(h, "PMIx_Value_destruct", a.value_destruct) ||
        !dl_sym(h, "PMIx_Publish", a.publish) || !dl_sym(h, "PMIx_Lookup", a.lookup) ||
        !dl_sym(h, "PMIx_Unpublish", a.unpublish)) {
        lib.why = "the libpmix.so.2 that was loaded lacks PMIx_Init, PMIx_Fence_nb or another "
                  "function of PMIx 4 that the PMIx bootstrap calls";
        return;
    }
    // Kept loaded for the life of the process: its threads run its code.
    g_api = a;
    lib.loaded = true;
}

} // namespace

bool load(std::string& why) { return g_lib.load(load_once, why); }

const Api& api() { return g_api; }

void value_release(pmix_value_t*& v)
{
    if (v != nullptr) {
        g_api.value_destruct(v);
        std::free(v);
        v = nullptr;
    }
}

void info_destruct(pmix_info_t* info)
{
    if (!PMIX_INFO_IS_PERSISTENT(info)) {
        g_api.value_destruct(&info->value);
    }
}

} // namespace ulmpi::rt::pmix_lib
