// Datatype entry points: constructors (MPI-1 and MPI-2 names), commit and
// free, bounds and extents, addresses, decoding (envelope and contents),
// names, MPI_Type_match_size. The work is in constructors.cpp and
// flatten.cpp; this file checks arguments, records how each type was built
// and hands out handles. Errors go to MPI_COMM_WORLD's handler (no
// communicator is involved).
#include "mpi/checks.h"
#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"
#include "mpi/errors.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <cstring>
#include <string>
#include <vector>

using namespace ulmpi::mpi;

namespace {

// Any valid datatype (committed or not; markers too).
int get_type(MPI_Datatype h, const char* what, const char* fn, Datatype** out)
{
    Datatype* t = datatype_get(h);
    if (t == nullptr) [[unlikely]] {
        return raise(nullptr, MPI_ERR_TYPE, fn,
                     h == MPI_DATATYPE_NULL ? "%s is MPI_DATATYPE_NULL"
                                            : "%s 0x%x is not a valid datatype handle",
                     what, static_cast<unsigned>(h));
    }
    *out = t;
    return MPI_SUCCESS;
}

int need_ptr(const void* p, const char* what, const char* fn)
{
    if (p == nullptr) [[unlikely]] {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    return MPI_SUCCESS;
}

int need_count(int count, const char* fn)
{
    if (count < 0) [[unlikely]] {
        return raise(nullptr, MPI_ERR_COUNT, fn, "count %d is negative", count);
    }
    return MPI_SUCCESS;
}

int need_blocklen(int len, const char* what, int i, const char* fn)
{
    if (len < 0) [[unlikely]] {
        if (i < 0) {
            return raise(nullptr, MPI_ERR_ARG, fn, "%s %d is negative", what, len);
        }
        return raise(nullptr, MPI_ERR_ARG, fn, "%s[%d] = %d is negative", what, i, len);
    }
    return MPI_SUCCESS;
}

// Records how d was built, gives it a handle and stores it in *out. d's
// reference (the builder's) passes to the handle.
int publish(Datatype* d, int combiner, std::vector<int> ints, std::vector<MPI_Aint> aints,
            std::vector<Datatype*> types, MPI_Datatype* out, const char* fn)
{
    d->combiner = combiner;
    d->ints = std::move(ints);
    d->aints = std::move(aints);
    for (Datatype* t : types) {
        datatype_retain(t);
    }
    d->types = std::move(types);
    MPI_Datatype h = datatype_publish(d);
    if (h == 0) [[unlikely]] {
        datatype_release(d);
        return raise(nullptr, MPI_ERR_INTERN, fn, "no free datatype handle is left");
    }
    *out = h;
    return MPI_SUCCESS;
}

// Blocks given in units of the old type's extent, or in bytes.
int indexed(int count, const int* lens, const int* idisps, const MPI_Aint* adisps, int blocklen,
            MPI_Datatype oldtype, MPI_Datatype* newtype, int combiner, const char* fn)
{
    require_init(fn);
    if (int e = need_count(count, fn)) {
        return e;
    }
    Datatype* old = nullptr;
    if (int e = get_type(oldtype, "oldtype", fn, &old)) {
        return e;
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    bool same_len = lens == nullptr;
    if (count > 0) {
        if (!same_len) {
            if (int e = need_ptr(lens, "array_of_blocklengths", fn)) {
                return e;
            }
        }
        if (int e = need_ptr(idisps != nullptr ? static_cast<const void*>(idisps) : adisps,
                             "array_of_displacements", fn)) {
            return e;
        }
    }
    if (same_len) {
        if (int e = need_blocklen(blocklen, "blocklength", -1, fn)) {
            return e;
        }
    }
    auto n = static_cast<std::size_t>(count);
    std::vector<std::uint64_t> l(n);
    std::vector<std::int64_t> d(n);
    for (std::size_t i = 0; i < n; ++i) {
        int len = same_len ? blocklen : lens[i];
        if (int e = need_blocklen(len, "array_of_blocklengths", static_cast<int>(i), fn)) {
            return e;
        }
        l[i] = static_cast<std::uint64_t>(len);
        d[i] = idisps != nullptr ? static_cast<std::int64_t>(idisps[i]) * old->extent() : adisps[i];
    }
    Datatype* t = build_hindexed(n, l.data(), d.data(), old);
    // Contents as MPI-3.1 §4.1.13 lists them for each combiner.
    std::vector<int> ints{count};
    std::vector<MPI_Aint> aints;
    if (same_len) {
        ints.push_back(blocklen);
    } else {
        ints.insert(ints.end(), lens, lens + n);
    }
    if (idisps != nullptr) {
        ints.insert(ints.end(), idisps, idisps + n);
    } else if (n > 0) {
        aints.assign(adisps, adisps + n);
    }
    return publish(t, combiner, std::move(ints), std::move(aints), {old}, newtype, fn);
}

int vector(int count, int blocklen, MPI_Aint stride, bool bytes, MPI_Datatype oldtype,
           MPI_Datatype* newtype, const char* fn)
{
    require_init(fn);
    if (int e = need_count(count, fn)) {
        return e;
    }
    if (int e = need_blocklen(blocklen, "blocklength", -1, fn)) {
        return e;
    }
    Datatype* old = nullptr;
    if (int e = get_type(oldtype, "oldtype", fn, &old)) {
        return e;
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    std::int64_t step = bytes ? stride : stride * old->extent();
    Datatype* t = build_hvector(static_cast<std::uint64_t>(count),
                                static_cast<std::uint64_t>(blocklen), step, old);
    if (bytes) {
        return publish(t, MPI_COMBINER_HVECTOR, {count, blocklen}, {stride}, {old}, newtype, fn);
    }
    return publish(t, MPI_COMBINER_VECTOR, {count, blocklen, static_cast<int>(stride)}, {}, {old},
                   newtype, fn);
}

int structure(int count, const int* lens, const MPI_Aint* disps, const MPI_Datatype* types,
              MPI_Datatype* newtype, const char* fn)
{
    require_init(fn);
    if (int e = need_count(count, fn)) {
        return e;
    }
    if (count > 0) {
        if (int e = need_ptr(lens, "array_of_blocklengths", fn)) {
            return e;
        }
        if (int e = need_ptr(disps, "array_of_displacements", fn)) {
            return e;
        }
        if (int e = need_ptr(types, "array_of_types", fn)) {
            return e;
        }
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    auto n = static_cast<std::size_t>(count);
    std::vector<std::uint64_t> l(n);
    std::vector<std::int64_t> d(n);
    std::vector<Datatype*> t(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (int e = need_blocklen(lens[i], "array_of_blocklengths", static_cast<int>(i), fn)) {
            return e;
        }
        Datatype* ti = datatype_get(types[i]);
        if (ti == nullptr) {
            return raise(nullptr, MPI_ERR_TYPE, fn,
                         "array_of_types[%zu] = 0x%x is not a valid datatype%s", i,
                         static_cast<unsigned>(types[i]),
                         types[i] == MPI_DATATYPE_NULL ? " (MPI_DATATYPE_NULL)" : "");
        }
        l[i] = static_cast<std::uint64_t>(lens[i]);
        d[i] = disps[i];
        t[i] = ti;
    }
    Datatype* nt = build_struct(n, l.data(), d.data(), t.data());
    std::vector<int> ints{count};
    ints.insert(ints.end(), lens, lens + n);
    std::vector<MPI_Aint> aints(disps, disps + n);
    return publish(nt, MPI_COMBINER_STRUCT, std::move(ints), std::move(aints), std::move(t),
                   newtype, fn);
}

int extent_of(MPI_Datatype type, MPI_Aint* lb, MPI_Aint* extent, bool true_bounds, const char* fn)
{
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, "datatype", fn, &t)) {
        return e;
    }
    if (int e = need_ptr(lb, "lb", fn)) {
        return e;
    }
    if (int e = need_ptr(extent, "extent", fn)) {
        return e;
    }
    *lb = true_bounds ? t->true_lb : t->lb;
    *extent = true_bounds ? t->true_ub - t->true_lb : t->extent();
    return MPI_SUCCESS;
}

enum class Bound { lb, ub, extent };

int bound_of(MPI_Datatype type, MPI_Aint* out, Bound which, const char* fn)
{
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, "datatype", fn, &t)) {
        return e;
    }
    if (int e = need_ptr(out, which == Bound::extent ? "extent" : "displacement", fn)) {
        return e;
    }
    *out = which == Bound::lb ? t->lb : which == Bound::ub ? t->ub : t->extent();
    return MPI_SUCCESS;
}

int address(const void* location, MPI_Aint* addr, const char* fn)
{
    require_init(fn);
    if (int e = need_ptr(addr, "address", fn)) {
        return e;
    }
    *addr = reinterpret_cast<MPI_Aint>(location);
    return MPI_SUCCESS;
}

} // namespace

// --- MPI-1 constructors ------------------------------------------------------

int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_contiguous";
    require_init(fn);
    if (int e = need_count(count, fn)) {
        return e;
    }
    Datatype* old = nullptr;
    if (int e = get_type(oldtype, "oldtype", fn, &old)) {
        return e;
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    Datatype* t = build_contiguous(static_cast<std::uint64_t>(count), old);
    return publish(t, MPI_COMBINER_CONTIGUOUS, {count}, {}, {old}, newtype, fn);
} catch (...) {
    return api_exception("MPI_Type_contiguous");
}
ULMPI_ALIAS(MPI_Type_contiguous)

int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                     MPI_Datatype* newtype) try {
    EntryGuard guard;
    return vector(count, blocklength, stride, false, oldtype, newtype, "MPI_Type_vector");
} catch (...) {
    return api_exception("MPI_Type_vector");
}
ULMPI_ALIAS(MPI_Type_vector)

int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                      MPI_Datatype* newtype) try {
    EntryGuard guard;
    return vector(count, blocklength, stride, true, oldtype, newtype, "MPI_Type_hvector");
} catch (...) {
    return api_exception("MPI_Type_hvector");
}
ULMPI_ALIAS(MPI_Type_hvector)

int PMPI_Type_indexed(int count, const int* blocklengths, const int* displacements,
                      MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return indexed(count, blocklengths, displacements, nullptr, 0, oldtype, newtype,
                   MPI_COMBINER_INDEXED, "MPI_Type_indexed");
} catch (...) {
    return api_exception("MPI_Type_indexed");
}
ULMPI_ALIAS(MPI_Type_indexed)

int PMPI_Type_hindexed(int count, const int* blocklengths, const MPI_Aint* displacements,
                       MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return indexed(count, blocklengths, nullptr, displacements, 0, oldtype, newtype,
                   MPI_COMBINER_HINDEXED, "MPI_Type_hindexed");
} catch (...) {
    return api_exception("MPI_Type_hindexed");
}
ULMPI_ALIAS(MPI_Type_hindexed)

int PMPI_Type_struct(int count, const int* blocklengths, const MPI_Aint* displacements,
                     const MPI_Datatype* types, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return structure(count, blocklengths, displacements, types, newtype, "MPI_Type_struct");
} catch (...) {
    return api_exception("MPI_Type_struct");
}
ULMPI_ALIAS(MPI_Type_struct)

// --- MPI-2 constructors ------------------------------------------------------

int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                             MPI_Datatype* newtype) try {
    EntryGuard guard;
    return vector(count, blocklength, stride, true, oldtype, newtype, "MPI_Type_create_hvector");
} catch (...) {
    return api_exception("MPI_Type_create_hvector");
}
ULMPI_ALIAS(MPI_Type_create_hvector)

int PMPI_Type_create_hindexed(int count, const int* blocklengths, const MPI_Aint* displacements,
                              MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return indexed(count, blocklengths, nullptr, displacements, 0, oldtype, newtype,
                   MPI_COMBINER_HINDEXED, "MPI_Type_create_hindexed");
} catch (...) {
    return api_exception("MPI_Type_create_hindexed");
}
ULMPI_ALIAS(MPI_Type_create_hindexed)

int PMPI_Type_create_indexed_block(int count, int blocklength, const int* displacements,
                                   MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return indexed(count, nullptr, displacements, nullptr, blocklength, oldtype, newtype,
                   MPI_COMBINER_INDEXED_BLOCK, "MPI_Type_create_indexed_block");
} catch (...) {
    return api_exception("MPI_Type_create_indexed_block");
}
ULMPI_ALIAS(MPI_Type_create_indexed_block)

int PMPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint* displacements,
                                    MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return indexed(count, nullptr, nullptr, displacements, blocklength, oldtype, newtype,
                   MPI_COMBINER_HINDEXED_BLOCK, "MPI_Type_create_hindexed_block");
} catch (...) {
    return api_exception("MPI_Type_create_hindexed_block");
}
ULMPI_ALIAS(MPI_Type_create_hindexed_block)

int PMPI_Type_create_struct(int count, const int* blocklengths, const MPI_Aint* displacements,
                            const MPI_Datatype* types, MPI_Datatype* newtype) try {
    EntryGuard guard;
    return structure(count, blocklengths, displacements, types, newtype, "MPI_Type_create_struct");
} catch (...) {
    return api_exception("MPI_Type_create_struct");
}
ULMPI_ALIAS(MPI_Type_create_struct)

int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                             MPI_Datatype* newtype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_create_resized";
    require_init(fn);
    Datatype* old = nullptr;
    if (int e = get_type(oldtype, "oldtype", fn, &old)) {
        return e;
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    Datatype* t = build_resized(old, lb, extent);
    return publish(t, MPI_COMBINER_RESIZED, {}, {lb, extent}, {old}, newtype, fn);
} catch (...) {
    return api_exception("MPI_Type_create_resized");
}
ULMPI_ALIAS(MPI_Type_create_resized)

int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_dup";
    require_init(fn);
    Datatype* old = nullptr;
    if (int e = get_type(oldtype, "oldtype", fn, &old)) {
        return e;
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    Datatype* t = build_dup(old);
    if (old->committed) {
        std::string why;
        if (int e = datatype_commit(t, why)) {
            datatype_release(t);
            return raise(nullptr, e, fn, "%s", why.c_str());
        }
    }
    if (type_attr_hooks.copy != nullptr && old->attrs != nullptr) {
        if (int e = type_attr_hooks.copy(old, t)) {
            datatype_release(t);
            return raise(nullptr, e, fn, "an attribute copy callback failed");
        }
    }
    MPI_Datatype h;
    if (int e = publish(t, MPI_COMBINER_DUP, {}, {}, {old}, &h, fn)) {
        return e;
    }
    *newtype = h;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_dup");
}
ULMPI_ALIAS(MPI_Type_dup)

int PMPI_Type_create_subarray(int ndims, const int* sizes, const int* subsizes, const int* starts,
                              int order, MPI_Datatype oldtype, MPI_Datatype* newtype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_create_subarray";
    require_init(fn);
    Datatype* old = nullptr;
    if (int e = get_type(oldtype, "oldtype", fn, &old)) {
        return e;
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    if (ndims > 0 && (sizes == nullptr || subsizes == nullptr || starts == nullptr)) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL",
                     sizes == nullptr      ? "array_of_sizes"
                     : subsizes == nullptr ? "array_of_subsizes"
                                           : "array_of_starts");
    }
    Datatype* t = nullptr;
    std::string why;
    if (int e = build_subarray(ndims, sizes, subsizes, starts, order, old, &t, why)) {
        return raise(nullptr, e, fn, "%s", why.c_str());
    }
    auto n = static_cast<std::size_t>(ndims);
    std::vector<int> ints{ndims};
    ints.insert(ints.end(), sizes, sizes + n);
    ints.insert(ints.end(), subsizes, subsizes + n);
    ints.insert(ints.end(), starts, starts + n);
    ints.push_back(order);
    return publish(t, MPI_COMBINER_SUBARRAY, std::move(ints), {}, {old}, newtype, fn);
} catch (...) {
    return api_exception("MPI_Type_create_subarray");
}
ULMPI_ALIAS(MPI_Type_create_subarray)

int PMPI_Type_create_darray(int size, int rank, int ndims, const int* gsizes, const int* distribs,
                            const int* dargs, const int* psizes, int order, MPI_Datatype oldtype,
                            MPI_Datatype* newtype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_create_darray";
    require_init(fn);
    Datatype* old = nullptr;
    if (int e = get_type(oldtype, "oldtype", fn, &old)) {
        return e;
    }
    if (int e = need_ptr(newtype, "newtype", fn)) {
        return e;
    }
    if (ndims > 0 &&
        (gsizes == nullptr || distribs == nullptr || dargs == nullptr || psizes == nullptr)) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL",
                     gsizes == nullptr     ? "array_of_gsizes"
                     : distribs == nullptr ? "array_of_distribs"
                     : dargs == nullptr    ? "array_of_dargs"
                                           : "array_of_psizes");
    }
    Datatype* t = nullptr;
    std::string why;
    if (int e =
            build_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old, &t, why)) {
        return raise(nullptr, e, fn, "%s", why.c_str());
    }
    auto n = static_cast<std::size_t>(ndims);
    std::vector<int> ints{size, rank, ndims};
    ints.insert(ints.end(), gsizes, gsizes + n);
    ints.insert(ints.end(), distribs, distribs + n);
    ints.insert(ints.end(), dargs, dargs + n);
    ints.insert(ints.end(), psizes, psizes + n);
    ints.push_back(order);
    return publish(t, MPI_COMBINER_DARRAY, std::move(ints), {}, {old}, newtype, fn);
} catch (...) {
    return api_exception("MPI_Type_create_darray");
}
ULMPI_ALIAS(MPI_Type_create_darray)

// --- commit and free ---------------------------------------------------------

int PMPI_Type_commit(MPI_Datatype* type) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_commit";
    require_init(fn);
    if (int e = need_ptr(type, "the datatype pointer", fn)) {
        return e;
    }
    Datatype* t = nullptr;
    if (int e = get_type(*type, "datatype", fn, &t)) {
        return e;
    }
    std::string why;
    if (int e = datatype_commit(t, why)) {
        return raise(nullptr, e, fn, "%s", why.c_str());
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_commit");
}
ULMPI_ALIAS(MPI_Type_commit)

int PMPI_Type_free(MPI_Datatype* type) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_free";
    require_init(fn);
    if (int e = need_ptr(type, "the datatype pointer", fn)) {
        return e;
    }
    Datatype* t = nullptr;
    if (int e = get_type(*type, "datatype", fn, &t)) {
        return e;
    }
    if (t->predefined) {
        return raise(nullptr, MPI_ERR_TYPE, fn, "%s is predefined and cannot be freed",
                     t->name.c_str());
    }
    // The object lives on while other types or pending requests hold it.
    bool last_handle = t->aliases.empty();
    if (last_handle && type_attr_hooks.erase != nullptr && t->attrs != nullptr) {
        if (int e = type_attr_hooks.erase(t)) {
            return raise(nullptr, e, fn, "an attribute delete callback failed");
        }
    }
    datatype_unpublish(*type, t);
    *type = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_free");
}
ULMPI_ALIAS(MPI_Type_free)

// --- bounds, extents, addresses ----------------------------------------------

int PMPI_Type_get_extent(MPI_Datatype type, MPI_Aint* lb, MPI_Aint* extent) try {
    EntryGuard guard;
    return extent_of(type, lb, extent, false, "MPI_Type_get_extent");
} catch (...) {
    return api_exception("MPI_Type_get_extent");
}
ULMPI_ALIAS(MPI_Type_get_extent)

int PMPI_Type_get_true_extent(MPI_Datatype type, MPI_Aint* lb, MPI_Aint* extent) try {
    EntryGuard guard;
    return extent_of(type, lb, extent, true, "MPI_Type_get_true_extent");
} catch (...) {
    return api_exception("MPI_Type_get_true_extent");
}
ULMPI_ALIAS(MPI_Type_get_true_extent)

int PMPI_Type_get_extent_x(MPI_Datatype type, MPI_Count* lb, MPI_Count* extent) try {
    EntryGuard guard;
    MPI_Aint l = 0;
    MPI_Aint e = 0;
    if (int err = extent_of(type, &l, &e, false, "MPI_Type_get_extent_x")) {
        return err;
    }
    if (lb == nullptr || extent == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, "MPI_Type_get_extent_x", "%s is NULL",
                     lb == nullptr ? "lb" : "extent");
    }
    *lb = l;
    *extent = e;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_get_extent_x");
}
ULMPI_ALIAS(MPI_Type_get_extent_x)

int PMPI_Type_get_true_extent_x(MPI_Datatype type, MPI_Count* lb, MPI_Count* extent) try {
    EntryGuard guard;
    MPI_Aint l = 0;
    MPI_Aint e = 0;
    if (int err = extent_of(type, &l, &e, true, "MPI_Type_get_true_extent_x")) {
        return err;
    }
    if (lb == nullptr || extent == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, "MPI_Type_get_true_extent_x", "%s is NULL",
                     lb == nullptr ? "lb" : "extent");
    }
    *lb = l;
    *extent = e;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_get_true_extent_x");
}
ULMPI_ALIAS(MPI_Type_get_true_extent_x)

int PMPI_Type_extent(MPI_Datatype type, MPI_Aint* extent) try {
    EntryGuard guard;
    return bound_of(type, extent, Bound::extent, "MPI_Type_extent");
} catch (...) {
    return api_exception("MPI_Type_extent");
}
ULMPI_ALIAS(MPI_Type_extent)

int PMPI_Type_lb(MPI_Datatype type, MPI_Aint* displacement) try {
    EntryGuard guard;
    return bound_of(type, displacement, Bound::lb, "MPI_Type_lb");
} catch (...) {
    return api_exception("MPI_Type_lb");
}
ULMPI_ALIAS(MPI_Type_lb)

int PMPI_Type_ub(MPI_Datatype type, MPI_Aint* displacement) try {
    EntryGuard guard;
    return bound_of(type, displacement, Bound::ub, "MPI_Type_ub");
} catch (...) {
    return api_exception("MPI_Type_ub");
}
ULMPI_ALIAS(MPI_Type_ub)

int PMPI_Get_address(const void* location, MPI_Aint* addr) try {
    EntryGuard guard;
    return address(location, addr, "MPI_Get_address");
} catch (...) {
    return api_exception("MPI_Get_address");
}
ULMPI_ALIAS(MPI_Get_address)

int PMPI_Address(const void* location, MPI_Aint* addr) try {
    EntryGuard guard;
    return address(location, addr, "MPI_Address");
} catch (...) {
    return api_exception("MPI_Address");
}
ULMPI_ALIAS(MPI_Address)

MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return static_cast<MPI_Aint>(static_cast<unsigned long>(base) +
                                 static_cast<unsigned long>(disp));
}
ULMPI_ALIAS(MPI_Aint_add)

MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return static_cast<MPI_Aint>(static_cast<unsigned long>(addr1) -
                                 static_cast<unsigned long>(addr2));
}
ULMPI_ALIAS(MPI_Aint_diff)

// --- decoding ----------------------------------------------------------------

int PMPI_Type_get_envelope(MPI_Datatype type, int* num_integers, int* num_addresses,
                           int* num_datatypes, int* combiner) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_get_envelope";
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, "datatype", fn, &t)) {
        return e;
    }
    if (num_integers == nullptr || num_addresses == nullptr || num_datatypes == nullptr ||
        combiner == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "an output argument is NULL");
    }
    *num_integers = static_cast<int>(t->ints.size());
    *num_addresses = static_cast<int>(t->aints.size());
    *num_datatypes = static_cast<int>(t->types.size());
    *combiner = t->combiner;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_get_envelope");
}
ULMPI_ALIAS(MPI_Type_get_envelope)

int PMPI_Type_get_contents(MPI_Datatype type, int max_integers, int max_addresses,
                           int max_datatypes, int* integers, MPI_Aint* addresses,
                           MPI_Datatype* datatypes) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_get_contents";
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, "datatype", fn, &t)) {
        return e;
    }
    if (t->combiner == MPI_COMBINER_NAMED) {
        return raise(nullptr, MPI_ERR_TYPE, fn,
                     "%s is a named (predefined) datatype: it has no contents", t->name.c_str());
    }
    auto ni = static_cast<int>(t->ints.size());
    auto na = static_cast<int>(t->aints.size());
    auto nd = static_cast<int>(t->types.size());
    if (max_integers < ni || max_addresses < na || max_datatypes < nd) {
        return raise(nullptr, MPI_ERR_ARG, fn,
                     "the arrays are too small: they hold %d integers, %d addresses, %d datatypes; "
                     "the datatype needs %d, %d, %d (see MPI_Type_get_envelope)",
                     max_integers, max_addresses, max_datatypes, ni, na, nd);
    }
    if ((ni > 0 && integers == nullptr) || (na > 0 && addresses == nullptr) ||
        (nd > 0 && datatypes == nullptr)) {
        return raise(nullptr, MPI_ERR_ARG, fn, "an output array is NULL");
    }
    std::copy(t->ints.begin(), t->ints.end(), integers);
    std::copy(t->aints.begin(), t->aints.end(), addresses);
    // A derived type comes back as a new handle the caller frees (MPI-3.1
    // §4.1.13); it names the same object, which it keeps alive.
    for (int i = 0; i < nd; ++i) {
        Datatype* c = t->types[static_cast<std::size_t>(i)];
        if (c->predefined) {
            datatypes[i] = c->handle;
            continue;
        }
        datatype_retain(c);
        MPI_Datatype h = datatype_publish(c);
        if (h == 0) {
            datatype_release(c);
            return raise(nullptr, MPI_ERR_INTERN, fn, "no free datatype handle is left");
        }
        datatypes[i] = h;
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_get_contents");
}
ULMPI_ALIAS(MPI_Type_get_contents)

// --- names -------------------------------------------------------------------

int PMPI_Type_set_name(MPI_Datatype type, const char* name) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_set_name";
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, "datatype", fn, &t)) {
        return e;
    }
    if (int e = need_ptr(name, "type_name", fn)) {
        return e;
    }
    t->name.assign(name, strnlen(name, MPI_MAX_OBJECT_NAME - 1));
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_set_name");
}
ULMPI_ALIAS(MPI_Type_set_name)

int PMPI_Type_get_name(MPI_Datatype type, char* name, int* resultlen) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_get_name";
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, "datatype", fn, &t)) {
        return e;
    }
    if (name == nullptr || resultlen == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL",
                     name == nullptr ? "type_name" : "resultlen");
    }
    std::size_t n = std::min<std::size_t>(t->name.size(), MPI_MAX_OBJECT_NAME - 1);
    std::memcpy(name, t->name.data(), n);
    name[n] = '\0';
    *resultlen = static_cast<int>(n);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_get_name");
}
ULMPI_ALIAS(MPI_Type_get_name)

// --- MPI_Type_match_size -----------------------------------------------------

int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype* datatype) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_match_size";
    require_init(fn);
    if (int e = need_ptr(datatype, "datatype", fn)) {
        return e;
    }
    // The standard's choice: the Fortran sized types where they exist.
    static constexpr MPI_Datatype integers[] = {MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4,
                                                MPI_INTEGER8};
    static constexpr MPI_Datatype reals[] = {MPI_REAL4, MPI_REAL8, MPI_LONG_DOUBLE};
    static constexpr MPI_Datatype complexes[] = {MPI_COMPLEX8, MPI_COMPLEX16,
                                                 MPI_C_LONG_DOUBLE_COMPLEX};
    const MPI_Datatype* list = nullptr;
    std::size_t n = 0;
    const char* cls = nullptr;
    switch (typeclass) {
    case MPI_TYPECLASS_INTEGER:
        list = integers;
        n = std::size(integers);
        cls = "MPI_TYPECLASS_INTEGER";
        break;
    case MPI_TYPECLASS_REAL:
        list = reals;
        n = std::size(reals);
        cls = "MPI_TYPECLASS_REAL";
        break;
    case MPI_TYPECLASS_COMPLEX:
        list = complexes;
        n = std::size(complexes);
        cls = "MPI_TYPECLASS_COMPLEX";
        break;
    default:
        return raise(nullptr, MPI_ERR_ARG, fn,
                     "typeclass %d is not MPI_TYPECLASS_INTEGER, _REAL or _COMPLEX", typeclass);
    }
    for (std::size_t i = 0; i < n; ++i) {
        Datatype* t = datatype_get(list[i]);
        if (t != nullptr && t->size == static_cast<std::uint64_t>(size)) {
            *datatype = list[i];
            return MPI_SUCCESS;
        }
    }
    return raise(nullptr, MPI_ERR_ARG, fn, "no predefined type of class %s has %d bytes", cls,
                 size);
} catch (...) {
    return api_exception("MPI_Type_match_size");
}
ULMPI_ALIAS(MPI_Type_match_size)
