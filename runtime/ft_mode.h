// The job's process fault-tolerance mode, shared by mpirun, ulmpi_daemon and
// the ranks: the `ft` parameter (ULMPI_FT; mpirun --with-ft sets it).
//   no          a failed rank ends the whole job (the default)
//   ulfm, mpi   the job lives on: the launcher announces every failure to the
//               survivors, who see it through the ULFM interface (`mpi` is the
//               spelling of ULFM's own test suites)
#pragma once

#include <cstdint>
#include <string_view>

namespace ulmpi::rt {

enum class FtMode : std::uint8_t { none, ulfm };

inline constexpr const char* kFtChoices = "no|ulfm|mpi";

// false when `text` is not one of kFtChoices.
bool parse_ft_mode(std::string_view text, FtMode& out);
// The mode this process runs under (the `ft` parameter).
FtMode ft_mode();

} // namespace ulmpi::rt
