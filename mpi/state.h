// Process-wide state of the MPI layer: what MPI_Init built and
// MPI_Finalize tears down.
#pragma once

#include "ft/detector.h"
#include "ft/intra/section.h"
#include "mpi/entry.h"
#include "ft/rep/replicator.h"
#include "runtime/bootstrap.h"
#include "ulm/engine.h"

#include <atomic>
#include <memory>
#include <pthread.h>

namespace ulmpi::mpi {

struct Comm;

struct State {
    bool initialized = false;
    bool finalized = false;
    bool check_args = true;          // ULMPI_MPI_CHECK_ARGS
    int thread_level = MPI_THREAD_SINGLE;
    pthread_t main_thread{};
    std::unique_ptr<rt::Bootstrap> boot;
    ulm::Engine engine;
    std::unique_ptr<ft::Detector> detector;
    std::unique_ptr<rep::Replicator> replicator; // mpirun --replicas (ft/rep/)
    std::unique_ptr<intra::Section> intra;       // MPIX_Intra_* (ft/intra/): at MPI_Init when replicated, else by the first section
    Comm* world = nullptr;
    Comm* self = nullptr;
};

// Never destroyed: atexit handlers of the program may still ask
// MPI_Finalized after static destructors ran. Created on first use.
extern std::atomic<State*> g_state;
State& state_create();
inline State& state()
{
    State* s = g_state.load(std::memory_order_acquire);
    return s != nullptr ? *s : state_create();
}

} // namespace ulmpi::mpi
