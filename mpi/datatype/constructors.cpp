// Derived datatype constructors: the structure of a new type (see
// datatype.h) and everything that follows from its children without
// expanding it: size, bounds, true bounds, element counts, basic type,
// alignment, external32 size.
//
// Bounds. A block puts copies of its child C at displacements
// disp + j * extent(C), j < count, and the type repeats its blocks at
// r * rep_stride, r < reps. The extremes of those displacements are at the
// first or last copy, so each block costs O(1) whatever its count, and
// negative strides and extents need no special case:
//   - a child with a sticky lb (an explicit marker) offers dmin + C.lb as a
//     marker, otherwise, when it has data, as a natural lower bound;
//     likewise the ub with dmax + C.ub; MPI_LB / MPI_UB themselves offer
//     their displacement as a marker;
//   - lb = the least marker if any, else the least natural bound, else 0;
//     ub = the greatest marker if any, else the greatest natural bound,
//     else 0 (MPI-1's sticky markers: they cannot be overridden, only
//     extended by further markers);
//   - struct only (as MPICH does): without any marker, the extent is
//     rounded up to the strictest alignment of its members.
// A child's own padding travels with its extent (vector of a padded struct
// keeps the padding), which is what MPICH and Open MPI do for the
// non-struct constructors.
//
// MPI_Type_create_resized sets both bounds as markers, per MPI-2.2 §4.1.7
// ("a new pair of lower bound and upper bound markers"), so a struct built
// from resized types takes its bounds from them (Open MPI does the same;
// MPICH treats resized bounds as non-sticky).
#include "mpi/datatype/datatype.h"

#include <algorithm>
#include <climits>
#include <vector>

namespace ulmpi::mpi {
namespace {

bool is_lb_marker(const Datatype* t) { return t->predefined && t->handle == MPI_LB; }
bool is_ub_marker(const Datatype* t) { return t->predefined && t->handle == MPI_UB; }

Datatype* new_derived()
{
    auto* d = new Datatype;
    d->category = Category::derived;
    d->elements = 0;
    return d;
}

void add_block(Datatype* d, Datatype* child, std::int64_t disp, std::uint64_t count)
{
    datatype_retain(child);
    d->blocks.push_back(TypeBlock{child, disp, count});
}

// One side (lower or upper) of the bounds being computed.
struct Side {
    bool marker = false;
    bool natural = false;
    std::int64_t m = 0; // extreme marker
    std::int64_t n = 0; // extreme natural bound

    void offer_marker(std::int64_t v, bool lower)
    {
        m = !marker ? v : (lower ? std::min(m, v) : std::max(m, v));
        marker = true;
    }
    void offer_natural(std::int64_t v, bool lower)
    {
        n = !natural ? v : (lower ? std::min(n, v) : std::max(n, v));
        natural = true;
    }
};

// Fills everything but the flattened form from d's structure.
void compute(Datatype* d, bool pad)
{
    std::uint64_t row_size = 0;
    std::uint64_t row_elements = 0;
    std::uint64_t row_ext32 = 0;
    std::uint32_t align = 1;
    bool any_member = false;
    bool mixed = false;
    const Datatype* basic = nullptr;
    std::uint64_t element_size = 0;
    Side lo;
    Side hi;
    bool has_data = false;
    std::int64_t tlb = 0;
    std::int64_t tub = 0;

    for (const TypeBlock& b : d->blocks) {
        const Datatype* c = b.type;
        // Members that hold no basic type at all (markers, a struct of
        // markers only) do not make the type mixed.
        if (c->category != Category::marker) {
            align = std::max(align, c->align);
        }
        if (c->category != Category::marker && (c->basic != nullptr || c->elements != 0)) {
            if (!any_member) {
                basic = c->basic;
                element_size = c->element_size;
                mixed = c->basic == nullptr;
                any_member = true;
            } else {
                if (basic != c->basic) {
                    mixed = true;
                }
                if (element_size != c->element_size) {
                    element_size = 0;
                }
            }
        }
        if (b.count == 0) {
            continue;
        }
        row_size += b.count * c->size;
        row_elements += b.count * c->elements;
        row_ext32 += b.count * c->ext32_size;
        std::int64_t span = static_cast<std::int64_t>(b.count - 1) * c->extent();
        std::int64_t dmin = b.disp + std::min<std::int64_t>(0, span);
        std::int64_t dmax = b.disp + std::max<std::int64_t>(0, span);
        if (is_lb_marker(c)) {
            lo.offer_marker(dmin, true);
            continue;
        }
        if (is_ub_marker(c)) {
            hi.offer_marker(dmax, false);
            continue;
        }
        if (c->sticky_lb) {
            lo.offer_marker(dmin + c->lb, true);
        } else if (c->size > 0) {
            lo.offer_natural(dmin + c->lb, true);
        }
        if (c->sticky_ub) {
            hi.offer_marker(dmax + c->ub, false);
        } else if (c->size > 0) {
            hi.offer_natural(dmax + c->ub, false);
        }
        if (c->size > 0) {
            std::int64_t a = dmin + c->true_lb;
            std::int64_t z = dmax + c->true_ub;
            tlb = has_data ? std::min(tlb, a) : a;
            tub = has_data ? std::max(tub, z) : z;
            has_data = true;
        }
    }

    d->size = d->reps * row_size;
    d->elements = d->reps * row_elements;
    d->ext32_size = d->reps * row_ext32;
    d->align = align;
    d->basic = mixed ? nullptr : basic;
    d->element_size = element_size;

    if (d->reps == 0) {
        lo = Side{};
        hi = Side{};
        has_data = false;
    }
    std::int64_t shift = d->reps > 0 ? static_cast<std::int64_t>(d->reps - 1) * d->rep_stride : 0;
    std::int64_t smin = std::min<std::int64_t>(0, shift);
    std::int64_t smax = std::max<std::int64_t>(0, shift);
    d->sticky_lb = lo.marker;
    d->sticky_ub = hi.marker;
    d->lb = lo.marker ? lo.m + smin : (lo.natural ? lo.n + smin : 0);
    d->ub = hi.marker ? hi.m + smax : (hi.natural ? hi.n + smax : 0);
    d->true_lb = has_data ? tlb + smin : 0;
    d->true_ub = has_data ? tub + smax : 0;
    if (pad && !lo.marker && !hi.marker && align > 1) {
        std::int64_t a = align;
        std::int64_t r = ((d->ub - d->lb) % a + a) % a;
        if (r != 0) {
            d->ub += a - r;
        }
    }
}

} // namespace

Datatype* build_contiguous(std::uint64_t count, Datatype* old)
{
    Datatype* d = new_derived();
    add_block(d, old, 0, count);
    compute(d, false);
    return d;
}

Datatype* build_hvector(std::uint64_t count, std::uint64_t blocklen, std::int64_t stride_bytes,
                        Datatype* old)
{
    Datatype* d = new_derived();
    d->reps = count;
    d->rep_stride = stride_bytes;
    add_block(d, old, 0, blocklen);
    compute(d, false);
    return d;
}

Datatype* build_hindexed(std::size_t count, const std::uint64_t* blocklens,
                         const std::int64_t* disps_bytes, Datatype* old)
{
    Datatype* d = new_derived();
    d->blocks.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        add_block(d, old, disps_bytes[i], blocklens[i]);
    }
    if (count == 0) {
        // No block, but the type is still "of" old (its basic type).
        add_block(d, old, 0, 0);
    }
    compute(d, false);
    return d;
}

Datatype* build_struct(std::size_t count, const std::uint64_t* blocklens,
                       const std::int64_t* disps_bytes, Datatype* const* types)
{
    Datatype* d = new_derived();
    d->blocks.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        add_block(d, types[i], disps_bytes[i], blocklens[i]);
    }
    compute(d, true);
    return d;
}

Datatype* build_resized(Datatype* old, std::int64_t lb, std::int64_t extent)
{
    Datatype* d = new_derived();
    add_block(d, old, 0, 1);
    compute(d, false);
    d->lb = lb;
    d->ub = lb + extent;
    d->sticky_lb = true;
    d->sticky_ub = true;
    return d;
}

Datatype* build_dup(Datatype* old)
{
    Datatype* d = new_derived();
    add_block(d, old, 0, 1);
    compute(d, false);
    d->lb = old->lb;
    d->ub = old->ub;
    d->true_lb = old->true_lb;
    d->true_ub = old->true_ub;
    d->sticky_lb = old->sticky_lb;
    d->sticky_ub = old->sticky_ub;
    return d;
}

namespace {

bool valid_order(int order) { return order == MPI_ORDER_C || order == MPI_ORDER_FORTRAN; }

// Wraps `t` (the caller's reference passes to the result) as one block at
// `disp` of a type whose bounds are [0, extent) as markers: the last step of
// the array types, and of each dimension of a darray.
Datatype* frame(Datatype* t, std::int64_t disp, std::int64_t extent)
{
    Datatype* d = new_derived();
    d->blocks.push_back(TypeBlock{t, disp, 1});
    compute(d, false);
    d->lb = 0;
    d->ub = extent;
    d->sticky_lb = true;
    d->sticky_ub = true;
    return d;
}

} // namespace

int build_subarray(int ndims, const int* sizes, const int* subsizes, const int* starts, int order,
                   Datatype* old, Datatype** out, std::string& why)
{
    if (ndims <= 0) {
        why = "ndims " + std::to_string(ndims) + " is not positive";
        return MPI_ERR_DIMS;
    }
    if (!valid_order(order)) {
        why = "order " + std::to_string(order) + " is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN";
        return MPI_ERR_ARG;
    }
    for (int i = 0; i < ndims; ++i) {
        if (sizes[i] <= 0) {
            why = "array_of_sizes[" + std::to_string(i) + "] = " + std::to_string(sizes[i]) +
                  " is not positive";
            return MPI_ERR_ARG;
        }
        if (subsizes[i] < 0 || subsizes[i] > sizes[i]) {
            why = "array_of_subsizes[" + std::to_string(i) + "] = " + std::to_string(subsizes[i]) +
                  " is not in 0.." + std::to_string(sizes[i]);
            return MPI_ERR_ARG;
        }
        if (starts[i] < 0 || starts[i] > sizes[i] - subsizes[i]) {
            why = "array_of_starts[" + std::to_string(i) + "] = " + std::to_string(starts[i]) +
                  " is not in 0.." + std::to_string(sizes[i] - subsizes[i]) + " (size " +
                  std::to_string(sizes[i]) + ", subsize " + std::to_string(subsizes[i]) + ")";
            return MPI_ERR_ARG;
        }
    }
    // Fastest dimension first: the last one in C order, the first in Fortran.
    auto dim = [&](int i) { return order == MPI_ORDER_C ? ndims - 1 - i : i; };
    std::int64_t stride = old->extent(); // bytes between consecutive indexes of dimension i
    std::int64_t disp = 0;
    Datatype* t = nullptr;
    for (int i = 0; i < ndims; ++i) {
        int d = dim(i);
        Datatype* next = i == 0
                             ? build_contiguous(static_cast<std::uint64_t>(subsizes[d]), old)
                             : build_hvector(static_cast<std::uint64_t>(subsizes[d]), 1, stride, t);
        if (t != nullptr) {
            datatype_release(t);
        }
        t = next;
        disp += static_cast<std::int64_t>(starts[d]) * stride;
        stride *= sizes[d];
    }
    *out = frame(t, disp, stride);
    return MPI_SUCCESS;
}

namespace {

// The indexes [first, first + len) of one dimension this process holds.
struct Span {
    std::int64_t first;
    std::int64_t len;
};

// One dimension of a darray: the copies of `prev` (whose extent is `stride`,
// the bytes from one index of this dimension to the next) this process
// holds, framed to the whole dimension (gsize * stride bytes).
Datatype* darray_dim(Datatype* prev, std::int64_t stride, int gsize, int distrib, int darg,
                     int psize, int coord)
{
    Datatype* d = new_derived();
    auto add = [&](Datatype* c, std::int64_t first, std::int64_t len) {
        if (len > 0) {
            add_block(d, c, first * stride, static_cast<std::uint64_t>(len));
        }
    };
    if (distrib == MPI_DISTRIBUTE_NONE) {
        add(prev, 0, gsize);
    } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
        std::int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
        std::int64_t first = coord * b;
        add(prev, first, std::min<std::int64_t>(b, gsize - first));
    } else { // cyclic: blocks of b indexes every psize * b indexes
        std::int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        std::int64_t first = coord * b;
        std::int64_t step = psize * b;
        std::int64_t full = first + b <= gsize ? (gsize - first - b) / step + 1 : 0;
        if (full > 0) {
            // The whole blocks as one vector; keeps the structure O(1).
            Datatype* v = build_hvector(static_cast<std::uint64_t>(full),
                                        static_cast<std::uint64_t>(b), step * stride, prev);
            add_block(d, v, first * stride, 1);
            datatype_release(v);
        }
        std::int64_t tail = first + full * step; // a last, partial block
        if (tail < gsize) {
            add(prev, tail, std::min<std::int64_t>(b, gsize - tail));
        }
    }
    if (d->blocks.empty()) {
        add_block(d, prev, 0, 0); // holds nothing, still "of" prev
    }
    compute(d, false);
    d->lb = 0;
    d->ub = static_cast<std::int64_t>(gsize) * stride;
    d->sticky_lb = true;
    d->sticky_ub = true;
    return d;
}

} // namespace

int build_darray(int size, int rank, int ndims, const int* gsizes, const int* distribs,
                 const int* dargs, const int* psizes, int order, Datatype* old, Datatype** out,
                 std::string& why)
{
    auto num = [](int v) { return std::to_string(v); };
    if (size <= 0) {
        why = "size " + num(size) + " is not positive";
        return MPI_ERR_ARG;
    }
    if (rank < 0 || rank >= size) {
        why = "rank " + num(rank) + " is not in 0.." + num(size - 1);
        return MPI_ERR_RANK;
    }
    if (ndims <= 0) {
        why = "ndims " + num(ndims) + " is not positive";
        return MPI_ERR_DIMS;
    }
    if (!valid_order(order)) {
        why = "order " + num(order) + " is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN";
        return MPI_ERR_ARG;
    }
    long long procs = 1;
    for (int i = 0; i < ndims; ++i) {
        std::string at = "[" + num(i) + "]";
        if (gsizes[i] <= 0) {
            why = "array_of_gsizes" + at + " = " + num(gsizes[i]) + " is not positive";
            return MPI_ERR_ARG;
        }
        if (psizes[i] <= 0) {
            why = "array_of_psizes" + at + " = " + num(psizes[i]) + " is not positive";
            return MPI_ERR_ARG;
        }
        procs *= psizes[i];
        int dist = distribs[i];
        if (dist != MPI_DISTRIBUTE_BLOCK && dist != MPI_DISTRIBUTE_CYCLIC &&
            dist != MPI_DISTRIBUTE_NONE) {
            why = "array_of_distribs" + at + " = " + num(dist) + " is not a distribution";
            return MPI_ERR_ARG;
        }
        if (dargs[i] != MPI_DISTRIBUTE_DFLT_DARG && dargs[i] <= 0) {
            why = "array_of_dargs" + at + " = " + num(dargs[i]) +
                  " is neither positive nor MPI_DISTRIBUTE_DFLT_DARG";
            return MPI_ERR_ARG;
        }
        if (dist == MPI_DISTRIBUTE_NONE && psizes[i] != 1) {
            why = "dimension " + num(i) + " is MPI_DISTRIBUTE_NONE but array_of_psizes" + at +
                  " = " + num(psizes[i]) + " (must be 1)";
            return MPI_ERR_ARG;
        }
        if (dist == MPI_DISTRIBUTE_BLOCK && dargs[i] != MPI_DISTRIBUTE_DFLT_DARG &&
            static_cast<long long>(dargs[i]) * psizes[i] < gsizes[i]) {
            why = "block distribution of dimension " + num(i) + ": darg " + num(dargs[i]) + " x " +
                  num(psizes[i]) + " processes does not cover " + num(gsizes[i]) + " elements";
            return MPI_ERR_ARG;
        }
    }
    if (procs != size) {
        why = "the process grid (product of array_of_psizes = " + std::to_string(procs) +
              ") does not have size " + num(size) + " processes";
        return MPI_ERR_ARG;
    }
    // Process coordinates: the grid is row-major whatever `order` says.
    std::vector<int> coord(static_cast<std::size_t>(ndims));
    for (int i = ndims - 1, r = rank; i >= 0; --i) {
        coord[static_cast<std::size_t>(i)] = r % psizes[i];
        r /= psizes[i];
    }
    auto dim = [&](int i) { return order == MPI_ORDER_C ? ndims - 1 - i : i; };
    std::int64_t stride = old->extent();
    Datatype* t = old;
    datatype_retain(t);
    for (int i = 0; i < ndims; ++i) {
        int d = dim(i);
        Datatype* next = darray_dim(t, stride, gsizes[d], distribs[d], dargs[d], psizes[d],
                                    coord[static_cast<std::size_t>(d)]);
        datatype_release(t);
        t = next;
        stride *= gsizes[d];
    }
    *out = frame(t, 0, stride);
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi
