// mpirun's exit status, as documented in `mpirun --help` and docs/launcher.md.
#pragma once

namespace ulmpi::rt::mpirun::exit_code {

inline constexpr int ok = 0;
inline constexpr int failure = 1;        // rank left MPI without MPI_Finalize; internal errors
inline constexpr int usage = 2;          // bad command line
inline constexpr int timeout = 124;      // --timeout / MPIEXEC_TIMEOUT expired
inline constexpr int cannot_execute = 126;
inline constexpr int not_found = 127;
inline constexpr int signal_base = 128;  // + signal number (rank killed, or mpirun interrupted)

} // namespace ulmpi::rt::mpirun::exit_code
