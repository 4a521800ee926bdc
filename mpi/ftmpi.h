// FT-MPI's recovery modes in the MPI layer (the FT-MPI specification; the
// modes themselves: ft/ftmpi_modes.h; the user's view: docs/ftmpi.md).
//
// Built on the ULFM machinery (mpi/ft_comm.h, ft/): with an FT-MPI
// communicator mode other than abort the detector keeps the job alive, and:
//
// Notification. A failure the detector records opens a gate on every
// communicator (Comm::ft_gate): the next call on any of them goes through
// ftmpi_check(). The first such call after a failure is the one that meets
// it: it returns MPI_ERR_OTHER through the communicator's error handler
// (its message names the failed ranks). With automatic recovery the
// recovery has happened when that call returns; with manual recovery the
// process is in the "failure recognized" state until the program recovers
// (MPIX_Ftmpi_recover(), or FT-MPI's idiom MPI_Comm_dup(MPI_COMM_WORLD, ...),
// which recovers and then duplicates the new MPI_COMM_WORLD); until then
// every communicating call except on MPI_COMM_SELF returns MPI_ERR_OTHER.
//
// Recovery, epoch k -> k + 1. One fault-tolerant agreement (ft/agree.h) per
// epoch, among the live members of MPI_COMM_WORLD, on a key of its own
// (kRecoveryCtx + k): each contributes a bitmap of the world ranks it knows
// alive; the AND, minus the members that did not contribute, is the set of
// processes this recovery removes, the same at every survivor. Any process
// may start epoch k; every other process joins it from its progress loop
// (a background hook), whatever call it is blocked in, so nobody waits for
// a process that has not noticed yet. When the agreement is decided each
// process applies it, also from the progress loop:
//   - REBUILD: every removed rank is replaced by a new process (same world
//     rank, next incarnation: mpi/ftmpi_rebuild.cpp) before anything else
//     is re-created; MPI_COMM_WORLD keeps its size and ranks, with no hole.
//     The new process's MPI_Init returns MPI_INIT_RESTARTED_NODE with the
//     survivors' recovery count, context generations and modes.
//   - MPI_COMM_WORLD keeps its handle; SHRINK: its group becomes the
//     survivors in their old order (size and ranks change); BLANK: size and
//     ranks stay, the failed ranks are holes (point-to-point with one fails
//     with MPIX_ERR_PROC_FAILED; collectives run over the live ranks through
//     the blank dispatch table, mpi/ftmpi_blank_coll.cpp).
//   - every other communicator is invalid (calls on it return
//     MPI_ERR_COMM; MPI_Comm_free works), and so is every group made before
//     (MPI_ERR_GROUP, mpi/group.h's eras). The context id table is reset to
//     its state after MPI_Init, so a program that re-creates its
//     communicators in the same order gets the same context ids at every
//     process (and a new process does too: REBUILD).
//   - RESET: every request pending on any communicator completes with an
//     error, and the communicators' contexts move to a new generation, so
//     no message sent before the recovery matches a receive after it. CONT:
//     point-to-point contexts stay; requests between live processes go on
//     and complete after the recovery; only collectives change generation.
//   - last, at the next call that returns to the program (the one that
//     reports the failure, or the recovery call), the delete callbacks of
//     the attributes on MPI_COMM_WORLD run in the order the attributes were
//     set (the attributes are deleted).
// ATOMIC collectives: after every collective, the members agree on whether
// it succeeded everywhere; if not, it fails everywhere.
#pragma once

#include "ft/ftmpi_modes.h"
#include "mpi/comm.h"

namespace ulmpi::mpi {

// FT-MPI in force (a communicator mode other than abort), after MPI_Init.
bool ftmpi_on();
// This process replaces a failed one (REBUILD): MPI_Init returns
// MPI_INIT_RESTARTED_NODE.
bool ftmpi_restarted();
// At MPI_Init after ft_init(); at MPI_Finalize before the engine goes.
void ftmpi_init();
void ftmpi_finalize();
// The gate (Comm::ft_gate set): MPI_SUCCESS or the error raised. `coll`:
// a collective or communicator constructor; `fn` the MPI call.
int ftmpi_check(Comm* c, const char* fn, bool coll);
// After a blocking collective on c finished with `err`: ATOMIC mode makes
// the outcome uniform. Returns the code the call returns (not raised).
int ftmpi_coll_outcome(Comm* c, int err);
// raise() calls it first: an error while a failure is not yet reported
// reports it (automatic recovery: recovers before the call returns).
void ftmpi_before_raise();
// Recovers now (collective over the survivors): MPI_SUCCESS or an error class.
int ftmpi_recover(const char* fn);
// MPI_Comm_dup on MPI_COMM_WORLD: recovers first when a failure is
// recognized or not yet recovered. MPI_SUCCESS or an error class.
int ftmpi_dup_trigger(Comm* c, const char* fn);
// The gate for communicator constructors (mpi/comm_coll.h's Phase): the
// same state changes as ftmpi_check, an error class without raising.
int ftmpi_phase_error(Comm* c);
// BLANK: the live members of a communicator with holes (for the
// constructors' internal collectives), else nullptr.
struct Members;
const Members* ftmpi_live_members(const Comm* c);
// After an allgather of `per` words each over ftmpi_live_members(c): moves
// every live member's words to its rank's place; a hole's first word
// becomes MPI_UNDEFINED (MPI_Comm_split: no colour), the others 0.
void ftmpi_spread(const Comm* c, std::uint32_t* words, int per);

// The current modes; set through the attributes.
ft::FtmpiModes& ftmpi_modes();
// World ranks of MPI_COMM_WORLD that are holes (BLANK), in rank order.
bool ftmpi_is_hole(int world_rank);
// Live members of MPI_COMM_WORLD (BLANK collectives' team), my index in it.
const std::vector<int>& ftmpi_live();
int ftmpi_live_rank();
// The attribute FTMPI_NUM_FAILED_PROCS and FTMPI_ERROR_FAILURE's code.
int ftmpi_failed_count();
int ftmpi_error_code();
int ftmpi_epoch();

// Attribute hooks (mpi/attr_api.cpp): the FT-MPI keys are predefined.
bool ftmpi_keyval(int keyval);
void* ftmpi_attr_get(int keyval);
int ftmpi_attr_set(Comm* c, int keyval, const void* value, const char* fn);

} // namespace ulmpi::mpi
