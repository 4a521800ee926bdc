// What ulmpi_info says about libfabric: the provider the ofi path would take
// with the current parameters (for a job on one host and over several), or
// why it takes none. Built with the ofi path (ofi_info.cpp) or without it
// (ofi_info_none.cpp).
#pragma once

#include <string>

namespace ulmpi::path::ofi {

// Lines of text, each ending in a newline.
std::string describe_providers();

} // namespace ulmpi::path::ofi
