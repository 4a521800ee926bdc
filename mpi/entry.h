// The C ABI boundary. Every MPI function is defined as PMPI_X with a weak
// alias MPI_X (the profiling interface), exported with default visibility
// while everything else in libmpi.so stays hidden. Inside, ulmpi speaks
// rt::Status; at this boundary it becomes an MPI error class (to_mpi_class)
// and goes through the communicator's error handler (errors.h). No C++
// exception crosses it: each entry point is a function-try-block whose
// handler reports MPI_ERR_NO_MEM / MPI_ERR_INTERN. Its first statement is
// an EntryGuard: under MPI_THREAD_MULTIPLE it holds the process's lock for
// the call (ulm/thread_lock.h); below MULTIPLE it tests one flag.
#pragma once

#pragma GCC visibility push(default)
#include <mpi.h>
#pragma GCC visibility pop

#include "runtime/status.h"
#include "ulm/thread_lock.h"

#define ULMPI_STR_(x) #x
#define ULMPI_STR(x) ULMPI_STR_(x)
// Makes MPI_name a weak alias of PMPI_name (place after PMPI_name's definition).
#define ULMPI_ALIAS(name) _Pragma(ULMPI_STR(weak name = P##name))

namespace ulmpi::mpi {

// Held for the whole of an MPI call (released only while the call waits).
class EntryGuard : ulm::ThreadLock::Guard {
public:
    EntryGuard() : Guard(ulm::thread_lock()) {}
};

int to_mpi_class(rt::Errc code) noexcept;
// The handler of an entry point's function-try-block.
int api_exception(const char* fn) noexcept;

} // namespace ulmpi::mpi
