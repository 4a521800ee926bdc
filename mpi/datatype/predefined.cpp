// The predefined datatypes, built once from predefined.def.
#include "mpi/datatype/datatype.h"

#include "mpi/handle.h"

#include <complex>
#include <cstddef>
#include <cstdint>

namespace ulmpi::mpi {
namespace {

HandleTable<Datatype, ULMPI_KIND_DATATYPE>& table()
{
    static HandleTable<Datatype, ULMPI_KIND_DATATYPE> t;
    return t;
}

template <class T> struct PairRuns {
    static void add(Datatype&) {}
};
template <class V, class I> struct PairRuns<LocPair<V, I>> {
    static void add(Datatype& d)
    {
        d.runs.push_back({0, sizeof(V)});
        using P = LocPair<V, I>;
        d.runs.push_back({static_cast<std::int64_t>(offsetof(P, index)), sizeof(I)});
        d.elements = 2;
        d.element_size = sizeof(V) == sizeof(I) ? sizeof(V) : 0;
    }
};

Datatype* make(int index, const char* name, std::uint64_t size, std::int64_t extent, Category cat)
{
    auto* d = new Datatype;
    d->handle = make_handle(ULMPI_KIND_DATATYPE, index);
    d->category = cat;
    d->predefined = true;
    d->committed = true;
    d->size = size;
    d->lb = 0;
    d->ub = extent;
    d->true_lb = 0;
    d->true_ub = extent;
    d->name = name;
    d->refs = 1 << 30;
    d->elements = size != 0 ? 1 : 0;
    d->element_size = size;
    d->basic = d;
    return d;
}

} // namespace

void Datatype::finish_layout()
{
    // Merge runs that touch (in type-map order).
    std::vector<ulm::Run> merged;
    merged.reserve(runs.size());
    for (const ulm::Run& r : runs) {
        if (r.len == 0) {
            continue;
        }
        if (!merged.empty() && merged.back().disp + static_cast<std::int64_t>(merged.back().len) == r.disp) {
            merged.back().len += r.len;
        } else {
            merged.push_back(r);
        }
    }
    runs = std::move(merged);
    prefix.assign(runs.size() + 1, 0);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        prefix[i + 1] = prefix[i] + runs[i].len;
    }
    layout.size = size;
    layout.extent = extent();
    layout.nruns = static_cast<std::uint32_t>(runs.size());
    layout.runs = runs.data();
    layout.prefix = prefix.data();
    layout.contiguous = runs.size() == 1 && static_cast<MPI_Aint>(runs[0].len) == extent();
}

void datatype_init_predefined()
{
    static bool done = false;
    if (done) {
        return;
    }
    done = true;
#define ULMPI_DT_COMPLEX(T) std::complex<T>
#define ULMPI_DT_PAIR(V, I) LocPair<V, I>
#define ULMPI_DATATYPE(name, index, size, extent, align, category, ctype)                          \
    {                                                                                              \
        Datatype* d = make(index, #name, size, extent, Category::category);                        \
        if (Category::category == Category::pair) {                                                \
            PairRuns<ctype>::add(*d);                                                              \
        } else if (size != 0) {                                                                    \
            d->runs.push_back({0, size});                                                          \
        }                                                                                          \
        d->finish_layout();                                                                        \
        table().set_predefined(index, d);                                                          \
    }
#include "mpi/datatype/predefined.def"
#undef ULMPI_DT_COMPLEX
#undef ULMPI_DT_PAIR
}

Datatype* datatype_get(MPI_Datatype h) { return table().get(h); }

const char* datatype_name(MPI_Datatype h)
{
    Datatype* d = datatype_get(h);
    return d != nullptr ? d->name.c_str() : "MPI_DATATYPE_NULL";
}

} // namespace ulmpi::mpi
