// Libraries loaded on demand with dlopen (libfabric, libibverbs, libpmix):
// a rank that does not use one never maps it. Each user keeps one DlOnce
// and its table of functions; the loading runs once per process.
#pragma once

#include <dlfcn.h>
#include <mutex>
#include <string>

namespace ulmpi::rt {

// Looks `name` up in the library `h` into the function pointer `out`;
// false when the library lacks it.
template <class F> bool dl_sym(void* h, const char* name, F& out)
{
    out = reinterpret_cast<F>(::dlsym(h, name));
    return out != nullptr;
}

// One library's loading: load(init) runs init once in the process (it sets
// `loaded`, or says in `why` what is missing) and answers every later call
// from the result. The library stays loaded for the process's life.
struct DlOnce {
    std::once_flag once;
    bool loaded = false;
    std::string why;

    bool load(void (*init)(DlOnce&), std::string& why_out)
    {
        std::call_once(once, init, *this);
        if (!loaded) {
            why_out = why;
        }
        return loaded;
    }
};

} // namespace ulmpi::rt
