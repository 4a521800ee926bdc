// What the collective entry points share: argument checks (each returns
// MPI_SUCCESS or what raise() returned) and the launch of a built call,
// blocking or nonblocking.
//
// Error classes: MPI_ERR_COMM (invalid communicator; an intercommunicator
// where none is allowed), MPI_ERR_TYPE, MPI_ERR_COUNT (negative counts),
// MPI_ERR_ROOT, MPI_ERR_OP (invalid op, or an op not defined for the
// datatype), MPI_ERR_BUFFER (NULL buffer with data; send and receive
// buffers aliased where MPI_IN_PLACE is the way to say so), MPI_ERR_ARG
// (MPI_IN_PLACE where it is not allowed; NULL count or displacement arrays),
// MPI_ERR_REQUEST (NULL request pointer).
#pragma once

#include "mpi/coll/coll.h"

namespace ulmpi::mpi::coll {

// Resolves the communicator; intercommunicators only when inter_ok.
int check_coll_comm(MPI_Comm h, bool inter_ok, const char* fn, Comm** out);
int check_coll_type(Comm* c, MPI_Datatype h, const char* fn, Datatype** out);
int check_coll_count(Comm* c, int count, const char* what, const char* fn);
int check_coll_buffer(Comm* c, const void* buf, int count, const Datatype* t, const char* what,
                      const char* fn);
int check_root(Comm* c, int root, const char* fn);
int check_op(Comm* c, MPI_Op h, const Datatype* t, const char* fn, Op** out);
// An array of n counts (or displacements when counts is false).
int check_array(Comm* c, const int* a, int n, bool counts, const char* what, const char* fn);
int check_request_ptr(Comm* c, const MPI_Request* r, const char* fn);
// Nonblocking entry points: MPI_ERR_REQUEST for a NULL request pointer
// (before anything else: the implementations take NULL to mean blocking).
int check_nb_request(MPI_Comm comm, const MPI_Request* r, const char* fn);
int no_in_place(Comm* c, const char* what, const char* fn);
int aliased(Comm* c, const char* fn);
// Whether the optional checks run (ULMPI_MPI_CHECK_ARGS).
bool checking();

// Schedule for a call (after the checks: taking one consumes a tag).
Schedule& acquire(Comm* c, MPI_Request* req);
// Fills the team fields of `a` from the communicator.
void set_teams(Comm* c, Args& a);
// Builds with the communicator's table and runs or starts the schedule.
int launch(Schedule& s, Comm* c, Coll coll, Args& a, MPI_Request* req, const char* fn);
// The same for a call that needs no schedule before: a blocking call that
// goes through shared memory (shm_coll.h) takes none (and no tag, at every
// member alike); any other acquires one and launches it.
int launch(Comm* c, Coll coll, Args& a, MPI_Request* req, const char* fn);

} // namespace ulmpi::mpi::coll
