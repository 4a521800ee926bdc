#include "paths/ofi/ofi_fabric.h"

#include <rdma/fi_errno.h>

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>

namespace ulmpi::path::ofi {
namespace {

bool has_word(const char* list, const char* word)
{
    // "tcp;ofi_rxm" has the words tcp and ofi_rxm.
    const std::size_t n = std::strlen(word);
    for (const char* p = list; p != nullptr && *p != '\0';) {
        const char* end = std::strchr(p, ';');
        const std::size_t len = end != nullptr ? static_cast<std::size_t>(end - p) : std::strlen(p);
        if (len == n && std::strncmp(p, word, n) == 0) {
            return true;
        }
        p = end != nullptr ? end + 1 : nullptr;
    }
    return false;
}

bool is_loopback(const fi_info* i)
{
    const char* dom = i->domain_attr != nullptr ? i->domain_attr->name : nullptr;
    return dom != nullptr && std::strcmp(dom, "lo") == 0;
}

bool is_shm(const fi_info* i) { return has_word(i->fabric_attr->prov_name, "shm"); }

fi_info* query(const ProviderWish& wish, std::uint64_t caps, std::string& why)
{
    fi_info* hints = lib::dupinfo(nullptr);
    if (hints == nullptr) {
        why = "fi_allocinfo failed";
        return nullptr;
    }
    hints->caps = FI_MSG | caps;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->mr_mode = kMrModes;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (!wish.provider.empty()) {
        hints->fabric_attr->prov_name = strdup(wish.provider.c_str());
    }
    fi_info* list = nullptr;
    const int rc = lib::getinfo(FI_VERSION(1, 9), nullptr, nullptr, 0, hints, &list);
    // Ours (strdup): freed here, so that fi_freeinfo frees nothing it did
    // not allocate (it leaked: LeakSanitizer, ofi_path_test).
    std::free(hints->fabric_attr->prov_name);
    hints->fabric_attr->prov_name = nullptr;
    lib::freeinfo(hints);
    if (rc != 0) {
        why = std::string("fi_getinfo: ") + lib::strerror(-rc);
        return nullptr;
    }
    return list;
}

// The first acceptable entry of `list`, or nullptr.
const fi_info* pick(const fi_info* list, const ProviderWish& wish, std::string& why)
{
    const fi_info* fallback = nullptr;
    int seen = 0;
    for (const fi_info* i = list; i != nullptr; i = i->next) {
        const char* prov = i->fabric_attr->prov_name;
        if (prov == nullptr || has_word(prov, "ofi_mrail")) {
            continue;
        }
        if (i->addr_format == FI_SOCKADDR_IN6) {
            continue;
        }
        ++seen;
        if (!wish.iface.empty()) {
            if (i->domain_attr->name != nullptr && wish.iface == i->domain_attr->name) {
                return i;
            }
            continue;
        }
        if (wish.one_host) {
            if (is_loopback(i) || is_shm(i)) {
                return i;
            }
            if (fallback == nullptr) {
                fallback = i; // no loopback offered: the first other one
            }
        } else if (!is_loopback(i) && (!is_shm(i) || !wish.provider.empty())) {
            return i; // shm over several hosts only when named (it reaches this host's ranks)
        }
    }
    if (fallback != nullptr) {
        return fallback;
    }
    why = seen == 0 ? "fi_getinfo offers no FI_EP_RDM endpoint with FI_MSG and FI_ORDER_SAS"
                    : !wish.iface.empty() ? "no provider on interface " + wish.iface
                                          : "no provider reaches other hosts (only loopback or shm)";
    return nullptr;
}

} // namespace

fi_info* choose_provider(const ProviderWish& wish, std::string& why)
{
    if (!lib::load(why)) {
        return nullptr;
    }
    std::string w;
    for (std::uint64_t caps : {kRmaCaps, std::uint64_t{0}}) {
        if ((caps != 0 && wish.rma == RmaWish::off) || (caps == 0 && wish.rma == RmaWish::on)) {
            continue;
        }
        fi_info* list = query(wish, caps, w);
        if (list == nullptr) {
            continue;
        }
        const fi_info* chosen = pick(list, wish, w);
        fi_info* out = chosen != nullptr ? lib::dupinfo(chosen) : nullptr;
        lib::freeinfo(list);
        if (out != nullptr) {
            return out;
        }
    }
    why = (wish.provider.empty() ? std::string("any provider") : "provider '" + wish.provider + "'") +
          ": " + w;
    return nullptr;
}

std::string describe_info(const fi_info* info)
{
    std::string d = info->fabric_attr->prov_name;
    if (info->domain_attr->name != nullptr) {
        d += std::string(" on ") + info->domain_attr->name;
    }
    if (info->src_addr != nullptr && info->addr_format == FI_SOCKADDR_IN) {
        char ip[INET_ADDRSTRLEN] = "";
        const auto* sin = static_cast<const sockaddr_in*>(info->src_addr);
        if (inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof ip) != nullptr) {
            d += std::string(" (") + ip + ")";
        }
    }
    d += (info->caps & FI_READ) != 0 ? ", remote reads" : ", no remote reads (copy path)";
    return d;
}

} // namespace ulmpi::path::ofi
