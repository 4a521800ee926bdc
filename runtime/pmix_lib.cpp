#include "runtime/pmix_lib.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace ulmpi::rt::pmix_lib {
namespace {

Api g_api{};
bool g_loaded = false;
std::string g_why;

template <class F> bool sym(void* h, const char* name, F& out)
{
    out = reinterpret_cast<F>(::dlsym(h, name));
    return out != nullptr;
}

void load_once()
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
        g_why = "cannot load libpmix.so.2 (tried " + first + " and the loader's path): " +
                (e != nullptr ? e : "?");
        return;
    }
    Api a{};
    if (!sym(h, "PMIx_Init", a.init) || !sym(h, "PMIx_Finalize", a.finalize) ||
        !sym(h, "PMIx_Abort", a.abort) || !sym(h, "PMIx_Put", a.put) ||
        !sym(h, "PMIx_Commit", a.commit) || !sym(h, "PMIx_Fence", a.fence) ||
        !sym(h, "PMIx_Fence_nb", a.fence_nb) || !sym(h, "PMIx_Get", a.get) ||
        !sym(h, "PMIx_Resolve_nodes", a.resolve_nodes) ||
        !sym(h, "PMIx_Resolve_peers", a.resolve_peers) ||
        !sym(h, "PMIx_Register_event_handler", a.register_event_handler) ||
        !sym(h, "PMIx_Deregister_event_handler", a.deregister_event_handler) ||
        !sym(h, "PMIx_Error_string", a.error_string) || !sym(h, "PMIx_Info_load", a.info_load) ||
        !sym(h, "PMIx_Value_destruct", a.value_destruct)) {
        g_why = "the libpmix.so.2 that was loaded lacks PMIx_Init, PMIx_Fence_nb or another "
                "function of PMIx 4 that the PMIx bootstrap calls";
        return;
    }
    // Kept loaded for the life of the process: its threads run its code.
    g_api = a;
    g_loaded = true;
}

} // namespace

bool load(std::string& why)
{
    static std::once_flag once;
    std::call_once(once, load_once);
    if (!g_loaded) {
        why = g_why;
    }
    return g_loaded;
}

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
