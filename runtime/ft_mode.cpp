#include "runtime/ft_mode.h"

#include "runtime/config.h"

#include <string>

namespace ulmpi::rt {
namespace {

const ChoiceParam ft_param{"ft", "no",
                           "process fault tolerance: no (a failure ends the job), ulfm or mpi "
                           "(the job lives on; mpirun --with-ft)",
                           kFtChoices};

} // namespace

bool parse_ft_mode(std::string_view text, FtMode& out)
{
    if (text == "no") {
        out = FtMode::none;
        return true;
    }
    if (text == "ulfm" || text == "mpi") {
        out = FtMode::ulfm;
        return true;
    }
    return false;
}

FtMode ft_mode()
{
    FtMode m = FtMode::none;
    return parse_ft_mode(ft_param.get(), m) ? m : FtMode::none;
}

} // namespace ulmpi::rt
