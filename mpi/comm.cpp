#include "mpi/comm.h"

#include "mpi/ft_comm.h"

#include "mpi/comm_ctx.h"
#include "mpi/handle.h"
#include "mpi/state.h"

#include <cstdio>
#include <numeric>

namespace ulmpi::mpi {
namespace {

Comm g_world;
Comm g_self;

HandleTable<Comm, ULMPI_KIND_COMM>& table() { return comm_table(); }

void init_predefined(Comm& c, MPI_Comm h, int pair, std::vector<int> members, int rank,
                     const char* name)
{
    c.handle = h;
    c.ctx_pair = pair;
    c.ctx = context_p2p(pair);
    c.coll_ctx = context_coll(pair);
    c.local = group_new(std::move(members));
    c.rank = rank;
    c.errhandler = errhandler_initial();
    c.name = name;
    c.predefined = true;
    c.refs = 1 << 30;
    context_reserve(pair);
    table().set_predefined(handle_index(h), &c);
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

constinit std::atomic<HandleTable<Comm, ULMPI_KIND_COMM>*> g_comm_table{nullptr};

HandleTable<Comm, ULMPI_KIND_COMM>& comm_table()
{
    static auto* const t = new HandleTable<Comm, ULMPI_KIND_COMM>;
    g_comm_table.store(t, std::memory_order_release);
    return *t;
}

void comm_init_predefined(int world_rank, int world_size)
{
    std::vector<int> all(static_cast<std::size_t>(world_size));
    std::iota(all.begin(), all.end(), 0);
    comm_init_predefined(world_rank, std::move(all));
}

void comm_init_predefined(int world_rank, std::vector<int> world)
{
    int rank = 0;
    for (std::size_t i = 0; i < world.size(); ++i) {
        if (world[i] == world_rank) {
            rank = static_cast<int>(i);
        }
    }
    init_predefined(g_world, MPI_COMM_WORLD, kWorldPair, std::move(world), rank,
                    "MPI_COMM_WORLD");
    init_predefined(g_self, MPI_COMM_SELF, kSelfPair, {world_rank}, 0, "MPI_COMM_SELF");
    state().world = &g_world;
    state().self = &g_self;
}

int comm_finalize_attributes()
{
    int err = attr_delete_all(g_self.attrs, AttrKind::comm, MPI_COMM_SELF);
    int err2 = attr_delete_all(g_world.attrs, AttrKind::comm, MPI_COMM_WORLD);
    return err != MPI_SUCCESS ? err : err2;
}

void comm_finalize_predefined()
{
    for (Comm* c : {&g_world, &g_self}) {
        errhandler_release(c->errhandler);
        c->errhandler = errhandler_fatal();
    }
}

Comm* comm_new(Group* local, Group* remote, int rank, int pair, Errhandler* eh)
{
    auto* c = new Comm;
    c->local = local;
    c->remote = remote;
    c->rank = rank;
    c->ctx_pair = pair;
    c->ctx = context_p2p(pair);
    c->coll_ctx = context_coll(pair);
    context_reserve(pair);
    c->errhandler = eh;
    errhandler_retain(eh);
    return c;
}

MPI_Comm comm_publish(Comm* c)
{
    c->handle = table().insert(c);
    if (c->handle != 0) {
        ft_attach(c); // fault tolerance: revoke notices, member failures
    }
    return c->handle == 0 ? MPI_COMM_NULL : c->handle;
}

void comm_destroy(Comm* c)
{
    // A communicator invalidated by an FT-MPI recovery gave up its context
    // pair and registrations then (mpi/ftmpi.h).
    const bool quarantined = !c->ft_stale && ft_detach(c);
    if (c->handle != 0) {
        table().erase(c->handle);
    }
    if (c->attrs != nullptr) {
        // Only reached when the communicator never had a handle (a failed
        // construction): the callbacks already ran or never applied.
        delete c->attrs;
    }
    group_release(c->local);
    if (c->remote != nullptr) {
        group_release(c->remote);
    }
    errhandler_release(c->errhandler);
    if (!quarantined && !c->ft_stale) {
        context_release(c->ctx_pair); // else ft_release_quarantined() does, later
    }
    delete c;
}

int comm_free(Comm* c)
{
    if (int e = attr_delete_all(c->attrs, AttrKind::comm, c->handle)) {
        return e;
    }
    table().erase(c->handle);
    c->handle = 0;
    comm_release(c);
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi
