// The common blocks behind mpif.h's and the mpi module's sentinels
// (MPI_BOTTOM, MPI_IN_PLACE, ...; fortran.h). They are exported: a program
// that names one has a common block of the same name, and the dynamic
// linker makes the program's and libmpi's one object (a copy relocation),
// so the addresses the bindings compare with are the program's.
#include "mpi/fortran/fortran.h"

#pragma GCC visibility push(default)
extern "C" {
MPI_Fint mpi_fortran_bottom_ = 0;
MPI_Fint mpi_fortran_in_place_ = 0;
MPI_Fint mpi_fortran_status_ignore_[MPI_F_STATUS_SIZE] = {};
MPI_Fint mpi_fortran_statuses_ignore_[MPI_F_STATUS_SIZE] = {};
MPI_Fint mpi_fortran_errcodes_ignore_[1] = {};
MPI_Fint mpi_fortran_unweighted_[1] = {};
MPI_Fint mpi_fortran_weights_empty_[1] = {};
alignas(16) char mpi_fortran_argv_null_[1] = {' '}; // gfortran aligns common blocks so
alignas(16) char mpi_fortran_argvs_null_[1] = {' '};
}
#pragma GCC visibility pop
