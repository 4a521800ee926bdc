#include "paths/verbs/verbs_info.h"

#include "paths/verbs/verbs_device.h"
#include "runtime/config.h"

#include <cstdio>

namespace ulmpi::path::verbs {

std::string describe_devices()
{
    rt::ParamBase* p = rt::find_param("verbs_device");
    const std::string spec = p != nullptr ? p->value_text() : "";
    rt::JobInfo job;
    job.jobid = "ulmpi-info";
    std::string why;
    std::unique_ptr<Provider> prov = make_provider(spec, job, why);
    if (prov == nullptr) {
        return "  " + why + "\n";
    }
    std::vector<std::string> names = prov->devices(why);
    std::string out = std::string("  provider: ") + prov->name() + "\n";
    if (names.empty()) {
        return out + "  " + why + "\n";
    }
    for (const std::string& n : names) {
        std::unique_ptr<Device> d = prov->open(n, why);
        if (d == nullptr) {
            out += "  " + n + ": cannot open: " + why + "\n";
            continue;
        }
        for (int port = 1; port <= d->attr().ports; ++port) {
            PortAttr pa;
            if (!d->query_port(port, -1, pa).ok()) {
                out += "  " + n + " port " + std::to_string(port) + ": cannot query\n";
                continue;
            }
            char line[256];
            const char* state = pa.state == PortState::active ? "active" : pa.state == PortState::down ? "down" : "not active";
            std::snprintf(line, sizeof line, "  %s port %d: %s, %s, %s %d, MTU %u, %.0f Gb/s\n", n.c_str(), port, state,
                          pa.link == LinkLayer::infiniband ? "InfiniBand" : "Ethernet (RoCE)",
                          pa.link == LinkLayer::infiniband ? "LID" : "GID index",
                          pa.link == LinkLayer::infiniband ? pa.lid : pa.gid_index, pa.active_mtu, pa.gbps);
            out += line;
        }
    }
    return out;
}

} // namespace ulmpi::path::verbs
