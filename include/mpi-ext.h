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
 *
 * Intra-parallelization (Ropars, Lefray, Kim and Schiper, IPDPS 2015): under
 * mpirun --replicas R the replicas of a rank share the tasks of a section
 * instead of each running all of them. MPIX_Intra_Section_begin/end,
 * MPIX_Intra_Task_register(v), MPIX_Intra_Task_launch(v), and the paper's
 * names Intra_Section_begin, ... as macros. See docs/intra_parallelization.md.
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

/* ---- Intra-parallelization (docs/intra_parallelization.md) -------------
 *
 *   MPIX_Intra_Section_begin();
 *   int id = MPIX_Intra_Task_register(fn, MPIX_INTRA_IN, MPI_DOUBLE, n,
 *                                     MPIX_INTRA_OUT, MPI_DOUBLE, 1,
 *                                     MPIX_INTRA_END);
 *   for (t = 0; t < ntasks; ++t)
 *       MPIX_Intra_Task_launch(id, &x[t * n], &partial[t]);
 *   MPIX_Intra_Section_end();   (every replica now holds every partial[t])
 *
 * A task function receives the launch pointers in parameter order and the
 * count of each parameter. Launching records the task; the tasks run in
 * MPIX_Intra_Section_end, split over the replicas of the rank (the first
 * n/R to replica 0, ...), each written (out, inout) parameter sent to the
 * other replicas as soon as its task finished. The pointers and the memory
 * they reach must stay valid and untouched until MPIX_Intra_Section_end
 * returns. Inside a section: no MPI communication, and tasks depend on each
 * other at most by reading the same data. Without replication every task
 * runs locally. A replica that dies inside a section: the survivors run its
 * tasks whose update they lack, inout parameters restored from a copy
 * taken before any update came (memory untouched since launch: the values
 * at launch).
 *
 * Errors go through MPI_COMM_WORLD's error handler (MPI_ERR_ARG for bad
 * arguments, MPI_ERR_OTHER for a call out of place, e.g. a launch outside a
 * section); MPIX_Intra_Task_register then returns -1, the others the code. */
#define MPIX_INTRA_END 0   /* ends the parameter list of MPIX_Intra_Task_register */
#define MPIX_INTRA_IN 1    /* read by the task */
#define MPIX_INTRA_OUT 2   /* written by the task: sent to the other replicas */
#define MPIX_INTRA_INOUT 3 /* read and written: sent; kept for a re-run */
#define ULMPI_HAVE_INTRA 1

#ifdef __cplusplus
extern "C" {
#endif
/* args[i]: the i-th pointer given at launch; counts[i]: its count. */
typedef void MPIX_Intra_task_fn(void *args[], const int counts[]);

/* Opens a section (sections do not nest). */
ULMPI_EXT_API int MPIX_Intra_Section_begin(void);
ULMPI_EXT_API int PMPIX_Intra_Section_begin(void);
/* Runs the section's tasks; returns when every replica of the rank holds
 * every task's written parameters. Closes the section; its task types end
 * with it. */
ULMPI_EXT_API int MPIX_Intra_Section_end(void);
ULMPI_EXT_API int PMPIX_Intra_Section_end(void);
/* Registers a task type of the open section: fn, then for each parameter
 * (int tag, MPI_Datatype type, int count) with tag MPIX_INTRA_IN, _OUT or
 * _INOUT, and MPIX_INTRA_END after the last (at most 255 parameters).
 * Returns the type's id (0, 1, ... in each section), or -1 on error. */
ULMPI_EXT_API int MPIX_Intra_Task_register(MPIX_Intra_task_fn *fn, ...);
ULMPI_EXT_API int PMPIX_Intra_Task_register(MPIX_Intra_task_fn *fn, ...);
/* The same without varargs: nargs parameters in three arrays; *id set on
 * success. */
ULMPI_EXT_API int MPIX_Intra_Task_registerv(MPIX_Intra_task_fn *fn, int nargs, const int tags[],
                                            const MPI_Datatype types[], const int counts[],
                                            int *id);
ULMPI_EXT_API int PMPIX_Intra_Task_registerv(MPIX_Intra_task_fn *fn, int nargs, const int tags[],
                                             const MPI_Datatype types[], const int counts[],
                                             int *id);
/* Launches a task of type id: one pointer per registered parameter, in
 * order (at most 65,536 tasks per section). */
ULMPI_EXT_API int MPIX_Intra_Task_launch(int id, ...);
ULMPI_EXT_API int PMPIX_Intra_Task_launch(int id, ...);
/* The same without varargs: nargs (= the type's) pointers; counts, when not
 * NULL, replaces the registered counts for this task. */
ULMPI_EXT_API int MPIX_Intra_Task_launchv(int id, int nargs, void *const ptrs[],
                                          const int counts[]);
ULMPI_EXT_API int PMPIX_Intra_Task_launchv(int id, int nargs, void *const ptrs[],
                                           const int counts[]);
#ifdef __cplusplus
}
#endif

/* The paper's names (define ULMPI_NO_INTRA_NAMES to leave them out). */
#ifndef ULMPI_NO_INTRA_NAMES
#define Intra_Section_begin MPIX_Intra_Section_begin
#define Intra_Section_end MPIX_Intra_Section_end
#define Intra_Task_register MPIX_Intra_Task_register
#define Intra_Task_launch MPIX_Intra_Task_launch
#define INTRA_IN MPIX_INTRA_IN
#define INTRA_OUT MPIX_INTRA_OUT
#define INTRA_INOUT MPIX_INTRA_INOUT
#define INTRA_END MPIX_INTRA_END
#endif

#endif /* ULMPI_MPI_EXT_H_INCLUDED */
