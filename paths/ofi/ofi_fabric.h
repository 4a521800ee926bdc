// Which libfabric provider the ofi path uses.
//
// choose_provider() asks fi_getinfo for reliable datagram endpoints (FI_EP_RDM)
// that deliver sends in order (FI_ORDER_SAS), first with remote reads
// (FI_RMA | FI_READ | FI_REMOTE_READ: the single-copy rendezvous), then
// without (the copy path), and takes the first answer, in libfabric's own
// order of preference, that passes these rules:
//  * ofi_mrail never (it hangs here; striping over rails is ULM's);
//  * ULMPI_OFI_PROVIDER, when set, names the provider ("tcp;ofi_rxm",
//    "udp;ofi_rxd", "shm"; a core name such as "tcp" also matches);
//  * ULMPI_OFI_IFACE, when set, names the domain (the interface: "lo",
//    "veth0"); otherwise a job on one host takes the loopback interface (or
//    shm) before any other, so that it never goes out through an outside
//    interface, and a job over several hosts never takes loopback, nor shm
//    unless ULMPI_OFI_PROVIDER names it (it then reaches this host's ranks);
//  * IPv4 addresses only (an IPv6 link-local address needs a scope the
//    address vector does not carry).
// libfabric's own variables (FI_PROVIDER, FI_TCP_IFACE, ...) filter before
// these rules do.
#pragma once

#include "paths/ofi/ofi_lib.h"

#include <rdma/fabric.h>

#include <string>

namespace ulmpi::path::ofi {

enum class RmaWish : std::uint8_t { automatic, on, off };

struct ProviderWish {
    std::string provider; // empty: any
    std::string iface;    // empty: by the rules above
    RmaWish rma = RmaWish::automatic;
    bool one_host = true; // every peer the path reaches is on this host
};

// The fi_info to open (the caller frees it with fi_freeinfo), or nullptr
// with the reason in `why`.
fi_info* choose_provider(const ProviderWish& wish, std::string& why);

// The capabilities and modes the path asks for and knows how to serve.
inline constexpr std::uint64_t kRmaCaps = FI_RMA | FI_READ | FI_REMOTE_READ;
inline constexpr int kMrModes =
    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;

// "tcp;ofi_rxm on lo (127.0.0.1), remote reads" and the like.
std::string describe_info(const fi_info* info);

} // namespace ulmpi::path::ofi
