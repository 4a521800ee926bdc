/*
 * mpi.h -- the C ABI of ulmpi (MPI-3.1 C bindings).
 *
 * This header is valid C89/C99/C11 and C++ and has no dependencies.
 *
 * ---------------------------------------------------------------------------
 * HANDLES
 * ---------------------------------------------------------------------------
 * Every handle type (MPI_Comm, MPI_Group, MPI_Datatype, MPI_Op,
 * MPI_Errhandler, MPI_Request, MPI_Info, MPI_Win, MPI_File, MPI_Message) is
 * a plain int, and so is MPI_Fint: MPI_X_c2f / MPI_X_f2c are the identity.
 *
 *     handle = (kind << 24) | index          index: 24 bits
 *
 *     kind  0x44 COMM      0x48 GROUP    0x4c DATATYPE   0x54 ERRHANDLER
 *           0x58 OP        0x5c INFO     0x60 WIN        0x64 FILE
 *           0x6c REQUEST   0x70 MESSAGE
 *
 *   - index 0 is the null handle of its kind (MPI_COMM_NULL = 0x44000000);
 *   - predefined objects take indexes 1..1023 in a fixed order, listed
 *     next to each constant below (datatypes: mpi/datatype/predefined.def);
 *   - objects the program creates start at index 1024.
 * Every kind byte is below 0x80, so a valid handle is a positive int, and
 * 0 (or any value whose kind byte is wrong) is never a valid handle.
 * The handle constants are plain integer constants (no cast is needed, as
 * the handle types are int), usable in #if and in C++ constant expressions.
 *
 * Attribute keys (keyvals) are not handles: they are ints of the form
 * 0x64400000 | n; MPI_KEYVAL_INVALID is n = 0, the predefined keys are
 * n = 1..13 (13: MPI_FT) and keys the program creates start at n = 1024.
 *
 * ---------------------------------------------------------------------------
 * WHAT IS DECLARED
 * ---------------------------------------------------------------------------
 * Every MPI-3.1 constant and type of the C bindings (plus MPI_LB, MPI_UB,
 * MPI_Handler_function and the *_INTEGER combiners, removed in MPI-3.0 but
 * still used by real programs, and MPI_ERRORS_ABORT from MPI-4).
 * A function prototype is present only for a function the library
 * implements: a prototype here means the function works. More are added as
 * they are implemented. Extensions (fault tolerance: ULFM, FT-MPI,
 * replication, intra-parallelization) live in mpi-ext.h.
 *
 * A program can detect this library with #ifdef ULMPI; it never defines
 * the macros of other implementations (MPICH, OPEN_MPI, ...).
 */
#ifndef ULMPI_MPI_H_INCLUDED
#define ULMPI_MPI_H_INCLUDED

#define ULMPI 1
#define ULMPI_VERSION_MAJOR 0
#define ULMPI_VERSION_MINOR 1
#define ULMPI_VERSION_PATCH 0
#define ULMPI_VERSION_STRING "0.1.0"

#define MPI_VERSION 3
#define MPI_SUBVERSION 1

/* Pointer constants: C casts in C, C++ casts in C++ (so that programs built
 * with -Wold-style-cast or -Wzero-as-null-pointer-constant stay quiet). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define ULMPI_PTR_(type, value) (reinterpret_cast<type>(value))
#define ULMPI_NULLPTR_(type) (static_cast<type>(nullptr))
#elif defined(__cplusplus)
#define ULMPI_PTR_(type, value) (reinterpret_cast<type>(value))
#define ULMPI_NULLPTR_(type) (static_cast<type>(0))
#else
#define ULMPI_PTR_(type, value) ((type)(value))
#define ULMPI_NULLPTR_(type) ((type)0)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Types                                                                    */
/* ======================================================================== */

typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Errhandler;
typedef int MPI_Request;
typedef int MPI_Info;
typedef int MPI_Win;
typedef int MPI_File;
typedef int MPI_Message;
typedef int MPI_Fint;

/* Handle kind bytes (the top byte of a handle; see the comment above). */
#define ULMPI_KIND_COMM 0x44
#define ULMPI_KIND_GROUP 0x48
#define ULMPI_KIND_DATATYPE 0x4c
#define ULMPI_KIND_ERRHANDLER 0x54
#define ULMPI_KIND_OP 0x58
#define ULMPI_KIND_INFO 0x5c
#define ULMPI_KIND_WIN 0x60
#define ULMPI_KIND_FILE 0x64
#define ULMPI_KIND_REQUEST 0x6c
#define ULMPI_KIND_MESSAGE 0x70
/* First index of an object the program creates. */
#define ULMPI_FIRST_USER_INDEX 1024

/* Addresses, file offsets and counts: all 64-bit on LP64 (x86_64, aarch64). */
typedef long MPI_Aint;
/* long long is C99 and C++11: for C89 and C++98, GCC and Clang are told
 * not to warn about it here (-pedantic); any C89 compiler of this century
 * has it. */
#if defined(__GNUC__) && \
    ((defined(__cplusplus) && __cplusplus < 201103L) || \
     (!defined(__cplusplus) && \
      (!defined(__STDC_VERSION__) || __STDC_VERSION__ < 199901L)))
#define ULMPI_PRE_LONG_LONG_ 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wlong-long"
#endif
typedef long long MPI_Offset;
typedef long long MPI_Count;
#ifdef ULMPI_PRE_LONG_LONG_
#pragma GCC diagnostic pop
#undef ULMPI_PRE_LONG_LONG_
#endif

/*
 * MPI_Status. MPI_SOURCE, MPI_TAG and MPI_ERROR are public; the two other
 * words are private to the library (use MPI_Get_count, MPI_Get_elements_x,
 * MPI_Test_cancelled):
 *   count_lo                bits 0..31 of the received size in BYTES
 *   count_hi_and_cancelled  bits 0..30: bits 32..62 of that size;
 *                           bit 31: the request was cancelled
 * so a size is 63 bits:
 *   (MPI_Count)(unsigned)count_lo | (MPI_Count)(hi & 0x7fffffff) << 32.
 */
typedef struct MPI_Status {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int count_lo;
    int count_hi_and_cancelled;
} MPI_Status;

/* The Fortran 2008 status as seen from C (same layout, MPI_Fint is int). */
typedef struct MPI_F08_status {
    MPI_Fint MPI_SOURCE;
    MPI_Fint MPI_TAG;
    MPI_Fint MPI_ERROR;
    MPI_Fint count_lo;
    MPI_Fint count_hi_and_cancelled;
} MPI_F08_status;

/* A Fortran (mpif.h / mpi module) status is MPI_Fint[MPI_F_STATUS_SIZE];
 * these are the C (0-based) indexes of its public fields. */
#define MPI_F_STATUS_SIZE 5
#define MPI_F_SOURCE 0
#define MPI_F_TAG 1
#define MPI_F_ERROR 2

/* ======================================================================== */
/* Callback function types                                                  */
/* ======================================================================== */

/* Parameter names are in comments: a program's macros cannot collide with
 * them. */
typedef void MPI_User_function(void * /* invec */, void * /* inoutvec */,
                               int * /* len */, MPI_Datatype * /* datatype */);

/* (old object, keyval, extra_state, attribute_val_in, attribute_val_out, flag) */
typedef int MPI_Comm_copy_attr_function(MPI_Comm, int, void *, void *, void *, int *);
typedef int MPI_Type_copy_attr_function(MPI_Datatype, int, void *, void *, void *,
                                        int *);
typedef int MPI_Win_copy_attr_function(MPI_Win, int, void *, void *, void *, int *);
/* (object, keyval, attribute_val, extra_state) */
typedef int MPI_Comm_delete_attr_function(MPI_Comm, int, void *, void *);
typedef int MPI_Type_delete_attr_function(MPI_Datatype, int, void *, void *);
typedef int MPI_Win_delete_attr_function(MPI_Win, int, void *, void *);

/* (object, error code, implementation-defined arguments: none in ulmpi) */
typedef void MPI_Comm_errhandler_function(MPI_Comm *, int *, ...);
typedef void MPI_Win_errhandler_function(MPI_Win *, int *, ...);
typedef void MPI_File_errhandler_function(MPI_File *, int *, ...);

typedef int MPI_Grequest_query_function(void * /* extra_state */,
                                        MPI_Status * /* status */);
typedef int MPI_Grequest_free_function(void * /* extra_state */);
typedef int MPI_Grequest_cancel_function(void * /* extra_state */, int /* complete */);

typedef int MPI_Datarep_extent_function(MPI_Datatype /* datatype */,
                                        MPI_Aint * /* file_extent */,
                                        void * /* extra_state */);
typedef int MPI_Datarep_conversion_function(void * /* userbuf */,
                                            MPI_Datatype /* datatype */,
                                            int /* count */, void * /* filebuf */,
                                            MPI_Offset /* position */,
                                            void * /* extra_state */);

/* Deprecated (MPI-2.2) and removed (MPI-3.0) names, still used by programs. */
typedef int MPI_Copy_function(MPI_Comm, int, void *, void *, void *, int *);
typedef int MPI_Delete_function(MPI_Comm, int, void *, void *);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef MPI_File_errhandler_function MPI_File_errhandler_fn;
typedef void MPI_Handler_function(MPI_Comm *, int *, ...);

/* ======================================================================== */
/* Null handles                                                             */
/* ======================================================================== */

#define MPI_COMM_NULL 0x44000000
#define MPI_GROUP_NULL 0x48000000
#define MPI_DATATYPE_NULL 0x4c000000
#define MPI_ERRHANDLER_NULL 0x54000000
#define MPI_OP_NULL 0x58000000
#define MPI_INFO_NULL 0x5c000000
#define MPI_WIN_NULL 0x60000000
#define MPI_FILE_NULL 0x64000000
#define MPI_REQUEST_NULL 0x6c000000
#define MPI_MESSAGE_NULL 0x70000000

/* ======================================================================== */
/* Predefined objects                                                       */
/* ======================================================================== */

/* Communicators and groups */
#define MPI_COMM_WORLD 0x44000001 /* COMM 1 */
#define MPI_COMM_SELF 0x44000002  /* COMM 2 */
#define MPI_GROUP_EMPTY 0x48000001 /* GROUP 1 */

/* Error handlers */
#define MPI_ERRORS_ARE_FATAL 0x54000001 /* ERRHANDLER 1 */
#define MPI_ERRORS_RETURN 0x54000002    /* ERRHANDLER 2 */
#define MPI_ERRORS_ABORT 0x54000003     /* ERRHANDLER 3 (MPI-4) */

/* Reduction operations */
#define MPI_MAX 0x58000001     /* OP 1 */
#define MPI_MIN 0x58000002     /* OP 2 */
#define MPI_SUM 0x58000003     /* OP 3 */
#define MPI_PROD 0x58000004    /* OP 4 */
#define MPI_LAND 0x58000005    /* OP 5 */
#define MPI_BAND 0x58000006    /* OP 6 */
#define MPI_LOR 0x58000007     /* OP 7 */
#define MPI_BOR 0x58000008     /* OP 8 */
#define MPI_LXOR 0x58000009    /* OP 9 */
#define MPI_BXOR 0x5800000a    /* OP 10 */
#define MPI_MAXLOC 0x5800000b  /* OP 11 */
#define MPI_MINLOC 0x5800000c  /* OP 12 */
#define MPI_REPLACE 0x5800000d /* OP 13 */
#define MPI_NO_OP 0x5800000e   /* OP 14 */

/* Info and messages */
#define MPI_INFO_ENV 0x5c000001        /* INFO 1 */
#define MPI_MESSAGE_NO_PROC 0x70000001 /* MESSAGE 1 */

/*
 * Datatypes: DATATYPE kind, index in the comment. The same list, with size,
 * extent, alignment and reduction category, is mpi/datatype/predefined.def;
 * tests/abi checks that the two agree. Indexes are fixed forever.
 */
/* C */
#define MPI_CHAR 0x4c000001               /* 1 */
#define MPI_SIGNED_CHAR 0x4c000002        /* 2 */
#define MPI_UNSIGNED_CHAR 0x4c000003      /* 3 */
#define MPI_BYTE 0x4c000004               /* 4 */
#define MPI_WCHAR 0x4c000005              /* 5 */
#define MPI_SHORT 0x4c000006              /* 6 */
#define MPI_UNSIGNED_SHORT 0x4c000007     /* 7 */
#define MPI_INT 0x4c000008                /* 8 */
#define MPI_UNSIGNED 0x4c000009           /* 9 */
#define MPI_LONG 0x4c00000a               /* 10 */
#define MPI_UNSIGNED_LONG 0x4c00000b      /* 11 */
#define MPI_LONG_LONG_INT 0x4c00000c      /* 12 */
#define MPI_LONG_LONG MPI_LONG_LONG_INT   /* alias */
#define MPI_UNSIGNED_LONG_LONG 0x4c00000d /* 13 */
#define MPI_FLOAT 0x4c00000e              /* 14 */
#define MPI_DOUBLE 0x4c00000f             /* 15 */
#define MPI_LONG_DOUBLE 0x4c000010        /* 16 */
#define MPI_INT8_T 0x4c000011             /* 17 */
#define MPI_INT16_T 0x4c000012            /* 18 */
#define MPI_INT32_T 0x4c000013            /* 19 */
#define MPI_INT64_T 0x4c000014            /* 20 */
#define MPI_UINT8_T 0x4c000015            /* 21 */
#define MPI_UINT16_T 0x4c000016           /* 22 */
#define MPI_UINT32_T 0x4c000017           /* 23 */
#define MPI_UINT64_T 0x4c000018           /* 24 */
#define MPI_C_BOOL 0x4c000019             /* 25 */
#define MPI_C_FLOAT_COMPLEX 0x4c00001a    /* 26 */
#define MPI_C_COMPLEX MPI_C_FLOAT_COMPLEX /* alias */
#define MPI_C_DOUBLE_COMPLEX 0x4c00001b   /* 27 */
#define MPI_C_LONG_DOUBLE_COMPLEX 0x4c00001c /* 28 */
#define MPI_AINT 0x4c00001d               /* 29 */
#define MPI_OFFSET 0x4c00001e             /* 30 */
#define MPI_COUNT 0x4c00001f              /* 31 */
#define MPI_PACKED 0x4c000020             /* 32 */
#define MPI_LB 0x4c000021                 /* 33, removed in MPI-3.0 */
#define MPI_UB 0x4c000022                 /* 34, removed in MPI-3.0 */
/* C pair types for MPI_MINLOC / MPI_MAXLOC */
#define MPI_FLOAT_INT 0x4c000023          /* 35 */
#define MPI_DOUBLE_INT 0x4c000024         /* 36 */
#define MPI_LONG_INT 0x4c000025           /* 37 */
#define MPI_2INT 0x4c000026               /* 38 */
#define MPI_SHORT_INT 0x4c000027          /* 39 */
#define MPI_LONG_DOUBLE_INT 0x4c000028    /* 40 */
/* C++ */
#define MPI_CXX_BOOL 0x4c000029                /* 41 */
#define MPI_CXX_FLOAT_COMPLEX 0x4c00002a       /* 42 */
#define MPI_CXX_DOUBLE_COMPLEX 0x4c00002b      /* 43 */
#define MPI_CXX_LONG_DOUBLE_COMPLEX 0x4c00002c /* 44 */
/* Fortran (sizes of gfortran's default kinds) */
#define MPI_INTEGER 0x4c00002d            /* 45 */
#define MPI_REAL 0x4c00002e               /* 46 */
#define MPI_DOUBLE_PRECISION 0x4c00002f   /* 47 */
#define MPI_COMPLEX 0x4c000030            /* 48 */
#define MPI_DOUBLE_COMPLEX 0x4c000031     /* 49 */
#define MPI_LOGICAL 0x4c000032            /* 50 */
#define MPI_CHARACTER 0x4c000033          /* 51 */
#define MPI_INTEGER1 0x4c000034           /* 52 */
#define MPI_INTEGER2 0x4c000035           /* 53 */
#define MPI_INTEGER4 0x4c000036           /* 54 */
#define MPI_INTEGER8 0x4c000037           /* 55 */
#define MPI_REAL4 0x4c000038              /* 56 */
#define MPI_REAL8 0x4c000039              /* 57 */
#define MPI_COMPLEX8 0x4c00003a           /* 58 */
#define MPI_COMPLEX16 0x4c00003b          /* 59 */
#define MPI_2INTEGER 0x4c00003c           /* 60 */
#define MPI_2REAL 0x4c00003d              /* 61 */
#define MPI_2DOUBLE_PRECISION 0x4c00003e  /* 62 */
/* Optional Fortran types that ulmpi does not support: MPI_DATATYPE_NULL,
 * as MPI-3.1 section 3.2.2 allows. */
#define MPI_INTEGER16 MPI_DATATYPE_NULL
#define MPI_REAL2 MPI_DATATYPE_NULL
#define MPI_REAL16 MPI_DATATYPE_NULL
#define MPI_COMPLEX4 MPI_DATATYPE_NULL
#define MPI_COMPLEX32 MPI_DATATYPE_NULL

/* ======================================================================== */
/* Special addresses and "ignore" arguments                                 */
/* ======================================================================== */

#define MPI_BOTTOM ULMPI_NULLPTR_(void *)
#define MPI_IN_PLACE ULMPI_PTR_(void *, -1)
#define MPI_STATUS_IGNORE ULMPI_PTR_(MPI_Status *, 1)
#define MPI_STATUSES_IGNORE ULMPI_PTR_(MPI_Status *, 1)
#define MPI_F_STATUS_IGNORE ULMPI_PTR_(MPI_Fint *, 1)
#define MPI_F_STATUSES_IGNORE ULMPI_PTR_(MPI_Fint *, 1)
#define MPI_F08_STATUS_IGNORE ULMPI_PTR_(MPI_F08_status *, 1)
#define MPI_F08_STATUSES_IGNORE ULMPI_PTR_(MPI_F08_status *, 1)
#define MPI_ERRCODES_IGNORE ULMPI_NULLPTR_(int *)
#define MPI_ARGV_NULL ULMPI_NULLPTR_(char **)
#define MPI_ARGVS_NULL ULMPI_NULLPTR_(char ***)
/* Addresses of objects inside libmpi (as MPICH does): a small constant
 * address passed where the prototype says int[] makes gcc warn
 * (-Wstringop-overread) in correct programs. */
extern int *const MPI_UNWEIGHTED;
extern int *const MPI_WEIGHTS_EMPTY;

/* ======================================================================== */
/* Integer constants                                                        */
/* ======================================================================== */

/* Ranks, tags, counts */
#define MPI_PROC_NULL (-1)
#define MPI_ANY_SOURCE (-2)
#define MPI_ROOT (-3)
#define MPI_ANY_TAG (-1)
#define MPI_UNDEFINED (-32766)
#define MPI_BSEND_OVERHEAD 96

/* Attribute keys (see the comment at the top) */
#define MPI_KEYVAL_INVALID 0x64400000
#define MPI_TAG_UB 0x64400001
#define MPI_HOST 0x64400002
#define MPI_IO 0x64400003
#define MPI_WTIME_IS_GLOBAL 0x64400004
#define MPI_UNIVERSE_SIZE 0x64400005
#define MPI_LASTUSEDCODE 0x64400006
#define MPI_APPNUM 0x64400007
#define MPI_WIN_BASE 0x64400008
#define MPI_WIN_SIZE 0x64400009
#define MPI_WIN_DISP_UNIT 0x6440000a
#define MPI_WIN_CREATE_FLAVOR 0x6440000b
#define MPI_WIN_MODEL 0x6440000c
/* ULFM: on every communicator, true when fault tolerance is on (mpirun --with-ft ulfm) */
#define MPI_FT 0x6440000d
#define MPIX_FT MPI_FT

/* Results of MPI_Comm_compare / MPI_Group_compare */
#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

/* Topologies (MPI_Topo_test answers MPI_UNDEFINED for none) */
#define MPI_GRAPH 1
#define MPI_CART 2
#define MPI_DIST_GRAPH 3

/* Thread levels, ordered */
#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

/* String sizes (each includes the terminating NUL) */
#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_INFO_KEY 255
#define MPI_MAX_INFO_VAL 1024
#define MPI_MAX_PORT_NAME 256
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_DATAREP_STRING 128

/* Communicator split types */
#define MPI_COMM_TYPE_SHARED 1

/* Array datatypes (MPI_Type_create_subarray / darray) */
#define MPI_ORDER_C 1
#define MPI_ORDER_FORTRAN 2
#define MPI_DISTRIBUTE_BLOCK 1
#define MPI_DISTRIBUTE_CYCLIC 2
#define MPI_DISTRIBUTE_NONE 3
#define MPI_DISTRIBUTE_DFLT_DARG (-1)

/* Datatype decoding (MPI_Type_get_envelope) */
#define MPI_COMBINER_NAMED 1
#define MPI_COMBINER_DUP 2
#define MPI_COMBINER_CONTIGUOUS 3
#define MPI_COMBINER_VECTOR 4
#define MPI_COMBINER_HVECTOR_INTEGER 5 /* removed in MPI-3.0 */
#define MPI_COMBINER_HVECTOR 6
#define MPI_COMBINER_INDEXED 7
#define MPI_COMBINER_HINDEXED_INTEGER 8 /* removed in MPI-3.0 */
#define MPI_COMBINER_HINDEXED 9
#define MPI_COMBINER_INDEXED_BLOCK 10
#define MPI_COMBINER_HINDEXED_BLOCK 11
#define MPI_COMBINER_STRUCT_INTEGER 12 /* removed in MPI-3.0 */
#define MPI_COMBINER_STRUCT 13
#define MPI_COMBINER_SUBARRAY 14
#define MPI_COMBINER_DARRAY 15
#define MPI_COMBINER_F90_REAL 16
#define MPI_COMBINER_F90_COMPLEX 17
#define MPI_COMBINER_F90_INTEGER 18
#define MPI_COMBINER_RESIZED 19

/* MPI_Type_match_size */
#define MPI_TYPECLASS_INTEGER 1
#define MPI_TYPECLASS_REAL 2
#define MPI_TYPECLASS_COMPLEX 3

/* One-sided: lock types, assertions, window flavors and memory models */
#define MPI_LOCK_EXCLUSIVE 1
#define MPI_LOCK_SHARED 2
#define MPI_MODE_NOCHECK 0x0400
#define MPI_MODE_NOSTORE 0x0800
#define MPI_MODE_NOPUT 0x1000
#define MPI_MODE_NOPRECEDE 0x2000
#define MPI_MODE_NOSUCCEED 0x4000
#define MPI_WIN_FLAVOR_CREATE 1
#define MPI_WIN_FLAVOR_ALLOCATE 2
#define MPI_WIN_FLAVOR_DYNAMIC 3
#define MPI_WIN_FLAVOR_SHARED 4
#define MPI_WIN_SEPARATE 1
#define MPI_WIN_UNIFIED 2

/* I/O: access modes (bits, distinct from the one-sided assertions), seek
 * whence, the current-view displacement */
#define MPI_MODE_CREATE 0x0001
#define MPI_MODE_RDONLY 0x0002
#define MPI_MODE_WRONLY 0x0004
#define MPI_MODE_RDWR 0x0008
#define MPI_MODE_DELETE_ON_CLOSE 0x0010
#define MPI_MODE_UNIQUE_OPEN 0x0020
#define MPI_MODE_EXCL 0x0040
#define MPI_MODE_APPEND 0x0080
#define MPI_MODE_SEQUENTIAL 0x0100
#define MPI_SEEK_SET 0
#define MPI_SEEK_CUR 1
#define MPI_SEEK_END 2
#define MPI_DISPLACEMENT_CURRENT (-54321)

/* ======================================================================== */
/* Error classes                                                            */
/* ======================================================================== */
/*
 * 0 is success; 1..73 are the MPI-3.1 classes (MPI_T return codes
 * included); 75..77 are the fault-tolerance (ULFM) classes, with Open MPI's
 * values: MPIX_ERR_PROC_FAILED = 75, MPIX_ERR_PROC_FAILED_PENDING = 76,
 * MPIX_ERR_REVOKED = 77 (declared below, and by mpi-ext.h). MPI_ERR_LASTCODE
 * (78) is above every predefined class and code; MPI_Add_error_class returns
 * values above it.
 * Error codes and error classes are the same numbers in ulmpi.
 */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_REQUEST 7
#define MPI_ERR_ROOT 8
#define MPI_ERR_GROUP 9
#define MPI_ERR_OP 10
#define MPI_ERR_TOPOLOGY 11
#define MPI_ERR_DIMS 12
#define MPI_ERR_ARG 13
#define MPI_ERR_UNKNOWN 14
#define MPI_ERR_TRUNCATE 15
#define MPI_ERR_OTHER 16
#define MPI_ERR_INTERN 17
#define MPI_ERR_PENDING 18
#define MPI_ERR_IN_STATUS 19
#define MPI_ERR_ACCESS 20
#define MPI_ERR_AMODE 21
#define MPI_ERR_ASSERT 22
#define MPI_ERR_BAD_FILE 23
#define MPI_ERR_BASE 24
#define MPI_ERR_CONVERSION 25
#define MPI_ERR_DISP 26
#define MPI_ERR_DUP_DATAREP 27
#define MPI_ERR_FILE_EXISTS 28
#define MPI_ERR_FILE_IN_USE 29
#define MPI_ERR_FILE 30
#define MPI_ERR_INFO_KEY 31
#define MPI_ERR_INFO_NOKEY 32
#define MPI_ERR_INFO_VALUE 33
#define MPI_ERR_INFO 34
#define MPI_ERR_IO 35
#define MPI_ERR_KEYVAL 36
#define MPI_ERR_LOCKTYPE 37
#define MPI_ERR_NAME 38
#define MPI_ERR_NO_MEM 39
#define MPI_ERR_NOT_SAME 40
#define MPI_ERR_NO_SPACE 41
#define MPI_ERR_NO_SUCH_FILE 42
#define MPI_ERR_PORT 43
#define MPI_ERR_QUOTA 44
#define MPI_ERR_READ_ONLY 45
#define MPI_ERR_RMA_ATTACH 46
#define MPI_ERR_RMA_CONFLICT 47
#define MPI_ERR_RMA_RANGE 48
#define MPI_ERR_RMA_SHARED 49
#define MPI_ERR_RMA_SYNC 50
#define MPI_ERR_RMA_FLAVOR 51
#define MPI_ERR_SERVICE 52
#define MPI_ERR_SIZE 53
#define MPI_ERR_SPAWN 54
#define MPI_ERR_UNSUPPORTED_DATAREP 55
#define MPI_ERR_UNSUPPORTED_OPERATION 56
#define MPI_ERR_WIN 57
/* Tool interface return codes (also error classes) */
#define MPI_T_ERR_MEMORY 58
#define MPI_T_ERR_NOT_INITIALIZED 59
#define MPI_T_ERR_CANNOT_INIT 60
#define MPI_T_ERR_INVALID_INDEX 61
#define MPI_T_ERR_INVALID_ITEM 62
#define MPI_T_ERR_INVALID_HANDLE 63
#define MPI_T_ERR_OUT_OF_HANDLES 64
#define MPI_T_ERR_OUT_OF_SESSIONS 65
#define MPI_T_ERR_INVALID_SESSION 66
#define MPI_T_ERR_CVAR_SET_NOT_NOW 67
#define MPI_T_ERR_CVAR_SET_NEVER 68
#define MPI_T_ERR_PVAR_NO_STARTSTOP 69
#define MPI_T_ERR_PVAR_NO_WRITE 70
#define MPI_T_ERR_PVAR_NO_ATOMIC 71
#define MPI_T_ERR_INVALID_NAME 72
#define MPI_T_ERR_INVALID 73
/* 74: unused. The fault-tolerance classes (User-Level Failure Mitigation): */
#define MPIX_ERR_PROC_FAILED 75
#define MPIX_ERR_PROC_FAILED_PENDING 76
#define MPIX_ERR_REVOKED 77
#define MPI_ERR_LASTCODE 78

/* ======================================================================== */
/* Tool information interface (MPI_T): types and constants                  */
/* ======================================================================== */
/* The MPI_T functions come later; their types and constants are here so
 * that programs that mention them compile. */

typedef struct ulmpi_t_enum_s *MPI_T_enum;
typedef struct ulmpi_t_cvar_handle_s *MPI_T_cvar_handle;
typedef struct ulmpi_t_pvar_handle_s *MPI_T_pvar_handle;
typedef struct ulmpi_t_pvar_session_s *MPI_T_pvar_session;

#define MPI_T_ENUM_NULL ULMPI_NULLPTR_(MPI_T_enum)
#define MPI_T_CVAR_HANDLE_NULL ULMPI_NULLPTR_(MPI_T_cvar_handle)
#define MPI_T_PVAR_HANDLE_NULL ULMPI_NULLPTR_(MPI_T_pvar_handle)
#define MPI_T_PVAR_SESSION_NULL ULMPI_NULLPTR_(MPI_T_pvar_session)
#define MPI_T_PVAR_ALL_HANDLES ULMPI_PTR_(MPI_T_pvar_handle, 1)

#define MPI_T_VERBOSITY_USER_BASIC 1
#define MPI_T_VERBOSITY_USER_DETAIL 2
#define MPI_T_VERBOSITY_USER_ALL 3
#define MPI_T_VERBOSITY_TUNER_BASIC 4
#define MPI_T_VERBOSITY_TUNER_DETAIL 5
#define MPI_T_VERBOSITY_TUNER_ALL 6
#define MPI_T_VERBOSITY_MPIDEV_BASIC 7
#define MPI_T_VERBOSITY_MPIDEV_DETAIL 8
#define MPI_T_VERBOSITY_MPIDEV_ALL 9

#define MPI_T_BIND_NO_OBJECT 0
#define MPI_T_BIND_MPI_COMM 1
#define MPI_T_BIND_MPI_DATATYPE 2
#define MPI_T_BIND_MPI_ERRHANDLER 3
#define MPI_T_BIND_MPI_FILE 4
#define MPI_T_BIND_MPI_GROUP 5
#define MPI_T_BIND_MPI_OP 6
#define MPI_T_BIND_MPI_REQUEST 7
#define MPI_T_BIND_MPI_WIN 8
#define MPI_T_BIND_MPI_MESSAGE 9
#define MPI_T_BIND_MPI_INFO 10

#define MPI_T_SCOPE_CONSTANT 0
#define MPI_T_SCOPE_READONLY 1
#define MPI_T_SCOPE_LOCAL 2
#define MPI_T_SCOPE_GROUP 3
#define MPI_T_SCOPE_GROUP_EQ 4
#define MPI_T_SCOPE_ALL 5
#define MPI_T_SCOPE_ALL_EQ 6

#define MPI_T_PVAR_CLASS_STATE 0
#define MPI_T_PVAR_CLASS_LEVEL 1
#define MPI_T_PVAR_CLASS_SIZE 2
#define MPI_T_PVAR_CLASS_PERCENTAGE 3
#define MPI_T_PVAR_CLASS_HIGHWATERMARK 4
#define MPI_T_PVAR_CLASS_LOWWATERMARK 5
#define MPI_T_PVAR_CLASS_COUNTER 6
#define MPI_T_PVAR_CLASS_AGGREGATE 7
#define MPI_T_PVAR_CLASS_TIMER 8
#define MPI_T_PVAR_CLASS_GENERIC 9

/* ======================================================================== */
/* Predefined callback functions                                            */
/* ======================================================================== */
/*
 * These constants are real functions that the library exports (there is
 * no PMPI_ form): pass them as copy / delete callbacks when creating a
 * keyval. The NULL_COPY functions set *flag = 0 and return MPI_SUCCESS;
 * the DUP functions store attribute_val_in in *(void **)attribute_val_out,
 * set *flag = 1 and return MPI_SUCCESS; the NULL_DELETE functions return
 * MPI_SUCCESS.
 *   TO IMPLEMENT in mpi/ (attr):  MPI_NULL_COPY_FN  MPI_NULL_DELETE_FN
 *     MPI_DUP_FN  MPI_COMM_NULL_COPY_FN  MPI_COMM_NULL_DELETE_FN
 *     MPI_COMM_DUP_FN  MPI_TYPE_NULL_COPY_FN  MPI_TYPE_NULL_DELETE_FN
 *     MPI_TYPE_DUP_FN  MPI_WIN_NULL_COPY_FN  MPI_WIN_NULL_DELETE_FN
 *     MPI_WIN_DUP_FN
 * MPI_CONVERSION_FN_NULL is a null pointer, not a function.
 */
int MPI_COMM_NULL_COPY_FN(MPI_Comm, int, void *, void *, void *, int *);
int MPI_COMM_NULL_DELETE_FN(MPI_Comm, int, void *, void *);
int MPI_COMM_DUP_FN(MPI_Comm, int, void *, void *, void *, int *);
int MPI_TYPE_NULL_COPY_FN(MPI_Datatype, int, void *, void *, void *, int *);
int MPI_TYPE_NULL_DELETE_FN(MPI_Datatype, int, void *, void *);
int MPI_TYPE_DUP_FN(MPI_Datatype, int, void *, void *, void *, int *);
int MPI_WIN_NULL_COPY_FN(MPI_Win, int, void *, void *, void *, int *);
int MPI_WIN_NULL_DELETE_FN(MPI_Win, int, void *, void *);
int MPI_WIN_DUP_FN(MPI_Win, int, void *, void *, void *, int *);
/* deprecated (MPI-1 attribute caching) */
int MPI_NULL_COPY_FN(MPI_Comm, int, void *, void *, void *, int *);
int MPI_NULL_DELETE_FN(MPI_Comm, int, void *, void *);
int MPI_DUP_FN(MPI_Comm, int, void *, void *, void *, int *);

#define MPI_CONVERSION_FN_NULL ULMPI_NULLPTR_(MPI_Datarep_conversion_function *)

/* ======================================================================== */
/* Functions                                                                */
/* ======================================================================== */
/*
 * Each function has an MPI_ and a PMPI_ entry point (MPI-3.1 chapter 14,
 * profiling interface). Parameters are unnamed on purpose (a program's
 * macros cannot collide with them); the comments give their order where the
 * standard's name does not make it plain. Only implemented functions appear.
 */

/* Environment */
int MPI_Init(int *, char ***);
int PMPI_Init(int *, char ***);
int MPI_Init_thread(int *, char ***, int /* required */, int * /* provided */);
int PMPI_Init_thread(int *, char ***, int, int *);
int MPI_Finalize(void);
int PMPI_Finalize(void);
int MPI_Initialized(int *);
int PMPI_Initialized(int *);
int MPI_Finalized(int *);
int PMPI_Finalized(int *);
int MPI_Abort(MPI_Comm, int);
int PMPI_Abort(MPI_Comm, int);
int MPI_Query_thread(int *);
int PMPI_Query_thread(int *);
int MPI_Is_thread_main(int *);
int PMPI_Is_thread_main(int *);
double MPI_Wtime(void);
double PMPI_Wtime(void);
double MPI_Wtick(void);
double PMPI_Wtick(void);
int MPI_Get_processor_name(char *, int *);
int PMPI_Get_processor_name(char *, int *);
int MPI_Get_version(int *, int *);
int PMPI_Get_version(int *, int *);
int MPI_Get_library_version(char *, int *);
int PMPI_Get_library_version(char *, int *);

/* Errors and error handlers */
int MPI_Error_string(int, char *, int *);
int PMPI_Error_string(int, char *, int *);
int MPI_Error_class(int, int *);
int PMPI_Error_class(int, int *);
int MPI_Comm_set_errhandler(MPI_Comm, MPI_Errhandler);
int PMPI_Comm_set_errhandler(MPI_Comm, MPI_Errhandler);
int MPI_Comm_get_errhandler(MPI_Comm, MPI_Errhandler *);
int PMPI_Comm_get_errhandler(MPI_Comm, MPI_Errhandler *);
int MPI_Errhandler_set(MPI_Comm, MPI_Errhandler); /* removed in MPI-3.0 */
int PMPI_Errhandler_set(MPI_Comm, MPI_Errhandler);
int MPI_Errhandler_get(MPI_Comm, MPI_Errhandler *); /* removed in MPI-3.0 */
int PMPI_Errhandler_get(MPI_Comm, MPI_Errhandler *);
int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *, MPI_Errhandler *);
int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *, MPI_Errhandler *);
int MPI_Errhandler_create(MPI_Handler_function *, MPI_Errhandler *); /* removed in MPI-3.0 */
int PMPI_Errhandler_create(MPI_Handler_function *, MPI_Errhandler *);
int MPI_Errhandler_free(MPI_Errhandler *);
int PMPI_Errhandler_free(MPI_Errhandler *);
/* (comm, errorcode) */
int MPI_Comm_call_errhandler(MPI_Comm, int);
int PMPI_Comm_call_errhandler(MPI_Comm, int);
/* User error classes and codes: (errorclass) / (errorclass, errorcode) / (errorcode, string) */
int MPI_Add_error_class(int *);
int PMPI_Add_error_class(int *);
int MPI_Add_error_code(int, int *);
int PMPI_Add_error_code(int, int *);
int MPI_Add_error_string(int, const char *);
int PMPI_Add_error_string(int, const char *);

/* Communicators */
int MPI_Comm_rank(MPI_Comm, int *);
int PMPI_Comm_rank(MPI_Comm, int *);
int MPI_Comm_size(MPI_Comm, int *);
int PMPI_Comm_size(MPI_Comm, int *);
int MPI_Comm_dup(MPI_Comm, MPI_Comm *);
int PMPI_Comm_dup(MPI_Comm, MPI_Comm *);
int MPI_Comm_dup_with_info(MPI_Comm, MPI_Info, MPI_Comm *);
int PMPI_Comm_dup_with_info(MPI_Comm, MPI_Info, MPI_Comm *);
/* (comm, newcomm, request): newcomm is set when the request completes */
int MPI_Comm_idup(MPI_Comm, MPI_Comm *, MPI_Request *);
int PMPI_Comm_idup(MPI_Comm, MPI_Comm *, MPI_Request *);
/* (comm, group, newcomm) */
int MPI_Comm_create(MPI_Comm, MPI_Group, MPI_Comm *);
int PMPI_Comm_create(MPI_Comm, MPI_Group, MPI_Comm *);
/* (comm, group, tag, newcomm) */
int MPI_Comm_create_group(MPI_Comm, MPI_Group, int, MPI_Comm *);
int PMPI_Comm_create_group(MPI_Comm, MPI_Group, int, MPI_Comm *);
/* (comm, color, key, newcomm) */
int MPI_Comm_split(MPI_Comm, int, int, MPI_Comm *);
int PMPI_Comm_split(MPI_Comm, int, int, MPI_Comm *);
/* (comm, split_type, key, info, newcomm) */
int MPI_Comm_split_type(MPI_Comm, int, int, MPI_Info, MPI_Comm *);
int PMPI_Comm_split_type(MPI_Comm, int, int, MPI_Info, MPI_Comm *);
int MPI_Comm_free(MPI_Comm *);
int PMPI_Comm_free(MPI_Comm *);
/* (comm1, comm2, result) */
int MPI_Comm_compare(MPI_Comm, MPI_Comm, int *);
int PMPI_Comm_compare(MPI_Comm, MPI_Comm, int *);
int MPI_Comm_test_inter(MPI_Comm, int *);
int PMPI_Comm_test_inter(MPI_Comm, int *);
int MPI_Comm_remote_size(MPI_Comm, int *);
int PMPI_Comm_remote_size(MPI_Comm, int *);
int MPI_Comm_remote_group(MPI_Comm, MPI_Group *);
int PMPI_Comm_remote_group(MPI_Comm, MPI_Group *);
/* (local_comm, local_leader, peer_comm, remote_leader, tag, newintercomm) */
int MPI_Intercomm_create(MPI_Comm, int, MPI_Comm, int, int, MPI_Comm *);
int PMPI_Intercomm_create(MPI_Comm, int, MPI_Comm, int, int, MPI_Comm *);
/* (intercomm, high, newintracomm) */
int MPI_Intercomm_merge(MPI_Comm, int, MPI_Comm *);
int PMPI_Intercomm_merge(MPI_Comm, int, MPI_Comm *);
int MPI_Comm_set_name(MPI_Comm, const char *);
int PMPI_Comm_set_name(MPI_Comm, const char *);

/* Dynamic processes (mpirun --spawn-slots N; docs/dynamic_processes.md) */
/* (command, argv, maxprocs, info, root, comm, intercomm, array_of_errcodes) */
int MPI_Comm_spawn(const char *, char *[], int, MPI_Info, int, MPI_Comm, MPI_Comm *, int []);
int PMPI_Comm_spawn(const char *, char *[], int, MPI_Info, int, MPI_Comm, MPI_Comm *, int []);
/* (count, array_of_commands, array_of_argv, array_of_maxprocs, array_of_info, root, comm,
 *  intercomm, array_of_errcodes) */
int MPI_Comm_spawn_multiple(int, char *[], char **[], const int [], const MPI_Info [], int,
                            MPI_Comm, MPI_Comm *, int []);
int PMPI_Comm_spawn_multiple(int, char *[], char **[], const int [], const MPI_Info [], int,
                             MPI_Comm, MPI_Comm *, int []);
int MPI_Comm_get_parent(MPI_Comm *);
int PMPI_Comm_get_parent(MPI_Comm *);
int MPI_Comm_disconnect(MPI_Comm *);
int PMPI_Comm_disconnect(MPI_Comm *);
/* Ports between processes of one job (docs/dynamic_processes.md, "Ports") */
/* (info, port_name[MPI_MAX_PORT_NAME]) */
int MPI_Open_port(MPI_Info, char *);
int PMPI_Open_port(MPI_Info, char *);
int MPI_Close_port(const char *);
int PMPI_Close_port(const char *);
/* (port_name, info, root, comm, newcomm) */
int MPI_Comm_accept(const char *, MPI_Info, int, MPI_Comm, MPI_Comm *);
int PMPI_Comm_accept(const char *, MPI_Info, int, MPI_Comm, MPI_Comm *);
int MPI_Comm_connect(const char *, MPI_Info, int, MPI_Comm, MPI_Comm *);
int PMPI_Comm_connect(const char *, MPI_Info, int, MPI_Comm, MPI_Comm *);
/* (fd, intercomm) */
int MPI_Comm_join(int, MPI_Comm *);
int PMPI_Comm_join(int, MPI_Comm *);
/* The job's name service: (service_name, info, port_name) */
int MPI_Publish_name(const char *, MPI_Info, const char *);
int PMPI_Publish_name(const char *, MPI_Info, const char *);
int MPI_Unpublish_name(const char *, MPI_Info, const char *);
int PMPI_Unpublish_name(const char *, MPI_Info, const char *);
int MPI_Lookup_name(const char *, MPI_Info, char *);
int PMPI_Lookup_name(const char *, MPI_Info, char *);
/* (comm, comm_name, resultlen) */
int MPI_Comm_get_name(MPI_Comm, char *, int *);
int PMPI_Comm_get_name(MPI_Comm, char *, int *);
int MPI_Comm_set_info(MPI_Comm, MPI_Info);
int PMPI_Comm_set_info(MPI_Comm, MPI_Info);
int MPI_Comm_get_info(MPI_Comm, MPI_Info *);
int PMPI_Comm_get_info(MPI_Comm, MPI_Info *);

/* Groups */
int MPI_Comm_group(MPI_Comm, MPI_Group *);
int PMPI_Comm_group(MPI_Comm, MPI_Group *);
int MPI_Group_size(MPI_Group, int *);
int PMPI_Group_size(MPI_Group, int *);
int MPI_Group_rank(MPI_Group, int *);
int PMPI_Group_rank(MPI_Group, int *);
/* (group1, n, ranks1, group2, ranks2) */
int MPI_Group_translate_ranks(MPI_Group, int, const int[], MPI_Group, int[]);
int PMPI_Group_translate_ranks(MPI_Group, int, const int[], MPI_Group, int[]);
int MPI_Group_compare(MPI_Group, MPI_Group, int *);
int PMPI_Group_compare(MPI_Group, MPI_Group, int *);
/* (group1, group2, newgroup) */
int MPI_Group_union(MPI_Group, MPI_Group, MPI_Group *);
int PMPI_Group_union(MPI_Group, MPI_Group, MPI_Group *);
int MPI_Group_intersection(MPI_Group, MPI_Group, MPI_Group *);
int PMPI_Group_intersection(MPI_Group, MPI_Group, MPI_Group *);
int MPI_Group_difference(MPI_Group, MPI_Group, MPI_Group *);
int PMPI_Group_difference(MPI_Group, MPI_Group, MPI_Group *);
/* (group, n, ranks, newgroup) */
int MPI_Group_incl(MPI_Group, int, const int[], MPI_Group *);
int PMPI_Group_incl(MPI_Group, int, const int[], MPI_Group *);
int MPI_Group_excl(MPI_Group, int, const int[], MPI_Group *);
int PMPI_Group_excl(MPI_Group, int, const int[], MPI_Group *);
/* (group, n, ranges of (first, last, stride), newgroup) */
int MPI_Group_range_incl(MPI_Group, int, int[][3], MPI_Group *);
int PMPI_Group_range_incl(MPI_Group, int, int[][3], MPI_Group *);
int MPI_Group_range_excl(MPI_Group, int, int[][3], MPI_Group *);
int PMPI_Group_range_excl(MPI_Group, int, int[][3], MPI_Group *);
int MPI_Group_free(MPI_Group *);
int PMPI_Group_free(MPI_Group *);

/* Attribute caching: keyvals are ints (see the top of this file) */
/* (copy_fn, delete_fn, keyval, extra_state) */
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *,
                           int *, void *);
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *,
                            int *, void *);
int MPI_Comm_free_keyval(int *);
int PMPI_Comm_free_keyval(int *);
/* (comm, keyval, attribute_val) */
int MPI_Comm_set_attr(MPI_Comm, int, void *);
int PMPI_Comm_set_attr(MPI_Comm, int, void *);
/* (comm, keyval, pointer to the attribute_val, flag) */
int MPI_Comm_get_attr(MPI_Comm, int, void *, int *);
int PMPI_Comm_get_attr(MPI_Comm, int, void *, int *);
int MPI_Comm_delete_attr(MPI_Comm, int);
int PMPI_Comm_delete_attr(MPI_Comm, int);
int MPI_Type_create_keyval(MPI_Type_copy_attr_function *, MPI_Type_delete_attr_function *,
                           int *, void *);
int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *, MPI_Type_delete_attr_function *,
                            int *, void *);
int MPI_Type_free_keyval(int *);
int PMPI_Type_free_keyval(int *);
int MPI_Type_set_attr(MPI_Datatype, int, void *);
int PMPI_Type_set_attr(MPI_Datatype, int, void *);
int MPI_Type_get_attr(MPI_Datatype, int, void *, int *);
int PMPI_Type_get_attr(MPI_Datatype, int, void *, int *);
int MPI_Type_delete_attr(MPI_Datatype, int);
int PMPI_Type_delete_attr(MPI_Datatype, int);
/* MPI-1 names, removed in MPI-3.0 */
int MPI_Keyval_create(MPI_Copy_function *, MPI_Delete_function *, int *, void *);
int PMPI_Keyval_create(MPI_Copy_function *, MPI_Delete_function *, int *, void *);
int MPI_Keyval_free(int *);
int PMPI_Keyval_free(int *);
int MPI_Attr_put(MPI_Comm, int, void *);
int PMPI_Attr_put(MPI_Comm, int, void *);
int MPI_Attr_get(MPI_Comm, int, void *, int *);
int PMPI_Attr_get(MPI_Comm, int, void *, int *);
int MPI_Attr_delete(MPI_Comm, int);
int PMPI_Attr_delete(MPI_Comm, int);

/* Topologies. Cartesian: (comm, ndims, dims, periods, reorder, comm_cart) */
int MPI_Cart_create(MPI_Comm, int, const int[], const int[], int, MPI_Comm *);
int PMPI_Cart_create(MPI_Comm, int, const int[], const int[], int, MPI_Comm *);
/* (nnodes, ndims, dims) */
int MPI_Dims_create(int, int, int[]);
int PMPI_Dims_create(int, int, int[]);
/* (comm, maxdims, dims, periods, coords) */
int MPI_Cart_get(MPI_Comm, int, int[], int[], int[]);
int PMPI_Cart_get(MPI_Comm, int, int[], int[], int[]);
int MPI_Cartdim_get(MPI_Comm, int *);
int PMPI_Cartdim_get(MPI_Comm, int *);
/* (comm, coords, rank) */
int MPI_Cart_rank(MPI_Comm, const int[], int *);
int PMPI_Cart_rank(MPI_Comm, const int[], int *);
/* (comm, rank, maxdims, coords) */
int MPI_Cart_coords(MPI_Comm, int, int, int[]);
int PMPI_Cart_coords(MPI_Comm, int, int, int[]);
/* (comm, direction, disp, rank_source, rank_dest) */
int MPI_Cart_shift(MPI_Comm, int, int, int *, int *);
int PMPI_Cart_shift(MPI_Comm, int, int, int *, int *);
/* (comm, remain_dims, newcomm) */
int MPI_Cart_sub(MPI_Comm, const int[], MPI_Comm *);
int PMPI_Cart_sub(MPI_Comm, const int[], MPI_Comm *);
/* (comm, ndims, dims, periods, newrank) */
int MPI_Cart_map(MPI_Comm, int, const int[], const int[], int *);
int PMPI_Cart_map(MPI_Comm, int, const int[], const int[], int *);
/* (comm, nnodes, index, edges, reorder, comm_graph) */
int MPI_Graph_create(MPI_Comm, int, const int[], const int[], int, MPI_Comm *);
int PMPI_Graph_create(MPI_Comm, int, const int[], const int[], int, MPI_Comm *);
/* (comm, nnodes, nedges) */
int MPI_Graphdims_get(MPI_Comm, int *, int *);
int PMPI_Graphdims_get(MPI_Comm, int *, int *);
/* (comm, maxindex, maxedges, index, edges) */
int MPI_Graph_get(MPI_Comm, int, int, int[], int[]);
int PMPI_Graph_get(MPI_Comm, int, int, int[], int[]);
/* (comm, rank, nneighbors) */
int MPI_Graph_neighbors_count(MPI_Comm, int, int *);
int PMPI_Graph_neighbors_count(MPI_Comm, int, int *);
/* (comm, rank, maxneighbors, neighbors) */
int MPI_Graph_neighbors(MPI_Comm, int, int, int[]);
int PMPI_Graph_neighbors(MPI_Comm, int, int, int[]);
/* (comm, nnodes, index, edges, newrank) */
int MPI_Graph_map(MPI_Comm, int, const int[], const int[], int *);
int PMPI_Graph_map(MPI_Comm, int, const int[], const int[], int *);
int MPI_Topo_test(MPI_Comm, int *);
int PMPI_Topo_test(MPI_Comm, int *);
/* (comm, indegree, sources, sourceweights, outdegree, destinations, destweights, info,
 *  reorder, comm_dist_graph) */
int MPI_Dist_graph_create_adjacent(MPI_Comm, int, const int[], const int[], int,
                                   const int[], const int[], MPI_Info, int, MPI_Comm *);
int PMPI_Dist_graph_create_adjacent(MPI_Comm, int, const int[], const int[], int,
                                    const int[], const int[], MPI_Info, int, MPI_Comm *);
/* (comm, n, sources, degrees, destinations, weights, info, reorder, comm_dist_graph) */
int MPI_Dist_graph_create(MPI_Comm, int, const int[], const int[], const int[], const int[],
                          MPI_Info, int, MPI_Comm *);
int PMPI_Dist_graph_create(MPI_Comm, int, const int[], const int[], const int[],
                           const int[], MPI_Info, int, MPI_Comm *);
/* (comm, indegree, outdegree, weighted) */
int MPI_Dist_graph_neighbors_count(MPI_Comm, int *, int *, int *);
int PMPI_Dist_graph_neighbors_count(MPI_Comm, int *, int *, int *);
/* (comm, maxindegree, sources, sourceweights, maxoutdegree, destinations, destweights) */
int MPI_Dist_graph_neighbors(MPI_Comm, int, int[], int[], int, int[], int[]);
int PMPI_Dist_graph_neighbors(MPI_Comm, int, int[], int[], int, int[], int[]);

/* Info objects */
int MPI_Info_create(MPI_Info *);
int PMPI_Info_create(MPI_Info *);
int MPI_Info_free(MPI_Info *);
int PMPI_Info_free(MPI_Info *);
/* (info, key, value) */
int MPI_Info_set(MPI_Info, const char *, const char *);
int PMPI_Info_set(MPI_Info, const char *, const char *);
/* (info, key, valuelen, value, flag) */
int MPI_Info_get(MPI_Info, const char *, int, char *, int *);
int PMPI_Info_get(MPI_Info, const char *, int, char *, int *);
/* (info, key, valuelen, flag) */
int MPI_Info_get_valuelen(MPI_Info, const char *, int *, int *);
int PMPI_Info_get_valuelen(MPI_Info, const char *, int *, int *);
int MPI_Info_delete(MPI_Info, const char *);
int PMPI_Info_delete(MPI_Info, const char *);
int MPI_Info_dup(MPI_Info, MPI_Info *);
int PMPI_Info_dup(MPI_Info, MPI_Info *);
int MPI_Info_get_nkeys(MPI_Info, int *);
int PMPI_Info_get_nkeys(MPI_Info, int *);
/* (info, n, key) */
int MPI_Info_get_nthkey(MPI_Info, int, char *);
int PMPI_Info_get_nthkey(MPI_Info, int, char *);

/* Point-to-point: blocking.
 * (buf, count, datatype, dest or source, tag, comm [, status]) */
int MPI_Send(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int PMPI_Send(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int MPI_Bsend(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int PMPI_Bsend(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int MPI_Ssend(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int PMPI_Ssend(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int MPI_Rsend(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int PMPI_Rsend(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int MPI_Recv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
int PMPI_Recv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
/* (sendbuf, sendcount, sendtype, dest, sendtag,
 *  recvbuf, recvcount, recvtype, source, recvtag, comm, status) */
int MPI_Sendrecv(const void *, int, MPI_Datatype, int, int,
                 void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
int PMPI_Sendrecv(const void *, int, MPI_Datatype, int, int,
                  void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
/* (buf, count, datatype, dest, sendtag, source, recvtag, comm, status) */
int MPI_Sendrecv_replace(void *, int, MPI_Datatype, int, int, int, int, MPI_Comm,
                         MPI_Status *);
int PMPI_Sendrecv_replace(void *, int, MPI_Datatype, int, int, int, int, MPI_Comm,
                          MPI_Status *);
/* (source, tag, comm, [flag,] status) */
int MPI_Probe(int, int, MPI_Comm, MPI_Status *);
int PMPI_Probe(int, int, MPI_Comm, MPI_Status *);
int MPI_Iprobe(int, int, MPI_Comm, int *, MPI_Status *);
int PMPI_Iprobe(int, int, MPI_Comm, int *, MPI_Status *);
int MPI_Mprobe(int, int, MPI_Comm, MPI_Message *, MPI_Status *);
int PMPI_Mprobe(int, int, MPI_Comm, MPI_Message *, MPI_Status *);
int MPI_Improbe(int, int, MPI_Comm, int *, MPI_Message *, MPI_Status *);
int PMPI_Improbe(int, int, MPI_Comm, int *, MPI_Message *, MPI_Status *);
int MPI_Mrecv(void *, int, MPI_Datatype, MPI_Message *, MPI_Status *);
int PMPI_Mrecv(void *, int, MPI_Datatype, MPI_Message *, MPI_Status *);
int MPI_Imrecv(void *, int, MPI_Datatype, MPI_Message *, MPI_Request *);
int PMPI_Imrecv(void *, int, MPI_Datatype, MPI_Message *, MPI_Request *);

/* Point-to-point: nonblocking (..., request) */
int MPI_Isend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Isend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int MPI_Ibsend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Ibsend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int MPI_Issend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Issend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int MPI_Irsend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Irsend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int MPI_Irecv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Irecv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

/* Point-to-point: persistent (..., request) */
int MPI_Send_init(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Send_init(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int MPI_Bsend_init(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Bsend_init(const void *, int, MPI_Datatype, int, int, MPI_Comm,
                    MPI_Request *);
int MPI_Ssend_init(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Ssend_init(const void *, int, MPI_Datatype, int, int, MPI_Comm,
                    MPI_Request *);
int MPI_Rsend_init(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Rsend_init(const void *, int, MPI_Datatype, int, int, MPI_Comm,
                    MPI_Request *);
int MPI_Recv_init(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int PMPI_Recv_init(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int MPI_Start(MPI_Request *);
int PMPI_Start(MPI_Request *);
int MPI_Startall(int, MPI_Request *);
int PMPI_Startall(int, MPI_Request *);

/* Completion */
int MPI_Wait(MPI_Request *, MPI_Status *);
int PMPI_Wait(MPI_Request *, MPI_Status *);
/* (count, requests, statuses) */
int MPI_Waitall(int, MPI_Request *, MPI_Status *);
int PMPI_Waitall(int, MPI_Request *, MPI_Status *);
/* (count, requests, index, status) */
int MPI_Waitany(int, MPI_Request *, int *, MPI_Status *);
int PMPI_Waitany(int, MPI_Request *, int *, MPI_Status *);
/* (incount, requests, outcount, indices, statuses) */
int MPI_Waitsome(int, MPI_Request *, int *, int *, MPI_Status *);
int PMPI_Waitsome(int, MPI_Request *, int *, int *, MPI_Status *);
/* (request, flag, status) */
int MPI_Test(MPI_Request *, int *, MPI_Status *);
int PMPI_Test(MPI_Request *, int *, MPI_Status *);
/* (count, requests, flag, statuses) */
int MPI_Testall(int, MPI_Request *, int *, MPI_Status *);
int PMPI_Testall(int, MPI_Request *, int *, MPI_Status *);
/* (count, requests, index, flag, status) */
int MPI_Testany(int, MPI_Request *, int *, int *, MPI_Status *);
int PMPI_Testany(int, MPI_Request *, int *, int *, MPI_Status *);
/* (incount, requests, outcount, indices, statuses) */
int MPI_Testsome(int, MPI_Request *, int *, int *, MPI_Status *);
int PMPI_Testsome(int, MPI_Request *, int *, int *, MPI_Status *);
int MPI_Cancel(MPI_Request *);
int PMPI_Cancel(MPI_Request *);
int MPI_Test_cancelled(const MPI_Status *, int *);
int PMPI_Test_cancelled(const MPI_Status *, int *);
int MPI_Request_free(MPI_Request *);
int PMPI_Request_free(MPI_Request *);

/* Generalized requests: (query_fn, free_fn, cancel_fn, extra_state, request) */
int MPI_Grequest_start(MPI_Grequest_query_function *, MPI_Grequest_free_function *,
                       MPI_Grequest_cancel_function *, void *, MPI_Request *);
int PMPI_Grequest_start(MPI_Grequest_query_function *, MPI_Grequest_free_function *,
                        MPI_Grequest_cancel_function *, void *, MPI_Request *);
int MPI_Grequest_complete(MPI_Request);
int PMPI_Grequest_complete(MPI_Request);
/* (request, flag, status) */
int MPI_Request_get_status(MPI_Request, int *, MPI_Status *);
int PMPI_Request_get_status(MPI_Request, int *, MPI_Status *);
/* (status, datatype, count) */
int MPI_Status_set_elements(MPI_Status *, MPI_Datatype, int);
int PMPI_Status_set_elements(MPI_Status *, MPI_Datatype, int);
int MPI_Status_set_elements_x(MPI_Status *, MPI_Datatype, MPI_Count);
int PMPI_Status_set_elements_x(MPI_Status *, MPI_Datatype, MPI_Count);
int MPI_Status_set_cancelled(MPI_Status *, int);
int PMPI_Status_set_cancelled(MPI_Status *, int);

/* Memory and profiling: (size, info, pointer to the base pointer) */
int MPI_Alloc_mem(MPI_Aint, MPI_Info, void *);
int PMPI_Alloc_mem(MPI_Aint, MPI_Info, void *);
int MPI_Free_mem(void *);
int PMPI_Free_mem(void *);
int MPI_Pcontrol(const int, ...);
int PMPI_Pcontrol(const int, ...);

/* Status and datatype sizes */
int MPI_Get_count(const MPI_Status *, MPI_Datatype, int *);
int PMPI_Get_count(const MPI_Status *, MPI_Datatype, int *);
int MPI_Get_elements(const MPI_Status *, MPI_Datatype, int *);
int PMPI_Get_elements(const MPI_Status *, MPI_Datatype, int *);
int MPI_Get_elements_x(const MPI_Status *, MPI_Datatype, MPI_Count *);
int PMPI_Get_elements_x(const MPI_Status *, MPI_Datatype, MPI_Count *);
int MPI_Type_size(MPI_Datatype, int *);
int PMPI_Type_size(MPI_Datatype, int *);
int MPI_Type_size_x(MPI_Datatype, MPI_Count *);
int PMPI_Type_size_x(MPI_Datatype, MPI_Count *);

/* Derived datatypes (MPI-1 names; those removed in MPI-3.0 are marked) */
int MPI_Type_contiguous(int, MPI_Datatype, MPI_Datatype *);
int PMPI_Type_contiguous(int, MPI_Datatype, MPI_Datatype *);
/* (count, blocklength, stride, oldtype, newtype) */
int MPI_Type_vector(int, int, int, MPI_Datatype, MPI_Datatype *);
int PMPI_Type_vector(int, int, int, MPI_Datatype, MPI_Datatype *);
int MPI_Type_hvector(int, int, MPI_Aint, MPI_Datatype, MPI_Datatype *); /* removed in MPI-3.0 */
int PMPI_Type_hvector(int, int, MPI_Aint, MPI_Datatype, MPI_Datatype *);
/* (count, blocklengths, displacements, oldtype, newtype) */
int MPI_Type_indexed(int, const int *, const int *, MPI_Datatype, MPI_Datatype *);
int PMPI_Type_indexed(int, const int *, const int *, MPI_Datatype, MPI_Datatype *);
int MPI_Type_hindexed(int, const int *, const MPI_Aint *, MPI_Datatype,
                      MPI_Datatype *); /* removed in MPI-3.0 */
int PMPI_Type_hindexed(int, const int *, const MPI_Aint *, MPI_Datatype, MPI_Datatype *);
/* (count, blocklengths, displacements, types, newtype) */
int MPI_Type_struct(int, const int *, const MPI_Aint *, const MPI_Datatype *,
                    MPI_Datatype *); /* removed in MPI-3.0 */
int PMPI_Type_struct(int, const int *, const MPI_Aint *, const MPI_Datatype *, MPI_Datatype *);
int MPI_Type_commit(MPI_Datatype *);
int PMPI_Type_commit(MPI_Datatype *);
int MPI_Type_free(MPI_Datatype *);
int PMPI_Type_free(MPI_Datatype *);
int MPI_Type_extent(MPI_Datatype, MPI_Aint *); /* removed in MPI-3.0 */
int PMPI_Type_extent(MPI_Datatype, MPI_Aint *);
int MPI_Type_lb(MPI_Datatype, MPI_Aint *); /* removed in MPI-3.0 */
int PMPI_Type_lb(MPI_Datatype, MPI_Aint *);
int MPI_Type_ub(MPI_Datatype, MPI_Aint *); /* removed in MPI-3.0 */
int PMPI_Type_ub(MPI_Datatype, MPI_Aint *);
int MPI_Address(const void *, MPI_Aint *); /* removed in MPI-3.0 */
int PMPI_Address(const void *, MPI_Aint *);

/* Derived datatypes (MPI-2 and later names) */
int MPI_Get_address(const void *, MPI_Aint *);
int PMPI_Get_address(const void *, MPI_Aint *);
MPI_Aint MPI_Aint_add(MPI_Aint, MPI_Aint);
MPI_Aint PMPI_Aint_add(MPI_Aint, MPI_Aint);
MPI_Aint MPI_Aint_diff(MPI_Aint, MPI_Aint);
MPI_Aint PMPI_Aint_diff(MPI_Aint, MPI_Aint);
/* (count, blocklength, stride in bytes, oldtype, newtype) */
int MPI_Type_create_hvector(int, int, MPI_Aint, MPI_Datatype, MPI_Datatype *);
int PMPI_Type_create_hvector(int, int, MPI_Aint, MPI_Datatype, MPI_Datatype *);
int MPI_Type_create_hindexed(int, const int[], const MPI_Aint[], MPI_Datatype, MPI_Datatype *);
int PMPI_Type_create_hindexed(int, const int[], const MPI_Aint[], MPI_Datatype, MPI_Datatype *);
/* (count, blocklength, displacements, oldtype, newtype) */
int MPI_Type_create_indexed_block(int, int, const int[], MPI_Datatype, MPI_Datatype *);
int PMPI_Type_create_indexed_block(int, int, const int[], MPI_Datatype, MPI_Datatype *);
int MPI_Type_create_hindexed_block(int, int, const MPI_Aint[], MPI_Datatype, MPI_Datatype *);
int PMPI_Type_create_hindexed_block(int, int, const MPI_Aint[], MPI_Datatype, MPI_Datatype *);
int MPI_Type_create_struct(int, const int[], const MPI_Aint[], const MPI_Datatype[],
                           MPI_Datatype *);
int PMPI_Type_create_struct(int, const int[], const MPI_Aint[], const MPI_Datatype[],
                            MPI_Datatype *);
/* (oldtype, lb, extent, newtype) */
int MPI_Type_create_resized(MPI_Datatype, MPI_Aint, MPI_Aint, MPI_Datatype *);
int PMPI_Type_create_resized(MPI_Datatype, MPI_Aint, MPI_Aint, MPI_Datatype *);
int MPI_Type_dup(MPI_Datatype, MPI_Datatype *);
int PMPI_Type_dup(MPI_Datatype, MPI_Datatype *);
/* (ndims, sizes, subsizes, starts, order, oldtype, newtype) */
int MPI_Type_create_subarray(int, const int[], const int[], const int[], int, MPI_Datatype,
                             MPI_Datatype *);
int PMPI_Type_create_subarray(int, const int[], const int[], const int[], int, MPI_Datatype,
                              MPI_Datatype *);
/* (size, rank, ndims, gsizes, distribs, dargs, psizes, order, oldtype, newtype) */
int MPI_Type_create_darray(int, int, int, const int[], const int[], const int[], const int[], int,
                           MPI_Datatype, MPI_Datatype *);
int PMPI_Type_create_darray(int, int, int, const int[], const int[], const int[], const int[],
                            int, MPI_Datatype, MPI_Datatype *);
/* (datatype, lb, extent) */
int MPI_Type_get_extent(MPI_Datatype, MPI_Aint *, MPI_Aint *);
int PMPI_Type_get_extent(MPI_Datatype, MPI_Aint *, MPI_Aint *);
int MPI_Type_get_extent_x(MPI_Datatype, MPI_Count *, MPI_Count *);
int PMPI_Type_get_extent_x(MPI_Datatype, MPI_Count *, MPI_Count *);
int MPI_Type_get_true_extent(MPI_Datatype, MPI_Aint *, MPI_Aint *);
int PMPI_Type_get_true_extent(MPI_Datatype, MPI_Aint *, MPI_Aint *);
int MPI_Type_get_true_extent_x(MPI_Datatype, MPI_Count *, MPI_Count *);
int PMPI_Type_get_true_extent_x(MPI_Datatype, MPI_Count *, MPI_Count *);
/* (datatype, num_integers, num_addresses, num_datatypes, combiner) */
int MPI_Type_get_envelope(MPI_Datatype, int *, int *, int *, int *);
int PMPI_Type_get_envelope(MPI_Datatype, int *, int *, int *, int *);
/* (datatype, max_integers, max_addresses, max_datatypes, integers, addresses, datatypes) */
int MPI_Type_get_contents(MPI_Datatype, int, int, int, int[], MPI_Aint[], MPI_Datatype[]);
int PMPI_Type_get_contents(MPI_Datatype, int, int, int, int[], MPI_Aint[], MPI_Datatype[]);
int MPI_Type_set_name(MPI_Datatype, const char *);
int PMPI_Type_set_name(MPI_Datatype, const char *);
int MPI_Type_get_name(MPI_Datatype, char *, int *);
int PMPI_Type_get_name(MPI_Datatype, char *, int *);
/* (typeclass, size, datatype) */
int MPI_Type_match_size(int, int, MPI_Datatype *);
int PMPI_Type_match_size(int, int, MPI_Datatype *);
/* The Fortran 90 parameterized types: (p, r, newtype) / (r, newtype) */
int MPI_Type_create_f90_real(int, int, MPI_Datatype *);
int PMPI_Type_create_f90_real(int, int, MPI_Datatype *);
int MPI_Type_create_f90_complex(int, int, MPI_Datatype *);
int PMPI_Type_create_f90_complex(int, int, MPI_Datatype *);
int MPI_Type_create_f90_integer(int, MPI_Datatype *);
int PMPI_Type_create_f90_integer(int, MPI_Datatype *);

/* Packing: (inbuf, incount, datatype, outbuf, outsize, position, comm) and
 * (inbuf, insize, position, outbuf, outcount, datatype, comm) */
int MPI_Pack(const void *, int, MPI_Datatype, void *, int, int *, MPI_Comm);
int PMPI_Pack(const void *, int, MPI_Datatype, void *, int, int *, MPI_Comm);
int MPI_Unpack(const void *, int, int *, void *, int, MPI_Datatype, MPI_Comm);
int PMPI_Unpack(const void *, int, int *, void *, int, MPI_Datatype, MPI_Comm);
int MPI_Pack_size(int, MPI_Datatype, MPI_Comm, int *);
int PMPI_Pack_size(int, MPI_Datatype, MPI_Comm, int *);
/* (datarep, inbuf, incount, datatype, outbuf, outsize, position) and
 * (datarep, inbuf, insize, position, outbuf, outcount, datatype) */
int MPI_Pack_external(const char[], const void *, int, MPI_Datatype, void *, MPI_Aint,
                      MPI_Aint *);
int PMPI_Pack_external(const char[], const void *, int, MPI_Datatype, void *, MPI_Aint,
                       MPI_Aint *);
int MPI_Unpack_external(const char[], const void *, MPI_Aint, MPI_Aint *, void *, int,
                        MPI_Datatype);
int PMPI_Unpack_external(const char[], const void *, MPI_Aint, MPI_Aint *, void *, int,
                         MPI_Datatype);
int MPI_Pack_external_size(const char[], int, MPI_Datatype, MPI_Aint *);
int PMPI_Pack_external_size(const char[], int, MPI_Datatype, MPI_Aint *);

/* Buffered mode: (buffer, size) / (address of a buffer pointer, size) */
int MPI_Buffer_attach(void *, int);
int PMPI_Buffer_attach(void *, int);
int MPI_Buffer_detach(void *, int *);
int PMPI_Buffer_detach(void *, int *);

/* Collectives. Rooted: (..., root, comm); nonblocking forms end with
 * (..., request). Alltoallw displacements are in bytes. */
int MPI_Barrier(MPI_Comm);
int PMPI_Barrier(MPI_Comm);
/* (buffer, count, datatype, root, comm) */
int MPI_Bcast(void *, int, MPI_Datatype, int, MPI_Comm);
int PMPI_Bcast(void *, int, MPI_Datatype, int, MPI_Comm);
/* (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) */
int MPI_Gather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
int PMPI_Gather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
/* (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm) */
int MPI_Gatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                MPI_Datatype, int, MPI_Comm);
int PMPI_Gatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                 MPI_Datatype, int, MPI_Comm);
/* (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) */
int MPI_Scatter(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
int PMPI_Scatter(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
/* (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm) */
int MPI_Scatterv(const void *, const int *, const int *, MPI_Datatype, void *, int,
                 MPI_Datatype, int, MPI_Comm);
int PMPI_Scatterv(const void *, const int *, const int *, MPI_Datatype, void *, int,
                  MPI_Datatype, int, MPI_Comm);
/* (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) */
int MPI_Allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int PMPI_Allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
/* (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm) */
int MPI_Allgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                   MPI_Datatype, MPI_Comm);
int PMPI_Allgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                    MPI_Datatype, MPI_Comm);
/* (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) */
int MPI_Alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int PMPI_Alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
/* (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm) */
int MPI_Alltoallv(const void *, const int *, const int *, MPI_Datatype, void *, const int *,
                  const int *, MPI_Datatype, MPI_Comm);
int PMPI_Alltoallv(const void *, const int *, const int *, MPI_Datatype, void *, const int *,
                   const int *, MPI_Datatype, MPI_Comm);
/* (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm) */
int MPI_Alltoallw(const void *, const int *, const int *, const MPI_Datatype *, void *,
                  const int *, const int *, const MPI_Datatype *, MPI_Comm);
int PMPI_Alltoallw(const void *, const int *, const int *, const MPI_Datatype *, void *,
                   const int *, const int *, const MPI_Datatype *, MPI_Comm);
/* (sendbuf, recvbuf, count, datatype, op, root, comm) */
int MPI_Reduce(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
int PMPI_Reduce(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
/* (sendbuf, recvbuf, count, datatype, op, comm) */
int MPI_Allreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Allreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
/* (sendbuf, recvbuf, recvcounts, datatype, op, comm) */
int MPI_Reduce_scatter(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Reduce_scatter(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm);
/* (sendbuf, recvbuf, recvcount, datatype, op, comm) */
int MPI_Reduce_scatter_block(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Reduce_scatter_block(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
/* (sendbuf, recvbuf, count, datatype, op, comm) */
int MPI_Scan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Scan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int MPI_Exscan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Exscan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

/* Nonblocking collectives: the arguments of the blocking form, then the request */
int MPI_Ibarrier(MPI_Comm, MPI_Request *);
int PMPI_Ibarrier(MPI_Comm, MPI_Request *);
int MPI_Ibcast(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
int PMPI_Ibcast(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Request *);
int MPI_Igather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm,
                MPI_Request *);
int PMPI_Igather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm,
                 MPI_Request *);
int MPI_Igatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                 MPI_Datatype, int, MPI_Comm, MPI_Request *);
int PMPI_Igatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                  MPI_Datatype, int, MPI_Comm, MPI_Request *);
int MPI_Iscatter(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm,
                 MPI_Request *);
int PMPI_Iscatter(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm,
                  MPI_Request *);
int MPI_Iscatterv(const void *, const int *, const int *, MPI_Datatype, void *, int,
                  MPI_Datatype, int, MPI_Comm, MPI_Request *);
int PMPI_Iscatterv(const void *, const int *, const int *, MPI_Datatype, void *, int,
                   MPI_Datatype, int, MPI_Comm, MPI_Request *);
int MPI_Iallgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                   MPI_Request *);
int PMPI_Iallgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                    MPI_Request *);
int MPI_Iallgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                    MPI_Datatype, MPI_Comm, MPI_Request *);
int PMPI_Iallgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                     MPI_Datatype, MPI_Comm, MPI_Request *);
int MPI_Ialltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                  MPI_Request *);
int PMPI_Ialltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                   MPI_Request *);
int MPI_Ialltoallv(const void *, const int *, const int *, MPI_Datatype, void *, const int *,
                   const int *, MPI_Datatype, MPI_Comm, MPI_Request *);
int PMPI_Ialltoallv(const void *, const int *, const int *, MPI_Datatype, void *,
                    const int *, const int *, MPI_Datatype, MPI_Comm, MPI_Request *);
int MPI_Ialltoallw(const void *, const int *, const int *, const MPI_Datatype *, void *,
                   const int *, const int *, const MPI_Datatype *, MPI_Comm, MPI_Request *);
int PMPI_Ialltoallw(const void *, const int *, const int *, const MPI_Datatype *, void *,
                    const int *, const int *, const MPI_Datatype *, MPI_Comm, MPI_Request *);
int MPI_Ireduce(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm,
                MPI_Request *);
int PMPI_Ireduce(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm,
                 MPI_Request *);
int MPI_Iallreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
int PMPI_Iallreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
int MPI_Ireduce_scatter(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm,
                        MPI_Request *);
int PMPI_Ireduce_scatter(const void *, void *, const int *, MPI_Datatype, MPI_Op, MPI_Comm,
                         MPI_Request *);
int MPI_Ireduce_scatter_block(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm,
                              MPI_Request *);
int PMPI_Ireduce_scatter_block(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm,
                               MPI_Request *);
int MPI_Iscan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
int PMPI_Iscan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
int MPI_Iexscan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
int PMPI_Iexscan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);

/* Neighbourhood collectives (MPI-3.1 7.6), on Cartesian, graph and
 * distributed-graph communicators. */
int MPI_Neighbor_allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int PMPI_Neighbor_allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int MPI_Neighbor_allgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                            MPI_Datatype, MPI_Comm);
int PMPI_Neighbor_allgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                             MPI_Datatype, MPI_Comm);
int MPI_Neighbor_alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int PMPI_Neighbor_alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int MPI_Neighbor_alltoallv(const void *, const int *, const int *, MPI_Datatype, void *,
                           const int *, const int *, MPI_Datatype, MPI_Comm);
int PMPI_Neighbor_alltoallv(const void *, const int *, const int *, MPI_Datatype, void *,
                            const int *, const int *, MPI_Datatype, MPI_Comm);
int MPI_Neighbor_alltoallw(const void *, const int *, const MPI_Aint *, const MPI_Datatype *,
                           void *, const int *, const MPI_Aint *, const MPI_Datatype *, MPI_Comm);
int PMPI_Neighbor_alltoallw(const void *, const int *, const MPI_Aint *, const MPI_Datatype *,
                            void *, const int *, const MPI_Aint *, const MPI_Datatype *,
                            MPI_Comm);
int MPI_Ineighbor_allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                            MPI_Request *);
int PMPI_Ineighbor_allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype,
                             MPI_Comm, MPI_Request *);
int MPI_Ineighbor_allgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                             MPI_Datatype, MPI_Comm, MPI_Request *);
int PMPI_Ineighbor_allgatherv(const void *, int, MPI_Datatype, void *, const int *, const int *,
                              MPI_Datatype, MPI_Comm, MPI_Request *);
int MPI_Ineighbor_alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                           MPI_Request *);
int PMPI_Ineighbor_alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                            MPI_Request *);
int MPI_Ineighbor_alltoallv(const void *, const int *, const int *, MPI_Datatype, void *,
                            const int *, const int *, MPI_Datatype, MPI_Comm, MPI_Request *);
int PMPI_Ineighbor_alltoallv(const void *, const int *, const int *, MPI_Datatype, void *,
                             const int *, const int *, MPI_Datatype, MPI_Comm, MPI_Request *);
int MPI_Ineighbor_alltoallw(const void *, const int *, const MPI_Aint *, const MPI_Datatype *,
                            void *, const int *, const MPI_Aint *, const MPI_Datatype *,
                            MPI_Comm, MPI_Request *);
int PMPI_Ineighbor_alltoallw(const void *, const int *, const MPI_Aint *, const MPI_Datatype *,
                             void *, const int *, const MPI_Aint *, const MPI_Datatype *,
                             MPI_Comm, MPI_Request *);

/* Reduction operations: (user function, commute, op) */
int MPI_Op_create(MPI_User_function *, int, MPI_Op *);
int PMPI_Op_create(MPI_User_function *, int, MPI_Op *);
int MPI_Op_free(MPI_Op *);
int PMPI_Op_free(MPI_Op *);
int MPI_Op_commutative(MPI_Op, int *);
int PMPI_Op_commutative(MPI_Op, int *);
/* (inbuf, inoutbuf, count, datatype, op) */
int MPI_Reduce_local(const void *, void *, int, MPI_Datatype, MPI_Op);
int PMPI_Reduce_local(const void *, void *, int, MPI_Datatype, MPI_Op);

/* Language interoperability (the identity, see HANDLES above) */
MPI_Fint MPI_Comm_c2f(MPI_Comm);
MPI_Fint PMPI_Comm_c2f(MPI_Comm);
MPI_Comm MPI_Comm_f2c(MPI_Fint);
MPI_Comm PMPI_Comm_f2c(MPI_Fint);
MPI_Fint MPI_Type_c2f(MPI_Datatype);
MPI_Fint PMPI_Type_c2f(MPI_Datatype);
MPI_Datatype MPI_Type_f2c(MPI_Fint);
MPI_Datatype PMPI_Type_f2c(MPI_Fint);
MPI_Fint MPI_Request_c2f(MPI_Request);
MPI_Fint PMPI_Request_c2f(MPI_Request);
MPI_Request MPI_Request_f2c(MPI_Fint);
MPI_Request PMPI_Request_f2c(MPI_Fint);
MPI_Fint MPI_Op_c2f(MPI_Op);
MPI_Fint PMPI_Op_c2f(MPI_Op);
MPI_Op MPI_Op_f2c(MPI_Fint);
MPI_Op PMPI_Op_f2c(MPI_Fint);
MPI_Fint MPI_Group_c2f(MPI_Group);
MPI_Fint PMPI_Group_c2f(MPI_Group);
MPI_Group MPI_Group_f2c(MPI_Fint);
MPI_Group PMPI_Group_f2c(MPI_Fint);
MPI_Fint MPI_Errhandler_c2f(MPI_Errhandler);
MPI_Fint PMPI_Errhandler_c2f(MPI_Errhandler);
MPI_Errhandler MPI_Errhandler_f2c(MPI_Fint);
MPI_Errhandler PMPI_Errhandler_f2c(MPI_Fint);
MPI_Fint MPI_Info_c2f(MPI_Info);
MPI_Fint PMPI_Info_c2f(MPI_Info);
MPI_Info MPI_Info_f2c(MPI_Fint);
MPI_Info PMPI_Info_f2c(MPI_Fint);
MPI_Fint MPI_Win_c2f(MPI_Win);
MPI_Fint PMPI_Win_c2f(MPI_Win);
MPI_Win MPI_Win_f2c(MPI_Fint);
MPI_Win PMPI_Win_f2c(MPI_Fint);
MPI_Fint MPI_File_c2f(MPI_File);
MPI_Fint PMPI_File_c2f(MPI_File);
MPI_File MPI_File_f2c(MPI_Fint);
MPI_File PMPI_File_f2c(MPI_Fint);
MPI_Fint MPI_Message_c2f(MPI_Message);
MPI_Fint PMPI_Message_c2f(MPI_Message);
MPI_Message MPI_Message_f2c(MPI_Fint);
MPI_Message PMPI_Message_f2c(MPI_Fint);
/* Statuses: (f_status, c_status) / (c_status, f_status); a Fortran status
 * is MPI_Fint[MPI_F_STATUS_SIZE] */
int MPI_Status_f2c(const MPI_Fint *, MPI_Status *);
int PMPI_Status_f2c(const MPI_Fint *, MPI_Status *);
int MPI_Status_c2f(const MPI_Status *, MPI_Fint *);
int PMPI_Status_c2f(const MPI_Status *, MPI_Fint *);

/* ======================================================================== */
/* Fault tolerance: User-Level Failure Mitigation (ULFM)                     */
/* ======================================================================== */
/* As Open MPI 5 (include <mpi-ext.h> there; MPICH programs find the MPIX_
 * names here). Semantics: docs/fault_tolerance.md. With mpirun --with-ft ulfm
 * a job survives process failures; without it these calls work in a job
 * without failures (a failure ends the job). The error classes
 * MPIX_ERR_PROC_FAILED, MPIX_ERR_PROC_FAILED_PENDING, MPIX_ERR_REVOKED and the
 * attribute key MPIX_FT are defined above. */
#define MPIX_HAVE_ULFM 1
int MPIX_Comm_revoke(MPI_Comm comm);
int PMPIX_Comm_revoke(MPI_Comm comm);
int MPIX_Comm_is_revoked(MPI_Comm comm, int *flag);
int PMPIX_Comm_is_revoked(MPI_Comm comm, int *flag);
int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
int PMPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm);
int MPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
int PMPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
/* Replication (mpirun --replicas R, docs/replication.md): which replica of
 * its rank this process is (0..R-1) and how many there are (1 without). */
int MPIX_Replica_info(int *replica, int *replicas);
int PMPIX_Replica_info(int *replica, int *replicas);
int MPIX_Comm_agree(MPI_Comm comm, int *flag);
int PMPIX_Comm_agree(MPI_Comm comm, int *flag);
int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request);
int PMPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request);
int MPIX_Comm_get_failed(MPI_Comm comm, MPI_Group *failedgroup);
int PMPIX_Comm_get_failed(MPI_Comm comm, MPI_Group *failedgroup);
int MPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int *num_acked);
int PMPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int *num_acked);
int MPIX_Comm_failure_ack(MPI_Comm comm);
int PMPIX_Comm_failure_ack(MPI_Comm comm);
int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp);
int PMPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp);

#ifdef __cplusplus
}
#endif

#endif /* ULMPI_MPI_H_INCLUDED */
