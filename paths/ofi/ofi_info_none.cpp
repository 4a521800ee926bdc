#include "paths/ofi/ofi_info.h"

namespace ulmpi::path::ofi {

std::string describe_providers()
{
    return "  the ofi path is not built (libfabric was not found when ulmpi was configured: "
           "install libfabric-dev and configure again, or -Dofi=enabled to insist)\n";
}

} // namespace ulmpi::path::ofi
