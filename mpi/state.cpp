#include "mpi/state.h"

namespace ulmpi::mpi {

constinit std::atomic<State*> g_state{nullptr};

State& state_create()
{
    // MPI_Initialized and MPI_Finalized may come from any thread at any
    // time: the first calls may race here, and the static makes one State.
    static State* const s = new State;
    g_state.store(s, std::memory_order_release);
    return *s;
}

} // namespace ulmpi::mpi
