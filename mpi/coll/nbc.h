// Running schedules: blocking calls reuse one schedule and run it at once;
// nonblocking calls take a schedule from a pool, start it, and a ULM
// progress hook advances every live one on each progress pass (so they move
// even while the program waits on something else). A running schedule holds
// a reference to its communicator, so MPI_Comm_free and MPI_Request_free
// may both come before it finishes: the communicator, and its context pair,
// stay until then. A finished schedule completes its request (status,
// error), goes back to the pool and drops that reference.
#pragma once

#include "mpi/entry.h"

namespace ulmpi::mpi::coll {

class Schedule;

// A fresh schedule for a nonblocking call.
Schedule* nbc_schedule();
// Gives back a schedule that was never started (an argument error).
void nbc_discard(Schedule* s);
// Starts a built schedule and makes its request (*out).
int start_nonblocking(Schedule* s, MPI_Request* out);
// MPI_Request_free on a live collective request: the collective goes on and
// cleans up after itself.
void nbc_detach(Schedule* s);
// The schedule blocking calls use (another one if it is busy), and its return.
Schedule& blocking_schedule();
void release_blocking_schedule(Schedule& s);

} // namespace ulmpi::mpi::coll
