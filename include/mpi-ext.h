/*
 * mpi-ext.h -- ulmpi's extensions to MPI (what Open MPI programs include for
 * them). The declarations live in mpi.h, where MPICH programs look for the
 * MPIX_ names; this header adds the feature macros programs test.
 *
 * Fault tolerance, User-Level Failure Mitigation (ULFM): MPIX_Comm_revoke,
 * MPIX_Comm_is_revoked, MPIX_Comm_shrink, MPIX_Comm_ishrink, MPIX_Comm_agree,
 * MPIX_Comm_iagree, MPIX_Comm_get_failed, MPIX_Comm_ack_failed,
 * MPIX_Comm_failure_ack, MPIX_Comm_failure_get_acked (and their PMPIX_
 * names), the error classes MPIX_ERR_PROC_FAILED (75),
 * MPIX_ERR_PROC_FAILED_PENDING (76), MPIX_ERR_REVOKED (77) and the attribute
 * MPIX_FT. See docs/fault_tolerance.md.
 */
#ifndef ULMPI_MPI_EXT_H_INCLUDED
#define ULMPI_MPI_EXT_H_INCLUDED

#include <mpi.h>

/* The feature macros Open MPI's mpi-ext.h defines for ULFM. */
#define OMPI_HAVE_MPI_EXT_FTMPI 1
#define OMPI_HAVE_MPIX_COMM_GET_FAILED 1
#define OMPI_HAVE_MPIX_COMM_ACK_FAILED 1
#define OMPI_HAVE_MPIX_COMM_ISHRINK 1
#define ULMPI_HAVE_ULFM 1

#endif /* ULMPI_MPI_EXT_H_INCLUDED */
