// Built instead of bootstrap_pmix.cpp when meson did not find libpmix: a
// program started by a PMIx launcher is told so instead of running as a
// singleton, and ulmpi_info says PMIx is missing.
#include "runtime/bootstrap.h"

namespace ulmpi::rt {

bool pmix_built() { return false; }

std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::string& why)
{
    why = "this ulmpi was built without PMIx (libpmix-dev was not found when it was configured); "
          "rebuild with libpmix-dev installed, or start the program with srun --mpi=pmi2";
    return nullptr;
}

} // namespace ulmpi::rt
