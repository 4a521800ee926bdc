// The FT-MPI attributes (the specification's section 6.1), predefined keys
// answered by every communicator: FTMPI_RECOVERY_MODE, FTMPI_COMM_MODE,
// FTMPI_MSG_MODE, FTMPI_COLL_MODE, FTMPI_NUM_FAILED_PROCS and
// FTMPI_ERROR_FAILURE (values: include/mpi-ext.h, docs/ftmpi.md). The
// four modes can also be set on MPI_COMM_WORLD (MPI_Comm_set_attr with a
// pointer to an int holding the new mode), which the specification leaves
// to later versions; the change holds for the next recovery. The
// communicator mode cannot leave or enter abort (that decides whether the
// job survives failures at all) nor become rebuild (chosen at start: the
// launcher must know that it may have to start processes).
#include "mpi/ftmpi.h"

#include "mpi/errors.h"
#include "mpi/state.h"

#include <mpi-ext.h>

namespace ulmpi::mpi {
namespace {

int g_values[FTMPI_ERROR_FAILURE - FTMPI_RECOVERY_MODE + 1];

} // namespace

bool ftmpi_keyval(int keyval)
{
    return keyval >= FTMPI_RECOVERY_MODE && keyval <= FTMPI_ERROR_FAILURE;
}

void* ftmpi_attr_get(int keyval)
{
    if (!ftmpi_keyval(keyval)) {
        return nullptr;
    }
    const ft::FtmpiModes& m = ftmpi_modes();
    int v = 0;
    switch (keyval) {
    case FTMPI_RECOVERY_MODE: v = static_cast<int>(m.recovery); break;
    case FTMPI_COMM_MODE: v = static_cast<int>(m.comm); break;
    case FTMPI_MSG_MODE: v = static_cast<int>(m.msg); break;
    case FTMPI_COLL_MODE: v = static_cast<int>(m.coll); break;
    case FTMPI_NUM_FAILED_PROCS: v = ftmpi_failed_count(); break;
    case FTMPI_ERROR_FAILURE: v = ftmpi_on() ? ftmpi_error_code() : MPI_SUCCESS; break;
    default: break;
    }
    // One slot per key (MPI_Comm_get_attr hands out a pointer to the value).
    int* slot = &g_values[keyval - FTMPI_RECOVERY_MODE];
    *slot = v;
    return slot;
}

int ftmpi_attr_set(Comm* c, int keyval, const void* value, const char* fn)
{
    if (c != state().world) {
        return raise(c, MPI_ERR_KEYVAL, fn, "the FT-MPI modes are set on MPI_COMM_WORLD only");
    }
    if (keyval == FTMPI_NUM_FAILED_PROCS || keyval == FTMPI_ERROR_FAILURE) {
        return raise(c, MPI_ERR_KEYVAL, fn, "keyval 0x%x is read-only",
                     static_cast<unsigned>(keyval));
    }
    if (value == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "the value is NULL (pass a pointer to an int)");
    }
    const int v = *static_cast<const int*>(value);
    ft::FtmpiModes& m = ftmpi_modes();
    switch (keyval) {
    case FTMPI_RECOVERY_MODE:
        if (v != FTMPI_RECOVERY_MODE_AUTO && v != FTMPI_RECOVERY_MODE_MANUAL) {
            return raise(c, MPI_ERR_ARG, fn, "%d is not FTMPI_RECOVERY_MODE_AUTO or _MANUAL", v);
        }
        m.recovery = static_cast<ft::RecoveryMode>(v);
        return MPI_SUCCESS;
    case FTMPI_COMM_MODE:
        if (v != FTMPI_COMM_MODE_BLANK && v != FTMPI_COMM_MODE_SHRINK) {
            return raise(c, MPI_ERR_ARG, fn,
                         "%d: the communicator mode can become FTMPI_COMM_MODE_BLANK or "
                         "FTMPI_COMM_MODE_SHRINK only (abort and rebuild are chosen at start)",
                         v);
        }
        if (!ftmpi_on()) {
            return raise(c, MPI_ERR_OTHER, fn,
                         "FT-MPI is off in this job (start it with --ft-mode blank or shrink)");
        }
        if (static_cast<ft::CommMode>(v) != m.comm && ftmpi_epoch() > 0) {
            return raise(c, MPI_ERR_OTHER, fn,
                         "the communicator mode cannot change after a recovery (holes or "
                         "renumbered ranks are already there)");
        }
        m.comm = static_cast<ft::CommMode>(v);
        return MPI_SUCCESS;
    case FTMPI_MSG_MODE:
        if (v != FTMPI_MSG_MODE_RESET && v != FTMPI_MSG_MODE_CONT) {
            return raise(c, MPI_ERR_ARG, fn, "%d is not FTMPI_MSG_MODE_RESET or _CONT", v);
        }
        m.msg = static_cast<ft::MsgMode>(v);
        return MPI_SUCCESS;
    case FTMPI_COLL_MODE:
        if (v != FTMPI_COLL_MODE_ATOMIC && v != FTMPI_COLL_MODE_NONATOMIC) {
            return raise(c, MPI_ERR_ARG, fn, "%d is not FTMPI_COLL_MODE_ATOMIC or _NONATOMIC",
                         v);
        }
        m.coll = static_cast<ft::CollMode>(v);
        return MPI_SUCCESS;
    default: break;
    }
    return raise(c, MPI_ERR_KEYVAL, fn, "0x%x is not an FT-MPI key", static_cast<unsigned>(keyval));
}

} // namespace ulmpi::mpi
