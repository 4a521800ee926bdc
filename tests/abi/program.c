/*
 * program.c -- an ordinary MPI program written against include/mpi.h: it
 * calls every function that mpi.h declares, in the way programs do, and
 * takes the address of every predefined callback. Written in the common
 * subset of C89 and C++ (program_cxx.cpp includes it).
 *
 * It is compiled, but not linked into the ABI tests: they do not link the
 * library, and the linker never pulls this object out of its archive, so its
 * references to MPI_* stay unresolved without harm. Once libmpi exists, the
 * same file can run under mpirun with abi_program_main() as main().
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

/* Casts are avoided in this file, so that the C++ build can use
 * -Wold-style-cast to check the casts that mpi.h's macros expand to. */
#define BSEND_BUFFER_SIZE (4 * 4 + MPI_BSEND_OVERHEAD)

#ifdef __cplusplus
extern "C" {
#endif
int abi_program_main(int argc, char **argv);
#ifdef __cplusplus
}
#endif

struct predefined_callbacks {
    MPI_Comm_copy_attr_function *comm_copy[2];
    MPI_Comm_delete_attr_function *comm_delete;
    MPI_Type_copy_attr_function *type_copy[2];
    MPI_Type_delete_attr_function *type_delete;
    MPI_Win_copy_attr_function *win_copy[2];
    MPI_Win_delete_attr_function *win_delete;
    MPI_Copy_function *copy[2];
    MPI_Delete_function *delete_fn;
    MPI_Datarep_conversion_function *conversion;
};

static struct predefined_callbacks get_predefined_callbacks(void)
{
    struct predefined_callbacks cb;
    cb.comm_copy[0] = MPI_COMM_NULL_COPY_FN;
    cb.comm_copy[1] = MPI_COMM_DUP_FN;
    cb.comm_delete = MPI_COMM_NULL_DELETE_FN;
    cb.type_copy[0] = MPI_TYPE_NULL_COPY_FN;
    cb.type_copy[1] = MPI_TYPE_DUP_FN;
    cb.type_delete = MPI_TYPE_NULL_DELETE_FN;
    cb.win_copy[0] = MPI_WIN_NULL_COPY_FN;
    cb.win_copy[1] = MPI_WIN_DUP_FN;
    cb.win_delete = MPI_WIN_NULL_DELETE_FN;
    cb.copy[0] = MPI_NULL_COPY_FN;
    cb.copy[1] = MPI_DUP_FN;
    cb.delete_fn = MPI_NULL_DELETE_FN;
    cb.conversion = MPI_CONVERSION_FN_NULL;
    return cb;
}

static int check(int rc, const char *what)
{
    char message[MPI_MAX_ERROR_STRING];
    int length = 0;
    int error_class = MPI_SUCCESS;
    if (rc == MPI_SUCCESS) {
        return 0;
    }
    MPI_Error_class(rc, &error_class);
    MPI_Error_string(rc, message, &length);
    fprintf(stderr, "%s: class %d: %s\n", what, error_class, message);
    return 1;
}

/* Ring exchange with every send mode, blocking and not. */
static int ring(MPI_Comm comm, int rank, int size)
{
    int next = (rank + 1) % size;
    int prev = (rank + size - 1) % size;
    int out[4];
    int in[4];
    int errs = 0;
    int count = 0;
    int flag = 0;
    int index = MPI_UNDEFINED;
    int outcount = 0;
    int indices[4];
    MPI_Count elements = 0;
    MPI_Request requests[4];
    MPI_Status statuses[4];
    MPI_Status status;
    static char bsend_buffer[BSEND_BUFFER_SIZE];
    void *detached = MPI_BOTTOM;
    int detached_size = 0;

    out[0] = rank;
    out[1] = rank + 1;
    out[2] = rank + 2;
    out[3] = rank + 3;

    errs += check(MPI_Sendrecv(out, 4, MPI_INT, next, 1, in, 4, MPI_INT, prev, 1, comm, &status),
                  "MPI_Sendrecv");
    errs += check(MPI_Get_count(&status, MPI_INT, &count), "MPI_Get_count");
    errs += check(MPI_Get_elements(&status, MPI_INT, &count), "MPI_Get_elements");
    errs += check(MPI_Get_elements_x(&status, MPI_INT, &elements), "MPI_Get_elements_x");
    errs += (status.MPI_SOURCE != prev || status.MPI_TAG != 1 || count != 4 || elements != 4);

    errs += check(MPI_Sendrecv_replace(out, 4, MPI_INT, next, 2, prev, 2, comm,
                                       MPI_STATUS_IGNORE),
                  "MPI_Sendrecv_replace");

    errs += check(MPI_Irecv(in, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &requests[0]),
                  "MPI_Irecv");
    if (rank % 2 == 0) {
        errs += check(MPI_Ssend(out, 4, MPI_INT, next, 3, comm), "MPI_Ssend");
    } else {
        errs += check(MPI_Send(out, 4, MPI_INT, next, 3, comm), "MPI_Send");
    }
    errs += check(MPI_Wait(&requests[0], &status), "MPI_Wait");

    errs += check(MPI_Buffer_attach(bsend_buffer, BSEND_BUFFER_SIZE), "MPI_Buffer_attach");
    errs += check(MPI_Bsend(out, 4, MPI_INT, next, 4, comm), "MPI_Bsend");
    errs += check(MPI_Probe(prev, 4, comm, &status), "MPI_Probe");
    errs += check(MPI_Recv(in, 4, MPI_INT, status.MPI_SOURCE, status.MPI_TAG, comm,
                           MPI_STATUS_IGNORE),
                  "MPI_Recv");
    errs += check(MPI_Buffer_detach(&detached, &detached_size), "MPI_Buffer_detach");

    errs += check(MPI_Irecv(in, 1, MPI_INT, prev, 5, comm, &requests[0]), "MPI_Irecv");
    errs += check(MPI_Irecv(in + 1, 1, MPI_INT, prev, 6, comm, &requests[1]), "MPI_Irecv");
    errs += check(MPI_Isend(out, 1, MPI_INT, next, 5, comm, &requests[2]), "MPI_Isend");
    errs += check(MPI_Issend(out + 1, 1, MPI_INT, next, 6, comm, &requests[3]), "MPI_Issend");
    errs += check(MPI_Waitall(4, requests, statuses), "MPI_Waitall");

    errs += check(MPI_Irecv(in, 1, MPI_INT, prev, 7, comm, &requests[0]), "MPI_Irecv");
    errs += check(MPI_Ibsend(out, 0, MPI_INT, next, 8, comm, &requests[1]), "MPI_Ibsend");
    errs += check(MPI_Irecv(in + 1, 0, MPI_INT, prev, 8, comm, &requests[2]), "MPI_Irecv");
    errs += check(MPI_Isend(out, 1, MPI_INT, next, 7, comm, &requests[3]), "MPI_Isend");
    errs += check(MPI_Waitany(4, requests, &index, &status), "MPI_Waitany");
    errs += check(MPI_Waitsome(4, requests, &outcount, indices, statuses), "MPI_Waitsome");
    do {
        errs += check(MPI_Testall(4, requests, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    } while (!flag);
    errs += check(MPI_Testany(4, requests, &index, &flag, &status), "MPI_Testany");
    errs += check(MPI_Testsome(4, requests, &outcount, indices, statuses), "MPI_Testsome");
    errs += (outcount != MPI_UNDEFINED);

    /* Ready send: the receive is posted before the barrier-like exchange. */
    errs += check(MPI_Irecv(in, 1, MPI_INT, prev, 9, comm, &requests[0]), "MPI_Irecv");
    errs += check(MPI_Sendrecv(MPI_BOTTOM, 0, MPI_BYTE, next, 10, MPI_BOTTOM, 0, MPI_BYTE, prev,
                               10, comm, MPI_STATUS_IGNORE),
                  "MPI_Sendrecv");
    errs += check(MPI_Rsend(out, 1, MPI_INT, next, 9, comm), "MPI_Rsend");
    errs += check(MPI_Irsend(out, 0, MPI_INT, MPI_PROC_NULL, 9, comm, &requests[1]), "MPI_Irsend");
    do {
        errs += check(MPI_Test(&requests[0], &flag, &status), "MPI_Test");
    } while (!flag);
    errs += check(MPI_Wait(&requests[1], MPI_STATUS_IGNORE), "MPI_Wait");

    /* Nothing is pending: Iprobe answers no, a cancelled receive is cancelled. */
    errs += check(MPI_Iprobe(MPI_ANY_SOURCE, 11, comm, &flag, &status), "MPI_Iprobe");
    errs += (flag != 0);
    errs += check(MPI_Irecv(in, 1, MPI_INT, MPI_ANY_SOURCE, 11, comm, &requests[0]), "MPI_Irecv");
    errs += check(MPI_Cancel(&requests[0]), "MPI_Cancel");
    errs += check(MPI_Wait(&requests[0], &status), "MPI_Wait");
    errs += check(MPI_Test_cancelled(&status, &flag), "MPI_Test_cancelled");
    errs += (flag == 0);
    return errs;
}

/* Persistent requests, started twice. */
static int persistent(MPI_Comm comm, int rank, int size)
{
    int next = (rank + 1) % size;
    int prev = (rank + size - 1) % size;
    double out = rank;
    double in[4];
    MPI_Request requests[5];
    int errs = 0;
    int round;
    int i;

    errs += check(MPI_Recv_init(in, 1, MPI_DOUBLE, prev, 20, comm, &requests[0]), "MPI_Recv_init");
    errs += check(MPI_Recv_init(in + 1, 1, MPI_DOUBLE, prev, 21, comm, &requests[1]),
                  "MPI_Recv_init");
    errs += check(MPI_Send_init(&out, 1, MPI_DOUBLE, next, 20, comm, &requests[2]),
                  "MPI_Send_init");
    errs += check(MPI_Ssend_init(&out, 1, MPI_DOUBLE, next, 21, comm, &requests[3]),
                  "MPI_Ssend_init");
    errs += check(MPI_Bsend_init(&out, 0, MPI_DOUBLE, MPI_PROC_NULL, 22, comm, &requests[4]),
                  "MPI_Bsend_init");
    for (round = 0; round < 2; ++round) {
        errs += check(MPI_Start(&requests[0]), "MPI_Start");
        errs += check(MPI_Startall(4, requests + 1), "MPI_Startall");
        errs += check(MPI_Waitall(5, requests, MPI_STATUSES_IGNORE), "MPI_Waitall");
    }
    for (i = 0; i < 5; ++i) {
        errs += check(MPI_Request_free(&requests[i]), "MPI_Request_free");
        errs += (requests[i] != MPI_REQUEST_NULL);
    }
    errs += check(MPI_Rsend_init(&out, 0, MPI_DOUBLE, MPI_PROC_NULL, 23, comm, &requests[0]),
                  "MPI_Rsend_init");
    errs += check(MPI_Request_free(&requests[0]), "MPI_Request_free");
    return errs;
}

/* Sizes, error handlers, Fortran handles. */
static int objects(MPI_Comm comm)
{
    int errs = 0;
    int size = 0;
    int double_int_size = sizeof(double) + sizeof(int);
    MPI_Count size_x = 0;
    MPI_Count long_double_size = sizeof(long double);
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Fint f;

    errs += check(MPI_Type_size(MPI_DOUBLE_INT, &size), "MPI_Type_size");
    errs += (size != double_int_size);
    errs += check(MPI_Type_size_x(MPI_LONG_DOUBLE, &size_x), "MPI_Type_size_x");
    errs += (size_x != long_double_size);

    errs += check(MPI_Comm_get_errhandler(comm, &handler), "MPI_Comm_get_errhandler");
    errs += check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    errs += check(MPI_Errhandler_set(comm, MPI_ERRORS_RETURN), "MPI_Errhandler_set");
    errs += check(MPI_Errhandler_get(comm, &handler), "MPI_Errhandler_get");
    errs += (handler != MPI_ERRORS_RETURN);
    errs += (MPI_Send(MPI_BOTTOM, -1, MPI_INT, 0, 0, comm) == MPI_SUCCESS);

    f = MPI_Comm_c2f(comm);
    errs += (MPI_Comm_f2c(f) != comm);
    f = MPI_Type_c2f(MPI_INTEGER);
    errs += (MPI_Type_f2c(f) != MPI_INTEGER);
    f = MPI_Request_c2f(request);
    errs += (MPI_Request_f2c(f) != MPI_REQUEST_NULL);
    return errs;
}

int abi_program_main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    int flag = 0;
    int rank = 0;
    int size = 0;
    int version = 0;
    int subversion = 0;
    int length = 0;
    int errs = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    double t0;
    struct predefined_callbacks cb = get_predefined_callbacks();

    MPI_Initialized(&flag);
    if (flag) {
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--thread-single") == 0) {
        errs += check(MPI_Init(&argc, &argv), "MPI_Init");
    } else {
        errs += check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided),
                      "MPI_Init_thread");
    }
    t0 = MPI_Wtime();
    errs += check(MPI_Query_thread(&provided), "MPI_Query_thread");
    errs += check(MPI_Is_thread_main(&flag), "MPI_Is_thread_main");
    errs += check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    errs += check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    errs += check(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name");
    errs += check(MPI_Get_version(&version, &subversion), "MPI_Get_version");
    errs += (version != MPI_VERSION || subversion != MPI_SUBVERSION);
    errs += check(MPI_Get_library_version(library, &length), "MPI_Get_library_version");
    errs += (cb.conversion != MPI_CONVERSION_FN_NULL);

    errs += ring(MPI_COMM_WORLD, rank, size);
    errs += persistent(MPI_COMM_WORLD, rank, size);
    errs += objects(MPI_COMM_SELF);

    if (rank == 0) {
        printf("%s on %s, %d ranks, %.3f s (tick %g): %d errors\n", library, name, size,
               MPI_Wtime() - t0, MPI_Wtick(), errs);
    }
    if (errs != 0) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    errs += check(MPI_Finalize(), "MPI_Finalize");
    MPI_Finalized(&flag);
    return errs == 0 && flag ? 0 : 1;
}
