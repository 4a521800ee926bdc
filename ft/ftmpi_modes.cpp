#include "ft/ftmpi_modes.h"

#include "runtime/config.h"

#include <string>

namespace ulmpi::ft {
namespace {

const rt::ChoiceParam comm_param{"ft_mode", "abort",
                                 "FT-MPI communicator mode after a process failure: "
                                 "abort|rebuild|blank|shrink (mpirun --ft-mode)",
                                 "abort|rebuild|blank|shrink"};
const rt::ChoiceParam msg_param{"ft_msg_mode", "reset",
                                "FT-MPI message mode: reset (recovery drops messages in "
                                "flight) | cont (they complete)",
                                "reset|cont"};
const rt::ChoiceParam coll_param{"ft_coll_mode", "atomic",
                                 "FT-MPI collective mode: atomic (fail everywhere or "
                                 "nowhere) | nonatomic",
                                 "atomic|nonatomic"};
const rt::ChoiceParam recovery_param{"ft_recovery", "auto",
                                     "FT-MPI recovery: auto (at the call that reports the "
                                     "failure) | manual (the program asks)",
                                     "auto|manual"};

} // namespace

FtmpiModes ftmpi_modes_from_params()
{
    FtmpiModes m;
    const std::string c = comm_param.get();
    m.comm = c == "rebuild"  ? CommMode::rebuild
             : c == "blank"  ? CommMode::blank
             : c == "shrink" ? CommMode::shrink
                             : CommMode::abort;
    m.msg = msg_param.get() == "cont" ? MsgMode::cont : MsgMode::reset;
    m.coll = coll_param.get() == "nonatomic" ? CollMode::nonatomic : CollMode::atomic;
    m.recovery = recovery_param.get() == "manual" ? RecoveryMode::manual : RecoveryMode::automatic;
    return m;
}

Mode detector_mode()
{
    return ftmpi_modes_from_params().on() ? Mode::ulfm : mode_from_params();
}

const char* mode_name(CommMode m)
{
    switch (m) {
    case CommMode::rebuild: return "rebuild";
    case CommMode::blank: return "blank";
    case CommMode::shrink: return "shrink";
    case CommMode::abort: break;
    }
    return "abort";
}

const char* mode_name(MsgMode m) { return m == MsgMode::cont ? "cont" : "reset"; }
const char* mode_name(CollMode m) { return m == CollMode::nonatomic ? "nonatomic" : "atomic"; }
const char* mode_name(RecoveryMode m)
{
    return m == RecoveryMode::manual ? "manual" : "auto";
}

} // namespace ulmpi::ft
