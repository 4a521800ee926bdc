// The ofi path's parameters (ULMPI_OFI_*) and its factory: the provider
// chosen, the path opened, or skipped with the reason.
#include "paths/ofi/ofi_path.h"
#include "paths/ofi/ofi_util.h"

#include "paths/registry.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <algorithm>

namespace ulmpi::path::ofi {
namespace {

const rt::TextParam provider_param{
    "ofi_provider", "",
    "libfabric provider of the ofi path (tcp;ofi_rxm, udp;ofi_rxd, shm, ...); empty: the first "
    "fi_getinfo offers (never ofi_mrail)"};
const rt::TextParam iface_param{
    "ofi_iface", "",
    "libfabric domain (interface) of the ofi path (lo, eth1, ...); empty: loopback for a job on "
    "one host, else the first other one"};
const rt::ChoiceParam rma_param{
    "ofi_rma", "auto",
    "single-copy rendezvous by fi_read: auto (where the provider reads), on (only such "
    "providers), off",
    "auto|on|off"};
const rt::SizeParam eager_param{"ofi_eager_limit", 16384,
                                "messages up to this size go eagerly over ofi"};
const rt::SizeParam buf_param{"ofi_buf_size", 65536,
                              "bytes of an ofi send or receive buffer (8-byte path header + ULM "
                              "fragment)"};
const rt::IntParam rx_param{"ofi_rx_bufs", 64, "receive buffers the ofi path keeps posted"};
const rt::IntParam tx_param{"ofi_tx_bufs", 64, "send buffers of the ofi path"};
// One fi_read per message where the provider takes it: tcp;ofi_rxm serves
// the reads of one connection one after another, each costing the target a
// round of its progress, so 1 MiB pieces ran a 4 MiB stream at 0.71x Open
// MPI's and 4 MiB ones at 0.83x (docs/benchmarks.md, 2026-11-28).
const rt::SizeParam chunk_param{"ofi_read_chunk", 64u << 20,
                                "bytes of one fi_read of a rendezvous (at most the provider's "
                                "largest message)"};
const rt::IntParam rkey_param{"ofi_rkey_cache", 256,
                              "registrations for remote reads the ofi path keeps for reuse"};
const rt::IntParam timeout_param{
    "ofi_send_timeout_ms", 10000,
    "an ofi send not complete after this many ms reports the path to that peer down (back up "
    "when a send completes)"};
const rt::ChoiceParam everywhere_param{
    "ofi_everywhere", "auto",
    "ofi also reaches ranks on this host: auto (only when ULMPI_PATH_INCLUDE leaves shm out), on, "
    "off",
    "auto|on|off"};

// Between verbs (30) and udp (10): self > shm > verbs > ofi > udp.
const Registrar reg{"ofi", 20, &make_ofi_paths};

} // namespace

OfiOptions ofi_options_from_params()
{
    OfiOptions o;
    o.provider = provider_param.get();
    o.iface = iface_param.get();
    const std::string& rma = rma_param.get();
    o.rma = rma == "on" ? RmaWish::on : rma == "off" ? RmaWish::off : RmaWish::automatic;
    o.buf_size = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(buf_param.get(), 1024, 1u << 22));
    o.eager_limit = std::min<std::uint64_t>(eager_param.get(), o.buf_size);
    o.rx_bufs = static_cast<std::uint32_t>(std::clamp<std::int64_t>(rx_param.get(), 2, 1 << 16));
    o.tx_bufs = static_cast<std::uint32_t>(std::clamp<std::int64_t>(tx_param.get(), 2, 1 << 16));
    o.read_chunk = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(chunk_param.get(), 4096, 1u << 30));
    o.rkey_cache = static_cast<std::uint32_t>(std::clamp<std::int64_t>(rkey_param.get(), 1, 1 << 16));
    o.send_timeout_ms = static_cast<std::uint32_t>(std::clamp<std::int64_t>(timeout_param.get(), 1, 1 << 30));
    const std::string& ev = everywhere_param.get();
    o.everywhere = ev == "on" || (ev == "auto" && !path_selected("shm"));
    return o;
}

std::vector<std::unique_ptr<Path>> make_ofi_paths(const rt::JobInfo& job)
{
    std::vector<std::unique_ptr<Path>> out;
    const OfiOptions opt = ofi_options_from_params();
    if (!opt.everywhere && job.num_nodes <= 1) {
        return out; // one host: shm and self do it all
    }
    if (static_cast<std::uint64_t>(job.size) > kMaxRanks) {
        ULMPI_WARN("ofi: %d ranks are more than its fragment header names (%u); the ofi path is "
                   "skipped", job.size, kMaxRanks);
        return out;
    }
    ProviderWish wish;
    wish.provider = opt.provider;
    wish.iface = opt.iface;
    wish.rma = opt.rma;
    wish.one_host = job.num_nodes <= 1;
    std::string why;
    fi_info* info = choose_provider(wish, why);
    if (info == nullptr) {
        ULMPI_WARN("ofi: no usable provider (%s); the ofi path is skipped", why.c_str());
        return out;
    }
    const std::string what = describe_info(info);
    std::unique_ptr<OfiPath> p = OfiPath::create(job, info, opt, why);
    if (p == nullptr) {
        ULMPI_WARN("ofi: %s does not open (%s); the ofi path is skipped", what.c_str(), why.c_str());
        return out;
    }
    out.push_back(std::move(p));
    return out;
}

} // namespace ulmpi::path::ofi
