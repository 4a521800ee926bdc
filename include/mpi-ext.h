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
 *
 * FT-MPI's modes (the FT-MPI specification; docs/ftmpi.md has the table):
 * the attributes FTMPI_* on MPI_COMM_WORLD (and every communicator) and
 * their values, and MPIX_Ftmpi_recover for manual recovery.
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

/* FT-MPI: predefined attribute keys (MPI_Comm_get_attr returns a pointer
 * to an int; the four modes can be set on MPI_COMM_WORLD with a pointer to
 * an int). */
#define FTMPI_RECOVERY_MODE 0x6440000e
#define FTMPI_COMM_MODE 0x6440000f
#define FTMPI_MSG_MODE 0x64400010
#define FTMPI_COLL_MODE 0x64400011
#define FTMPI_NUM_FAILED_PROCS 0x64400012
#define FTMPI_ERROR_FAILURE 0x64400013

/* Their values. */
#define FTMPI_COMM_MODE_ABORT 0
#define FTMPI_COMM_MODE_REBUILD 1
#define FTMPI_COMM_MODE_BLANK 2
#define FTMPI_COMM_MODE_SHRINK 3
#define FTMPI_MSG_MODE_RESET 10
#define FTMPI_MSG_MODE_CONT 11
#define FTMPI_COLL_MODE_ATOMIC 20
#define FTMPI_COLL_MODE_NONATOMIC 21
#define FTMPI_RECOVERY_MODE_AUTO 30
#define FTMPI_RECOVERY_MODE_MANUAL 31

/* MPI_Init / MPI_Init_thread return it, instead of MPI_SUCCESS, in a
 * process started to replace a failed one (FTMPI_COMM_MODE_REBUILD). Not an
 * error class nor an error code: MPI_Error_class and MPI_Error_string
 * refuse it like any unknown value. */
#define MPI_INIT_RESTARTED_NODE 0x64400100

#define ULMPI_HAVE_FTMPI 1

#ifdef __cplusplus
extern "C" {
#endif
/* Manual recovery (collective over the survivors of MPI_COMM_WORLD):
 * recovers MPI_COMM_WORLD now. MPI_Comm_dup(MPI_COMM_WORLD, ...) in the
 * "failure recognized" state recovers too, then duplicates. */
#if defined(__GNUC__)
#define ULMPI_EXT_API __attribute__((visibility("default")))
#else
#define ULMPI_EXT_API
#endif
ULMPI_EXT_API int MPIX_Ftmpi_recover(void);
ULMPI_EXT_API int PMPIX_Ftmpi_recover(void);
#ifdef __cplusplus
}
#endif

#endif /* ULMPI_MPI_EXT_H_INCLUDED */
