// Communicators. A communicator is a group (ranks -> world ranks), two ULM
// contexts (point-to-point, and collectives so that they never match user
// messages; see comm_ctx.h for how they are agreed on), an error handler,
// a name, attributes, info hints, an optional topology and, for an
// intercommunicator, the remote group. ULM sees only world ranks and
// context ids; this layer translates ranks both ways.
//
// Life cycle. `refs` counts the program's handle and every request still
// pending on the communicator (request_new retains, request_free
// releases). MPI_Comm_free runs the attribute delete callbacks, retires
// the handle and drops the handle's reference; the object (and its context
// pair) goes when the last reference does. MPI_COMM_WORLD and MPI_COMM_SELF
// are never deallocated.
#pragma once

#include "mpi/attr.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/group.h"
#include "mpi/handle.h"
#include "mpi/info.h"
#include "mpi/topo.h"
#include "ulm/types.h"

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ulmpi::mpi {

namespace coll {
struct CommColl; // collective state of a communicator (mpi/coll/coll.h)
struct CommCollDeleter {
    void operator()(CommColl* p) const noexcept;
};
} // namespace coll

struct Comm {
    int handle = 0;
    ulm::ContextId ctx;       // point-to-point traffic
    ulm::ContextId coll_ctx;  // collective traffic
    int ctx_pair = -1;        // ctx = 2 * ctx_pair, coll_ctx = ctx + 1 (comm_ctx.h)
    Group* local = nullptr;   // my group
    Group* remote = nullptr;  // intercommunicators: the other group
    int rank = 0;             // my rank in `local`
    Errhandler* errhandler = nullptr;
    std::string name;
    int refs = 1;
    bool predefined = false;
    AttrList* attrs = nullptr;               // attr.h
    std::shared_ptr<const Topology> topo;    // topo.h; shared by duplicates
    InfoPairs hints;                         // MPI_Comm_set_info
    // Collectives: dispatch table and call sequence number, made on first use.
    std::unique_ptr<coll::CommColl, coll::CommCollDeleter> coll;
    // Fault tolerance (mpi/ft_comm.h): revoked here; members known failed
    // (world ranks, in the order their failure became known here) and how
    // many of the first of them the program acknowledged; agreements begun.
    bool revoked = false;
    std::vector<int> ft_failed;
    int ft_acked = 0;
    std::uint64_t ft_agree_seq = 0;
    // FT-MPI (mpi/ftmpi.h): every call on it goes through ftmpi_check()
    // (a failure not yet reported or recovered); invalid since a recovery
    // (it no longer owns its context pair); ATOMIC collectives' agreements.
    bool ft_gate = false;
    bool ft_stale = false;
    std::uint64_t ftmpi_atomic_seq = 0;
    bool has_unacked_failure() const { return static_cast<int>(ft_failed.size()) > ft_acked; }

    bool inter() const { return remote != nullptr; }
    int size() const { return local->size(); }
    // The group peers are addressed in (remote for intercommunicators).
    const Group& peers() const { return remote != nullptr ? *remote : *local; }
    int peer_count() const { return peers().size(); }
    int world_of(int peer_rank) const { return peers().world[static_cast<std::size_t>(peer_rank)]; }
    int peer_rank_of(int world_rank) const { return peers().rank_of(world_rank); }
    std::string display_name() const;
};

// The communicator table; never destroyed, so an exit handler may still
// look a handle up. Created on first use (comm_table()).
extern std::atomic<HandleTable<Comm, ULMPI_KIND_COMM>*> g_comm_table;
HandleTable<Comm, ULMPI_KIND_COMM>& comm_table();
// nullptr for invalid handles and MPI_COMM_NULL. Inline: every call that
// takes a communicator resolves it.
inline Comm* comm_get(MPI_Comm h)
{
    const HandleTable<Comm, ULMPI_KIND_COMM>* t = g_comm_table.load(std::memory_order_acquire);
    return t != nullptr ? t->get(h) : nullptr;
}
// Creates MPI_COMM_WORLD and MPI_COMM_SELF at MPI_Init.
void comm_init_predefined(int world_rank, int world_size);
// The same with MPI_COMM_WORLD's members given (ranks of the job, ascending;
// a job with spawn slots, a spawned process).
void comm_init_predefined(int world_rank, std::vector<int> world);
// Start of MPI_Finalize: deletes the attributes of MPI_COMM_SELF (then of
// MPI_COMM_WORLD), running their delete callbacks (MPI-3.1 8.7.1).
int comm_finalize_attributes();
void comm_finalize_predefined();

// A new communicator object on context pair `pair` (reserved here), holding
// one reference to each group given (the caller's references are taken
// over), with the error handler `eh` (retained). It has no handle yet.
Comm* comm_new(Group* local, Group* remote, int rank, int pair, Errhandler* eh);
// Gives the communicator its handle (MPI_COMM_NULL when the table is full).
MPI_Comm comm_publish(Comm* c);
inline void comm_retain(Comm* c) { ++c->refs; }
// Drops a reference; the last one destroys the communicator
// (comm_destroy). Inline: every request completion drops one.
void comm_destroy(Comm* c);
inline void comm_release(Comm* c)
{
    if (c->predefined || --c->refs > 0) {
        return;
    }
    comm_destroy(c);
}
// MPI_Comm_free without the checks: delete callbacks, then the handle goes.
int comm_free(Comm* c);

} // namespace ulmpi::mpi
