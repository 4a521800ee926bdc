// Requests. An MPI request wraps a ULM descriptor (send or receive), or is
// complete from the start (MPI_PROC_NULL peers, argument errors found late),
// or is persistent (its arguments are kept; MPI_Start makes a new ULM
// operation each time), or generalized, or a collective schedule.
//
// Life cycle: created by I* / *_init; complete when its ULM descriptor says
// so; finished by Wait/Test (status filled, ULM descriptor released, the
// request freed or, if persistent, made inactive).
#pragma once

#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"
#include "mpi/handle.h"
#include "ulm/message.h"

namespace ulmpi::mpi {

namespace coll {
class Schedule; // mpi/coll/schedule.h
}
struct Idup;  // mpi/comm_idup.cpp
struct FtOp;  // mpi/ulfm_api.cpp

struct Request {
    enum class Kind : std::uint8_t { send, recv, done, generalized, schedule };

    // Every member has its initializer: a provided constructor keeps the
    // pool's `new T()` from zeroing the whole object before running them.
    Request() noexcept {}

    int handle = 0;
    Kind kind = Kind::done;
    bool persistent = false;
    bool active = true;        // persistent requests: started and not finished
    bool buffered = false;     // Bsend: the data lives in the attached buffer
    bool is_recv_persistent = false; // persistent receive (else persistent send)
    ulm::SendMsg* send = nullptr;
    ulm::RecvMsg* recv = nullptr;  // ULM's (pooled), or own_recv
    // MPI_Irecv's descriptor lives in its request (Engine::irecv_into):
    // one object to take and give back per receive instead of two.
    ulm::RecvMsg own_recv;
    Comm* comm = nullptr;
    MPI_Status status{};       // for Kind::done
    // Persistent requests keep their arguments.
    const void* buf = nullptr;
    int count = 0;
    Datatype* type = nullptr;
    int peer = MPI_PROC_NULL;  // rank in comm
    int tag = 0;
    ulm::SendMode mode = ulm::SendMode::standard;
    // Kind::schedule: the collective's schedule while it runs (it sets
    // sched_done and `status` when it finishes, see mpi/coll/nbc.cpp).
    coll::Schedule* sched = nullptr;
    bool sched_done = false;
    // MPI_Comm_idup's operation while it runs (also Kind::schedule).
    Idup* idup = nullptr;
    // MPIX_Comm_iagree / ishrink while they run (also Kind::schedule).
    FtOp* ftop = nullptr;
    // Kind::generalized: the program's callbacks (mpi/grequest.cpp).
    MPI_Grequest_query_function* greq_query = nullptr;
    MPI_Grequest_free_function* greq_free = nullptr;
    MPI_Grequest_cancel_function* greq_cancel = nullptr;
    void* greq_state = nullptr;
    bool greq_done = false;  // MPI_Grequest_complete was called
    bool greq_freed = false; // MPI_Request_free came before it

    bool complete() const
    {
        switch (kind) {
        case Kind::send: return send->complete;
        case Kind::recv: return recv->complete;
        case Kind::schedule: return sched_done;
        case Kind::generalized: return greq_done;
        default: return true;
        }
    }
};

Request* request_new(Request::Kind kind, Comm* comm);
// The handle of a send that completed inside its call (an eager message
// that left at once, or one to MPI_PROC_NULL): one shared request, complete
// with an empty status, that is never allocated, freed or put in the table
// of user requests (like MPICH's built-in complete requests; several such
// sends return the same handle value). Finishing or freeing it only sets
// the program's handle to MPI_REQUEST_NULL; MPI_Cancel finds nothing to
// cancel in it.
MPI_Request request_done_send();
// Its handle value, for the array calls' quick finish: an MPI_Isend that
// returned it is done and its status is a send's empty one.
inline constexpr MPI_Request kDoneSendHandle = (ULMPI_KIND_REQUEST << 24) | 1;
// The table of request handles (request.cpp); reached inline by
// request_get, which every completion call runs for each handle.
extern HandleTable<Request, ULMPI_KIND_REQUEST> g_request_table;
// nullptr for invalid handles and MPI_REQUEST_NULL.
inline Request* request_get(MPI_Request h) { return g_request_table.get(h); }
void request_free(Request* r);
// Gives a completed receive's descriptor back to ULM (its own or the
// request's own_recv) and clears r->recv.
void request_release_recv(Request* r);
// MPI_Request_free on a send or receive that has not completed: the handle
// goes now, the request (with its descriptor, communicator and datatype)
// when the operation completes.
void request_detach(Request* r);

// Fills *st (unless MPI_STATUS_IGNORE) for a completed request, releases
// its ULM descriptor and returns the request's error code (MPI_SUCCESS,
// MPI_ERR_TRUNCATE, ...). Frees the request and sets *h to
// MPI_REQUEST_NULL, or makes a persistent request inactive.
int request_finish(MPI_Request* h, Request* r, MPI_Status* st);

// Generalized requests (mpi/grequest.cpp): finishing one runs its query
// and free callbacks; MPI_Cancel runs its cancel callback; MPI_Request_free
// frees it now if complete, else when MPI_Grequest_complete comes.
int grequest_finish(Request* r, MPI_Status* st);
int grequest_cancel(Request* r);
int grequest_free(Request* r);

// MPI_Request_free on a pending MPI_Comm_idup: it goes on without its
// request (mpi/comm_idup.cpp).
void comm_idup_detach(Idup* op);
// The same for MPIX_Comm_iagree / ishrink (mpi/ulfm_api.cpp).
void ft_op_detach(FtOp* op);

// Status helpers.
void status_set(MPI_Status* st, int source, int tag, int error, std::uint64_t bytes, bool cancelled);
// The same for calls that return one status (MPI_Recv, MPI_Wait, MPI_Mprobe,
// ...): MPI_ERROR is left as the program set it, as in MPICH and Open MPI
// (MPI-3.1 3.2.5: only the calls that return an array of statuses set it).
void status_fill(MPI_Status* st, int source, int tag, std::uint64_t bytes, bool cancelled);
void status_empty(MPI_Status* st); // source MPI_ANY_SOURCE, tag MPI_ANY_TAG, count 0
std::uint64_t status_bytes(const MPI_Status* st);
bool status_cancelled(const MPI_Status* st);

} // namespace ulmpi::mpi
