#include "paths/ofi/ofi_tx_credits.h"

#include "paths/ofi/ofi_lib.h"

#include <rdma/fi_endpoint.h>

#include <cstring>

namespace ulmpi::path::ofi {

bool TxCredits::needed(const fi_info* info)
{
    return std::strstr(info->fabric_attr->prov_name, "ofi_rxd") != nullptr;
}

bool TxCredits::open(fid_domain* domain, fid_ep* ep, std::size_t entries, std::string& why)
{
    fi_cntr_attr attr{};
    attr.events = FI_CNTR_EVENTS_COMP;
    attr.wait_obj = FI_WAIT_NONE;
    if (int rc = fi_cntr_open(domain, &attr, &cntr_, nullptr); rc != 0) {
        why = std::string("fi_cntr_open: ") + lib::strerror(-rc);
        cntr_ = nullptr;
        return false;
    }
    if (int rc = fi_ep_bind(ep, &cntr_->fid, FI_SEND); rc != 0) {
        why = std::string("fi_ep_bind (send counter): ") + lib::strerror(-rc);
        close();
        return false;
    }
    // One entry spare: the provider's own count and ours need not agree on
    // an entry taken by something we do not see.
    limit_ = entries > 1 ? entries - 1 : 1;
    return true;
}

void TxCredits::close()
{
    if (cntr_ != nullptr) {
        (void)fi_close(&cntr_->fid);
        cntr_ = nullptr;
    }
}

bool TxCredits::take()
{
    if (cntr_ == nullptr) {
        return true;
    }
    if (posted_ - completed_ >= limit_) {
        // Reading the counter drives the provider's progress: only when
        // the entries we know of are all taken.
        completed_ = fi_cntr_read(cntr_) + fi_cntr_readerr(cntr_);
        if (posted_ - completed_ >= limit_) {
            return false;
        }
    }
    ++posted_;
    return true;
}

} // namespace ulmpi::path::ofi
