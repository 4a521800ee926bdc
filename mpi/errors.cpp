#include "mpi/errors.h"

#include "mpi/comm.h"
#include "mpi/ftmpi.h"
#include "mpi/handle.h"
#include "mpi/state.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <cstdarg>
#include <cstdio>
#include <new>
#include <unistd.h>
#include <vector>

namespace ulmpi::mpi {
namespace {

struct ClassInfo {
    int cls;
    const char* name;
    const char* text;
};

const ClassInfo kClasses[] = {
    {MPI_SUCCESS, "MPI_SUCCESS", "no error"},
    {MPI_ERR_BUFFER, "MPI_ERR_BUFFER", "invalid buffer pointer"},
    {MPI_ERR_COUNT, "MPI_ERR_COUNT", "invalid count argument"},
    {MPI_ERR_TYPE, "MPI_ERR_TYPE", "invalid datatype"},
    {MPI_ERR_TAG, "MPI_ERR_TAG", "invalid tag"},
    {MPI_ERR_COMM, "MPI_ERR_COMM", "invalid communicator"},
    {MPI_ERR_RANK, "MPI_ERR_RANK", "invalid rank"},
    {MPI_ERR_REQUEST, "MPI_ERR_REQUEST", "invalid request"},
    {MPI_ERR_ROOT, "MPI_ERR_ROOT", "invalid root"},
    {MPI_ERR_GROUP, "MPI_ERR_GROUP", "invalid group"},
    {MPI_ERR_OP, "MPI_ERR_OP", "invalid reduction operation"},
    {MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY", "invalid topology"},
    {MPI_ERR_DIMS, "MPI_ERR_DIMS", "invalid dimension argument"},
    {MPI_ERR_ARG, "MPI_ERR_ARG", "invalid argument"},
    {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN", "unknown error"},
    {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE", "message truncated on receive"},
    {MPI_ERR_OTHER, "MPI_ERR_OTHER", "known error not in this list"},
    {MPI_ERR_INTERN, "MPI_ERR_INTERN", "internal error"},
    {MPI_ERR_PENDING, "MPI_ERR_PENDING", "pending request"},
    {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS", "error code is in status"},
    {MPI_ERR_ACCESS, "MPI_ERR_ACCESS", "permission denied"},
    {MPI_ERR_AMODE, "MPI_ERR_AMODE", "invalid file access mode"},
    {MPI_ERR_ASSERT, "MPI_ERR_ASSERT", "invalid assert argument"},
    {MPI_ERR_BAD_FILE, "MPI_ERR_BAD_FILE", "invalid file name"},
    {MPI_ERR_BASE, "MPI_ERR_BASE", "invalid base argument"},
    {MPI_ERR_CONVERSION, "MPI_ERR_CONVERSION", "error in a data conversion function"},
    {MPI_ERR_DISP, "MPI_ERR_DISP", "invalid displacement argument"},
    {MPI_ERR_DUP_DATAREP, "MPI_ERR_DUP_DATAREP", "data representation already registered"},
    {MPI_ERR_FILE_EXISTS, "MPI_ERR_FILE_EXISTS", "file exists"},
    {MPI_ERR_FILE_IN_USE, "MPI_ERR_FILE_IN_USE", "file in use by some process"},
    {MPI_ERR_FILE, "MPI_ERR_FILE", "invalid file handle"},
    {MPI_ERR_INFO_KEY, "MPI_ERR_INFO_KEY", "info key too long"},
    {MPI_ERR_INFO_NOKEY, "MPI_ERR_INFO_NOKEY", "info key not defined"},
    {MPI_ERR_INFO_VALUE, "MPI_ERR_INFO_VALUE", "info value too long"},
    {MPI_ERR_INFO, "MPI_ERR_INFO", "invalid info object"},
    {MPI_ERR_IO, "MPI_ERR_IO", "I/O error"},
    {MPI_ERR_KEYVAL, "MPI_ERR_KEYVAL", "invalid attribute key"},
    {MPI_ERR_LOCKTYPE, "MPI_ERR_LOCKTYPE", "invalid lock type"},
    {MPI_ERR_NAME, "MPI_ERR_NAME", "service name not published"},
    {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM", "out of memory"},
    {MPI_ERR_NOT_SAME, "MPI_ERR_NOT_SAME", "arguments not identical across processes"},
    {MPI_ERR_NO_SPACE, "MPI_ERR_NO_SPACE", "not enough space"},
    {MPI_ERR_NO_SUCH_FILE, "MPI_ERR_NO_SUCH_FILE", "file does not exist"},
    {MPI_ERR_PORT, "MPI_ERR_PORT", "invalid port name"},
    {MPI_ERR_QUOTA, "MPI_ERR_QUOTA", "quota exceeded"},
    {MPI_ERR_READ_ONLY, "MPI_ERR_READ_ONLY", "read-only file or file system"},
    {MPI_ERR_RMA_ATTACH, "MPI_ERR_RMA_ATTACH", "memory cannot be attached"},
    {MPI_ERR_RMA_CONFLICT, "MPI_ERR_RMA_CONFLICT", "conflicting accesses to a window"},
    {MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE", "target memory not in the window"},
    {MPI_ERR_RMA_SHARED, "MPI_ERR_RMA_SHARED", "memory cannot be shared"},
    {MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC", "wrong synchronization of RMA calls"},
    {MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR", "wrong window flavor"},
    {MPI_ERR_SERVICE, "MPI_ERR_SERVICE", "invalid service name"},
    {MPI_ERR_SIZE, "MPI_ERR_SIZE", "invalid size argument"},
    {MPI_ERR_SPAWN, "MPI_ERR_SPAWN", "error spawning processes"},
    {MPI_ERR_UNSUPPORTED_DATAREP, "MPI_ERR_UNSUPPORTED_DATAREP", "unsupported data representation"},
    {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION", "unsupported operation"},
    {MPI_ERR_WIN, "MPI_ERR_WIN", "invalid window"},
    {MPI_T_ERR_MEMORY, "MPI_T_ERR_MEMORY", "out of memory (tool interface)"},
    {MPI_T_ERR_NOT_INITIALIZED, "MPI_T_ERR_NOT_INITIALIZED", "tool interface not initialized"},
    {MPI_T_ERR_CANNOT_INIT, "MPI_T_ERR_CANNOT_INIT", "tool interface cannot be initialized"},
    {MPI_T_ERR_INVALID_INDEX, "MPI_T_ERR_INVALID_INDEX", "invalid index (tool interface)"},
    {MPI_T_ERR_INVALID_ITEM, "MPI_T_ERR_INVALID_ITEM", "invalid item (tool interface)"},
    {MPI_T_ERR_INVALID_HANDLE, "MPI_T_ERR_INVALID_HANDLE", "invalid handle (tool interface)"},
    {MPI_T_ERR_OUT_OF_HANDLES, "MPI_T_ERR_OUT_OF_HANDLES", "out of handles (tool interface)"},
    {MPI_T_ERR_OUT_OF_SESSIONS, "MPI_T_ERR_OUT_OF_SESSIONS", "out of sessions (tool interface)"},
    {MPI_T_ERR_INVALID_SESSION, "MPI_T_ERR_INVALID_SESSION", "invalid session (tool interface)"},
    {MPI_T_ERR_CVAR_SET_NOT_NOW, "MPI_T_ERR_CVAR_SET_NOT_NOW", "variable cannot be set now"},
    {MPI_T_ERR_CVAR_SET_NEVER, "MPI_T_ERR_CVAR_SET_NEVER", "variable cannot be set"},
    {MPI_T_ERR_PVAR_NO_STARTSTOP, "MPI_T_ERR_PVAR_NO_STARTSTOP", "variable cannot be started or stopped"},
    {MPI_T_ERR_PVAR_NO_WRITE, "MPI_T_ERR_PVAR_NO_WRITE", "variable cannot be written"},
    {MPI_T_ERR_PVAR_NO_ATOMIC, "MPI_T_ERR_PVAR_NO_ATOMIC", "variable cannot be read and written atomically"},
    {MPI_T_ERR_INVALID_NAME, "MPI_T_ERR_INVALID_NAME", "invalid name (tool interface)"},
    {MPI_T_ERR_INVALID, "MPI_T_ERR_INVALID", "invalid use of the tool interface"},
    {MPIX_ERR_PROC_FAILED, "MPIX_ERR_PROC_FAILED", "a process failed"},
    {MPIX_ERR_PROC_FAILED_PENDING, "MPIX_ERR_PROC_FAILED_PENDING",
     "a process that could match this wildcard receive failed (the request is still pending)"},
    {MPIX_ERR_REVOKED, "MPIX_ERR_REVOKED", "the communicator was revoked"},
};

// Codes above MPI_ERR_LASTCODE made by MPI_Add_error_class/code.
struct UserCode {
    int cls;
    std::string text;
};
std::vector<UserCode>& user_codes()
{
    static std::vector<UserCode> v;
    return v;
}

Errhandler g_fatal{make_handle(ULMPI_KIND_ERRHANDLER, 1), Errhandler::Kind::fatal};
Errhandler g_return{make_handle(ULMPI_KIND_ERRHANDLER, 2), Errhandler::Kind::ret};
Errhandler g_abort{make_handle(ULMPI_KIND_ERRHANDLER, 3), Errhandler::Kind::abort};

HandleTable<Errhandler, ULMPI_KIND_ERRHANDLER>& table()
{
    static HandleTable<Errhandler, ULMPI_KIND_ERRHANDLER> t = [] {
        HandleTable<Errhandler, ULMPI_KIND_ERRHANDLER> init;
        init.set_predefined(1, &g_fatal);
        init.set_predefined(2, &g_return);
        init.set_predefined(3, &g_abort);
        return init;
    }();
    return t;
}

const ClassInfo* find_class(int cls)
{
    for (const ClassInfo& c : kClasses) {
        if (c.cls == cls) {
            return &c;
        }
    }
    return nullptr;
}

} // namespace

Errhandler* errhandler_get(MPI_Errhandler h)
{
    Errhandler* e = table().get(h);
    return e != nullptr && !e->freed ? e : nullptr;
}
Errhandler* errhandler_fatal() { return &g_fatal; }
Errhandler* errhandler_return() { return &g_return; }

namespace {
const rt::ChoiceParam initial_errhandler_param{
    "initial_errhandler", "mpi_errors_are_fatal",
    "error handler of MPI_COMM_WORLD and MPI_COMM_SELF at start (mpirun --initial-errhandler)",
    "mpi_errors_are_fatal|mpi_errors_abort|mpi_errors_return"};
} // namespace

Errhandler* errhandler_initial()
{
    const std::string& v = initial_errhandler_param.get();
    if (v == "mpi_errors_return") {
        return &g_return;
    }
    if (v == "mpi_errors_abort") {
        return &g_abort;
    }
    return &g_fatal;
}

const std::string& errhandler_initial_name() { return initial_errhandler_param.get(); }

void errhandler_retain(Errhandler* e)
{
    if (e->handle >= make_handle(ULMPI_KIND_ERRHANDLER, HandleTable<Errhandler, 0>::kFirstUser)) {
        ++e->refs;
    }
}

void errhandler_release(Errhandler* e)
{
    if (e->handle < make_handle(ULMPI_KIND_ERRHANDLER, HandleTable<Errhandler, 0>::kFirstUser)) {
        return; // predefined
    }
    if (--e->refs == 0) {
        table().erase(e->handle);
        delete e;
    }
}

MPI_Errhandler errhandler_insert(Errhandler* e)
{
    e->handle = table().insert(e);
    return e->handle;
}

bool error_code_valid(int code)
{
    if (code >= 0 && code <= MPI_ERR_LASTCODE) {
        return true;
    }
    return code > MPI_ERR_LASTCODE &&
           static_cast<std::size_t>(code - MPI_ERR_LASTCODE - 1) < user_codes().size();
}

int error_class_of(int code)
{
    if (code >= 0 && code <= MPI_ERR_LASTCODE) {
        return (find_class(code) != nullptr || code >= kErrProcFailed) ? code : MPI_ERR_UNKNOWN;
    }
    if (error_code_valid(code)) {
        return user_codes()[static_cast<std::size_t>(code - MPI_ERR_LASTCODE - 1)].cls;
    }
    return MPI_ERR_UNKNOWN;
}

const char* error_class_name(int cls)
{
    const ClassInfo* c = find_class(cls);
    if (c != nullptr) {
        return c->name;
    }
    if (cls > MPI_ERR_LASTCODE && error_code_valid(cls)) {
        return "user-defined error class";
    }
    return "MPI_ERR_UNKNOWN";
}

std::string error_string(int code)
{
    if (code > MPI_ERR_LASTCODE && error_code_valid(code)) {
        return user_codes()[static_cast<std::size_t>(code - MPI_ERR_LASTCODE - 1)].text;
    }
    if (const ClassInfo* c = find_class(code)) {
        return std::string(c->text) + " (" + c->name + ")";
    }
    if (code == MPI_ERR_LASTCODE) {
        return "last predefined error code (MPI_ERR_LASTCODE)";
    }
    return "unknown error code " + std::to_string(code);
}

int add_error_class()
{
    int code = MPI_ERR_LASTCODE + 1 + static_cast<int>(user_codes().size());
    user_codes().push_back({code, ""});
    return code;
}

int add_error_code(int cls)
{
    int code = MPI_ERR_LASTCODE + 1 + static_cast<int>(user_codes().size());
    user_codes().push_back({cls, ""});
    return code;
}

bool set_error_string(int code, const char* text)
{
    if (code <= MPI_ERR_LASTCODE || !error_code_valid(code)) {
        return false;
    }
    user_codes()[static_cast<std::size_t>(code - MPI_ERR_LASTCODE - 1)].text = text;
    return true;
}

int last_used_code() { return MPI_ERR_LASTCODE + static_cast<int>(user_codes().size()); }

int raise(Comm* comm, int code, const char* fn, const char* fmt, ...) noexcept
{
    if (!state().initialized || state().finalized) {
        raise_uninitialized(fn);
    }
    ftmpi_before_raise(); // FT-MPI: the call that meets a failure (mpi/ftmpi.h)
    if (comm == nullptr) {
        comm = state().world;
    }
    Errhandler* eh = comm->errhandler;
    if (eh->kind == Errhandler::Kind::ret) {
        return code;
    }
    if (eh->kind == Errhandler::Kind::user_comm && eh->comm_fn != nullptr) {
        MPI_Comm h = comm->handle;
        int c = code;
        eh->comm_fn(&h, &c);
        return code;
    }
    char detail[512] = "";
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    char msg[1024];
    std::snprintf(msg, sizeof msg, "rank %d: %s on %s: %s%s%s", state().engine.rank(), fn,
                  comm->display_name().c_str(), error_string(code).c_str(), detail[0] ? ": " : "",
                  detail);
    ULMPI_ERROR("%s", msg);
    int exit_code = error_class_of(code);
    state().boot->abort(exit_code == 0 ? 1 : exit_code, msg);
    __builtin_unreachable();
}

void raise_uninitialized(const char* fn) noexcept
{
    const bool after = state().finalized;
    rt::log(rt::LogLevel::error, "%s called %s MPI_Init%s; exiting", fn,
            after ? "after" : "before", after ? " and MPI_Finalize" : "");
    _exit(1);
}

int to_mpi_class(rt::Errc code) noexcept
{
    switch (code) {
    case rt::Errc::ok: return MPI_SUCCESS;
    case rt::Errc::again: return MPI_ERR_OTHER;
    case rt::Errc::no_memory: return MPI_ERR_NO_MEM;
    case rt::Errc::invalid_arg: return MPI_ERR_ARG;
    case rt::Errc::truncated: return MPI_ERR_TRUNCATE;
    case rt::Errc::peer_failed: return kErrProcFailed;
    case rt::Errc::unreachable: return MPI_ERR_OTHER;
    case rt::Errc::io_error: return MPI_ERR_OTHER;
    case rt::Errc::protocol: return MPI_ERR_INTERN;
    case rt::Errc::not_supported: return MPI_ERR_UNSUPPORTED_OPERATION;
    case rt::Errc::timeout: return MPI_ERR_OTHER;
    case rt::Errc::internal: return MPI_ERR_INTERN;
    case rt::Errc::revoked: return kErrRevoked;
    }
    return MPI_ERR_UNKNOWN;
}

int api_exception(const char* fn) noexcept
{
    try {
        throw;
    } catch (const std::bad_alloc&) {
        return raise(nullptr, MPI_ERR_NO_MEM, fn, "memory allocation failed");
    } catch (...) {
        return raise(nullptr, MPI_ERR_INTERN, fn, "unexpected internal exception");
    }
}

} // namespace ulmpi::mpi
