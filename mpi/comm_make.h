// Communicator constructors without the argument checks: the shared core
// of MPI_Comm_dup / create / split / split_type / create_group,
// MPI_Intercomm_create / merge and the topology constructors.
//
// Each is collective as its MPI function is, agrees on a context pair
// (comm_ctx.h) through Phases on the parent (comm_coll.h), and returns what
// the MPI function must return: MPI_SUCCESS, or the code raise() gave back
// after reporting on the parent. *out is the new communicator, published
// (it has its handle), or nullptr where the caller gets MPI_COMM_NULL. The
// new communicator inherits the parent's error handler; it has no name, no
// attributes and no topology (callers add those).
#pragma once

#include "mpi/comm.h"

namespace ulmpi::mpi {

// Same groups, new contexts (intra- and intercommunicators).
int comm_make_dup(Comm* parent, Comm** out, const char* fn);
// Intracommunicator parent; `group` (a reference the call takes over) is
// the caller's new group, or nullptr when the caller joins none. Groups of
// different callers are equal or disjoint.
int comm_make_intra(Comm* parent, Group* group, Comm** out, const char* fn);
// MPI_Comm_split (intra- and intercommunicators). color >= 0 or MPI_UNDEFINED.
int comm_make_split(Comm* parent, int color, int key, Comm** out, const char* fn);
// MPI_Comm_create on an intercommunicator: `group` is a subgroup of the
// local group (the same on every local process).
int comm_make_inter_create(Comm* parent, Group* group, Comm** out, const char* fn);
// MPI_Comm_create_group: only the members of `group` call (my rank in it is
// `grank`); tag separates concurrent calls.
int comm_make_group(Comm* parent, Group* group, int grank, int tag, Comm** out, const char* fn);
// MPI_Intercomm_create (arguments checked by the caller; peer and
// remote_leader matter only at the local leader).
int comm_make_intercomm(Comm* local, int local_leader, Comm* peer, int remote_leader, int tag,
                        Comm** out, const char* fn);
// MPI_Intercomm_merge.
int comm_make_merge(Comm* inter, bool high, Comm** out, const char* fn);

} // namespace ulmpi::mpi
