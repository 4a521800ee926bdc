// The job's name service (MPI_Publish_name, MPI_Lookup_name,
// MPI_Unpublish_name) through PMIx: PMIx_Publish, PMIx_Lookup and
// PMIx_Unpublish, kept by the PMIx server (Open MPI's mpirun keeps them in
// its data server; Slurm's PMIx plugin does not keep names and refuses).
// The status codes are those of rt::Bootstrap's publish_name, lookup_name
// and unpublish_name; only after pmix_lib::load() succeeded.
#pragma once

#include "runtime/status.h"

#include <string>
#include <string_view>

namespace ulmpi::rt::pmix_names {

Status publish(std::string_view service, std::string_view port);
Status unpublish(std::string_view service);
Status lookup(std::string_view service, std::string& port);

} // namespace ulmpi::rt::pmix_names
