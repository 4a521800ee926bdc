// Group entry points (MPI-3.1 section 6.3). Groups are immutable lists of
// world ranks (group.h); every constructor makes a new group, or returns
// MPI_GROUP_EMPTY for an empty result. MPI_GROUP_EMPTY may be freed (a
// no-op), as programs free whatever a constructor returned.
//
// Error classes: MPI_ERR_GROUP (invalid or null group), MPI_ERR_RANK (a rank
// outside the group, or named twice in incl/excl), MPI_ERR_ARG (negative
// counts, a zero stride, NULL arrays or result pointers), MPI_ERR_COMM.
#include "mpi/checks.h"
#include "mpi/comm.h"
#include "mpi/entry.h"
#include "mpi/group.h"
#include "mpi/state.h"

#include <vector>

using namespace ulmpi::mpi;

namespace {

int get_group(MPI_Group h, const char* what, const char* fn, Group** out)
{
    return check_group(nullptr, h, what, fn, out);
}

int need(const void* p, const char* what, const char* fn)
{
    if (p == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    return MPI_SUCCESS;
}

int give(Group* g, MPI_Group* out, const char* fn)
{
    MPI_Group h = group_handle(g);
    if (h == 0) {
        group_release(g);
        return raise(nullptr, MPI_ERR_INTERN, fn, "the group handle table is full");
    }
    *out = h;
    return MPI_SUCCESS;
}

enum class SetOp { union_, intersection, difference };

int set_op(MPI_Group h1, MPI_Group h2, MPI_Group* out, SetOp op, const char* fn)
{
    require_init(fn);
    Group* a = nullptr;
    Group* b = nullptr;
    if (int e = get_group(h1, "group1", fn, &a)) {
        return e;
    }
    if (int e = get_group(h2, "group2", fn, &b)) {
        return e;
    }
    if (int e = need(out, "newgroup", fn)) {
        return e;
    }
    std::vector<int> w;
    switch (op) {
    case SetOp::union_:
        w = a->world;
        for (int x : b->world) {
            if (a->rank_of(x) == MPI_UNDEFINED) {
                w.push_back(x);
            }
        }
        break;
    case SetOp::intersection:
        for (int x : a->world) {
            if (b->rank_of(x) != MPI_UNDEFINED) {
                w.push_back(x);
            }
        }
        break;
    case SetOp::difference:
        for (int x : a->world) {
            if (b->rank_of(x) == MPI_UNDEFINED) {
                w.push_back(x);
            }
        }
        break;
    }
    return give(group_make(std::move(w)), out, fn);
}

// Ranks listed by incl/excl: each in the group, none twice.
int check_ranks(const Group* g, int n, const int* ranks, const char* fn)
{
    if (n < 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "n = %d is negative", n);
    }
    if (n > 0 && ranks == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "ranks is NULL");
    }
    if (n > g->size()) {
        return raise(nullptr, MPI_ERR_ARG, fn, "n = %d is larger than the group (size %d)", n,
                     g->size());
    }
    if (!state().check_args) {
        return MPI_SUCCESS; // ULMPI_MPI_CHECK_ARGS=off: the ranks are trusted
    }
    std::vector<char> seen(static_cast<std::size_t>(g->size()), 0);
    for (int i = 0; i < n; ++i) {
        int r = ranks[i];
        if (r < 0 || r >= g->size()) {
            return raise(nullptr, MPI_ERR_RANK, fn, "ranks[%d] = %d is not a rank of the group "
                         "(size %d)", i, r, g->size());
        }
        if (seen[static_cast<std::size_t>(r)] != 0) {
            return raise(nullptr, MPI_ERR_RANK, fn, "rank %d is listed twice", r);
        }
        seen[static_cast<std::size_t>(r)] = 1;
    }
    return MPI_SUCCESS;
}

// The ranks of range triplets (first, last, stride), checked.
int expand_ranges(const Group* g, int n, const int ranges[][3], std::vector<int>& out,
                  const char* fn)
{
    if (n < 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "n = %d is negative", n);
    }
    if (n > 0 && ranges == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "ranges is NULL");
    }
    std::vector<char> seen(static_cast<std::size_t>(g->size()), 0);
    for (int i = 0; i < n; ++i) {
        const int first = ranges[i][0];
        const int last = ranges[i][1];
        const int stride = ranges[i][2];
        if (stride == 0) {
            return raise(nullptr, MPI_ERR_ARG, fn, "ranges[%d] has stride 0", i);
        }
        for (int end : {first, last}) {
            if (end < 0 || end >= g->size()) {
                return raise(nullptr, MPI_ERR_RANK, fn, "ranges[%d] = (%d, %d, %d) reaches "
                             "outside the group (size %d)", i, first, last, stride, g->size());
            }
        }
        // first, first + stride, ... while not past last (may be empty).
        for (long long r = first; stride > 0 ? r <= last : r >= last; r += stride) {
            auto ri = static_cast<std::size_t>(r);
            if (seen[ri] != 0) {
                return raise(nullptr, MPI_ERR_RANK, fn, "rank %lld is named twice by the ranges",
                             r);
            }
            seen[ri] = 1;
            out.push_back(static_cast<int>(r));
        }
    }
    return MPI_SUCCESS;
}

std::vector<int> world_of(const Group* g, const std::vector<int>& ranks)
{
    std::vector<int> w;
    w.reserve(ranks.size());
    for (int r : ranks) {
        w.push_back(g->world[static_cast<std::size_t>(r)]);
    }
    return w;
}

std::vector<int> world_without(const Group* g, const std::vector<int>& ranks)
{
    std::vector<char> drop(static_cast<std::size_t>(g->size()), 0);
    for (int r : ranks) {
        drop[static_cast<std::size_t>(r)] = 1;
    }
    std::vector<int> w;
    for (int i = 0; i < g->size(); ++i) {
        if (drop[static_cast<std::size_t>(i)] == 0) {
            w.push_back(g->world[static_cast<std::size_t>(i)]);
        }
    }
    return w;
}

} // namespace

int PMPI_Comm_group(MPI_Comm comm, MPI_Group* group) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_group";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (group == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "group is NULL");
    }
    group_retain(c->local);
    return give(c->local, group, fn);
} catch (...) {
    return api_exception("MPI_Comm_group");
}
ULMPI_ALIAS(MPI_Comm_group)

int PMPI_Group_size(MPI_Group group, int* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_size";
    require_init(fn);
    Group* g = nullptr;
    if (int e = get_group(group, "group", fn, &g)) {
        return e;
    }
    if (int e = need(size, "size", fn)) {
        return e;
    }
    *size = g->size();
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Group_size");
}
ULMPI_ALIAS(MPI_Group_size)

int PMPI_Group_rank(MPI_Group group, int* rank) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_rank";
    require_init(fn);
    Group* g = nullptr;
    if (int e = get_group(group, "group", fn, &g)) {
        return e;
    }
    if (int e = need(rank, "rank", fn)) {
        return e;
    }
    *rank = g->rank_of(state().engine.rank());
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Group_rank");
}
ULMPI_ALIAS(MPI_Group_rank)

int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int* ranks1, MPI_Group group2,
                               int* ranks2) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_translate_ranks";
    require_init(fn);
    Group* a = nullptr;
    Group* b = nullptr;
    if (int e = get_group(group1, "group1", fn, &a)) {
        return e;
    }
    if (int e = get_group(group2, "group2", fn, &b)) {
        return e;
    }
    if (n < 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "n = %d is negative", n);
    }
    if (n > 0 && (ranks1 == nullptr || ranks2 == nullptr)) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL",
                     ranks1 == nullptr ? "ranks1" : "ranks2");
    }
    for (int i = 0; i < n && state().check_args; ++i) {
        int r = ranks1[i];
        if (r != MPI_PROC_NULL && (r < 0 || r >= a->size())) {
            return raise(nullptr, MPI_ERR_RANK, fn, "ranks1[%d] = %d is not a rank of group1 "
                         "(size %d)", i, r, a->size());
        }
    }
    for (int i = 0; i < n; ++i) {
        int r = ranks1[i];
        ranks2[i] = r == MPI_PROC_NULL ? MPI_PROC_NULL
                                       : b->rank_of(a->world[static_cast<std::size_t>(r)]);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Group_translate_ranks");
}
ULMPI_ALIAS(MPI_Group_translate_ranks)

int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int* result) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_compare";
    require_init(fn);
    Group* a = nullptr;
    Group* b = nullptr;
    if (int e = get_group(group1, "group1", fn, &a)) {
        return e;
    }
    if (int e = get_group(group2, "group2", fn, &b)) {
        return e;
    }
    if (int e = need(result, "result", fn)) {
        return e;
    }
    *result = group_compare(*a, *b);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Group_compare");
}
ULMPI_ALIAS(MPI_Group_compare)

int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) try {
    EntryGuard guard;
    return set_op(group1, group2, newgroup, SetOp::union_, "MPI_Group_union");
} catch (...) {
    return api_exception("MPI_Group_union");
}
ULMPI_ALIAS(MPI_Group_union)

int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) try {
    EntryGuard guard;
    return set_op(group1, group2, newgroup, SetOp::intersection, "MPI_Group_intersection");
} catch (...) {
    return api_exception("MPI_Group_intersection");
}
ULMPI_ALIAS(MPI_Group_intersection)

int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) try {
    EntryGuard guard;
    return set_op(group1, group2, newgroup, SetOp::difference, "MPI_Group_difference");
} catch (...) {
    return api_exception("MPI_Group_difference");
}
ULMPI_ALIAS(MPI_Group_difference)

int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_incl";
    require_init(fn);
    Group* g = nullptr;
    if (int e = get_group(group, "group", fn, &g)) {
        return e;
    }
    if (int e = need(newgroup, "newgroup", fn)) {
        return e;
    }
    if (int e = check_ranks(g, n, ranks, fn)) {
        return e;
    }
    std::vector<int> r(ranks, ranks + n);
    return give(group_make(world_of(g, r)), newgroup, fn);
} catch (...) {
    return api_exception("MPI_Group_incl");
}
ULMPI_ALIAS(MPI_Group_incl)

int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_excl";
    require_init(fn);
    Group* g = nullptr;
    if (int e = get_group(group, "group", fn, &g)) {
        return e;
    }
    if (int e = need(newgroup, "newgroup", fn)) {
        return e;
    }
    if (int e = check_ranks(g, n, ranks, fn)) {
        return e;
    }
    std::vector<int> r(ranks, ranks + n);
    return give(group_make(world_without(g, r)), newgroup, fn);
} catch (...) {
    return api_exception("MPI_Group_excl");
}
ULMPI_ALIAS(MPI_Group_excl)

int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_range_incl";
    require_init(fn);
    Group* g = nullptr;
    if (int e = get_group(group, "group", fn, &g)) {
        return e;
    }
    if (int e = need(newgroup, "newgroup", fn)) {
        return e;
    }
    std::vector<int> r;
    if (int e = expand_ranges(g, n, ranges, r, fn)) {
        return e;
    }
    return give(group_make(world_of(g, r)), newgroup, fn);
} catch (...) {
    return api_exception("MPI_Group_range_incl");
}
ULMPI_ALIAS(MPI_Group_range_incl)

int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_range_excl";
    require_init(fn);
    Group* g = nullptr;
    if (int e = get_group(group, "group", fn, &g)) {
        return e;
    }
    if (int e = need(newgroup, "newgroup", fn)) {
        return e;
    }
    std::vector<int> r;
    if (int e = expand_ranges(g, n, ranges, r, fn)) {
        return e;
    }
    return give(group_make(world_without(g, r)), newgroup, fn);
} catch (...) {
    return api_exception("MPI_Group_range_excl");
}
ULMPI_ALIAS(MPI_Group_range_excl)

int PMPI_Group_free(MPI_Group* group) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Group_free";
    require_init(fn);
    if (int e = need(group, "the group pointer", fn)) {
        return e;
    }
    Group* g = nullptr;
    if (int e = get_group(*group, "group", fn, &g)) {
        return e;
    }
    group_release(g);
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Group_free");
}
ULMPI_ALIAS(MPI_Group_free)

MPI_Fint PMPI_Group_c2f(MPI_Group group) { return group; }
ULMPI_ALIAS(MPI_Group_c2f)
MPI_Group PMPI_Group_f2c(MPI_Fint group) { return group; }
ULMPI_ALIAS(MPI_Group_f2c)
