// Communicators. A communicator is a group (ranks -> world ranks), two ULM
// contexts (point-to-point, and collectives so that they never match user
// messages), an error handler, a name, attributes and, for an
// intercommunicator, the remote group. ULM sees only world ranks and
// context ids; this layer translates ranks both ways.
#pragma once

#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/group.h"
#include "ulm/types.h"

#include <memory>
#include <string>

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
    Group* local = nullptr;   // my group
    Group* remote = nullptr;  // intercommunicators: the other group
    int rank = 0;             // my rank in `local`
    Errhandler* errhandler = nullptr;
    std::string name;
    int refs = 1;
    // Collectives: dispatch table and call sequence number, made on first use.
    std::unique_ptr<coll::CommColl, coll::CommCollDeleter> coll;

    bool inter() const { return remote != nullptr; }
    int size() const { return local->size(); }
    // The group peers are addressed in (remote for intercommunicators).
    const Group& peers() const { return remote != nullptr ? *remote : *local; }
    int peer_count() const { return peers().size(); }
    int world_of(int peer_rank) const { return peers().world[static_cast<std::size_t>(peer_rank)]; }
    int peer_rank_of(int world_rank) const { return peers().rank_of(world_rank); }
    std::string display_name() const;
};

Comm* comm_get(MPI_Comm h); // nullptr for invalid handles and MPI_COMM_NULL
// Creates MPI_COMM_WORLD and MPI_COMM_SELF at MPI_Init.
void comm_init_predefined(int world_rank, int world_size);
void comm_finalize_predefined();

} // namespace ulmpi::mpi
