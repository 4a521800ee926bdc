// MPI_Init / MPI_Finalize / MPI_Abort and the thread-level queries.
#include "mpi/bsend.h"
#include "mpi/checks.h"
#include "mpi/coll/shm_coll.h"
#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"
#include "mpi/ft_comm.h"
#include "mpi/ftmpi.h"
#include "mpi/ftmpi_rebuild.h"
#include "mpi/message.h"
#include "mpi/spawn.h"
#include "mpi/state.h"
#include "paths/registry.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <mpi-ext.h>

#include <string>
#include <unistd.h>

using namespace ulmpi;
using namespace ulmpi::mpi;

namespace {

const rt::BoolParam check_param{"mpi_check_args", true,
                                "check the arguments of every MPI call (off: faster, no diagnostics)"};
const rt::ChoiceParam log_param{"log_level", "warn", "messages ulmpi prints: error|warn|info|debug|trace",
                                "error|warn|info|debug|trace"};
const rt::BoolParam log_time_param{"log_time", false,
                                   "prefix every message with the wall-clock time (UTC, microseconds)"};

rt::LogLevel level_from(const std::string& s)
{
    if (s == "error") return rt::LogLevel::error;
    if (s == "info") return rt::LogLevel::info;
    if (s == "debug") return rt::LogLevel::debug;
    if (s == "trace") return rt::LogLevel::trace;
    return rt::LogLevel::warn;
}

int init(int required, int* provided, const char* fn)
{
    State& s = state();
    if (s.finalized) {
        raise_uninitialized(fn);
    }
    if (s.initialized) {
        return raise(nullptr, MPI_ERR_OTHER, fn, "MPI is already initialized");
    }
    rt::set_log_level(level_from(log_param.get()));
    rt::set_log_time(log_time_param.get());
    std::string why;
    s.boot = rt::make_bootstrap(why);
    if (!s.boot) {
        rt::log(rt::LogLevel::error, "%s: cannot reach the launcher: %s", fn, why.c_str());
        _exit(1);
    }
    const rt::JobInfo& job = s.boot->job();
    char ident[64];
    std::snprintf(ident, sizeof ident, "ulmpi: rank %d", job.rank);
    rt::set_log_identity(ident);

    rt::ConfigReport report = rt::config_validate();
    if (!report.errors.empty()) {
        std::string all;
        for (const std::string& e : report.errors) {
            rt::log(rt::LogLevel::error, "%s", e.c_str());
            all += (all.empty() ? "" : "; ") + e;
        }
        s.boot->abort(1, "rank " + std::to_string(job.rank) + ": bad parameter: " + all);
    }
    if (job.rank == 0) {
        for (const std::string& w : report.warnings) {
            rt::log(rt::LogLevel::warn, "%s", w.c_str());
        }
    }

    datatype_init_predefined();
    auto paths = path::make_paths(job, why);
    if (paths.empty()) {
        s.boot->abort(1, "rank " + std::to_string(job.rank) + ": MPI_Init: " +
                             (why.empty() ? "no usable path" : why));
    }
    if (job.incarnation > 0 && !job.spawned) {
        ftmpi_rebuild_announce(); // a respawned process joins a running job (REBUILD)
    }
    coll::ShmColl::reserve_world(job, paths); // MPI_COMM_WORLD's collectives (shm_coll.h)
    if (rt::Status st = s.engine.init(*s.boot, std::move(paths), why); !st.ok()) {
        s.boot->abort(1, "rank " + std::to_string(job.rank) + ": MPI_Init: " + why);
    }
    coll::ShmColl::map_world();
    s.detector = std::make_unique<ft::Detector>(*s.boot, s.engine, ft::detector_mode());
    s.engine.set_failure_hooks(s.detector.get());
    if (const int replicas = rep::replicas_param(); replicas > 1) {
        // From here on the engine shows the logical rank (docs/replication.md).
        if (s.detector->tolerant()) {
            s.boot->abort(1, "rank " + std::to_string(job.rank) +
                                 ": MPI_Init: replication (--replicas) cannot be combined with "
                                 "--with-ft or FT-MPI modes");
        }
        s.replicator = rep::Replicator::start(s.engine, *s.boot, replicas, s.detector.get(), why);
        if (!s.replicator) {
            s.boot->abort(1, "rank " + std::to_string(job.rank) + ": MPI_Init: " + why);
        }
        std::snprintf(ident, sizeof ident, "ulmpi: rank %d replica %d", s.engine.rank(),
                      s.replicator->replica());
        rt::set_log_identity(ident);
        // The intra-parallel sections' state, made now rather than at the
        // first section: it readies the staging area (docs/intra_parallelization.md).
        s.intra = std::make_unique<intra::Section>(s.engine, s.replicator.get());
    }
    if (job.world.empty() || s.replicator) {
        comm_init_predefined(s.engine.rank(), s.engine.size());
    } else {
        comm_init_predefined(s.engine.rank(), job.world); // spawn slots, or spawned
    }
    spawn_init_parent(); // a spawned process: MPI_Comm_get_parent
    ft_init(); // fault tolerance (ULFM), when the job asked for it
    ftmpi_init(); // FT-MPI's modes on top of it
    coll::ShmColl::world_barrier(); // the ranks of one host leave together

    s.check_args = check_param.get();
    int level = required < MPI_THREAD_SINGLE ? MPI_THREAD_SINGLE : required;
    s.thread_level = level > MPI_THREAD_MULTIPLE ? MPI_THREAD_MULTIPLE : level;
    if (s.thread_level == MPI_THREAD_MULTIPLE) {
        // From here on any thread may call MPI (ulm/thread_lock.h).
        ulm::thread_lock().enable();
        s.engine.enable_threads(); // per-peer locks when the paths allow (ulm/engine.h)
    }
    if (provided != nullptr) {
        *provided = s.thread_level;
    }
    s.main_thread = pthread_self();
    s.initialized = true;
    // FT-MPI: a process that replaces a failed one learns it here.
    return ftmpi_restarted() ? MPI_INIT_RESTARTED_NODE : MPI_SUCCESS;
}

} // namespace

int PMPI_Init(int* argc, char*** argv) try {
    EntryGuard guard;
    (void)argc;
    (void)argv;
    return init(MPI_THREAD_SINGLE, nullptr, "MPI_Init");
} catch (...) {
    return api_exception("MPI_Init");
}
ULMPI_ALIAS(MPI_Init)

int PMPI_Init_thread(int* argc, char*** argv, int required, int* provided) try {
    EntryGuard guard;
    (void)argc;
    (void)argv;
    if (provided == nullptr) {
        rt::log(rt::LogLevel::error, "MPI_Init_thread: provided is NULL");
        _exit(1);
    }
    return init(required, provided, "MPI_Init_thread");
} catch (...) {
    return api_exception("MPI_Init_thread");
}
ULMPI_ALIAS(MPI_Init_thread)

int PMPI_Finalize() try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Finalize";
    require_init(fn);
    State& s = state();
    // First of all, MPI_COMM_SELF's attributes go, as if it were freed
    // (MPI-3.1 8.7.1): their delete callbacks may still call MPI.
    if (int e = comm_finalize_attributes()) {
        return raise(nullptr, e, fn, "an attribute delete callback failed (it returned %d)", e);
    }
    ftmpi_finalize(); // FT-MPI: survivors leave together
    if (s.intra) {
        s.intra->report(); // intra_profile
    }
    bsend_drain();
    message_finalize();
    if (s.replicator) {
        s.replicator->finalize(); // every message acknowledged by every live replica
    }
    rt::Status st = s.engine.finalize();
    if (s.replicator) {
        s.replicator->detach();
    }
    ft_finalize();
    if (!st.ok()) {
        return raise(nullptr, to_mpi_class(st.code()), fn, "could not shut down cleanly: %s",
                     rt::errc_name(st.code()));
    }
    if (rt::Status b = s.boot->finalize(); !b.ok()) {
        ULMPI_WARN("could not tell the launcher that MPI_Finalize completed");
    }
    comm_finalize_predefined();
    s.finalized = true;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Finalize");
}
ULMPI_ALIAS(MPI_Finalize)

int PMPI_Initialized(int* flag) try {
    EntryGuard guard;
    if (flag == nullptr) {
        return MPI_ERR_ARG;
    }
    *flag = state().initialized ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Initialized");
}
ULMPI_ALIAS(MPI_Initialized)

int PMPI_Finalized(int* flag) try {
    EntryGuard guard;
    if (flag == nullptr) {
        return MPI_ERR_ARG;
    }
    *flag = state().finalized ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Finalized");
}
ULMPI_ALIAS(MPI_Finalized)

int PMPI_Abort(MPI_Comm comm, int errorcode) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Abort";
    require_init(fn);
    Comm* c = comm_get(comm);
    std::string name = c != nullptr ? c->display_name() : "an invalid communicator";
    std::string msg = "rank " + std::to_string(state().engine.rank()) + " called MPI_Abort(" + name +
                      ", " + std::to_string(errorcode) + ")";
    // Every rank of the job ends, not only those of `comm` (as in MPICH and Open MPI).
    state().boot->abort(errorcode, msg);
    __builtin_unreachable();
} catch (...) {
    return api_exception("MPI_Abort");
}
ULMPI_ALIAS(MPI_Abort)

int PMPI_Query_thread(int* provided) try {
    EntryGuard guard;
    require_init("MPI_Query_thread");
    if (provided == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, "MPI_Query_thread", "provided is NULL");
    }
    *provided = state().thread_level;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Query_thread");
}
ULMPI_ALIAS(MPI_Query_thread)

int PMPI_Is_thread_main(int* flag) try {
    EntryGuard guard;
    require_init("MPI_Is_thread_main");
    if (flag == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, "MPI_Is_thread_main", "flag is NULL");
    }
    *flag = pthread_equal(pthread_self(), state().main_thread) ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Is_thread_main");
}
ULMPI_ALIAS(MPI_Is_thread_main)
