// MPI_Publish_name, MPI_Unpublish_name, MPI_Lookup_name (MPI-4.0 11.8.3):
// service names mapped to port names for the job's life, kept by the
// launcher (rt::Bootstrap::publish_name; mpirun keeps them in its key-value
// server, a singleton in the process, other launchers through PMI-2 or
// PMIx). docs/dynamic_processes.md, "Ports".
//
// Launchers differ where MPI does not: Slurm's PMI-2 and Open MPI's PMIx
// data server take a second publish of a name without a word, Slurm
// answers an unpublish of a name that is not there with success, and Open
// MPI ignores an unpublish by a process that did not publish the name. So
// a publish looks the name up first (there: MPI_ERR_SERVICE; two processes
// publishing one name at the same moment may both succeed), an unpublish
// looks before (not there: MPI_ERR_SERVICE) and after (still there: the
// launcher refused it).
#include "mpi/checks.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/info.h"
#include "mpi/state.h"

#include <cstring>
#include <string>

using namespace ulmpi::mpi;

namespace {

// "" or what is wrong with a string argument.
std::string check_string(const char* s, const char* what, std::size_t max)
{
    if (s == nullptr) {
        return std::string(what) + " is NULL";
    }
    const std::size_t n = ::strnlen(s, max);
    if (n == 0) {
        return std::string(what) + " is empty";
    }
    if (n == max) {
        return std::string(what) + " is longer than " + std::to_string(max - 1) + " characters";
    }
    return "";
}

constexpr std::size_t kServiceMax = 1000;

int check_common(const char* service, MPI_Info info, const char* fn)
{
    if (std::string why = check_string(service, "service_name", kServiceMax); !why.empty()) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s", why.c_str());
    }
    if (info != MPI_INFO_NULL && info_get(info) == nullptr) {
        return raise(nullptr, MPI_ERR_INFO, fn, "info is not a valid info object");
    }
    return MPI_SUCCESS;
}

int launcher_failed(ulmpi::rt::Errc e, int cls, const char* fn)
{
    if (e == ulmpi::rt::Errc::not_supported) {
        return raise(nullptr, MPI_ERR_UNSUPPORTED_OPERATION, fn,
                     "this launcher (%s) keeps no published names (Slurm's PMIx plugin keeps "
                     "none: use srun --mpi=pmi2, or start the job with mpirun)",
                     state().boot->name());
    }
    if (e == ulmpi::rt::Errc::invalid_arg) {
        return raise(nullptr, cls, fn,
                     "the launcher (%s) cannot keep a service or port name this long",
                     state().boot->name());
    }
    if (e == ulmpi::rt::Errc::protocol) {
        return raise(nullptr, cls, fn, "the launcher (%s) refused it", state().boot->name());
    }
    return raise(nullptr, cls, fn, "the launcher (%s) did not answer (%s)", state().boot->name(),
                 ulmpi::rt::errc_name(e));
}

} // namespace

int PMPI_Publish_name(const char* service_name, MPI_Info info, const char* port_name) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Publish_name";
    require_init(fn);
    if (int e = check_common(service_name, info, fn)) {
        return e;
    }
    if (std::string why = check_string(port_name, "port_name", MPI_MAX_PORT_NAME); !why.empty()) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s", why.c_str());
    }
    std::string there;
    ulmpi::rt::Status st = state().boot->lookup_name(service_name, there);
    if (st.ok()) {
        st = ulmpi::rt::Errc::again;
    } else if (st.code() == ulmpi::rt::Errc::invalid_arg) {
        st = state().boot->publish_name(service_name, port_name);
    }
    if (st.code() == ulmpi::rt::Errc::again) {
        return raise(nullptr, MPI_ERR_SERVICE, fn,
                     "the service name \"%s\" is published already (MPI_Unpublish_name it "
                     "first)",
                     service_name);
    }
    if (!st.ok()) {
        return launcher_failed(st.code(), MPI_ERR_SERVICE, fn);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Publish_name");
}
ULMPI_ALIAS(MPI_Publish_name)

int PMPI_Unpublish_name(const char* service_name, MPI_Info info, const char* port_name) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Unpublish_name";
    require_init(fn);
    if (int e = check_common(service_name, info, fn)) {
        return e;
    }
    (void)port_name; // the name alone identifies what is unpublished
    std::string there;
    ulmpi::rt::Status st = state().boot->lookup_name(service_name, there);
    if (st.ok()) {
        st = state().boot->unpublish_name(service_name);
    }
    if (st.ok() && state().boot->lookup_name(service_name, there).ok()) {
        return raise(nullptr, MPI_ERR_SERVICE, fn,
                     "the launcher (%s) kept \"%s\" after the unpublish: it lets only the "
                     "process that published a name unpublish it",
                     state().boot->name(), service_name);
    }
    if (st.code() == ulmpi::rt::Errc::invalid_arg) {
        return raise(nullptr, MPI_ERR_SERVICE, fn, "the service name \"%s\" is not published",
                     service_name);
    }
    if (!st.ok()) {
        return launcher_failed(st.code(), MPI_ERR_SERVICE, fn);
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Unpublish_name");
}
ULMPI_ALIAS(MPI_Unpublish_name)

int PMPI_Lookup_name(const char* service_name, MPI_Info info, char* port_name) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Lookup_name";
    require_init(fn);
    if (int e = check_common(service_name, info, fn)) {
        return e;
    }
    if (port_name == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "port_name is NULL");
    }
    std::string port;
    ulmpi::rt::Status st = state().boot->lookup_name(service_name, port);
    if (st.code() == ulmpi::rt::Errc::invalid_arg) {
        return raise(nullptr, MPI_ERR_NAME, fn, "no port is published under \"%s\"",
                     service_name);
    }
    if (!st.ok()) {
        return launcher_failed(st.code(), MPI_ERR_NAME, fn);
    }
    const std::size_t n = std::min<std::size_t>(port.size(), MPI_MAX_PORT_NAME - 1);
    std::memcpy(port_name, port.data(), n);
    port_name[n] = '\0';
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Lookup_name");
}
ULMPI_ALIAS(MPI_Lookup_name)
