// Collectives: the pieces every algorithm and entry point shares.
//
//   Args      one collective call's arguments, already checked, plus the
//             Team that takes part (ranks and their world ranks).
//   Algo      one algorithm: a name and a builder that appends its steps to
//             a Schedule (schedule.h). Every algorithm lives in its own file
//             (mpi/coll/<collective>_<algorithm>.cpp) with its cost model.
//   Table     the dispatch table: for every collective, an algorithm forced
//             by a parameter (ULMPI_COLL_<NAME>=<algorithm>) or a chooser
//             that picks one by team size, message size and op. Every
//             communicator points at one table (CommColl::table), chosen when
//             its collectives are first used: "flat" for intracommunicators,
//             "inter" for intercommunicators. A host-aware table (shared
//             memory inside a host, network between hosts, from
//             JobInfo::node_of_rank) fits in as a third table whose choosers
//             return hierarchical algorithms; those build sub-teams (host
//             members, host leaders) and call the flat builders on them, as
//             the intercommunicator algorithms already do.
//
// Teams and world ranks: builders address peers by team rank and put world
// ranks in the schedule, so an algorithm runs unchanged on a communicator's
// group, on the local group of an intercommunicator, or on any sub-team.
#pragma once

#include "mpi/coll/nbc.h"
#include "mpi/coll/schedule.h"
#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"
#include "mpi/op.h"

#include <cstdint>
#include <memory>

namespace ulmpi::mpi::coll {

class ShmColl; // shm_coll.h

enum class Coll : std::uint8_t {
    barrier,
    bcast,
    gather,
    gatherv,
    scatter,
    scatterv,
    allgather,
    allgatherv,
    alltoall,
    alltoallv,
    alltoallw,
    reduce,
    allreduce,
    reduce_scatter,
    reduce_scatter_block,
    scan,
    exscan,
    neighbor_allgather,
    neighbor_allgatherv,
    neighbor_alltoall,
    neighbor_alltoallv,
    neighbor_alltoallw,
};
inline constexpr int kColls = 22;
const char* coll_name(Coll c); // "allreduce"
inline bool is_neighbor(Coll c) { return c >= Coll::neighbor_allgather; }

struct Team {
    const int* world = nullptr; // world rank of every member
    int size = 0;
    int rank = 0;               // my index
    int w(int r) const { return world[r]; }
};

struct Args {
    Coll coll = Coll::barrier;
    Team team;                  // intercommunicators: the local group
    Team remote;                // intercommunicators: the remote group
    bool inter = false;
    const void* sbuf = nullptr; // MPI_IN_PLACE stays as given; see in_place
    void* rbuf = nullptr;
    bool in_place = false;
    std::uint64_t scount = 0;
    std::uint64_t rcount = 0;
    const Datatype* stype = nullptr;
    const Datatype* rtype = nullptr;
    // v and w forms (as given by the program)
    const int* scounts = nullptr;
    const int* sdispls = nullptr;
    const int* rcounts = nullptr;
    const int* rdispls = nullptr;
    const Datatype* const* stypes = nullptr; // alltoallw
    const Datatype* const* rtypes = nullptr;
    Op* op = nullptr;
    int root = 0;               // intercommunicators: MPI_ROOT / MPI_PROC_NULL / remote rank
    std::uint64_t bytes = 0;    // message size the choosers look at
    // Neighbourhood collectives: the world ranks of the in- and
    // out-neighbours in the topology's order (-1 for MPI_PROC_NULL), the
    // byte displacements of the w form, and for Cartesian topologies the
    // tag of messages travelling in the + direction (those travelling in
    // the - direction use the call's tag; -1: one tag for all).
    const int* nbr_src = nullptr;
    int nbr_in = 0;
    const int* nbr_dst = nullptr;
    int nbr_out = 0;
    const MPI_Aint* sdispls_bytes = nullptr;
    const MPI_Aint* rdispls_bytes = nullptr;
    int nbr_tag_up = -1;
};

using BuildFn = int (*)(Schedule& s, const Args& a);

struct Algo {
    const char* name;
    BuildFn build;
    // nullptr: usable for every call; otherwise false when the algorithm
    // cannot do this call (e.g. ring allreduce with a non-commutative op).
    bool (*usable)(const Args& a);
};

// The algorithms of one collective, in the order of its parameter's choices.
struct AlgoList {
    const Algo* algos;
    int count;
};
AlgoList algorithms(Coll c);

struct Table {
    const char* name = "";
    struct Entry {
        const Algo* algos = nullptr;     // the algorithms this table may pick
        int count = 0;
        int forced = -1;                 // index forced by the parameter, -1: choose
        int (*choose)(const Args& a) = nullptr;
    };
    Entry entry[kColls];
};

// Per-communicator collective state (Comm::coll).
struct CommColl {
    const Table* table = nullptr;
    std::uint32_t seq = 0; // collective calls so far: the tag of the next one
    // One-host shared-memory collectives (shm_coll.h): 0 not tried yet,
    // 1 set up, -1 not for this communicator.
    std::int8_t shm_state = 0;
    std::unique_ptr<ShmColl> shm;
    ~CommColl();
};

CommColl& comm_coll(Comm* c);
const Table& flat_table();
const Table& inter_table();

// The algorithm the table picks for this call.
const Algo& select(const Table& t, Coll c, const Args& a);
// Appends the flat-table choice for this call to s (used by composite and
// intercommunicator algorithms on sub-teams).
int build_flat(Schedule& s, Coll c, const Args& a);

// Team of a communicator's local group / remote group.
Team local_team(const Comm* c);
Team remote_team(const Comm* c);

// The tag of the next collective call on c.
int next_tag(Comm* c);
// Whether every collective call prints its algorithm (coll_trace).
bool tracing();


} // namespace ulmpi::mpi::coll
