#include "paths/verbs/verbs_device.h"

#include <dlfcn.h>

namespace ulmpi::path::verbs {

const char* wc_status_name(WcStatus s) noexcept
{
    switch (s) {
    case WcStatus::success: return "success";
    case WcStatus::loc_len_err: return "local length error";
    case WcStatus::loc_qp_op_err: return "local QP operation error";
    case WcStatus::loc_prot_err: return "local protection error";
    case WcStatus::wr_flush_err: return "flushed";
    case WcStatus::bad_resp_err: return "bad response";
    case WcStatus::loc_access_err: return "local access error";
    case WcStatus::rem_inv_req_err: return "remote invalid request";
    case WcStatus::rem_access_err: return "remote access error";
    case WcStatus::rem_op_err: return "remote operation error";
    case WcStatus::retry_exc_err: return "transport retry counter exceeded";
    case WcStatus::rnr_retry_exc_err: return "RNR retry counter exceeded";
    case WcStatus::fatal_err: return "fatal error";
    case WcStatus::general_err: return "general error";
    }
    return "unknown";
}

const char* async_kind_name(AsyncEvent::Kind k) noexcept
{
    switch (k) {
    case AsyncEvent::Kind::port_active: return "port active";
    case AsyncEvent::Kind::port_error: return "port error";
    case AsyncEvent::Kind::qp_fatal: return "queue pair fatal";
    case AsyncEvent::Kind::qp_access_error: return "queue pair access error";
    case AsyncEvent::Kind::qp_last_wqe: return "last WQE reached";
    case AsyncEvent::Kind::srq_limit: return "SRQ limit";
    case AsyncEvent::Kind::cq_error: return "completion queue error";
    case AsyncEvent::Kind::device_fatal: return "device fatal";
    case AsyncEvent::Kind::other: return "other";
    }
    return "unknown";
}

std::unique_ptr<Provider> make_provider(const std::string& spec, const rt::JobInfo& job, std::string& why)
{
    if (spec.empty() || spec == "ibv") {
        return make_ibv_provider(why);
    }
    if (spec.rfind("soft:", 0) != 0) {
        why = "ULMPI_VERBS_DEVICE='" + spec + "' is neither ibv nor soft:<library>";
        return nullptr;
    }
    std::string rest = spec.substr(5);
    std::size_t comma = rest.find(',');
    std::string lib = rest.substr(0, comma);
    std::string args = comma == std::string::npos ? "" : rest.substr(comma + 1);
    // Kept loaded for the life of the process: devices run its code.
    void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char* e = ::dlerror();
        why = "cannot load the software device " + lib + ": " + (e != nullptr ? e : "?");
        return nullptr;
    }
    auto fn = reinterpret_cast<SoftProviderFn>(::dlsym(h, kSoftProviderSymbol));
    if (fn == nullptr) {
        why = lib + " is not a software verbs device (no " + kSoftProviderSymbol + ")";
        return nullptr;
    }
    char buf[256] = {};
    Provider* p = fn(args.c_str(), job.jobid.c_str(), buf, sizeof buf);
    if (p == nullptr) {
        why = buf;
        return nullptr;
    }
    return std::unique_ptr<Provider>(p);
}

} // namespace ulmpi::path::verbs
