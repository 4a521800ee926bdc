// Environment queries, error strings, error handlers on communicators,
// Comm_rank/size and the handle conversions.
#include "mpi/checks.h"
#include "mpi/comm.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/ft_comm.h"
#include "mpi/state.h"
#include "paths/registry.h"
#include "runtime/clock.h"

#include <cstdio>
#include <cstring>
#include <ctime>

using namespace ulmpi;
using namespace ulmpi::mpi;

double PMPI_Wtime()
{
    return static_cast<double>(rt::monotonic_ns()) * 1e-9;
}
ULMPI_ALIAS(MPI_Wtime)

double PMPI_Wtick()
{
    timespec res{};
    clock_getres(CLOCK_MONOTONIC, &res);
    return static_cast<double>(res.tv_sec) + static_cast<double>(res.tv_nsec) * 1e-9;
}
ULMPI_ALIAS(MPI_Wtick)

int PMPI_Get_processor_name(char* name, int* resultlen) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Get_processor_name";
    require_init(fn);
    if (name == nullptr || resultlen == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", name == nullptr ? "name" : "resultlen");
    }
    const std::string& host = state().engine.job().host;
    int n = static_cast<int>(host.size());
    if (n > MPI_MAX_PROCESSOR_NAME - 1) {
        n = MPI_MAX_PROCESSOR_NAME - 1;
    }
    std::memcpy(name, host.data(), static_cast<std::size_t>(n));
    name[n] = '\0';
    *resultlen = n;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Get_processor_name");
}
ULMPI_ALIAS(MPI_Get_processor_name)

int PMPI_Get_version(int* version, int* subversion)
{
    // Callable at any time, even before MPI_Init.
    if (version == nullptr || subversion == nullptr) {
        return MPI_ERR_ARG;
    }
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}
ULMPI_ALIAS(MPI_Get_version)

int PMPI_Get_library_version(char* version, int* resultlen) try {
    EntryGuard guard;
    if (version == nullptr || resultlen == nullptr) {
        return MPI_ERR_ARG;
    }
    std::string paths;
    for (const auto& p : path::registered_paths()) {
        paths += paths.empty() ? p.name : std::string(" ") + p.name;
    }
    int n = std::snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                          "ulmpi %s (MPI %d.%d interface: point-to-point, collectives, derived "
                          "datatypes, groups, communicators, intercommunicators, attributes, "
                          "topologies, error handlers, info; paths: %s)",
                          ULMPI_VERSION_STRING, MPI_VERSION, MPI_SUBVERSION, paths.c_str());
    *resultlen = n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Get_library_version");
}
ULMPI_ALIAS(MPI_Get_library_version)

int PMPI_Error_string(int errorcode, char* string, int* resultlen) try {
    EntryGuard guard;
    if (string == nullptr || resultlen == nullptr) {
        return MPI_ERR_ARG;
    }
    if (!error_code_valid(errorcode)) {
        int n = std::snprintf(string, MPI_MAX_ERROR_STRING, "invalid error code %d", errorcode);
        *resultlen = n;
        return state().initialized && !state().finalized
                   ? raise(nullptr, MPI_ERR_ARG, "MPI_Error_string", "%d is not an error code", errorcode)
                   : MPI_ERR_ARG;
    }
    std::string s = error_string(errorcode);
    // A process failure: which processes failed (not known from the code,
    // which is the class itself, as programs compare it with ==).
    const int cls = error_class_of(errorcode);
    if ((cls == kErrProcFailed || cls == kErrProcFailedPending) && state().initialized &&
        !state().finalized && s.size() < MPI_MAX_ERROR_STRING - 1) {
        s += ft_failure_note(MPI_MAX_ERROR_STRING - 1 - s.size());
    }
    int n = std::snprintf(string, MPI_MAX_ERROR_STRING, "%s", s.c_str());
    *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Error_string");
}
ULMPI_ALIAS(MPI_Error_string)

int PMPI_Error_class(int errorcode, int* errorclass) try {
    EntryGuard guard;
    if (errorclass == nullptr) {
        return MPI_ERR_ARG;
    }
    if (!error_code_valid(errorcode)) {
        return state().initialized && !state().finalized
                   ? raise(nullptr, MPI_ERR_ARG, "MPI_Error_class", "%d is not an error code", errorcode)
                   : MPI_ERR_ARG;
    }
    *errorclass = error_class_of(errorcode);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Error_class");
}
ULMPI_ALIAS(MPI_Error_class)

namespace {

int set_errhandler(MPI_Comm comm, MPI_Errhandler handler, const char* fn)
{
    require_init(fn);
    Comm* c;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Errhandler* eh = errhandler_get(handler);
    if (eh == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "0x%x is not a valid error handler", static_cast<unsigned>(handler));
    }
    if (eh->kind == Errhandler::Kind::user_win || eh->kind == Errhandler::Kind::user_file) {
        return raise(c, MPI_ERR_ARG, fn, "the error handler was made for windows or files, not communicators");
    }
    errhandler_retain(eh);
    errhandler_release(c->errhandler);
    c->errhandler = eh;
    return MPI_SUCCESS;
}

int get_errhandler(MPI_Comm comm, MPI_Errhandler* handler, const char* fn)
{
    require_init(fn);
    Comm* c;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (handler == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "the handler pointer is NULL");
    }
    errhandler_retain(c->errhandler); // the caller frees it with MPI_Errhandler_free
    *handler = c->errhandler->handle;
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler handler) try {
    EntryGuard guard;
    return set_errhandler(comm, handler, "MPI_Comm_set_errhandler");
} catch (...) {
    return api_exception("MPI_Comm_set_errhandler");
}
ULMPI_ALIAS(MPI_Comm_set_errhandler)

int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler handler) try {
    EntryGuard guard;
    return set_errhandler(comm, handler, "MPI_Errhandler_set");
} catch (...) {
    return api_exception("MPI_Errhandler_set");
}
ULMPI_ALIAS(MPI_Errhandler_set)

int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* handler) try {
    EntryGuard guard;
    return get_errhandler(comm, handler, "MPI_Comm_get_errhandler");
} catch (...) {
    return api_exception("MPI_Comm_get_errhandler");
}
ULMPI_ALIAS(MPI_Comm_get_errhandler)

int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler* handler) try {
    EntryGuard guard;
    return get_errhandler(comm, handler, "MPI_Errhandler_get");
} catch (...) {
    return api_exception("MPI_Errhandler_get");
}
ULMPI_ALIAS(MPI_Errhandler_get)

int PMPI_Comm_rank(MPI_Comm comm, int* rank) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_rank";
    require_init(fn);
    Comm* c;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (rank == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "rank is NULL");
    }
    *rank = c->rank;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_rank");
}
ULMPI_ALIAS(MPI_Comm_rank)

int PMPI_Comm_size(MPI_Comm comm, int* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_size";
    require_init(fn);
    Comm* c;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (size == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "size is NULL");
    }
    *size = c->size();
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_size");
}
ULMPI_ALIAS(MPI_Comm_size)

// Handles are ints and MPI_Fint is int: the conversions are the identity.
MPI_Fint PMPI_Comm_c2f(MPI_Comm comm) { return comm; }
ULMPI_ALIAS(MPI_Comm_c2f)
MPI_Comm PMPI_Comm_f2c(MPI_Fint comm) { return comm; }
ULMPI_ALIAS(MPI_Comm_f2c)
MPI_Fint PMPI_Type_c2f(MPI_Datatype type) { return type; }
ULMPI_ALIAS(MPI_Type_c2f)
MPI_Datatype PMPI_Type_f2c(MPI_Fint type) { return type; }
ULMPI_ALIAS(MPI_Type_f2c)
MPI_Fint PMPI_Request_c2f(MPI_Request request) { return request; }
ULMPI_ALIAS(MPI_Request_c2f)
MPI_Request PMPI_Request_f2c(MPI_Fint request) { return request; }
ULMPI_ALIAS(MPI_Request_f2c)
