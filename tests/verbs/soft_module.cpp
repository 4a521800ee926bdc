// The software verbs device as a shared object that libmpi loads when
// ULMPI_VERBS_DEVICE=soft:<this library>[,args] (tests only): MPI programs
// then run over the verbs path on a machine without an RDMA device.
#include "tests/verbs/soft_device.h"

#include <cstdio>

extern "C" __attribute__((visibility("default"))) ulmpi::path::verbs::Provider*
ulmpi_verbs_soft_provider(const char* args, const char* jobid, char* why, std::size_t why_len)
{
    ulmpi::soft::FabricOptions opt;
    std::string reason;
    if (!ulmpi::soft::parse_options(args != nullptr ? args : "", jobid != nullptr ? jobid : "", opt, reason)) {
        std::snprintf(why, why_len, "%s", reason.c_str());
        return nullptr;
    }
    return ulmpi::soft::make_soft_provider(opt).release();
}
