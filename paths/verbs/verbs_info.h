// What ulmpi_info says about RDMA devices: which the verbs path sees (the
// provider ULMPI_VERBS_DEVICE selects, each device and port with its state,
// link layer, address and rate), or why it sees none. Built with the verbs
// path (verbs_info.cpp) or without it (verbs_info_none.cpp).
#pragma once

#include <string>

namespace ulmpi::path::verbs {

// Lines of text, each ending in a newline.
std::string describe_devices();

} // namespace ulmpi::path::verbs
