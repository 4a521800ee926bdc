#include "paths/verbs/verbs_info.h"

namespace ulmpi::path::verbs {

std::string describe_devices()
{
    return "  the verbs path is not built (libibverbs was not found when ulmpi was configured: "
           "install libibverbs-dev and configure again, or -Dverbs=enabled to insist)\n";
}

} // namespace ulmpi::path::verbs
