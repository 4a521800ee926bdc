// abi_cxx.cpp -- include/mpi.h against mpi/datatype/predefined.def, as C++.
//
// Nearly everything here is a static_assert: if this file compiles, the
// handle values, the datatype table, the type widths, the status layout, the
// error-class numbering and the MPI_/PMPI_ prototypes agree with the ABI
// described at the top of mpi.h. main() only checks the pointer constants,
// which are not constant expressions.
#include <mpi.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

namespace {

template <class V, class I>
struct LocPair {
    V value;
    I index;
};

enum class Category {
    signed_int,
    unsigned_int,
    floating,
    floating_complex,
    logical,
    character,
    byte,
    packed,
    pair,
    marker,
};

constexpr int handle(int kind, int index) { return (kind << 24) | index; }

// ---------------------------------------------------------------------------
// Typedefs and widths
// ---------------------------------------------------------------------------
static_assert(std::is_same_v<MPI_Comm, int>);
static_assert(std::is_same_v<MPI_Group, int>);
static_assert(std::is_same_v<MPI_Datatype, int>);
static_assert(std::is_same_v<MPI_Op, int>);
static_assert(std::is_same_v<MPI_Errhandler, int>);
static_assert(std::is_same_v<MPI_Request, int>);
static_assert(std::is_same_v<MPI_Info, int>);
static_assert(std::is_same_v<MPI_Win, int>);
static_assert(std::is_same_v<MPI_File, int>);
static_assert(std::is_same_v<MPI_Message, int>);
static_assert(std::is_same_v<MPI_Fint, int>);
static_assert(std::is_same_v<MPI_Aint, long>);
static_assert(std::is_same_v<MPI_Offset, long long>);
static_assert(std::is_same_v<MPI_Count, long long>);
static_assert(sizeof(MPI_Aint) == 8 && sizeof(MPI_Aint) == sizeof(void *));
static_assert(sizeof(MPI_Offset) == 8);
static_assert(sizeof(MPI_Count) == 8);
static_assert(sizeof(long double) == 16 && alignof(long double) == 16);
static_assert(sizeof(wchar_t) == 4);
static_assert(sizeof(bool) == 1);
static_assert(sizeof(int) == 4 && sizeof(long) == 8 && sizeof(long long) == 8);

// Status: 5 ints, public fields first, Fortran indexes match.
static_assert(sizeof(MPI_Status) == 20);
static_assert(offsetof(MPI_Status, MPI_SOURCE) == 0);
static_assert(offsetof(MPI_Status, MPI_TAG) == 4);
static_assert(offsetof(MPI_Status, MPI_ERROR) == 8);
static_assert(offsetof(MPI_Status, count_lo) == 12);
static_assert(offsetof(MPI_Status, count_hi_and_cancelled) == 16);
static_assert(std::is_standard_layout_v<MPI_Status>);
static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status));
static_assert(MPI_F_STATUS_SIZE * sizeof(MPI_Fint) == sizeof(MPI_Status));
static_assert(MPI_F_SOURCE * sizeof(int) == offsetof(MPI_Status, MPI_SOURCE));
static_assert(MPI_F_TAG * sizeof(int) == offsetof(MPI_Status, MPI_TAG));
static_assert(MPI_F_ERROR * sizeof(int) == offsetof(MPI_Status, MPI_ERROR));

// ---------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------
static_assert(ULMPI_KIND_COMM == 0x44 && ULMPI_KIND_GROUP == 0x48 &&
              ULMPI_KIND_DATATYPE == 0x4c && ULMPI_KIND_ERRHANDLER == 0x54 &&
              ULMPI_KIND_OP == 0x58 && ULMPI_KIND_INFO == 0x5c && ULMPI_KIND_WIN == 0x60 &&
              ULMPI_KIND_FILE == 0x64 && ULMPI_KIND_REQUEST == 0x6c &&
              ULMPI_KIND_MESSAGE == 0x70);
static_assert(ULMPI_FIRST_USER_INDEX == 1024);

static_assert(MPI_COMM_NULL == handle(ULMPI_KIND_COMM, 0));
static_assert(MPI_GROUP_NULL == handle(ULMPI_KIND_GROUP, 0));
static_assert(MPI_DATATYPE_NULL == handle(ULMPI_KIND_DATATYPE, 0));
static_assert(MPI_ERRHANDLER_NULL == handle(ULMPI_KIND_ERRHANDLER, 0));
static_assert(MPI_OP_NULL == handle(ULMPI_KIND_OP, 0));
static_assert(MPI_INFO_NULL == handle(ULMPI_KIND_INFO, 0));
static_assert(MPI_WIN_NULL == handle(ULMPI_KIND_WIN, 0));
static_assert(MPI_FILE_NULL == handle(ULMPI_KIND_FILE, 0));
static_assert(MPI_REQUEST_NULL == handle(ULMPI_KIND_REQUEST, 0));
static_assert(MPI_MESSAGE_NULL == handle(ULMPI_KIND_MESSAGE, 0));

static_assert(MPI_COMM_WORLD == handle(ULMPI_KIND_COMM, 1));
static_assert(MPI_COMM_SELF == handle(ULMPI_KIND_COMM, 2));
static_assert(MPI_GROUP_EMPTY == handle(ULMPI_KIND_GROUP, 1));
static_assert(MPI_ERRORS_ARE_FATAL == handle(ULMPI_KIND_ERRHANDLER, 1));
static_assert(MPI_ERRORS_RETURN == handle(ULMPI_KIND_ERRHANDLER, 2));
static_assert(MPI_ERRORS_ABORT == handle(ULMPI_KIND_ERRHANDLER, 3));
static_assert(MPI_INFO_ENV == handle(ULMPI_KIND_INFO, 1));
static_assert(MPI_MESSAGE_NO_PROC == handle(ULMPI_KIND_MESSAGE, 1));

constexpr int ops[] = {MPI_MAX,  MPI_MIN,    MPI_SUM,    MPI_PROD,    MPI_LAND,
                       MPI_BAND, MPI_LOR,    MPI_BOR,    MPI_LXOR,    MPI_BXOR,
                       MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
constexpr bool ops_in_order()
{
    for (int i = 0; i < 14; ++i) {
        if (ops[i] != handle(ULMPI_KIND_OP, i + 1)) {
            return false;
        }
    }
    return true;
}
static_assert(sizeof(ops) / sizeof(ops[0]) == 14 && ops_in_order());

// ---------------------------------------------------------------------------
// The datatype table
// ---------------------------------------------------------------------------
template <class T>
struct Layout {
    static constexpr std::size_t size = sizeof(T);  // data bytes
    static constexpr std::size_t extent = sizeof(T);
    static constexpr std::size_t align = alignof(T);
};
template <>
struct Layout<void> {
    static constexpr std::size_t size = 0;
    static constexpr std::size_t extent = 0;
    static constexpr std::size_t align = 1;
};
template <class V, class I>
struct Layout<LocPair<V, I>> {
    static constexpr std::size_t size = sizeof(V) + sizeof(I);
    static constexpr std::size_t extent = sizeof(LocPair<V, I>);
    static constexpr std::size_t align = alignof(LocPair<V, I>);
};

template <class T>
struct IsComplex : std::false_type {};
template <class T>
struct IsComplex<std::complex<T>> : std::true_type {};
template <class T>
struct IsPair : std::false_type {};
template <class V, class I>
struct IsPair<LocPair<V, I>> : std::true_type {};

// Does the category describe the C++ type?
template <class T>
constexpr bool fits(Category c)
{
    switch (c) {
    case Category::signed_int:
        return std::is_integral_v<T> && std::is_signed_v<T> && !std::is_same_v<T, char> &&
               !std::is_same_v<T, wchar_t>;
    case Category::unsigned_int:
        return std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>;
    case Category::floating:
        return std::is_floating_point_v<T>;
    case Category::floating_complex:
        return IsComplex<T>::value;
    case Category::logical:
        return std::is_same_v<T, bool> || std::is_same_v<T, int>;
    case Category::character:
        return std::is_same_v<T, char> || std::is_same_v<T, wchar_t>;
    case Category::byte:
    case Category::packed:
        return std::is_same_v<T, unsigned char>;
    case Category::pair:
        return IsPair<T>::value;
    case Category::marker:
        return std::is_void_v<T>;
    }
    return false;
}

#define ULMPI_DT_COMPLEX(T) std::complex<T>
#define ULMPI_DT_PAIR(V, I) LocPair<V, I>

// One block of static_asserts per row: the message names the row.
#define ULMPI_DATATYPE(name, idx, sz, ext, al, cat, ctype)                                \
    static_assert(name == handle(ULMPI_KIND_DATATYPE, idx), #name ": handle");            \
    static_assert(idx >= 1 && idx < ULMPI_FIRST_USER_INDEX, #name ": index range");       \
    static_assert(Layout<ctype>::size == sz, #name ": size");                              \
    static_assert(Layout<ctype>::extent == ext, #name ": extent");                         \
    static_assert(Layout<ctype>::align == al, #name ": align");                            \
    static_assert(fits<ctype>(Category::cat), #name ": category does not fit ctype");
#define ULMPI_DATATYPE_ALIAS(alias, name) static_assert(alias == name, #alias ": alias");
#define ULMPI_DATATYPE_UNSUPPORTED(name) \
    static_assert(name == MPI_DATATYPE_NULL, #name ": unsupported, must be MPI_DATATYPE_NULL");
#include "mpi/datatype/predefined.def"

struct Row {
    const char *name;
    int handle;
    int index;
};
constexpr Row rows[] = {
#define ULMPI_DATATYPE(name, idx, sz, ext, al, cat, ctype) {#name, name, idx},
#include "mpi/datatype/predefined.def"
};
constexpr int row_count = sizeof(rows) / sizeof(rows[0]);

// Indexes are exactly 1..N in table order: dense, so that the implementation
// can keep the predefined types in an array, and no two rows share a handle.
constexpr bool indexes_dense()
{
    for (int i = 0; i < row_count; ++i) {
        if (rows[i].index != i + 1) {
            return false;
        }
    }
    return true;
}
static_assert(indexes_dense(), "predefined.def: indexes must be 1..N in order");
static_assert(row_count == 62);

// Spot checks the brief spells out, independent of the table.
static_assert(MPI_LONG_LONG == MPI_LONG_LONG_INT);
static_assert(MPI_C_COMPLEX == MPI_C_FLOAT_COMPLEX);
static_assert(MPI_INT != MPI_INTEGER && MPI_FLOAT != MPI_REAL);

// ---------------------------------------------------------------------------
// Integer constants
// ---------------------------------------------------------------------------
template <std::size_t N>
constexpr bool distinct(const int (&v)[N])
{
    for (std::size_t i = 0; i < N; ++i) {
        for (std::size_t j = i + 1; j < N; ++j) {
            if (v[i] == v[j]) {
                return false;
            }
        }
    }
    return true;
}
template <std::size_t N>
constexpr bool single_bits(const int (&v)[N])
{
    for (std::size_t i = 0; i < N; ++i) {
        if (v[i] <= 0 || (v[i] & (v[i] - 1)) != 0) {
            return false;
        }
    }
    return true;
}

static_assert(MPI_VERSION == 3 && MPI_SUBVERSION == 1);
static_assert(MPI_PROC_NULL == -1 && MPI_ANY_SOURCE == -2 && MPI_ROOT == -3);
static_assert(MPI_ANY_TAG == -1 && MPI_UNDEFINED == -32766);
static_assert(MPI_SUCCESS == 0);
static_assert(MPI_THREAD_SINGLE == 0 && MPI_THREAD_FUNNELED == 1 &&
              MPI_THREAD_SERIALIZED == 2 && MPI_THREAD_MULTIPLE == 3);
static_assert(MPI_MAX_PROCESSOR_NAME == 256 && MPI_MAX_ERROR_STRING == 512 &&
              MPI_MAX_OBJECT_NAME == 128 && MPI_MAX_INFO_KEY == 255 &&
              MPI_MAX_INFO_VAL == 1024 && MPI_MAX_LIBRARY_VERSION_STRING == 8192);
static_assert(MPI_BSEND_OVERHEAD == 96);

constexpr int comparisons[] = {MPI_IDENT, MPI_CONGRUENT, MPI_SIMILAR, MPI_UNEQUAL};
static_assert(distinct(comparisons));
constexpr int topologies[] = {MPI_GRAPH, MPI_CART, MPI_DIST_GRAPH, MPI_UNDEFINED};
static_assert(distinct(topologies));

constexpr int keyvals[] = {MPI_KEYVAL_INVALID, MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL,
                           MPI_UNIVERSE_SIZE, MPI_LASTUSEDCODE, MPI_APPNUM, MPI_WIN_BASE,
                           MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR,
                           MPI_WIN_MODEL};
static_assert(distinct(keyvals));
constexpr bool keyvals_in_range()
{
    for (int k : keyvals) {
        if ((k & ~0xfff) != 0x64400000) {
            return false;
        }
    }
    return MPI_KEYVAL_INVALID == 0x64400000;
}
static_assert(keyvals_in_range());

constexpr int combiners[] = {
    MPI_COMBINER_NAMED,         MPI_COMBINER_DUP,           MPI_COMBINER_CONTIGUOUS,
    MPI_COMBINER_VECTOR,        MPI_COMBINER_HVECTOR_INTEGER, MPI_COMBINER_HVECTOR,
    MPI_COMBINER_INDEXED,       MPI_COMBINER_HINDEXED_INTEGER, MPI_COMBINER_HINDEXED,
    MPI_COMBINER_INDEXED_BLOCK, MPI_COMBINER_HINDEXED_BLOCK, MPI_COMBINER_STRUCT_INTEGER,
    MPI_COMBINER_STRUCT,        MPI_COMBINER_SUBARRAY,      MPI_COMBINER_DARRAY,
    MPI_COMBINER_F90_REAL,      MPI_COMBINER_F90_COMPLEX,   MPI_COMBINER_F90_INTEGER,
    MPI_COMBINER_RESIZED};
static_assert(distinct(combiners));

constexpr int distributions[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE,
                                 MPI_DISTRIBUTE_DFLT_DARG};
static_assert(distinct(distributions) && MPI_ORDER_C != MPI_ORDER_FORTRAN);
static_assert(MPI_DISTRIBUTE_DFLT_DARG < 0);
constexpr int typeclasses[] = {MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_REAL, MPI_TYPECLASS_COMPLEX};
static_assert(distinct(typeclasses));
static_assert(MPI_LOCK_EXCLUSIVE != MPI_LOCK_SHARED);
constexpr int flavors[] = {MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_DYNAMIC,
                           MPI_WIN_FLAVOR_SHARED};
static_assert(distinct(flavors) && MPI_WIN_SEPARATE != MPI_WIN_UNIFIED);
constexpr int seeks[] = {MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END};
static_assert(distinct(seeks) && MPI_DISPLACEMENT_CURRENT < 0);

// Every mode is its own bit, RMA assertions and file modes included, so that
// a mode of the wrong family is detected.
constexpr int modes[] = {MPI_MODE_NOCHECK,  MPI_MODE_NOSTORE,         MPI_MODE_NOPUT,
                         MPI_MODE_NOPRECEDE, MPI_MODE_NOSUCCEED,      MPI_MODE_CREATE,
                         MPI_MODE_RDONLY,   MPI_MODE_WRONLY,          MPI_MODE_RDWR,
                         MPI_MODE_DELETE_ON_CLOSE, MPI_MODE_UNIQUE_OPEN, MPI_MODE_EXCL,
                         MPI_MODE_APPEND,   MPI_MODE_SEQUENTIAL};
static_assert(distinct(modes) && single_bits(modes));

// Error classes: MPI-3.1's classes are 1..73 in this order; 75..77 are the
// ULFM classes with Open MPI's values; MPI_ERR_LASTCODE is 78.
constexpr int error_classes[] = {
    MPI_ERR_BUFFER,         MPI_ERR_COUNT,
    MPI_ERR_TYPE,           MPI_ERR_TAG,
    MPI_ERR_COMM,           MPI_ERR_RANK,
    MPI_ERR_REQUEST,        MPI_ERR_ROOT,
    MPI_ERR_GROUP,          MPI_ERR_OP,
    MPI_ERR_TOPOLOGY,       MPI_ERR_DIMS,
    MPI_ERR_ARG,            MPI_ERR_UNKNOWN,
    MPI_ERR_TRUNCATE,       MPI_ERR_OTHER,
    MPI_ERR_INTERN,         MPI_ERR_PENDING,
    MPI_ERR_IN_STATUS,      MPI_ERR_ACCESS,
    MPI_ERR_AMODE,          MPI_ERR_ASSERT,
    MPI_ERR_BAD_FILE,       MPI_ERR_BASE,
    MPI_ERR_CONVERSION,     MPI_ERR_DISP,
    MPI_ERR_DUP_DATAREP,    MPI_ERR_FILE_EXISTS,
    MPI_ERR_FILE_IN_USE,    MPI_ERR_FILE,
    MPI_ERR_INFO_KEY,       MPI_ERR_INFO_NOKEY,
    MPI_ERR_INFO_VALUE,     MPI_ERR_INFO,
    MPI_ERR_IO,             MPI_ERR_KEYVAL,
    MPI_ERR_LOCKTYPE,       MPI_ERR_NAME,
    MPI_ERR_NO_MEM,         MPI_ERR_NOT_SAME,
    MPI_ERR_NO_SPACE,       MPI_ERR_NO_SUCH_FILE,
    MPI_ERR_PORT,           MPI_ERR_QUOTA,
    MPI_ERR_READ_ONLY,      MPI_ERR_RMA_ATTACH,
    MPI_ERR_RMA_CONFLICT,   MPI_ERR_RMA_RANGE,
    MPI_ERR_RMA_SHARED,     MPI_ERR_RMA_SYNC,
    MPI_ERR_RMA_FLAVOR,     MPI_ERR_SERVICE,
    MPI_ERR_SIZE,           MPI_ERR_SPAWN,
    MPI_ERR_UNSUPPORTED_DATAREP, MPI_ERR_UNSUPPORTED_OPERATION,
    MPI_ERR_WIN,            MPI_T_ERR_MEMORY,
    MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_CANNOT_INIT,
    MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID_ITEM,
    MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_OUT_OF_HANDLES,
    MPI_T_ERR_OUT_OF_SESSIONS, MPI_T_ERR_INVALID_SESSION,
    MPI_T_ERR_CVAR_SET_NOT_NOW, MPI_T_ERR_CVAR_SET_NEVER,
    MPI_T_ERR_PVAR_NO_STARTSTOP, MPI_T_ERR_PVAR_NO_WRITE,
    MPI_T_ERR_PVAR_NO_ATOMIC, MPI_T_ERR_INVALID_NAME,
    MPI_T_ERR_INVALID,
};
constexpr bool error_classes_numbered()
{
    int n = 0;
    for (int c : error_classes) {
        if (c != ++n) {
            return false;
        }
    }
    return n == 73;
}
static_assert(error_classes_numbered());
static_assert(MPIX_ERR_PROC_FAILED == 75 && MPIX_ERR_PROC_FAILED_PENDING == 76 && MPIX_ERR_REVOKED == 77);
static_assert(MPI_ERR_LASTCODE == 78);

// ---------------------------------------------------------------------------
// Callbacks and prototypes
// ---------------------------------------------------------------------------
using CommCopy = int(MPI_Comm, int, void *, void *, void *, int *);
using CommDelete = int(MPI_Comm, int, void *, void *);
static_assert(std::is_same_v<MPI_Comm_copy_attr_function, CommCopy>);
static_assert(std::is_same_v<MPI_Copy_function, CommCopy>);
static_assert(std::is_same_v<MPI_Comm_delete_attr_function, CommDelete>);
static_assert(std::is_same_v<MPI_Delete_function, CommDelete>);
static_assert(std::is_same_v<MPI_Comm_errhandler_fn, MPI_Comm_errhandler_function>);
static_assert(std::is_same_v<MPI_Handler_function, void(MPI_Comm *, int *, ...)>);
static_assert(std::is_same_v<MPI_User_function, void(void *, void *, int *, MPI_Datatype *)>);
static_assert(std::is_same_v<decltype(MPI_COMM_NULL_COPY_FN), MPI_Comm_copy_attr_function>);
static_assert(std::is_same_v<decltype(MPI_COMM_DUP_FN), MPI_Comm_copy_attr_function>);
static_assert(std::is_same_v<decltype(MPI_COMM_NULL_DELETE_FN), MPI_Comm_delete_attr_function>);
static_assert(std::is_same_v<decltype(MPI_TYPE_NULL_COPY_FN), MPI_Type_copy_attr_function>);
static_assert(std::is_same_v<decltype(MPI_TYPE_DUP_FN), MPI_Type_copy_attr_function>);
static_assert(std::is_same_v<decltype(MPI_TYPE_NULL_DELETE_FN), MPI_Type_delete_attr_function>);
static_assert(std::is_same_v<decltype(MPI_WIN_NULL_COPY_FN), MPI_Win_copy_attr_function>);
static_assert(std::is_same_v<decltype(MPI_WIN_DUP_FN), MPI_Win_copy_attr_function>);
static_assert(std::is_same_v<decltype(MPI_WIN_NULL_DELETE_FN), MPI_Win_delete_attr_function>);
static_assert(std::is_same_v<decltype(MPI_NULL_COPY_FN), MPI_Copy_function>);
static_assert(std::is_same_v<decltype(MPI_DUP_FN), MPI_Copy_function>);
static_assert(std::is_same_v<decltype(MPI_NULL_DELETE_FN), MPI_Delete_function>);
static_assert(std::is_same_v<decltype(MPI_CONVERSION_FN_NULL), MPI_Datarep_conversion_function *>);

// Every function: the MPI_ and PMPI_ forms exist and have the MPI-3.1 C type.
#define CHECK_FN(name, type)                                                      \
    static_assert(std::is_same_v<decltype(MPI_##name), type>, "MPI_" #name);      \
    static_assert(std::is_same_v<decltype(PMPI_##name), type>, "PMPI_" #name);

using SendFn = int(const void *, int, MPI_Datatype, int, int, MPI_Comm);
using IsendFn = int(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
using IrecvFn = int(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

CHECK_FN(Init, int(int *, char ***))
CHECK_FN(Init_thread, int(int *, char ***, int, int *))
CHECK_FN(Finalize, int())
CHECK_FN(Initialized, int(int *))
CHECK_FN(Finalized, int(int *))
CHECK_FN(Abort, int(MPI_Comm, int))
CHECK_FN(Comm_rank, int(MPI_Comm, int *))
CHECK_FN(Comm_size, int(MPI_Comm, int *))
CHECK_FN(Wtime, double())
CHECK_FN(Wtick, double())
CHECK_FN(Get_processor_name, int(char *, int *))
CHECK_FN(Get_version, int(int *, int *))
CHECK_FN(Get_library_version, int(char *, int *))
CHECK_FN(Error_string, int(int, char *, int *))
CHECK_FN(Error_class, int(int, int *))
CHECK_FN(Query_thread, int(int *))
CHECK_FN(Is_thread_main, int(int *))
CHECK_FN(Send, SendFn)
CHECK_FN(Bsend, SendFn)
CHECK_FN(Ssend, SendFn)
CHECK_FN(Rsend, SendFn)
CHECK_FN(Recv, int(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *))
CHECK_FN(Isend, IsendFn)
CHECK_FN(Ibsend, IsendFn)
CHECK_FN(Issend, IsendFn)
CHECK_FN(Irsend, IsendFn)
CHECK_FN(Irecv, IrecvFn)
CHECK_FN(Wait, int(MPI_Request *, MPI_Status *))
CHECK_FN(Waitall, int(int, MPI_Request *, MPI_Status *))
CHECK_FN(Waitany, int(int, MPI_Request *, int *, MPI_Status *))
CHECK_FN(Waitsome, int(int, MPI_Request *, int *, int *, MPI_Status *))
CHECK_FN(Test, int(MPI_Request *, int *, MPI_Status *))
CHECK_FN(Testall, int(int, MPI_Request *, int *, MPI_Status *))
CHECK_FN(Testany, int(int, MPI_Request *, int *, int *, MPI_Status *))
CHECK_FN(Testsome, int(int, MPI_Request *, int *, int *, MPI_Status *))
CHECK_FN(Probe, int(int, int, MPI_Comm, MPI_Status *))
CHECK_FN(Iprobe, int(int, int, MPI_Comm, int *, MPI_Status *))
CHECK_FN(Cancel, int(MPI_Request *))
CHECK_FN(Test_cancelled, int(const MPI_Status *, int *))
CHECK_FN(Request_free, int(MPI_Request *))
CHECK_FN(Sendrecv, int(const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int,
                       int, MPI_Comm, MPI_Status *))
CHECK_FN(Sendrecv_replace,
         int(void *, int, MPI_Datatype, int, int, int, int, MPI_Comm, MPI_Status *))
CHECK_FN(Send_init, IsendFn)
CHECK_FN(Bsend_init, IsendFn)
CHECK_FN(Ssend_init, IsendFn)
CHECK_FN(Rsend_init, IsendFn)
CHECK_FN(Recv_init, IrecvFn)
CHECK_FN(Start, int(MPI_Request *))
CHECK_FN(Startall, int(int, MPI_Request *))
CHECK_FN(Buffer_attach, int(void *, int))
CHECK_FN(Buffer_detach, int(void *, int *))
CHECK_FN(Get_count, int(const MPI_Status *, MPI_Datatype, int *))
CHECK_FN(Get_elements, int(const MPI_Status *, MPI_Datatype, int *))
CHECK_FN(Get_elements_x, int(const MPI_Status *, MPI_Datatype, MPI_Count *))
CHECK_FN(Type_size, int(MPI_Datatype, int *))
CHECK_FN(Type_size_x, int(MPI_Datatype, MPI_Count *))
CHECK_FN(Comm_set_errhandler, int(MPI_Comm, MPI_Errhandler))
CHECK_FN(Comm_get_errhandler, int(MPI_Comm, MPI_Errhandler *))
CHECK_FN(Errhandler_set, int(MPI_Comm, MPI_Errhandler))
CHECK_FN(Errhandler_get, int(MPI_Comm, MPI_Errhandler *))
CHECK_FN(Comm_c2f, MPI_Fint(MPI_Comm))
CHECK_FN(Comm_f2c, MPI_Comm(MPI_Fint))
CHECK_FN(Type_c2f, MPI_Fint(MPI_Datatype))
CHECK_FN(Type_f2c, MPI_Datatype(MPI_Fint))
CHECK_FN(Request_c2f, MPI_Fint(MPI_Request))
CHECK_FN(Request_f2c, MPI_Request(MPI_Fint))

// ---------------------------------------------------------------------------
// Library identity
// ---------------------------------------------------------------------------
#if !defined(ULMPI) || ULMPI != 1
#error "ULMPI must be defined to 1"
#endif
#if defined(MPICH) || defined(MPICH_VERSION) || defined(MPICH_NAME) || defined(OPEN_MPI) || \
    defined(OMPI_MAJOR_VERSION) || defined(MSMPI_VER) || defined(I_MPI_VERSION)
#error "mpi.h must not define another implementation's macros"
#endif

#ifdef ULMPI_EXPECTED_VERSION
constexpr bool same_string(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        ++a;
        ++b;
    }
    return *a == *b;
}
static_assert(same_string(ULMPI_VERSION_STRING, ULMPI_EXPECTED_VERSION),
              "ULMPI_VERSION_STRING differs from the meson project version");
#endif

}  // namespace

int main()
{
    int failures = 0;
    auto expect = [&failures](bool ok, const char *what) {
        if (!ok) {
            std::printf("FAIL: %s\n", what);
            ++failures;
        }
    };
    // Pointer constants: not constant expressions, so checked at run time.
    expect(MPI_BOTTOM == nullptr, "MPI_BOTTOM is null");
    expect(MPI_IN_PLACE != nullptr && MPI_IN_PLACE != MPI_BOTTOM, "MPI_IN_PLACE is its own");
    expect(MPI_STATUS_IGNORE != nullptr && MPI_STATUSES_IGNORE != nullptr,
           "MPI_STATUS(ES)_IGNORE are not null");
    expect(MPI_F_STATUS_IGNORE != nullptr && MPI_F_STATUSES_IGNORE != nullptr,
           "MPI_F_STATUS(ES)_IGNORE are not null");
    expect(MPI_F08_STATUS_IGNORE != nullptr && MPI_F08_STATUSES_IGNORE != nullptr,
           "MPI_F08_STATUS(ES)_IGNORE are not null");
    expect(MPI_UNWEIGHTED != nullptr && MPI_WEIGHTS_EMPTY != nullptr &&
               MPI_UNWEIGHTED != MPI_WEIGHTS_EMPTY,
           "MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are distinct, not null");
    expect(MPI_ERRCODES_IGNORE == nullptr, "MPI_ERRCODES_IGNORE is null");
    expect(MPI_ARGV_NULL == nullptr && MPI_ARGVS_NULL == nullptr, "MPI_ARGV(S)_NULL are null");
    expect(MPI_CONVERSION_FN_NULL == nullptr, "MPI_CONVERSION_FN_NULL is null");
    expect(MPI_T_ENUM_NULL == nullptr && MPI_T_CVAR_HANDLE_NULL == nullptr &&
               MPI_T_PVAR_HANDLE_NULL == nullptr && MPI_T_PVAR_SESSION_NULL == nullptr,
           "MPI_T null handles are null");
    expect(MPI_T_PVAR_ALL_HANDLES != nullptr, "MPI_T_PVAR_ALL_HANDLES is not null");

    std::printf("abi C++%ld: %d datatypes, %zu error classes: %s\n", __cplusplus / 100 % 100,
                row_count, sizeof(error_classes) / sizeof(error_classes[0]),
                failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
