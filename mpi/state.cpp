#include "mpi/state.h"

namespace ulmpi::mpi {

State& state()
{
    // Never destroyed: atexit handlers of the program may still ask
    // MPI_Finalized after static destructors ran.
    static State* s = new State;
    return *s;
}

} // namespace ulmpi::mpi
