// Attribute caching and generalized requests from Fortran: callbacks that
// take their arguments by reference, attribute values that are integers.
//
// Keyvals. A Fortran copy or delete callback cannot be handed to C as it
// is: the C layer calls (object, keyval, extra_state, void* ...) by value.
// So a keyval made from Fortran gets a Callbacks record as its C
// extra_state, and C wrappers (copy_f90, delete_f77, ...) call the Fortran
// procedures with the record's own extra_state. Records are never freed
// (an attribute may outlive its key, and its delete callback still needs
// the record); there is one per keyval the program creates. The
// predefined procedures (MPI_COMM_NULL_COPY_FN, MPI_DUP_FN, ...) are
// recognised and become the C ones, so a keyval that uses only them needs
// no record.
//
// Values. Fortran stores an integer as the attribute (MPI-2 routines:
// INTEGER(KIND=MPI_ADDRESS_KIND), MPI-1 routines: INTEGER, sign-extended);
// C's void* holds that integer. The predefined attributes (MPI_TAG_UB ...)
// are pointers to an int in C, so Fortran gets the int they point to.
//
// Generalized requests: the same idea, one record per request, freed after
// its free_fn ran. Their extra_state is the program's variable itself (as
// in MPICH): the callbacks get it by reference and may change it, so it
// must outlive the request.
#include "mpi/fortran/fortran.h"

#include <deque>
#include <mutex>

namespace {

using ulmpi::fortran::Procedure;

// Fortran callback types (every argument by reference).
using CopyF90 = void(MPI_Fint* old, MPI_Fint* keyval, MPI_Aint* extra, MPI_Aint* in,
                     MPI_Aint* out, MPI_Fint* flag, MPI_Fint* ierr);
using DeleteF90 = void(MPI_Fint* obj, MPI_Fint* keyval, MPI_Aint* value, MPI_Aint* extra,
                       MPI_Fint* ierr);
using CopyF77 = void(MPI_Fint* old, MPI_Fint* keyval, MPI_Fint* extra, MPI_Fint* in,
                     MPI_Fint* out, MPI_Fint* flag, MPI_Fint* ierr);
using DeleteF77 = void(MPI_Fint* obj, MPI_Fint* keyval, MPI_Fint* value, MPI_Fint* extra,
                       MPI_Fint* ierr);

struct Callbacks {
    Procedure copy = nullptr;
    Procedure del = nullptr;
    MPI_Aint extra = 0;     // MPI-2 routines
    MPI_Fint extra_f77 = 0; // MPI_KEYVAL_CREATE
};

// Records live as long as the process (see the top of this file).
Callbacks* new_callbacks()
{
    static std::mutex lock;
    static std::deque<Callbacks> records;
    std::lock_guard<std::mutex> g(lock);
    return &records.emplace_back();
}

// The C copy/delete functions that call a Fortran one (comm and type
// handles are both int, so one function serves both kinds).
int copy_f90(int old, int keyval, void* extra, void* in, void* out, int* flag)
{
    auto* cb = static_cast<Callbacks*>(extra);
    MPI_Fint o = old, k = keyval, f = 0, ierr = MPI_SUCCESS;
    MPI_Aint vin = reinterpret_cast<MPI_Aint>(in), vout = 0;
    reinterpret_cast<CopyF90*>(cb->copy)(&o, &k, &cb->extra, &vin, &vout, &f, &ierr);
    *flag = f != 0;
    if (*flag) {
        *static_cast<void**>(out) = reinterpret_cast<void*>(vout);
    }
    return ierr;
}

int delete_f90(int obj, int keyval, void* value, void* extra)
{
    auto* cb = static_cast<Callbacks*>(extra);
    MPI_Fint o = obj, k = keyval, ierr = MPI_SUCCESS;
    MPI_Aint v = reinterpret_cast<MPI_Aint>(value);
    reinterpret_cast<DeleteF90*>(cb->del)(&o, &k, &v, &cb->extra, &ierr);
    return ierr;
}

int copy_f77(int old, int keyval, void* extra, void* in, void* out, int* flag)
{
    auto* cb = static_cast<Callbacks*>(extra);
    MPI_Fint o = old, k = keyval, f = 0, ierr = MPI_SUCCESS, vout = 0;
    auto vin = static_cast<MPI_Fint>(reinterpret_cast<MPI_Aint>(in));
    reinterpret_cast<CopyF77*>(cb->copy)(&o, &k, &cb->extra_f77, &vin, &vout, &f, &ierr);
    *flag = f != 0;
    if (*flag) {
        *static_cast<void**>(out) = reinterpret_cast<void*>(static_cast<MPI_Aint>(vout));
    }
    return ierr;
}

int delete_f77(int obj, int keyval, void* value, void* extra)
{
    auto* cb = static_cast<Callbacks*>(extra);
    MPI_Fint o = obj, k = keyval, ierr = MPI_SUCCESS;
    auto v = static_cast<MPI_Fint>(reinterpret_cast<MPI_Aint>(value));
    reinterpret_cast<DeleteF77*>(cb->del)(&o, &k, &v, &cb->extra_f77, &ierr);
    return ierr;
}

} // namespace

// ---- the predefined callbacks, callable from Fortran ------------------------
#pragma GCC visibility push(default)
extern "C" {

void mpi_comm_null_copy_fn_(MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Aint*, MPI_Aint*,
                            MPI_Fint* flag, MPI_Fint* ierr)
{
    *flag = 0;
    *ierr = MPI_SUCCESS;
}

void mpi_comm_dup_fn_(MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Aint* in, MPI_Aint* out,
                      MPI_Fint* flag, MPI_Fint* ierr)
{
    *out = *in;
    *flag = 1;
    *ierr = MPI_SUCCESS;
}

void mpi_comm_null_delete_fn_(MPI_Fint*, MPI_Fint*, MPI_Aint*, MPI_Aint*, MPI_Fint* ierr)
{
    *ierr = MPI_SUCCESS;
}

void mpi_null_copy_fn_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint* flag,
                       MPI_Fint* ierr)
{
    *flag = 0;
    *ierr = MPI_SUCCESS;
}

void mpi_dup_fn_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint* in, MPI_Fint* out, MPI_Fint* flag,
                 MPI_Fint* ierr)
{
    *out = *in;
    *flag = 1;
    *ierr = MPI_SUCCESS;
}

void mpi_null_delete_fn_(MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint* ierr)
{
    *ierr = MPI_SUCCESS;
}

} // extern "C"

// The datatype forms are the communicator ones under other names.
#define ULMPI_F_SAME_(alias, target) ULMPI_F_WEAK_(alias##_, target##_) \
    ULMPI_F_WEAK_(alias, target##_) ULMPI_F_WEAK_(alias##__, target##_)
ULMPI_F_SAME_(mpi_type_null_copy_fn, mpi_comm_null_copy_fn)
ULMPI_F_SAME_(mpi_type_dup_fn, mpi_comm_dup_fn)
ULMPI_F_SAME_(mpi_type_null_delete_fn, mpi_comm_null_delete_fn)
ULMPI_F_WEAK_(mpi_comm_null_copy_fn, mpi_comm_null_copy_fn_)
ULMPI_F_WEAK_(mpi_comm_null_copy_fn__, mpi_comm_null_copy_fn_)
ULMPI_F_WEAK_(mpi_comm_dup_fn, mpi_comm_dup_fn_)
ULMPI_F_WEAK_(mpi_comm_dup_fn__, mpi_comm_dup_fn_)
ULMPI_F_WEAK_(mpi_comm_null_delete_fn, mpi_comm_null_delete_fn_)
ULMPI_F_WEAK_(mpi_comm_null_delete_fn__, mpi_comm_null_delete_fn_)
ULMPI_F_WEAK_(mpi_null_copy_fn, mpi_null_copy_fn_)
ULMPI_F_WEAK_(mpi_null_copy_fn__, mpi_null_copy_fn_)
ULMPI_F_WEAK_(mpi_dup_fn, mpi_dup_fn_)
ULMPI_F_WEAK_(mpi_dup_fn__, mpi_dup_fn_)
ULMPI_F_WEAK_(mpi_null_delete_fn, mpi_null_delete_fn_)
ULMPI_F_WEAK_(mpi_null_delete_fn__, mpi_null_delete_fn_)
#undef ULMPI_F_SAME_

namespace {

// The C function a predefined Fortran procedure stands for (nullptr: a
// procedure of the program).
MPI_Comm_copy_attr_function* predefined_copy(Procedure p)
{
    if (p == reinterpret_cast<Procedure>(&mpi_comm_null_copy_fn_) ||
        p == reinterpret_cast<Procedure>(&mpi_null_copy_fn_)) {
        return MPI_COMM_NULL_COPY_FN;
    }
    if (p == reinterpret_cast<Procedure>(&mpi_comm_dup_fn_) ||
        p == reinterpret_cast<Procedure>(&mpi_dup_fn_)) {
        return MPI_COMM_DUP_FN; // the value is the integer either way
    }
    return nullptr;
}

MPI_Comm_delete_attr_function* predefined_delete(Procedure p)
{
    if (p == reinterpret_cast<Procedure>(&mpi_comm_null_delete_fn_) ||
        p == reinterpret_cast<Procedure>(&mpi_null_delete_fn_)) {
        return MPI_COMM_NULL_DELETE_FN;
    }
    return nullptr;
}

// The C callbacks and extra_state for a keyval made from Fortran.
struct CKeyval {
    MPI_Comm_copy_attr_function* copy;
    MPI_Comm_delete_attr_function* del;
    void* extra;
};

CKeyval c_keyval(Procedure copy, Procedure del, MPI_Aint extra, MPI_Fint extra_f77, bool f77)
{
    CKeyval k{predefined_copy(copy), predefined_delete(del), nullptr};
    if (k.copy != nullptr && k.del != nullptr) {
        return k;
    }
    Callbacks* cb = new_callbacks();
    cb->copy = copy;
    cb->del = del;
    cb->extra = extra;
    cb->extra_f77 = extra_f77;
    if (k.copy == nullptr) {
        k.copy = f77 ? copy_f77 : copy_f90;
    }
    if (k.del == nullptr) {
        k.del = f77 ? delete_f77 : delete_f90;
    }
    k.extra = cb;
    return k;
}

bool predefined_key(MPI_Fint keyval)
{
    return keyval > MPI_KEYVAL_INVALID && keyval <= MPI_WIN_MODEL;
}

// An attribute value as Fortran sees it.
MPI_Aint f_value(MPI_Fint keyval, void* v)
{
    return predefined_key(keyval) ? *static_cast<int*>(v) : reinterpret_cast<MPI_Aint>(v);
}

} // namespace

// ---- keyvals ------------------------------------------------------------------
extern "C" {

void pmpi_comm_create_keyval_(Procedure copy, Procedure del, MPI_Fint* keyval,
                              const MPI_Aint* extra, MPI_Fint* ierr) try
{
    const CKeyval k = c_keyval(copy, del, *extra, 0, false);
    *ierr = PMPI_Comm_create_keyval(k.copy, k.del, keyval, k.extra);
}
catch (...) {
    *ierr = ulmpi::fortran::failed("MPI_Comm_create_keyval");
}
ULMPI_F_ALIASES(comm_create_keyval)

void pmpi_type_create_keyval_(Procedure copy, Procedure del, MPI_Fint* keyval,
                              const MPI_Aint* extra, MPI_Fint* ierr) try
{
    const CKeyval k = c_keyval(copy, del, *extra, 0, false);
    *ierr = PMPI_Type_create_keyval(k.copy, k.del, keyval, k.extra);
}
catch (...) {
    *ierr = ulmpi::fortran::failed("MPI_Type_create_keyval");
}
ULMPI_F_ALIASES(type_create_keyval)

void pmpi_keyval_create_(Procedure copy, Procedure del, MPI_Fint* keyval, const MPI_Fint* extra,
                         MPI_Fint* ierr) try
{
    const CKeyval k = c_keyval(copy, del, 0, *extra, true);
    *ierr = PMPI_Keyval_create(k.copy, k.del, keyval, k.extra);
}
catch (...) {
    *ierr = ulmpi::fortran::failed("MPI_Keyval_create");
}
ULMPI_F_ALIASES(keyval_create)

} // extern "C"

// ---- attribute values --------------------------------------------------------
namespace {

// MPI_COMM_GET_ATTR, MPI_TYPE_GET_ATTR (Value: MPI_Aint) and MPI_ATTR_GET
// (Value: MPI_Fint) through their C function.
template <class Value>
void get_attr(int (*get)(int, int, void*, int*), const MPI_Fint* obj, const MPI_Fint* keyval,
              Value* value, MPI_Fint* flag, MPI_Fint* ierr)
{
    void* v = nullptr;
    *ierr = get(*obj, *keyval, &v, flag);
    if (*ierr == MPI_SUCCESS) {
        *flag = *flag != 0;
        if (*flag) {
            *value = static_cast<Value>(f_value(*keyval, v));
        }
    }
}

} // namespace

extern "C" {

void pmpi_comm_get_attr_(const MPI_Fint* comm, const MPI_Fint* keyval, MPI_Aint* value,
                         MPI_Fint* flag, MPI_Fint* ierr)
{
    get_attr(PMPI_Comm_get_attr, comm, keyval, value, flag, ierr);
}
ULMPI_F_ALIASES(comm_get_attr)

void pmpi_type_get_attr_(const MPI_Fint* type, const MPI_Fint* keyval, MPI_Aint* value,
                         MPI_Fint* flag, MPI_Fint* ierr)
{
    get_attr(PMPI_Type_get_attr, type, keyval, value, flag, ierr);
}
ULMPI_F_ALIASES(type_get_attr)

void pmpi_attr_get_(const MPI_Fint* comm, const MPI_Fint* keyval, MPI_Fint* value,
                    MPI_Fint* flag, MPI_Fint* ierr)
{
    get_attr(PMPI_Attr_get, comm, keyval, value, flag, ierr);
}
ULMPI_F_ALIASES(attr_get)

} // extern "C"

// ---- generalized requests ----------------------------------------------------
namespace {

using QueryF = void(MPI_Aint* extra, MPI_Fint* status, MPI_Fint* ierr);
using FreeF = void(MPI_Aint* extra, MPI_Fint* ierr);
using CancelF = void(MPI_Aint* extra, MPI_Fint* complete, MPI_Fint* ierr);

struct GrequestCallbacks {
    Procedure query;
    Procedure free;
    Procedure cancel;
    MPI_Aint* extra; // the program's variable
};

int greq_query(void* state, MPI_Status* status)
{
    auto* g = static_cast<GrequestCallbacks*>(state);
    MPI_Fint ierr = MPI_SUCCESS;
    reinterpret_cast<QueryF*>(g->query)(g->extra, reinterpret_cast<MPI_Fint*>(status), &ierr);
    return ierr;
}

int greq_free(void* state)
{
    auto* g = static_cast<GrequestCallbacks*>(state);
    MPI_Fint ierr = MPI_SUCCESS;
    reinterpret_cast<FreeF*>(g->free)(g->extra, &ierr);
    delete g;
    return ierr;
}

int greq_cancel(void* state, int complete)
{
    auto* g = static_cast<GrequestCallbacks*>(state);
    MPI_Fint c = complete != 0, ierr = MPI_SUCCESS;
    reinterpret_cast<CancelF*>(g->cancel)(g->extra, &c, &ierr);
    return ierr;
}

} // namespace

extern "C" void pmpi_grequest_start_(Procedure query, Procedure free, Procedure cancel,
                                     MPI_Aint* extra, MPI_Fint* request, MPI_Fint* ierr) try
{
    auto* g = new GrequestCallbacks{query, free, cancel, extra};
    *ierr = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, g, request);
    if (*ierr != MPI_SUCCESS) {
        delete g;
    }
}
catch (...) {
    *ierr = ulmpi::fortran::failed("MPI_Grequest_start");
}
ULMPI_F_ALIASES(grequest_start)

#pragma GCC visibility pop
