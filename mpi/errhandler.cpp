// Error handler objects and user error classes: MPI_Comm_create_errhandler
// (and the MPI-1 MPI_Errhandler_create), MPI_Errhandler_free,
// MPI_Comm_call_errhandler, MPI_Add_error_class / code / string. The
// objects and raise() live in errors.cpp; MPI_Comm_set/get_errhandler in
// env.cpp.
//
// An error handler is reference counted: the program's handle and every
// communicator using it. MPI_Errhandler_free drops the handle's reference
// (predefined handlers included: programs free what
// MPI_Comm_get_errhandler gave them).
#include "mpi/checks.h"
#include "mpi/comm.h"
#include "mpi/entry.h"
#include "mpi/errors.h"

#include <cstring>

using namespace ulmpi::mpi;

namespace {

int create(MPI_Comm_errhandler_function* function, MPI_Errhandler* errhandler, const char* fn)
{
    require_init(fn);
    if (function == nullptr || errhandler == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL",
                     function == nullptr ? "the handler function" : "errhandler");
    }
    auto* e = new Errhandler;
    e->kind = Errhandler::Kind::user_comm;
    e->comm_fn = function;
    MPI_Errhandler h = errhandler_insert(e);
    if (h == 0) {
        delete e;
        return raise(nullptr, MPI_ERR_INTERN, fn, "the error handler table is full");
    }
    *errhandler = h;
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function* function,
                                MPI_Errhandler* errhandler) try {
    EntryGuard guard;
    return create(function, errhandler, "MPI_Comm_create_errhandler");
} catch (...) {
    return api_exception("MPI_Comm_create_errhandler");
}
ULMPI_ALIAS(MPI_Comm_create_errhandler)

int PMPI_Errhandler_create(MPI_Handler_function* function, MPI_Errhandler* errhandler) try {
    EntryGuard guard;
    return create(function, errhandler, "MPI_Errhandler_create");
} catch (...) {
    return api_exception("MPI_Errhandler_create");
}
ULMPI_ALIAS(MPI_Errhandler_create)

int PMPI_Errhandler_free(MPI_Errhandler* errhandler) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Errhandler_free";
    require_init(fn);
    if (errhandler == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the errhandler pointer is NULL");
    }
    Errhandler* e = errhandler_get(*errhandler);
    if (e == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "0x%x is not a valid error handler",
                     static_cast<unsigned>(*errhandler));
    }
    errhandler_release(e);
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Errhandler_free");
}
ULMPI_ALIAS(MPI_Errhandler_free)

int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_call_errhandler";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    switch (c->errhandler->kind) {
    case Errhandler::Kind::ret:
        return MPI_SUCCESS;
    case Errhandler::Kind::user_comm: {
        MPI_Comm h = comm;
        int code = errorcode;
        c->errhandler->comm_fn(&h, &code);
        return MPI_SUCCESS;
    }
    default:
        // MPI_ERRORS_ARE_FATAL / MPI_ERRORS_ABORT: the job ends.
        return raise(c, errorcode, fn, "the program invoked the error handler");
    }
} catch (...) {
    return api_exception("MPI_Comm_call_errhandler");
}
ULMPI_ALIAS(MPI_Comm_call_errhandler)

int PMPI_Add_error_class(int* errorclass) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Add_error_class";
    require_init(fn);
    if (errorclass == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "errorclass is NULL");
    }
    *errorclass = add_error_class();
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Add_error_class");
}
ULMPI_ALIAS(MPI_Add_error_class)

int PMPI_Add_error_code(int errorclass, int* errorcode) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Add_error_code";
    require_init(fn);
    if (errorcode == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "errorcode is NULL");
    }
    if (!error_code_valid(errorclass) || error_class_of(errorclass) != errorclass) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%d is not an error class", errorclass);
    }
    *errorcode = add_error_code(errorclass);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Add_error_code");
}
ULMPI_ALIAS(MPI_Add_error_code)

int PMPI_Add_error_string(int errorcode, const char* string) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Add_error_string";
    require_init(fn);
    if (string == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the string is NULL");
    }
    if (strnlen(string, MPI_MAX_ERROR_STRING) > MPI_MAX_ERROR_STRING - 1) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the string is longer than MPI_MAX_ERROR_STRING "
                     "- 1 (%d) characters", MPI_MAX_ERROR_STRING - 1);
    }
    if (!set_error_string(errorcode, string)) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%d is not an error code or class added by the "
                     "program", errorcode);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Add_error_string");
}
ULMPI_ALIAS(MPI_Add_error_string)

MPI_Fint PMPI_Errhandler_c2f(MPI_Errhandler errhandler) { return errhandler; }
ULMPI_ALIAS(MPI_Errhandler_c2f)
MPI_Errhandler PMPI_Errhandler_f2c(MPI_Fint errhandler) { return errhandler; }
ULMPI_ALIAS(MPI_Errhandler_f2c)
