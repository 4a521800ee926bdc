// Small MPI-2/3 functions beside the object families: Status_set_elements
// (_x), Status_set_cancelled, Request_get_status, Alloc_mem / Free_mem,
// Pcontrol, and the c2f / f2c conversions of the handle kinds that have no
// other home (Win, File, Message; handles are ints, so they are the
// identity).
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/info.h"
#include "mpi/request.h"
#include "mpi/state.h"

#include <cstdlib>

using namespace ulmpi::mpi;

namespace {

int set_elements(MPI_Status* status, MPI_Datatype type, long long count, const char* fn)
{
    require_init(fn);
    if (status == nullptr || status == MPI_STATUS_IGNORE) {
        return raise(nullptr, MPI_ERR_ARG, fn, "no status given");
    }
    Datatype* t = datatype_get(type);
    if (t == nullptr) {
        return raise(nullptr, MPI_ERR_TYPE, fn, "0x%x is not a valid datatype",
                     static_cast<unsigned>(type));
    }
    if (count < 0) {
        return raise(nullptr, MPI_ERR_COUNT, fn, "count %lld is negative", count);
    }
    const bool cancelled = status_cancelled(status);
    status_set(status, status->MPI_SOURCE, status->MPI_TAG, status->MPI_ERROR,
               static_cast<std::uint64_t>(count) * t->size, cancelled);
    return MPI_SUCCESS;
}

// The status of a complete request, leaving the request as it is.
int peek_status(Request* r, MPI_Status* st)
{
    switch (r->kind) {
    case Request::Kind::send: {
        const ulmpi::ulm::SendMsg* s = r->send;
        int err = s->error == ulmpi::rt::Errc::ok ? MPI_SUCCESS : to_mpi_class(s->error);
        status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, err, 0, s->cancelled);
        return err;
    }
    case Request::Kind::recv: {
        const ulmpi::ulm::RecvMsg* m = r->recv;
        if (m->cancelled) {
            status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS, 0, true);
            return MPI_SUCCESS;
        }
        int err = m->error == ulmpi::rt::Errc::ok ? MPI_SUCCESS : to_mpi_class(m->error);
        int src = m->matched ? r->comm->peer_rank_of(m->env.source) : MPI_ANY_SOURCE;
        status_set(st, src, m->env.tag, err, m->received, false);
        return err;
    }
    case Request::Kind::generalized: {
        MPI_Status local;
        status_empty(&local);
        int err = r->greq_query != nullptr ? r->greq_query(r->greq_state, &local) : MPI_SUCCESS;
        if (st != MPI_STATUS_IGNORE) {
            *st = local;
        }
        return err;
    }
    case Request::Kind::done:
    case Request::Kind::schedule:
        if (st != MPI_STATUS_IGNORE) {
            *st = r->status;
        }
        return r->status.MPI_ERROR;
    }
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Status_set_elements(MPI_Status* status, MPI_Datatype datatype, int count) try {
    EntryGuard guard;
    return set_elements(status, datatype, count, "MPI_Status_set_elements");
} catch (...) {
    return api_exception("MPI_Status_set_elements");
}
ULMPI_ALIAS(MPI_Status_set_elements)

int PMPI_Status_set_elements_x(MPI_Status* status, MPI_Datatype datatype, MPI_Count count) try {
    EntryGuard guard;
    return set_elements(status, datatype, count, "MPI_Status_set_elements_x");
} catch (...) {
    return api_exception("MPI_Status_set_elements_x");
}
ULMPI_ALIAS(MPI_Status_set_elements_x)

int PMPI_Status_set_cancelled(MPI_Status* status, int flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Status_set_cancelled";
    require_init(fn);
    if (status == nullptr || status == MPI_STATUS_IGNORE) {
        return raise(nullptr, MPI_ERR_ARG, fn, "no status given");
    }
    status_set(status, status->MPI_SOURCE, status->MPI_TAG, status->MPI_ERROR,
               status_bytes(status), flag != 0);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Status_set_cancelled");
}
ULMPI_ALIAS(MPI_Status_set_cancelled)

int PMPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Request_get_status";
    require_init(fn);
    if (flag == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "flag is NULL");
    }
    if (request == MPI_REQUEST_NULL) {
        *flag = 1;
        status_empty(status);
        return MPI_SUCCESS;
    }
    Request* r = request_get(request);
    if (r == nullptr) {
        return raise(nullptr, MPI_ERR_REQUEST, fn, "0x%x is not a valid request",
                     static_cast<unsigned>(request));
    }
    if (r->persistent && !r->active) {
        *flag = 1;
        status_empty(status);
        return MPI_SUCCESS;
    }
    if (!r->complete()) {
        state().engine.poll();
        if (!r->complete()) {
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    if (int e = peek_status(r, status)) {
        return raise(r->comm, e, fn, "the request completed with an error");
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Request_get_status");
}
ULMPI_ALIAS(MPI_Request_get_status)

int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Alloc_mem";
    require_init(fn);
    if (size < 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "size %ld is negative", size);
    }
    if (info != MPI_INFO_NULL && info_get(info) == nullptr) {
        return raise(nullptr, MPI_ERR_INFO, fn, "0x%x is not a valid info object",
                     static_cast<unsigned>(info));
    }
    if (baseptr == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "baseptr is NULL");
    }
    void* p = std::malloc(size > 0 ? static_cast<std::size_t>(size) : 1);
    if (p == nullptr) {
        return raise(nullptr, MPI_ERR_NO_MEM, fn, "cannot allocate %ld bytes", size);
    }
    *static_cast<void**>(baseptr) = p;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Alloc_mem");
}
ULMPI_ALIAS(MPI_Alloc_mem)

int PMPI_Free_mem(void* base) try {
    EntryGuard guard;
    require_init("MPI_Free_mem");
    std::free(base);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Free_mem");
}
ULMPI_ALIAS(MPI_Free_mem)

int PMPI_Pcontrol(const int level, ...)
{
    (void)level; // no profiling levels: a profiling library interposes MPI_Pcontrol itself
    return MPI_SUCCESS;
}
ULMPI_ALIAS(MPI_Pcontrol)

MPI_Fint PMPI_Win_c2f(MPI_Win win) { return win; }
ULMPI_ALIAS(MPI_Win_c2f)
MPI_Win PMPI_Win_f2c(MPI_Fint win) { return win; }
ULMPI_ALIAS(MPI_Win_f2c)
MPI_Fint PMPI_File_c2f(MPI_File file) { return file; }
ULMPI_ALIAS(MPI_File_c2f)
MPI_File PMPI_File_f2c(MPI_Fint file) { return file; }
ULMPI_ALIAS(MPI_File_f2c)
MPI_Fint PMPI_Message_c2f(MPI_Message message) { return message; }
ULMPI_ALIAS(MPI_Message_c2f)
MPI_Message PMPI_Message_f2c(MPI_Fint message) { return message; }
ULMPI_ALIAS(MPI_Message_f2c)
