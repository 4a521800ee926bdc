// Error classes, error handlers and the one path by which an error leaves
// an MPI call: raise() finds the handler of the object the call worked on
// (or of MPI_COMM_WORLD when there is none) and applies it:
//   MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT  print one line naming the rank,
//       the call, the error class and what was wrong, then end the job with
//       the error class as exit code;
//   MPI_ERRORS_RETURN  return the code;
//   a user handler  call it with the communicator and code, then return it.
#pragma once

#include "mpi/entry.h"

#include <string>

namespace ulmpi::mpi {

struct Comm;

// The fault-tolerance classes (mpi.h: MPIX_ERR_*, Open MPI's values).
inline constexpr int kErrProcFailed = MPIX_ERR_PROC_FAILED;
inline constexpr int kErrProcFailedPending = MPIX_ERR_PROC_FAILED_PENDING;
inline constexpr int kErrRevoked = MPIX_ERR_REVOKED;

struct Errhandler {
    enum class Kind : unsigned char { fatal, ret, abort, user_comm, user_win, user_file };
    int handle = 0;
    Kind kind = Kind::fatal;
    MPI_Comm_errhandler_function* comm_fn = nullptr;
    MPI_Win_errhandler_function* win_fn = nullptr;
    MPI_File_errhandler_function* file_fn = nullptr;
    int refs = 1;
    bool freed = false;
};

Errhandler* errhandler_get(MPI_Errhandler h);
Errhandler* errhandler_fatal();
Errhandler* errhandler_return();
// The handler MPI_COMM_WORLD and MPI_COMM_SELF start with: the
// `initial_errhandler` parameter (mpirun --initial-errhandler, MPI-4),
// MPI_ERRORS_ARE_FATAL by default. Its name is in MPI_INFO_ENV under
// "mpi_initial_errhandler".
Errhandler* errhandler_initial();
const std::string& errhandler_initial_name();
void errhandler_retain(Errhandler* e);
void errhandler_release(Errhandler* e);
MPI_Errhandler errhandler_insert(Errhandler* e);

// Reports an error of class/code `code` raised by MPI function `fn` working
// on `comm` (nullptr: no communicator; MPI_COMM_WORLD's handler applies).
// Returns what the MPI function must return.
[[gnu::cold, gnu::format(printf, 4, 5)]] int raise(Comm* comm, int code, const char* fn,
                                                   const char* fmt, ...) noexcept;
// An error before MPI_Init or after MPI_Finalize: printed, then the process
// exits (there is no job to abort).
[[noreturn, gnu::cold]] void raise_uninitialized(const char* fn) noexcept;

// Error classes and codes.
bool error_code_valid(int code);
int error_class_of(int code);
const char* error_class_name(int cls);   // "MPI_ERR_RANK"
std::string error_string(int code);      // "invalid rank"

// User error classes/codes/strings (MPI_Add_error_*).
int add_error_class();
int add_error_code(int cls);
bool set_error_string(int code, const char* text);
int last_used_code();

} // namespace ulmpi::mpi
