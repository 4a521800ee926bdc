// Generalized requests (MPI-3.1 section 12.2): MPI_Grequest_start makes a
// request that completes when the program calls MPI_Grequest_complete.
// Finishing it (Wait/Test and friends) calls query_fn to fill the status,
// then free_fn; MPI_Cancel calls cancel_fn(complete); MPI_Request_free
// before completion keeps the object (its handle stays valid for
// MPI_Grequest_complete, which then calls free_fn and frees it).
//
// The callbacks' error codes are returned as they are: query_fn's, else
// free_fn's.
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/request.h"

using namespace ulmpi::mpi;

namespace ulmpi::mpi {

int grequest_finish(Request* r, MPI_Status* st)
{
    MPI_Status local;
    status_empty(&local);
    local.MPI_SOURCE = MPI_UNDEFINED;
    local.MPI_TAG = MPI_UNDEFINED;
    int qerr = r->greq_query != nullptr ? r->greq_query(r->greq_state, &local) : MPI_SUCCESS;
    int ferr = r->greq_free != nullptr ? r->greq_free(r->greq_state) : MPI_SUCCESS;
    r->greq_free = nullptr; // once
    if (st != MPI_STATUS_IGNORE) {
        *st = local;
    }
    return qerr != MPI_SUCCESS ? qerr : ferr;
}

int grequest_cancel(Request* r)
{
    if (r->greq_cancel == nullptr) {
        return MPI_SUCCESS;
    }
    return r->greq_cancel(r->greq_state, r->greq_done ? 1 : 0);
}

int grequest_free(Request* r)
{
    if (!r->greq_done) {
        r->greq_freed = true;
        return MPI_SUCCESS;
    }
    int e = r->greq_free != nullptr ? r->greq_free(r->greq_state) : MPI_SUCCESS;
    request_free(r);
    return e;
}

} // namespace ulmpi::mpi

int PMPI_Grequest_start(MPI_Grequest_query_function* query_fn, MPI_Grequest_free_function* free_fn,
                        MPI_Grequest_cancel_function* cancel_fn, void* extra_state,
                        MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Grequest_start";
    require_init(fn);
    if (request == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the request pointer is NULL");
    }
    Request* r = request_new(Request::Kind::generalized, nullptr);
    if (r == nullptr) {
        return raise(nullptr, MPI_ERR_INTERN, fn, "the request table is full");
    }
    r->greq_query = query_fn;
    r->greq_free = free_fn;
    r->greq_cancel = cancel_fn;
    r->greq_state = extra_state;
    *request = r->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Grequest_start");
}
ULMPI_ALIAS(MPI_Grequest_start)

int PMPI_Grequest_complete(MPI_Request request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Grequest_complete";
    require_init(fn);
    Request* r = request_get(request);
    if (r == nullptr || r->kind != Request::Kind::generalized) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "0x%x is not a generalized request",
                     static_cast<unsigned>(request));
    }
    if (r->greq_done) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "the generalized request is already complete");
    }
    r->greq_done = true;
    if (r->greq_freed) {
        int e = r->greq_free != nullptr ? r->greq_free(r->greq_state) : MPI_SUCCESS;
        request_free(r);
        if (e != MPI_SUCCESS) {
            return raise(nullptr, e, fn, "the free callback of the generalized request failed");
        }
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Grequest_complete");
}
ULMPI_ALIAS(MPI_Grequest_complete)
