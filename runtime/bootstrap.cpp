// Chooses the bootstrap implementation from the environment.
#include "runtime/boot_wire.h"
#include "runtime/bootstrap.h"

#include <cstdlib>

namespace ulmpi::rt {

// Defined next to each implementation (bootstrap_ours.cpp, bootstrap_singleton.cpp).
std::unique_ptr<Bootstrap> make_our_bootstrap(std::string& why);
std::unique_ptr<Bootstrap> make_singleton_bootstrap(std::string& why);

std::unique_ptr<Bootstrap> make_bootstrap(std::string& why)
{
    const char* addr = std::getenv(wire::env::boot_addr);
    if (addr != nullptr && *addr != '\0') {
        return make_our_bootstrap(why);
    }
    return make_singleton_bootstrap(why);
}

} // namespace ulmpi::rt
