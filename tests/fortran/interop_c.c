/* interop_c.c -- the C half of interop_f90.f90: called from Fortran with
 * Fortran handles and a Fortran status, it converts them (MPI_*_f2c,
 * MPI_Status_f2c / c2f) and uses a datatype the Fortran side built from
 * MPI_GET_ADDRESS addresses from C's MPI_BOTTOM. Returns its failures. */
#include <mpi.h>

#include <stdio.h>

/* gfortran's name for `call interop_c(...)`. */
void interop_c_(const MPI_Fint *ftype, const MPI_Fint *fcomm, MPI_Fint *fstatus, MPI_Fint *errs);

void interop_c_(const MPI_Fint *ftype, const MPI_Fint *fcomm, MPI_Fint *fstatus, MPI_Fint *errs)
{
    MPI_Datatype type = MPI_Type_f2c(*ftype);
    MPI_Comm comm = MPI_Comm_f2c(*fcomm);
    MPI_Status st;
    int rank, size, count = -1, n = 0;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* The Fortran status came from a receive of 3 INTEGERs from rank 0 with tag 9. */
    if (MPI_Status_f2c(fstatus, &st) != MPI_SUCCESS || st.MPI_SOURCE != 0 || st.MPI_TAG != 9) {
        printf("MPI_Status_f2c: source %d tag %d\n", st.MPI_SOURCE, st.MPI_TAG);
        ++n;
    }
    MPI_Get_count(&st, MPI_INTEGER, &count);
    if (count != 3) {
        printf("count of the converted status: %d\n", count);
        ++n;
    }
    st.MPI_TAG = 42;
    if (MPI_Status_c2f(&st, fstatus) != MPI_SUCCESS || fstatus[MPI_F_TAG] != 42) {
        printf("MPI_Status_c2f\n");
        ++n;
    }
    /* The type holds absolute addresses of the Fortran side's data: rank 0
     * sends it from MPI_BOTTOM, the others receive into it. */
    if (size > 1) {
        if (rank == 0) {
            MPI_Send(MPI_BOTTOM, 1, type, 1, 10, comm);
        } else if (rank == 1) {
            MPI_Recv(MPI_BOTTOM, 1, type, 0, 10, comm, MPI_STATUS_IGNORE);
        }
    }
    *errs += n;
}
