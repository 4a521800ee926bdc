// mpirun's command line: `mpirun [options] prog [args] [: [options] prog [args]]...`
//
// Options before each program belong to the whole job, except -n which
// counts the processes of the app context (program) that follows it. The
// first word that is not an option is the program; everything after it up to
// a lone ':' is its argument list.
#pragma once

#include "runtime/ft_mode.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ulmpi::rt::mpirun {

struct AppContext {
    int np = 1;
    bool np_given = false;
    std::vector<std::string> argv; // argv[0] is the program as typed
};

// One entry of -H / --hostfile: a host and how many ranks it takes before
// the mapper wraps around (oversubscription is always allowed).
struct HostSpec {
    std::string name;
    int slots = 0; // 0: not given (one slot, this machine too)
};

enum class BindMode { automatic, none, core, hwthread };
enum class BootKind { unix_abstract, tcp };
enum class MapBy { slot, node };

struct Options {
    std::vector<AppContext> apps;
    std::vector<std::pair<std::string, std::optional<std::string>>> exports; // -x
    std::vector<std::pair<std::string, std::string>> params;                // --param
    std::vector<HostSpec> hosts;
    MapBy map_by = MapBy::slot;
    int npernode = 0;          // 0: no limit
    std::string launch_agent;  // empty: ULMPI_BOOT_LAUNCH_AGENT
    std::string boot_if;       // empty: ULMPI_BOOT_IF
    bool tag_output = false;
    double timeout_s = 0; // 0: none
    std::string wdir;
    BindMode bind = BindMode::automatic;
    int stdin_rank = 0; // -1: every rank reads /dev/null
    BootKind boot = BootKind::unix_abstract;
    std::string boot_ip = "127.0.0.1";
    bool verbose = false;
    // --with-ft / --disable-auto-cleanup / --param ft=...; else the `ft`
    // parameter of mpirun's own environment (ULMPI_FT).
    FtMode ft = FtMode::none;
    // --disable-auto-cleanup (MPICH's spelling) was the last word on it:
    // failures follow MPICH's mpiexec, as MPICH's fault-tolerance tests
    // expect — mpirun prints nothing about them, and its exit status is
    // the first failure's (FailurePolicy::set_mpich_rule).
    bool mpich_ft = false;
    // --replicas R: every rank runs as R processes (docs/replication.md);
    // the job has R times the ranks the program sees.
    int replicas = 1;
    bool display_map = false; // --display-map: print where every process runs
    // --spawn-slots N: room on every host of the job for N processes that
    // MPI_Comm_spawn may start later (docs/dynamic_processes.md).
    // -1 after parsing too: neither given nor ULMPI_SPAWN_SLOTS, so the
    // job map gives every host its slot count, at least kAutoSpawnSlots.
    int spawn_slots = -1;
    // --max-restarts N: FT-MPI REBUILD starts one rank again at most N times
    // (respawn.cpp); the failure after that ends the job.
    int max_restarts = 16;
};

// The least spawn slots per host when --spawn-slots is not given.
inline constexpr int kAutoSpawnSlots = 8;

enum class ParseOutcome { run, help, version, error };

// Parses argv (argv[0] is mpirun's name). `env_timeout` is MPIEXEC_TIMEOUT or
// nullptr; --timeout wins over it. On error, `error` names the offending word.
ParseOutcome parse_options(int argc, const char* const* argv, const char* env_timeout,
                           Options& out, std::string& error);

std::string help_text(const char* prog);

// Form checks shared with the tests.
bool valid_env_name(const std::string& name);
// --param name=value: name of letters, digits and '_'. When the name is in
// this process's parameter registry the value is also parsed.
bool check_param(const std::string& name, const std::string& value, std::string& why);

} // namespace ulmpi::rt::mpirun
