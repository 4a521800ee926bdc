// The predefined datatypes, built once from predefined.def; the handle
// table of all datatypes; references and deletion.
#include "mpi/datatype/datatype.h"

#include "mpi/handle.h"

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>

namespace ulmpi::mpi {

TypeAttrHooks type_attr_hooks;
constinit std::atomic<HandleTable<Datatype, ULMPI_KIND_DATATYPE>*> g_datatype_table{nullptr};

namespace {

// Never destroyed (as the op table): the predefined types live as long as the
// process, and a table destroyed at exit would leave them unreachable (what
// LeakSanitizer reports) and any MPI call from a later exit handler without it.
HandleTable<Datatype, ULMPI_KIND_DATATYPE>& table()
{
    static auto* const t = new HandleTable<Datatype, ULMPI_KIND_DATATYPE>;
    g_datatype_table.store(t, std::memory_order_release);
    return *t;
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
        d.pair_first = sizeof(V);
        // The padding after the index is not data.
        d.true_ub = static_cast<MPI_Aint>(offsetof(P, index) + sizeof(I));
    }
};

Datatype* make(int index, const char* name, std::uint64_t size, std::int64_t extent,
               std::uint32_t align, Category cat)
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
    d->align = align;
    d->name = name;
    d->refs = 1 << 30;
    d->elements = size != 0 ? 1 : 0;
    d->element_size = size;
    d->basic = cat == Category::marker ? nullptr : d;
    d->ext32_size = external32_predefined_size(*d);
    return d;
}

// Deletes t and every child whose last reference t held (iteratively: a
// long chain of freed types must not recurse once per level).
void destroy(Datatype* t)
{
    std::vector<Datatype*> work{t};
    while (!work.empty()) {
        Datatype* d = work.back();
        work.pop_back();
        auto drop = [&](Datatype* c) {
            if (c != nullptr && !c->predefined && --c->refs == 0) {
                work.push_back(c);
            }
        };
        for (const TypeBlock& b : d->blocks) {
            drop(b.type);
        }
        for (Datatype* c : d->types) {
            drop(c);
        }
        delete d;
    }
}

} // namespace

void Datatype::finish_layout()
{
    // Merge runs that touch (in type-map order), in place.
    std::size_t n = 0;
    for (const ulm::Run& r : runs) {
        if (r.len == 0) {
            continue;
        }
        if (n > 0 && runs[n - 1].disp + static_cast<std::int64_t>(runs[n - 1].len) == r.disp) {
            runs[n - 1].len += r.len;
        } else {
            runs[n++] = r;
        }
    }
    runs.resize(n);
    runs.shrink_to_fit();
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
    flattened = true;
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
        Datatype* d = make(index, #name, size, extent, align, Category::category);                 \
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
    // One handle, two names: MPI_C_COMPLEX is the standard's, MPI_C_FLOAT_COMPLEX
    // its synonym (MPICH answers the same; its typename test checks it).
    datatype_get(MPI_C_FLOAT_COMPLEX)->name = "MPI_C_COMPLEX";
}


const char* datatype_name(MPI_Datatype h)
{
    Datatype* d = datatype_get(h);
    return d != nullptr ? d->name.c_str() : "MPI_DATATYPE_NULL";
}

void datatype_retain(Datatype* t)
{
    if (!t->predefined) {
        ++t->refs;
    }
}

void datatype_release(Datatype* t)
{
    if (!t->predefined && --t->refs == 0) {
        destroy(t);
    }
}

MPI_Datatype datatype_publish(Datatype* t)
{
    int h = table().insert(t);
    if (h == 0) {
        return 0;
    }
    if (t->handle == 0) {
        t->handle = h;
    } else {
        t->aliases.push_back(h);
    }
    return h;
}

void datatype_unpublish(MPI_Datatype h, Datatype* t)
{
    table().erase(h);
    if (t->handle == h) {
        if (t->aliases.empty()) {
            t->handle = 0;
        } else {
            t->handle = t->aliases.back();
            t->aliases.pop_back();
        }
    } else {
        t->aliases.erase(std::remove(t->aliases.begin(), t->aliases.end(), h), t->aliases.end());
    }
    datatype_release(t);
}

} // namespace ulmpi::mpi
