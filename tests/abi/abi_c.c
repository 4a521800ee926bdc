/*
 * abi_c.c -- include/mpi.h as C: built as C89, C99 and C11 with -pedantic
 * -Werror (see meson.build). It names every constant and type of the
 * MPI-3.1 C bindings, so a missing one fails the build, and checks at run
 * time what is not a constant expression. Written in C89.
 */
#include <mpi.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* A C89 static assertion: a negative array size does not compile. */
#define ABI_ASSERT(tag, cond) typedef char abi_assert_##tag[(cond) ? 1 : -1]

#if !defined(ULMPI) || ULMPI != 1
#error "ULMPI must be defined to 1"
#endif
#if defined(MPICH) || defined(MPICH_VERSION) || defined(MPICH_NAME) || defined(OPEN_MPI) || \
    defined(OMPI_MAJOR_VERSION) || defined(MSMPI_VER) || defined(I_MPI_VERSION)
#error "mpi.h must not define another implementation's macros"
#endif
#if MPI_VERSION != 3 || MPI_SUBVERSION != 1
#error "MPI_VERSION must be 3.1"
#endif
/* Handle constants are usable in #if. */
#if MPI_COMM_WORLD != 0x44000001 || MPI_DATATYPE_NULL != 0x4c000000
#error "handle constants"
#endif

ABI_ASSERT(status_size, sizeof(MPI_Status) == 5 * sizeof(int));
ABI_ASSERT(status_source, offsetof(MPI_Status, MPI_SOURCE) == 0);
ABI_ASSERT(status_tag, offsetof(MPI_Status, MPI_TAG) == sizeof(int));
ABI_ASSERT(status_error, offsetof(MPI_Status, MPI_ERROR) == 2 * sizeof(int));
ABI_ASSERT(f08_status_size, sizeof(MPI_F08_status) == sizeof(MPI_Status));
ABI_ASSERT(aint_size, sizeof(MPI_Aint) == sizeof(void *));
ABI_ASSERT(offset_size, sizeof(MPI_Offset) == 8);
ABI_ASSERT(count_size, sizeof(MPI_Count) == 8);
ABI_ASSERT(handle_size, sizeof(MPI_Comm) == sizeof(int) && sizeof(MPI_Fint) == sizeof(int));

/* Every handle type, with its null and predefined values. */
static const MPI_Comm comms[] = {MPI_COMM_NULL, MPI_COMM_WORLD, MPI_COMM_SELF};
static const MPI_Group groups[] = {MPI_GROUP_NULL, MPI_GROUP_EMPTY};
static const MPI_Errhandler errhandlers[] = {MPI_ERRHANDLER_NULL, MPI_ERRORS_ARE_FATAL,
                                             MPI_ERRORS_RETURN, MPI_ERRORS_ABORT};
static const MPI_Op ops[] = {MPI_OP_NULL, MPI_MAX,  MPI_MIN,    MPI_SUM,    MPI_PROD,
                             MPI_LAND,    MPI_BAND, MPI_LOR,    MPI_BOR,    MPI_LXOR,
                             MPI_BXOR,    MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
static const MPI_Info infos[] = {MPI_INFO_NULL, MPI_INFO_ENV};
static const MPI_Win wins[] = {MPI_WIN_NULL};
static const MPI_File files[] = {MPI_FILE_NULL};
static const MPI_Request requests[] = {MPI_REQUEST_NULL};
static const MPI_Message messages[] = {MPI_MESSAGE_NULL, MPI_MESSAGE_NO_PROC};

/* Every named datatype of MPI-3.1 (C, C++, Fortran, optional Fortran). */
static const MPI_Datatype datatypes[] = {
    MPI_DATATYPE_NULL, MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG_INT,
    MPI_LONG_LONG, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED,
    MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE,
    MPI_WCHAR, MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
    MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_AINT, MPI_COUNT, MPI_OFFSET, MPI_C_COMPLEX,
    MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_BYTE, MPI_PACKED,
    MPI_LB, MPI_UB,
    MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT,
    MPI_CXX_BOOL, MPI_CXX_FLOAT_COMPLEX, MPI_CXX_DOUBLE_COMPLEX, MPI_CXX_LONG_DOUBLE_COMPLEX,
    MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX, MPI_LOGICAL, MPI_CHARACTER,
    MPI_DOUBLE_COMPLEX, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8, MPI_INTEGER16,
    MPI_REAL2, MPI_REAL4, MPI_REAL8, MPI_REAL16, MPI_COMPLEX4, MPI_COMPLEX8, MPI_COMPLEX16,
    MPI_COMPLEX32, MPI_2INTEGER, MPI_2REAL, MPI_2DOUBLE_PRECISION};

/* Every integer constant (extern: a table only counted is not "unneeded"). */
extern const int abi_int_constants[];
const int abi_int_constants[] = {
    /* assorted */
    MPI_PROC_NULL, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_UNDEFINED, MPI_BSEND_OVERHEAD,
    MPI_KEYVAL_INVALID, MPI_LOCK_EXCLUSIVE, MPI_LOCK_SHARED, MPI_ROOT,
    /* Fortran status in C */
    MPI_F_STATUS_SIZE, MPI_F_SOURCE, MPI_F_TAG, MPI_F_ERROR,
    /* string sizes */
    MPI_MAX_DATAREP_STRING, MPI_MAX_ERROR_STRING, MPI_MAX_INFO_KEY, MPI_MAX_INFO_VAL,
    MPI_MAX_LIBRARY_VERSION_STRING, MPI_MAX_OBJECT_NAME, MPI_MAX_PORT_NAME,
    MPI_MAX_PROCESSOR_NAME,
    /* split type, comparisons, topologies */
    MPI_COMM_TYPE_SHARED, MPI_IDENT, MPI_CONGRUENT, MPI_SIMILAR, MPI_UNEQUAL, MPI_GRAPH,
    MPI_CART, MPI_DIST_GRAPH,
    /* attribute keys */
    MPI_TAG_UB, MPI_IO, MPI_HOST, MPI_WTIME_IS_GLOBAL, MPI_APPNUM, MPI_LASTUSEDCODE,
    MPI_UNIVERSE_SIZE, MPI_WIN_BASE, MPI_WIN_DISP_UNIT, MPI_WIN_SIZE, MPI_WIN_CREATE_FLAVOR,
    MPI_WIN_MODEL,
    /* one-sided */
    MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_DYNAMIC,
    MPI_WIN_FLAVOR_SHARED, MPI_WIN_SEPARATE, MPI_WIN_UNIFIED, MPI_MODE_NOCHECK,
    MPI_MODE_NOPRECEDE, MPI_MODE_NOPUT, MPI_MODE_NOSTORE, MPI_MODE_NOSUCCEED,
    /* datatype decoding */
    MPI_COMBINER_CONTIGUOUS, MPI_COMBINER_DARRAY, MPI_COMBINER_DUP, MPI_COMBINER_F90_COMPLEX,
    MPI_COMBINER_F90_INTEGER, MPI_COMBINER_F90_REAL, MPI_COMBINER_HINDEXED,
    MPI_COMBINER_HVECTOR, MPI_COMBINER_INDEXED_BLOCK, MPI_COMBINER_HINDEXED_BLOCK,
    MPI_COMBINER_INDEXED, MPI_COMBINER_NAMED, MPI_COMBINER_RESIZED, MPI_COMBINER_STRUCT,
    MPI_COMBINER_SUBARRAY, MPI_COMBINER_VECTOR, MPI_COMBINER_HINDEXED_INTEGER,
    MPI_COMBINER_HVECTOR_INTEGER, MPI_COMBINER_STRUCT_INTEGER,
    /* threads */
    MPI_THREAD_FUNNELED, MPI_THREAD_MULTIPLE, MPI_THREAD_SERIALIZED, MPI_THREAD_SINGLE,
    /* I/O */
    MPI_DISPLACEMENT_CURRENT, MPI_SEEK_CUR, MPI_SEEK_END, MPI_SEEK_SET, MPI_MODE_APPEND,
    MPI_MODE_CREATE, MPI_MODE_DELETE_ON_CLOSE, MPI_MODE_EXCL, MPI_MODE_RDONLY, MPI_MODE_RDWR,
    MPI_MODE_SEQUENTIAL, MPI_MODE_UNIQUE_OPEN, MPI_MODE_WRONLY,
    /* array datatypes, type classes */
    MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_NONE,
    MPI_ORDER_C, MPI_ORDER_FORTRAN, MPI_TYPECLASS_COMPLEX, MPI_TYPECLASS_INTEGER,
    MPI_TYPECLASS_REAL,
    /* MPI_T */
    MPI_T_VERBOSITY_USER_BASIC, MPI_T_VERBOSITY_USER_DETAIL, MPI_T_VERBOSITY_USER_ALL,
    MPI_T_VERBOSITY_TUNER_BASIC, MPI_T_VERBOSITY_TUNER_DETAIL, MPI_T_VERBOSITY_TUNER_ALL,
    MPI_T_VERBOSITY_MPIDEV_BASIC, MPI_T_VERBOSITY_MPIDEV_DETAIL, MPI_T_VERBOSITY_MPIDEV_ALL,
    MPI_T_BIND_NO_OBJECT, MPI_T_BIND_MPI_COMM, MPI_T_BIND_MPI_DATATYPE,
    MPI_T_BIND_MPI_ERRHANDLER, MPI_T_BIND_MPI_FILE, MPI_T_BIND_MPI_GROUP, MPI_T_BIND_MPI_OP,
    MPI_T_BIND_MPI_REQUEST, MPI_T_BIND_MPI_WIN, MPI_T_BIND_MPI_MESSAGE, MPI_T_BIND_MPI_INFO,
    MPI_T_SCOPE_CONSTANT, MPI_T_SCOPE_READONLY, MPI_T_SCOPE_LOCAL, MPI_T_SCOPE_GROUP,
    MPI_T_SCOPE_GROUP_EQ, MPI_T_SCOPE_ALL, MPI_T_SCOPE_ALL_EQ, MPI_T_PVAR_CLASS_STATE,
    MPI_T_PVAR_CLASS_LEVEL, MPI_T_PVAR_CLASS_SIZE, MPI_T_PVAR_CLASS_PERCENTAGE,
    MPI_T_PVAR_CLASS_HIGHWATERMARK, MPI_T_PVAR_CLASS_LOWWATERMARK, MPI_T_PVAR_CLASS_COUNTER,
    MPI_T_PVAR_CLASS_AGGREGATE, MPI_T_PVAR_CLASS_TIMER, MPI_T_PVAR_CLASS_GENERIC,
    /* version */
    MPI_VERSION, MPI_SUBVERSION};

/* Every error class, in numbering order (checked below). */
static const int error_classes[] = {
    MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM,
    MPI_ERR_RANK, MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP, MPI_ERR_OP, MPI_ERR_TOPOLOGY,
    MPI_ERR_DIMS, MPI_ERR_ARG, MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE, MPI_ERR_OTHER,
    MPI_ERR_INTERN, MPI_ERR_PENDING, MPI_ERR_IN_STATUS, MPI_ERR_ACCESS, MPI_ERR_AMODE,
    MPI_ERR_ASSERT, MPI_ERR_BAD_FILE, MPI_ERR_BASE, MPI_ERR_CONVERSION, MPI_ERR_DISP,
    MPI_ERR_DUP_DATAREP, MPI_ERR_FILE_EXISTS, MPI_ERR_FILE_IN_USE, MPI_ERR_FILE,
    MPI_ERR_INFO_KEY, MPI_ERR_INFO_NOKEY, MPI_ERR_INFO_VALUE, MPI_ERR_INFO, MPI_ERR_IO,
    MPI_ERR_KEYVAL, MPI_ERR_LOCKTYPE, MPI_ERR_NAME, MPI_ERR_NO_MEM, MPI_ERR_NOT_SAME,
    MPI_ERR_NO_SPACE, MPI_ERR_NO_SUCH_FILE, MPI_ERR_PORT, MPI_ERR_QUOTA, MPI_ERR_READ_ONLY,
    MPI_ERR_RMA_ATTACH, MPI_ERR_RMA_CONFLICT, MPI_ERR_RMA_RANGE, MPI_ERR_RMA_SHARED,
    MPI_ERR_RMA_SYNC, MPI_ERR_RMA_FLAVOR, MPI_ERR_SERVICE, MPI_ERR_SIZE, MPI_ERR_SPAWN,
    MPI_ERR_UNSUPPORTED_DATAREP, MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_WIN,
    MPI_T_ERR_MEMORY, MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_CANNOT_INIT,
    MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID_ITEM, MPI_T_ERR_INVALID_HANDLE,
    MPI_T_ERR_OUT_OF_HANDLES, MPI_T_ERR_OUT_OF_SESSIONS, MPI_T_ERR_INVALID_SESSION,
    MPI_T_ERR_CVAR_SET_NOT_NOW, MPI_T_ERR_CVAR_SET_NEVER, MPI_T_ERR_PVAR_NO_STARTSTOP,
    MPI_T_ERR_PVAR_NO_WRITE, MPI_T_ERR_PVAR_NO_ATOMIC, MPI_T_ERR_INVALID_NAME,
    MPI_T_ERR_INVALID};
ABI_ASSERT(lastcode_above, MPI_T_ERR_INVALID + 3 < MPI_ERR_LASTCODE);

/* Callbacks: a program's own functions of each type, and the predefined ones. */
static void user_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)type;
}
static void comm_errh(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
}
static void win_errh(MPI_Win *win, int *code, ...)
{
    (void)win;
    (void)code;
}
static void file_errh(MPI_File *file, int *code, ...)
{
    (void)file;
    (void)code;
}
static int greq_query(void *extra, MPI_Status *status)
{
    (void)extra;
    status->MPI_SOURCE = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int greq_free(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}
static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}
static int datarep_extent(MPI_Datatype type, MPI_Aint *extent, void *extra)
{
    (void)type;
    (void)extra;
    *extent = 0;
    return MPI_SUCCESS;
}

struct callbacks {
    MPI_User_function *op;
    MPI_Comm_errhandler_function *comm_errh;
    MPI_Comm_errhandler_fn *comm_errh_old;
    MPI_Handler_function *handler;
    MPI_Win_errhandler_function *win_errh;
    MPI_Win_errhandler_fn *win_errh_old;
    MPI_File_errhandler_function *file_errh;
    MPI_File_errhandler_fn *file_errh_old;
    MPI_Grequest_query_function *query;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel;
    MPI_Datarep_extent_function *extent;
    MPI_Datarep_conversion_function *conversion;
    MPI_Comm_copy_attr_function *comm_copy[2];
    MPI_Comm_delete_attr_function *comm_delete;
    MPI_Type_copy_attr_function *type_copy[2];
    MPI_Type_delete_attr_function *type_delete;
    MPI_Win_copy_attr_function *win_copy[2];
    MPI_Win_delete_attr_function *win_delete;
    MPI_Copy_function *copy[2];
    MPI_Delete_function *delete_fn;
};

/* The predefined callbacks (MPI_COMM_DUP_FN, ...) are library functions:
 * program.c takes their addresses, as it is compiled but not linked. */
static struct callbacks user_callbacks(void)
{
    struct callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.op = user_op;
    cb.comm_errh = comm_errh;
    cb.comm_errh_old = comm_errh;
    cb.handler = comm_errh;
    cb.win_errh = win_errh;
    cb.win_errh_old = win_errh;
    cb.file_errh = file_errh;
    cb.file_errh_old = file_errh;
    cb.query = greq_query;
    cb.free_fn = greq_free;
    cb.cancel = greq_cancel;
    cb.extent = datarep_extent;
    cb.conversion = MPI_CONVERSION_FN_NULL;
    return cb;
}

static int failures = 0;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s\n", what);
        ++failures;
    }
}

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int kind_of(int handle) { return (handle >> 24) & 0xff; }

static void expect_kind(const int *handles, int n, int kind, const char *what)
{
    int i;
    for (i = 0; i < n; ++i) {
        if (kind_of(handles[i]) != kind || (handles[i] & 0xffffff) >= ULMPI_FIRST_USER_INDEX) {
            printf("FAIL: %s[%d] = 0x%08x is not a predefined handle of kind 0x%02x\n", what, i,
                   (unsigned)handles[i], (unsigned)kind);
            ++failures;
        }
    }
}

int main(void)
{
    MPI_Status status;
    MPI_F08_status f08_status;
    MPI_Fint f_status[MPI_F_STATUS_SIZE];
    MPI_Aint aint = 0;
    MPI_Offset offset = 0;
    MPI_Count count = 0;
    MPI_T_enum t_enum = MPI_T_ENUM_NULL;
    MPI_T_cvar_handle t_cvar = MPI_T_CVAR_HANDLE_NULL;
    MPI_T_pvar_handle t_pvar = MPI_T_PVAR_HANDLE_NULL;
    MPI_T_pvar_session t_session = MPI_T_PVAR_SESSION_NULL;
    struct callbacks cb = user_callbacks();
    long std_version = 0L;
    int i;

#ifdef __STDC_VERSION__
    std_version = (long)__STDC_VERSION__;
#endif
    status.MPI_SOURCE = MPI_ANY_SOURCE;
    status.MPI_TAG = MPI_ANY_TAG;
    status.MPI_ERROR = MPI_SUCCESS;
    f08_status.MPI_SOURCE = status.MPI_SOURCE;
    f_status[MPI_F_SOURCE] = status.MPI_SOURCE;
    f_status[MPI_F_TAG] = status.MPI_TAG;
    f_status[MPI_F_ERROR] = status.MPI_ERROR;
    expect(f_status[MPI_F_SOURCE] == f08_status.MPI_SOURCE, "Fortran status indexes");

    expect_kind(comms, COUNT_OF(comms), ULMPI_KIND_COMM, "comms");
    expect_kind(groups, COUNT_OF(groups), ULMPI_KIND_GROUP, "groups");
    expect_kind(errhandlers, COUNT_OF(errhandlers), ULMPI_KIND_ERRHANDLER, "errhandlers");
    expect_kind(ops, COUNT_OF(ops), ULMPI_KIND_OP, "ops");
    expect_kind(infos, COUNT_OF(infos), ULMPI_KIND_INFO, "infos");
    expect_kind(wins, COUNT_OF(wins), ULMPI_KIND_WIN, "wins");
    expect_kind(files, COUNT_OF(files), ULMPI_KIND_FILE, "files");
    expect_kind(requests, COUNT_OF(requests), ULMPI_KIND_REQUEST, "requests");
    expect_kind(messages, COUNT_OF(messages), ULMPI_KIND_MESSAGE, "messages");
    expect_kind(datatypes, COUNT_OF(datatypes), ULMPI_KIND_DATATYPE, "datatypes");

    for (i = 0; i < COUNT_OF(error_classes); ++i) {
        if (error_classes[i] != i) {
            printf("FAIL: error class #%d has value %d\n", i, error_classes[i]);
            ++failures;
        }
    }

    expect(MPI_BOTTOM == NULL, "MPI_BOTTOM is null");
    expect(MPI_IN_PLACE != NULL && MPI_IN_PLACE != MPI_BOTTOM, "MPI_IN_PLACE");
    expect(MPI_STATUS_IGNORE != NULL && MPI_STATUSES_IGNORE != NULL, "MPI_STATUS(ES)_IGNORE");
    expect(MPI_STATUS_IGNORE != &status, "MPI_STATUS_IGNORE is no real status");
    expect(MPI_F_STATUS_IGNORE != NULL && MPI_F_STATUSES_IGNORE != NULL,
           "MPI_F_STATUS(ES)_IGNORE");
    expect(MPI_F08_STATUS_IGNORE != NULL && MPI_F08_STATUSES_IGNORE != NULL,
           "MPI_F08_STATUS(ES)_IGNORE");
    expect(MPI_UNWEIGHTED != NULL && MPI_WEIGHTS_EMPTY != NULL &&
               MPI_UNWEIGHTED != MPI_WEIGHTS_EMPTY,
           "MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY");
    expect(MPI_ERRCODES_IGNORE == NULL, "MPI_ERRCODES_IGNORE");
    expect(MPI_ARGV_NULL == NULL && MPI_ARGVS_NULL == NULL, "MPI_ARGV(S)_NULL");
    expect(MPI_CONVERSION_FN_NULL == NULL, "MPI_CONVERSION_FN_NULL");
    expect(t_enum == NULL && t_cvar == NULL && t_pvar == NULL && t_session == NULL,
           "MPI_T null handles");
    expect(MPI_T_PVAR_ALL_HANDLES != NULL, "MPI_T_PVAR_ALL_HANDLES");
    expect(aint == 0 && offset == 0 && count == 0, "integer types");
    expect(cb.op == user_op && cb.conversion == NULL, "callback types");

    printf("abi C (__STDC_VERSION__ %ld): %d datatypes, %d integer constants, %d error "
           "classes: %s\n",
           std_version, COUNT_OF(datatypes), COUNT_OF(abi_int_constants),
           COUNT_OF(error_classes),
           failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
