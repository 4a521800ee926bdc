#include "runtime/pmix_names.h"

#include "runtime/log.h"
#include "runtime/pmix_lib.h"

#include <cstring>

namespace ulmpi::rt::pmix_names {
namespace {

// A PMIx key holds at most PMIX_MAX_KEYLEN characters.
bool key_fits(std::string_view service)
{
    return !service.empty() && service.size() <= PMIX_MAX_KEYLEN;
}

// What the server's answer means to the caller: a name published twice is
// `again`, one that is not there `invalid_arg`, a server that keeps no names
// not_supported, anything else a refusal (logged with PMIx's words).
Status status_of(pmix_status_t rc, const char* call)
{
    switch (rc) {
    case PMIX_SUCCESS:
        return Errc::ok;
    case PMIX_ERR_DUPLICATE_KEY:
        return Errc::again;
    case PMIX_ERR_NOT_FOUND:
        return Errc::invalid_arg;
    case PMIX_ERR_NOT_SUPPORTED:
        return Errc::not_supported;
    default:
        ULMPI_INFO("bootstrap: %s refused by the PMIx server: %s", call,
                   pmix_lib::api().error_string(rc));
        return Errc::protocol;
    }
}

} // namespace

Status lookup(std::string_view service, std::string& port)
{
    if (!key_fits(service)) {
        return Errc::invalid_arg;
    }
    pmix_pdata_t d;
    std::memset(&d, 0, sizeof d);
    d.value.type = PMIX_UNDEF;
    std::memcpy(d.key, service.data(), service.size());
    const pmix_status_t rc = pmix_lib::api().lookup(&d, 1, nullptr, 0);
    Status st = status_of(rc, "PMIx_Lookup");
    if (st.ok()) {
        if (d.value.type == PMIX_STRING && d.value.data.string != nullptr) {
            port = d.value.data.string;
        } else {
            st = Errc::protocol; // published by someone else, not as a port name
        }
    }
    pmix_lib::api().value_destruct(&d.value);
    return st;
}

Status publish(std::string_view service, std::string_view port)
{
    if (!key_fits(service)) {
        return Errc::invalid_arg;
    }
    const std::string key(service);
    const std::string value(port);
    pmix_info_t info;
    PMIX_INFO_CONSTRUCT(&info);
    pmix_lib::api().info_load(&info, key.c_str(), value.c_str(), PMIX_STRING);
    const pmix_status_t rc = pmix_lib::api().publish(&info, 1);
    pmix_lib::info_destruct(&info);
    return status_of(rc, "PMIx_Publish");
}

Status unpublish(std::string_view service)
{
    if (!key_fits(service)) {
        return Errc::invalid_arg;
    }
    std::string key(service);
    char* keys[2] = {key.data(), nullptr};
    return status_of(pmix_lib::api().unpublish(keys, nullptr, 0), "PMIx_Unpublish");
}

} // namespace ulmpi::rt::pmix_names
