// FT-MPI's modes (the FT-MPI specification, "Proposal for Extensions to the
// Message-Passing Interface for Process Fault-Tolerance"): what the library
// does with communicators, messages and collectives when a process fails,
// and how recovery starts. Chosen at start by parameters (mpirun --ft-mode
// etc., or ULMPI_FT_MODE ...) and changeable by the program at run time
// through attributes on MPI_COMM_WORLD (mpi/ftmpi.h). The values are those
// of include/mpi-ext.h (FTMPI_*); docs/ftmpi.md has the table.
//
//   communicator mode  abort (no FT-MPI: a failure ends the job, or ULFM
//                      when `ft` says so), rebuild (failed ranks replaced
//                      by new processes: mpi/ftmpi_rebuild.cpp), blank (failed
//                      ranks become holes), shrink (survivors renumbered)
//   message mode       reset (recovery drops every message and request in
//                      flight), cont (operations between live processes go on)
//   collective mode    atomic (a collective fails everywhere or nowhere),
//                      nonatomic
//   recovery           auto (the call that reports the failure has already
//                      recovered), manual (the program asks for it)
#pragma once

#include "ft/detector.h"

#include <cstdint>

namespace ulmpi::ft {

// Values as in mpi-ext.h (FTMPI_COMM_MODE_ABORT ...).
enum class CommMode : int { abort = 0, rebuild = 1, blank = 2, shrink = 3 };
enum class MsgMode : int { reset = 10, cont = 11 };
enum class CollMode : int { atomic = 20, nonatomic = 21 };
enum class RecoveryMode : int { automatic = 30, manual = 31 };

struct FtmpiModes {
    CommMode comm = CommMode::abort;
    MsgMode msg = MsgMode::reset;
    CollMode coll = CollMode::atomic;
    RecoveryMode recovery = RecoveryMode::automatic;

    bool on() const { return comm != CommMode::abort; }
};

// From the parameters ft_mode, ft_msg_mode, ft_coll_mode, ft_recovery
// (environment ULMPI_FT_MODE ... when the registry does not hold them).
FtmpiModes ftmpi_modes_from_params();

// The detector's mode: FT-MPI needs the job kept alive (as ULFM does).
Mode detector_mode();

// "blank", "cont", ... for messages and docs.
const char* mode_name(CommMode m);
const char* mode_name(MsgMode m);
const char* mode_name(CollMode m);
const char* mode_name(RecoveryMode m);

} // namespace ulmpi::ft
