#include "mpi/comm.h"

#include "mpi/handle.h"
#include "mpi/state.h"

#include <numeric>

namespace ulmpi::mpi {
namespace {

Comm g_world;
Comm g_self;

HandleTable<Comm, ULMPI_KIND_COMM>& table()
{
    static HandleTable<Comm, ULMPI_KIND_COMM> t;
    return t;
}

} // namespace

std::string Comm::display_name() const
{
    if (!name.empty()) {
        return name;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "communicator 0x%x", static_cast<unsigned>(handle));
    return buf;
}

Comm* comm_get(MPI_Comm h) { return table().get(h); }

void comm_init_predefined(int world_rank, int world_size)
{
    std::vector<int> all(static_cast<std::size_t>(world_size));
    std::iota(all.begin(), all.end(), 0);
    g_world.handle = MPI_COMM_WORLD;
    g_world.ctx = ulm::ContextId(0);
    g_world.coll_ctx = ulm::ContextId(1);
    g_world.local = group_new(std::move(all));
    g_world.rank = world_rank;
    g_world.errhandler = errhandler_fatal();
    g_world.name = "MPI_COMM_WORLD";
    table().set_predefined(handle_index(MPI_COMM_WORLD), &g_world);

    g_self.handle = MPI_COMM_SELF;
    g_self.ctx = ulm::ContextId(2);
    g_self.coll_ctx = ulm::ContextId(3);
    g_self.local = group_new({world_rank});
    g_self.rank = 0;
    g_self.errhandler = errhandler_fatal();
    g_self.name = "MPI_COMM_SELF";
    table().set_predefined(handle_index(MPI_COMM_SELF), &g_self);

    state().world = &g_world;
    state().self = &g_self;
}

void comm_finalize_predefined()
{
    for (Comm* c : {&g_world, &g_self}) {
        errhandler_release(c->errhandler);
        c->errhandler = errhandler_fatal();
    }
}

} // namespace ulmpi::mpi
