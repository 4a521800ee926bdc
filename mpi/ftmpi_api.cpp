// MPIX_Ftmpi_recover: FT-MPI's manual recovery as an explicit call (the
// specification leaves its name open; MPI_Comm_dup(MPI_COMM_WORLD, ...)
// in the "failure recognized" state does the same, mpi/ftmpi.h).
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/ftmpi.h"

#include <mpi-ext.h>

using namespace ulmpi::mpi;

int PMPIX_Ftmpi_recover(void) try {
    constexpr const char* fn = "MPIX_Ftmpi_recover";
    require_init(fn);
    if (!ftmpi_on()) {
        return raise(nullptr, MPI_ERR_OTHER, fn,
                     "FT-MPI is off in this job (start it with --ft-mode blank or shrink)");
    }
    if (int e = ftmpi_recover(fn)) {
        return raise(nullptr, e, fn, "the recovery failed");
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Ftmpi_recover");
}
ULMPI_ALIAS(MPIX_Ftmpi_recover)
