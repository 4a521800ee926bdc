#include "paths/ofi/ofi_info.h"

#include "paths/ofi/ofi_fabric.h"
#include "paths/ofi/ofi_path.h"

namespace ulmpi::path::ofi {

std::string describe_providers()
{
    const OfiOptions opt = ofi_options_from_params();
    std::string lib_why;
    if (!lib::load(lib_why)) {
        return "  " + lib_why + "\n";
    }
    std::string out = "  libfabric " + std::to_string(FI_MAJOR(lib::version())) + "." +
                      std::to_string(FI_MINOR(lib::version())) + "\n";
    for (bool one_host : {true, false}) {
        ProviderWish wish;
        wish.provider = opt.provider;
        wish.iface = opt.iface;
        wish.rma = opt.rma;
        wish.one_host = one_host;
        std::string why;
        fi_info* info = choose_provider(wish, why);
        out += one_host ? "  a job on one host: " : "  a job over several hosts: ";
        if (info == nullptr) {
            out += "none (" + why + ")\n";
            continue;
        }
        out += describe_info(info) + "\n";
        lib::freeinfo(info);
    }
    return out;
}

} // namespace ulmpi::path::ofi
