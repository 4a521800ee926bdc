// MPI_Type_create_f90_integer / _real / _complex (MPI-3.1 17.1.9): the
// datatype of INTEGER(KIND=SELECTED_INT_KIND(r)), REAL(KIND=
// SELECTED_REAL_KIND(p, r)), COMPLEX(...), for the kinds gfortran has and
// ulmpi has datatypes for: INTEGER 1, 2, 4, 8 bytes; REAL and COMPLEX 4 and
// 8 bytes (gfortran's 10- and 16-byte reals have no MPI type here:
// MPI_ERR_ARG, as for a p or r no kind reaches).
//
// The answer is a predefined type in all but name: a copy of MPI_INTEGER4,
// MPI_REAL8, ... (same layout, reductions, external32) whose envelope says
// MPI_COMBINER_F90_* with (r) or (p, r), as the standard requires. One per
// distinct (combiner, p, r), made on first use and kept for the life of the
// process (the same arguments give the same handle; it cannot be freed).
#include "mpi/checks.h"
#include "mpi/datatype/datatype.h"
#include "mpi/errors.h"

#include <map>
#include <mutex>
#include <tuple>

using namespace ulmpi::mpi;

namespace {

// The kinds: digits of precision and decimal exponent range, as gfortran's
// PRECISION() and RANGE() give them.
struct RealKind {
    int precision;
    int range;
    MPI_Datatype real;
    MPI_Datatype complex;
};
constexpr RealKind kReals[] = {{6, 37, MPI_REAL4, MPI_COMPLEX8}, {15, 307, MPI_REAL8, MPI_COMPLEX16}};
struct IntKind {
    int range;
    MPI_Datatype type;
};
constexpr IntKind kInts[] = {{2, MPI_INTEGER1}, {4, MPI_INTEGER2}, {9, MPI_INTEGER4},
                             {18, MPI_INTEGER8}};

// The type for (combiner, p, r) as a copy of `base`; nullptr when the
// handle table is full.
MPI_Datatype f90_type(int combiner, int p, int r, MPI_Datatype base)
{
    static std::mutex lock;
    static std::map<std::tuple<int, int, int>, MPI_Datatype> made;
    std::lock_guard<std::mutex> g(lock);
    const auto key = std::make_tuple(combiner, p, r);
    if (auto it = made.find(key); it != made.end()) {
        return it->second;
    }
    const Datatype* old = datatype_get(base);
    auto* t = new Datatype(*old);
    t->handle = 0;
    t->aliases.clear();
    t->attrs = nullptr;
    t->basic = old; // reductions see the predefined type
    t->finish_layout();
    t->combiner = combiner;
    t->ints = combiner == MPI_COMBINER_F90_INTEGER ? std::vector<int>{r} : std::vector<int>{p, r};
    MPI_Datatype h = datatype_publish(t);
    if (h == 0) {
        delete t;
        return 0;
    }
    made.emplace(key, h);
    return h;
}

int create_real(int combiner, int p, int r, MPI_Datatype* newtype, const char* fn)
{
    require_init(fn);
    if (newtype == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "newtype is NULL");
    }
    if (p == MPI_UNDEFINED && r == MPI_UNDEFINED) {
        return raise(nullptr, MPI_ERR_ARG, fn, "p and r are both MPI_UNDEFINED");
    }
    for (const RealKind& k : kReals) {
        if ((p == MPI_UNDEFINED || p <= k.precision) && (r == MPI_UNDEFINED || r <= k.range)) {
            MPI_Datatype base = combiner == MPI_COMBINER_F90_REAL ? k.real : k.complex;
            MPI_Datatype h = f90_type(combiner, p, r, base);
            if (h == 0) {
                return raise(nullptr, MPI_ERR_INTERN, fn, "no free datatype handle is left");
            }
            *newtype = h;
            return MPI_SUCCESS;
        }
    }
    return raise(nullptr, MPI_ERR_ARG, fn,
                 "no %s kind with precision %d and range %d has an MPI datatype (at most 15 "
                 "digits and range 307)",
                 combiner == MPI_COMBINER_F90_REAL ? "REAL" : "COMPLEX", p, r);
}

} // namespace

int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return create_real(MPI_COMBINER_F90_REAL, p, r, newtype, "MPI_Type_create_f90_real");
} catch (...) {
    return api_exception("MPI_Type_create_f90_real");
}
ULMPI_ALIAS(MPI_Type_create_f90_real)

int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return create_real(MPI_COMBINER_F90_COMPLEX, p, r, newtype, "MPI_Type_create_f90_complex");
} catch (...) {
    return api_exception("MPI_Type_create_f90_complex");
}
ULMPI_ALIAS(MPI_Type_create_f90_complex)

int PMPI_Type_create_f90_integer(int r, MPI_Datatype* newtype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_create_f90_integer";
    require_init(fn);
    if (newtype == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "newtype is NULL");
    }
    for (const IntKind& k : kInts) {
        if (r <= k.range) {
            MPI_Datatype h = f90_type(MPI_COMBINER_F90_INTEGER, 0, r, k.type);
            if (h == 0) {
                return raise(nullptr, MPI_ERR_INTERN, fn, "no free datatype handle is left");
            }
            *newtype = h;
            return MPI_SUCCESS;
        }
    }
    return raise(nullptr, MPI_ERR_ARG, fn,
                 "no INTEGER kind with range %d has an MPI datatype (at most 18)", r);
} catch (...) {
    return api_exception("MPI_Type_create_f90_integer");
}
ULMPI_ALIAS(MPI_Type_create_f90_integer)
