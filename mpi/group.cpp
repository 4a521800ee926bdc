#include "mpi/group.h"

#include "mpi/handle.h"

namespace ulmpi::mpi {
namespace {

Group g_empty;
std::uint32_t g_era = 0;

HandleTable<Group, ULMPI_KIND_GROUP>& table()
{
    static HandleTable<Group, ULMPI_KIND_GROUP> t = [] {
        HandleTable<Group, ULMPI_KIND_GROUP> init;
        g_empty.handle = MPI_GROUP_EMPTY;
        g_empty.refs = 1 << 30;
        init.set_predefined(handle_index(MPI_GROUP_EMPTY), &g_empty);
        return init;
    }();
    return t;
}

} // namespace

Group* group_new(std::vector<int> world_ranks)
{
    auto* g = new Group;
    g->era = g_era;
    g->world = std::move(world_ranks);
    g->identity = true;
    for (std::size_t i = 0; i < g->world.size(); ++i) {
        if (g->world[i] != static_cast<int>(i)) {
            g->identity = false;
            break;
        }
    }
    if (!g->identity) {
        g->rank_of_.reserve(g->world.size());
        for (std::size_t i = 0; i < g->world.size(); ++i) {
            g->rank_of_.emplace(g->world[i], static_cast<int>(i));
        }
    }
    return g;
}

Group* group_get(MPI_Group h) { return table().get(h); }
Group* group_empty()
{
    (void)table();
    return &g_empty;
}

void group_retain(Group* g) { ++g->refs; }

void group_release(Group* g)
{
    if (g == &g_empty) {
        return;
    }
    if (--g->refs == 0) {
        if (g->handle != 0) {
            table().erase(g->handle);
        }
        delete g;
    }
}

void group_end_era() { ++g_era; }

bool group_stale(const Group& g) { return &g != &g_empty && g.era != g_era; }

Group* group_renew(Group* g)
{
    if (g == &g_empty) {
        return g;
    }
    if (g->handle == 0) {
        g->era = g_era;
        return g;
    }
    return group_new(g->world);
}

Group* group_make(std::vector<int> world_ranks)
{
    if (world_ranks.empty()) {
        return group_empty();
    }
    return group_new(std::move(world_ranks));
}

int group_compare(const Group& a, const Group& b)
{
    if (a.size() != b.size()) {
        return MPI_UNEQUAL;
    }
    if (a.world == b.world) {
        return MPI_IDENT;
    }
    for (int w : a.world) {
        if (b.rank_of(w) == MPI_UNDEFINED) {
            return MPI_UNEQUAL;
        }
    }
    return MPI_SIMILAR;
}

bool group_subset(const Group& sub, const Group& super)
{
    for (int w : sub.world) {
        if (super.rank_of(w) == MPI_UNDEFINED) {
            return false;
        }
    }
    return true;
}

MPI_Group group_handle(Group* g)
{
    if (g == &g_empty) {
        return MPI_GROUP_EMPTY;
    }
    if (g->handle == 0) {
        g->handle = table().insert(g);
    }
    return g->handle;
}

} // namespace ulmpi::mpi
