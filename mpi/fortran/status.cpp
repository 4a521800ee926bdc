// MPI_Status_f2c / MPI_Status_c2f: a Fortran status (MPI_Fint[5]) and an
// MPI_Status have the same layout (fortran.h), so both copy the five words.
// MPI_STATUS_IGNORE and MPI_F_STATUS_IGNORE are not statuses: MPI_ERR_ARG.
#include "mpi/errors.h"
#include "mpi/fortran/fortran.h"

#include <cstring>

using ulmpi::mpi::raise;

namespace {

// MPI_SUCCESS when both are statuses, else the error of `fn`.
int check_statuses(const MPI_Fint* f_status, const MPI_Status* c_status, const char* fn)
{
    if (f_status == nullptr || f_status == MPI_F_STATUS_IGNORE ||
        f_status == mpi_fortran_status_ignore_) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the Fortran status is NULL or an IGNORE constant");
    }
    if (c_status == nullptr || c_status == MPI_STATUS_IGNORE) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the C status is NULL or MPI_STATUS_IGNORE");
    }
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Status_f2c(const MPI_Fint* f_status, MPI_Status* c_status) try {
    ulmpi::mpi::EntryGuard guard;
    if (int e = check_statuses(f_status, c_status, "MPI_Status_f2c")) {
        return e;
    }
    std::memcpy(c_status, f_status, sizeof(MPI_Status));
    return MPI_SUCCESS;
} catch (...) {
    return ulmpi::mpi::api_exception("MPI_Status_f2c");
}
ULMPI_ALIAS(MPI_Status_f2c)

int PMPI_Status_c2f(const MPI_Status* c_status, MPI_Fint* f_status) try {
    ulmpi::mpi::EntryGuard guard;
    if (int e = check_statuses(f_status, c_status, "MPI_Status_c2f")) {
        return e;
    }
    std::memcpy(f_status, c_status, sizeof(MPI_Status));
    return MPI_SUCCESS;
} catch (...) {
    return ulmpi::mpi::api_exception("MPI_Status_c2f");
}
ULMPI_ALIAS(MPI_Status_c2f)
