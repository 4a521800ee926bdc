// MPIX_Replica_info: a process's place among the replicas of its rank
// (mpirun --replicas, docs/replication.md).
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/state.h"

using namespace ulmpi;
using namespace ulmpi::mpi;

int PMPIX_Replica_info(int* replica, int* replicas) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Replica_info";
    require_init(fn);
    if (replica == nullptr || replicas == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", replica == nullptr ? "replica" : "replicas");
    }
    const State& s = state();
    *replica = s.replicator ? s.replicator->replica() : 0;
    *replicas = s.replicator ? s.replicator->set().replicas() : 1;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Replica_info");
}
ULMPI_ALIAS(MPIX_Replica_info)
