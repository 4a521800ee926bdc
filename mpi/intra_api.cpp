// MPIX_Intra_*: intra-parallel sections (include/mpi-ext.h,
// docs/intra_parallelization.md). Argument checks and MPI datatypes here;
// the sections themselves are intra::Section.
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/state.h"

#include <mpi-ext.h>

#include <cstdarg>
#include <vector>

using namespace ulmpi;
using namespace ulmpi::mpi;

namespace {

// Datatypes of the open section's task types: held until its end.
std::vector<Datatype*> g_types;

intra::Section& section()
{
    State& s = state();
    if (!s.intra) {
        s.intra = std::make_unique<intra::Section>(s.engine, s.replicator.get());
    }
    return *s.intra;
}

void release_types()
{
    for (Datatype* t : g_types) {
        datatype_release(t);
    }
    g_types.clear();
}

int raise_section(const char* fn, const rt::Status& st)
{
    const int cls = st.code() == rt::Errc::invalid_arg ? MPI_ERR_OTHER : to_mpi_class(st.code());
    return raise(state().world, cls, fn, "%s", section().why().c_str());
}

int register_type(MPIX_Intra_task_fn* fn, int nargs, const int* tags, const MPI_Datatype* types,
                  const int* counts, int* id, const char* name)
{
    require_init(name);
    Comm* world = state().world;
    if (fn == nullptr) {
        return raise(world, MPI_ERR_ARG, name, "the task function is NULL");
    }
    if (nargs < 0 || nargs >= intra::kMaxArgs) {
        return raise(world, MPI_ERR_ARG, name, "%d parameters (0 to %d allowed)", nargs,
                     intra::kMaxArgs - 1);
    }
    if (nargs > 0 && (tags == nullptr || types == nullptr || counts == nullptr)) {
        return raise(world, MPI_ERR_ARG, name, "the %s array is NULL",
                     tags == nullptr ? "tags" : types == nullptr ? "types" : "counts");
    }
    if (!section().open()) {
        return raise(world, MPI_ERR_OTHER, name,
                     "no section is open (call MPIX_Intra_Section_begin first)");
    }
    intra::TaskDef def;
    def.fn = reinterpret_cast<intra::TaskFn>(fn);
    std::vector<Datatype*> held;
    for (int a = 0; a < nargs; ++a) {
        if (tags[a] < MPIX_INTRA_IN || tags[a] > MPIX_INTRA_INOUT) {
            return raise(world, MPI_ERR_ARG, name,
                         "parameter %d: tag %d is not MPIX_INTRA_IN, _OUT or _INOUT", a, tags[a]);
        }
        Datatype* t = nullptr;
        if (int e = check_type(world, types[a], name, &t)) {
            return e;
        }
        if (counts[a] < 0) {
            return raise(world, MPI_ERR_COUNT, name, "parameter %d: count %d is negative", a,
                         counts[a]);
        }
        def.args.push_back(
            intra::ArgDef{static_cast<intra::Access>(tags[a]), &t->layout, counts[a]});
        held.push_back(t);
    }
    if (rt::Status st = section().add_type(std::move(def), id); !st.ok()) {
        return raise_section(name, st);
    }
    for (Datatype* t : held) {
        datatype_retain(t);
        g_types.push_back(t);
    }
    return MPI_SUCCESS;
}

int launch_task(int id, int nargs, void* const* ptrs, const int* counts, const char* name)
{
    Comm* world = state().world;
    intra::Section& sec = section();
    if (!sec.open()) {
        return raise(world, MPI_ERR_OTHER, name,
                     "no section is open (call MPIX_Intra_Section_begin first)");
    }
    const int want = sec.arg_count(id);
    if (want < 0) {
        return raise(world, MPI_ERR_ARG, name, "task type %d is not registered in this section",
                     id);
    }
    if (nargs != want) {
        return raise(world, MPI_ERR_ARG, name,
                     "%d pointers for task type %d, which has %d parameters", nargs, id, want);
    }
    if (nargs > 0 && ptrs == nullptr) {
        return raise(world, MPI_ERR_ARG, name, "the pointer array is NULL");
    }
    for (int a = 0; a < nargs; ++a) {
        if (counts != nullptr && counts[a] < 0) {
            return raise(world, MPI_ERR_COUNT, name, "parameter %d: count %d is negative", a,
                         counts[a]);
        }
        if (ptrs[a] == nullptr && (counts == nullptr || counts[a] > 0)) {
            return raise(world, MPI_ERR_BUFFER, name, "parameter %d: the pointer is NULL", a);
        }
    }
    if (rt::Status st = sec.launch(id, ptrs, counts); !st.ok()) {
        return raise_section(name, st);
    }
    return MPI_SUCCESS;
}

} // namespace

int PMPIX_Intra_Section_begin(void) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Intra_Section_begin";
    require_init(fn);
    if (rt::Status st = section().begin(); !st.ok()) {
        return raise_section(fn, st);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Intra_Section_begin");
}
ULMPI_ALIAS(MPIX_Intra_Section_begin)

int PMPIX_Intra_Section_end(void) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Intra_Section_end";
    require_init(fn);
    intra::Section& sec = section();
    const bool was_open = sec.open() && !sec.in_task();
    const rt::Status st = sec.end();
    if (was_open) {
        release_types();
    }
    if (!st.ok()) {
        return raise_section(fn, st);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Intra_Section_end");
}
ULMPI_ALIAS(MPIX_Intra_Section_end)

int PMPIX_Intra_Task_registerv(MPIX_Intra_task_fn* fn, int nargs, const int tags[],
                               const MPI_Datatype types[], const int counts[], int* id) try {
    EntryGuard guard;
    constexpr const char* name = "MPIX_Intra_Task_registerv";
    require_init(name);
    if (id == nullptr) {
        return raise(state().world, MPI_ERR_ARG, name, "id is NULL");
    }
    return register_type(fn, nargs, tags, types, counts, id, name);
} catch (...) {
    return api_exception("MPIX_Intra_Task_registerv");
}
ULMPI_ALIAS(MPIX_Intra_Task_registerv)

int PMPIX_Intra_Task_register(MPIX_Intra_task_fn* fn, ...) try {
    EntryGuard guard;
    constexpr const char* name = "MPIX_Intra_Task_register";
    require_init(name);
    std::vector<int> tags;
    std::vector<MPI_Datatype> types;
    std::vector<int> counts;
    va_list ap;
    va_start(ap, fn);
    for (;;) {
        const int tag = va_arg(ap, int);
        if (tag == MPIX_INTRA_END || tags.size() >= static_cast<std::size_t>(intra::kMaxArgs)) {
            break;
        }
        tags.push_back(tag);
        if (tag < MPIX_INTRA_IN || tag > MPIX_INTRA_INOUT) {
            break; // a bad tag: the list cannot be read further (reported below)
        }
        types.push_back(va_arg(ap, MPI_Datatype));
        counts.push_back(va_arg(ap, int));
    }
    va_end(ap);
    if (tags.size() >= static_cast<std::size_t>(intra::kMaxArgs)) {
        raise(state().world, MPI_ERR_ARG, name,
              "more than %d parameters (is the list ended by MPIX_INTRA_END?)",
              intra::kMaxArgs - 1);
        return -1;
    }
    if (types.size() < tags.size()) {
        raise(state().world, MPI_ERR_ARG, name,
              "parameter %zu: tag %d is not MPIX_INTRA_IN, _OUT, _INOUT or MPIX_INTRA_END",
              types.size(), tags.back());
        return -1;
    }
    int id = -1;
    if (register_type(fn, static_cast<int>(tags.size()), tags.data(), types.data(), counts.data(),
                      &id, name) != MPI_SUCCESS) {
        return -1;
    }
    return id;
} catch (...) {
    api_exception("MPIX_Intra_Task_register");
    return -1;
}
ULMPI_ALIAS(MPIX_Intra_Task_register)

int PMPIX_Intra_Task_launchv(int id, int nargs, void* const ptrs[], const int counts[]) try {
    EntryGuard guard;
    constexpr const char* name = "MPIX_Intra_Task_launchv";
    require_init(name);
    return launch_task(id, nargs, ptrs, counts, name);
} catch (...) {
    return api_exception("MPIX_Intra_Task_launchv");
}
ULMPI_ALIAS(MPIX_Intra_Task_launchv)

int PMPIX_Intra_Task_launch(int id, ...) try {
    EntryGuard guard;
    constexpr const char* name = "MPIX_Intra_Task_launch";
    require_init(name);
    const int nargs = section().arg_count(id);
    std::vector<void*> ptrs(nargs > 0 ? static_cast<std::size_t>(nargs) : 0);
    va_list ap;
    va_start(ap, id);
    for (void*& p : ptrs) {
        p = va_arg(ap, void*);
    }
    va_end(ap);
    return launch_task(id, nargs < 0 ? 0 : nargs, ptrs.data(), nullptr, name);
} catch (...) {
    return api_exception("MPIX_Intra_Task_launch");
}
ULMPI_ALIAS(MPIX_Intra_Task_launch)
