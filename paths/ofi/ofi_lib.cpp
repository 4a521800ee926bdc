#include "paths/ofi/ofi_lib.h"

#include "runtime/dl_lib.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>

namespace ulmpi::path::ofi::lib {
namespace {

struct Api {
    int (*getinfo)(std::uint32_t, const char*, const char*, std::uint64_t, const fi_info*, fi_info**);
    void (*freeinfo)(fi_info*);
    fi_info* (*dupinfo)(const fi_info*);
    int (*fabric)(fi_fabric_attr*, fid_fabric**, void*);
    const char* (*strerror)(int);
    std::uint32_t (*version)();
};

Api g_api{};
rt::DlOnce g_lib;
using rt::dl_sym;

void load_once(rt::DlOnce& lib)
{
    struct sigaction saved[NSIG];
    for (int s = 1; s < NSIG; ++s) {
        ::sigaction(s, nullptr, &saved[s]);
    }
    // udp;ofi_rxd sends up to FI_OFI_RXD_MAX_UNACKED packets (128) to a
    // peer before it acknowledges; 128 datagrams of up to 1.5 KB overflow a
    // default UDP receive buffer (208 KiB, about 2.3 KB of it per datagram)
    // by themselves, and rxd recovers from a loss only by sending the whole
    // window again after a timeout that doubles up to 4 s while no ACK moves.
    // On a loaded machine that went on past the conformance suite's 40 s
    // deadline (docs/ofi.md "rxd's window"). 32 fit; the user's value wins.
    // rxd reads it when libfabric initializes its providers, after this.
    ::setenv("FI_OFI_RXD_MAX_UNACKED", "32", 0);
    void* h = ::dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    for (int s = 1; s < NSIG; ++s) {
        if (s != SIGKILL && s != SIGSTOP) {
            ::sigaction(s, &saved[s], nullptr);
        }
    }
    if (h == nullptr) {
        const char* e = ::dlerror();
        lib.why = std::string("cannot load libfabric.so.1: ") + (e != nullptr ? e : "?");
        return;
    }
    Api a{};
    if (!dl_sym(h, "fi_getinfo", a.getinfo) || !dl_sym(h, "fi_freeinfo", a.freeinfo) ||
        !dl_sym(h, "fi_dupinfo", a.dupinfo) || !dl_sym(h, "fi_fabric", a.fabric) ||
        !dl_sym(h, "fi_strerror", a.strerror) || !dl_sym(h, "fi_version", a.version)) {
        lib.why = "libfabric.so.1 lacks fi_getinfo, fi_fabric or another function the ofi path "
                  "calls";
        return;
    }
    g_api = a;
    lib.loaded = true;
}

} // namespace

bool load(std::string& why) { return g_lib.load(load_once, why); }

// The others are called only after load() answered true.
int getinfo(std::uint32_t version, const char* node, const char* service, std::uint64_t flags,
            const fi_info* hints, fi_info** info)
{
    return g_api.getinfo(version, node, service, flags, hints, info);
}
void freeinfo(fi_info* info) { g_api.freeinfo(info); }
fi_info* dupinfo(const fi_info* info) { return g_api.dupinfo(info); }
int fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context)
{
    return g_api.fabric(attr, fabric, context);
}
const char* strerror(int errnum)
{
    return g_lib.loaded ? g_api.strerror(errnum) : "libfabric not loaded";
}
std::uint32_t version() { return g_api.version(); }

} // namespace ulmpi::path::ofi::lib
