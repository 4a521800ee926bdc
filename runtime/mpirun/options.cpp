#include "runtime/mpirun/options.h"

#include "runtime/boot_wire.h"
#include "runtime/config.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ulmpi::rt::mpirun {
namespace {

enum class Opt {
    np,
    export_env,
    param,
    reliability,
    checksum,
    stats,
    tag_output,
    timeout,
    wdir,
    bind_to,
    oversubscribe,
    stdin_target,
    boot,
    host,
    hostfile,
    map_by,
    npernode,
    launch_agent,
    boot_if,
    verbose,
    replicas,
    replica_check,
    display_map,
    spawn_slots,
    max_restarts,
    with_ft,
    ft_comm_mode,
    ft_msg_mode,
    ft_coll_mode,
    ft_recovery,
    disable_auto_cleanup,
    initial_errhandler,
    help,
    version,
};

struct OptSpec {
    const char* name;
    Opt opt;
    bool takes_value;
};

// Accepted as --name or -name (Open MPI and MPICH spell them both ways).
constexpr OptSpec kOptions[] = {
    {"n", Opt::np, true},
    {"np", Opt::np, true},
    {"c", Opt::np, true},
    {"x", Opt::export_env, true},
    {"param", Opt::param, true},
    {"reliability", Opt::reliability, true},
    {"checksum", Opt::checksum, true},
    {"stats", Opt::stats, false},
    {"tag-output", Opt::tag_output, false},
    {"timeout", Opt::timeout, true},
    {"wdir", Opt::wdir, true},
    {"wd", Opt::wdir, true},
    {"bind-to", Opt::bind_to, true},
    {"oversubscribe", Opt::oversubscribe, false},
    {"stdin", Opt::stdin_target, true},
    {"boot", Opt::boot, true},
    {"H", Opt::host, true},
    {"host", Opt::host, true},
    {"hostfile", Opt::hostfile, true},
    {"machinefile", Opt::hostfile, true},
    {"map-by", Opt::map_by, true},
    {"npernode", Opt::npernode, true},
    {"N", Opt::npernode, true},
    {"launch-agent", Opt::launch_agent, true},
    {"boot-if", Opt::boot_if, true},
    {"replicas", Opt::replicas, true},
    {"display-map", Opt::display_map, false},
    {"spawn-slots", Opt::spawn_slots, true},
    {"max-restarts", Opt::max_restarts, true},
    {"replica-check", Opt::replica_check, false},
    {"with-ft", Opt::with_ft, true},
    {"ft-mode", Opt::ft_comm_mode, true},
    {"ft-msg-mode", Opt::ft_msg_mode, true},
    {"ft-coll-mode", Opt::ft_coll_mode, true},
    {"ft-recovery", Opt::ft_recovery, true},
    {"disable-auto-cleanup", Opt::disable_auto_cleanup, false},
    {"initial-errhandler", Opt::initial_errhandler, true},
    {"v", Opt::verbose, false},
    {"verbose", Opt::verbose, false},
    {"h", Opt::help, false},
    {"help", Opt::help, false},
    {"V", Opt::version, false},
    {"version", Opt::version, false},
};

const OptSpec* find_option(std::string_view name)
{
    for (const OptSpec& s : kOptions) {
        if (name == s.name) {
            return &s;
        }
    }
    return nullptr;
}

bool parse_count(const std::string& text, int& out)
{
    std::int64_t v = 0;
    if (!parse_integer(text, v) || v < 1 || v > 1000000) {
        return false;
    }
    out = static_cast<int>(v);
    return true;
}

bool parse_seconds(const std::string& text, double& out)
{
    double v = 0;
    if (!parse_real(text, v) || !(v >= 0) || v > 1e9) {
        return false;
    }
    out = v;
    return true;
}

// "host[:slots]" or "host slots=N" (hostfile line, comments already removed).
bool parse_host(const std::string& text, HostSpec& out, std::string& why)
{
    std::istringstream words(text);
    std::string first;
    words >> first;
    HostSpec h;
    std::size_t colon = first.find(':');
    h.name = first.substr(0, colon);
    if (colon != std::string::npos && !parse_count(first.substr(colon + 1), h.slots)) {
        why = "bad slot count in '" + first + "'";
        return false;
    }
    std::string word;
    while (words >> word) {
        if (word.starts_with("slots=") || word.starts_with("max_slots=")) {
            if (word.starts_with("slots=") && !parse_count(word.substr(6), h.slots)) {
                why = "bad slot count in '" + word + "'";
                return false;
            }
        } else {
            why = "unknown host attribute '" + word + "'";
            return false;
        }
    }
    if (h.name.empty()) {
        why = "empty host name";
        return false;
    }
    out = std::move(h);
    return true;
}

bool read_hostfile(const std::string& path, std::vector<HostSpec>& hosts, std::string& why)
{
    std::ifstream in(path);
    if (!in) {
        why = "cannot read hostfile '" + path + "': " + std::strerror(errno);
        return false;
    }
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        line = line.substr(0, line.find('#'));
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
            continue;
        }
        HostSpec h;
        std::string bad;
        if (!parse_host(line, h, bad)) {
            why = path + ":" + std::to_string(lineno) + ": " + bad;
            return false;
        }
        hosts.push_back(std::move(h));
    }
    return true;
}

} // namespace

bool valid_env_name(const std::string& name)
{
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
        return false;
    }
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
            return false;
        }
    }
    return true;
}

bool check_param(const std::string& name, const std::string& value, std::string& why)
{
    if (!valid_env_name(name)) {
        why = "'" + name + "' is not a parameter name (letters, digits and '_')";
        return false;
    }
    ParamBase* p = find_param(name);
    if (p == nullptr) {
        // Parameters of the upper layers are not linked into mpirun; the
        // ranks check them (and warn about unknown names) in MPI_Init.
        return true;
    }
    std::string env = p->env_name();
    const char* old = std::getenv(env.c_str());
    std::string saved = old == nullptr ? "" : old;
    ::setenv(env.c_str(), value.c_str(), 1);
    std::string bad;
    bool ok = p->reload(bad);
    if (old == nullptr) {
        ::unsetenv(env.c_str());
    } else {
        ::setenv(env.c_str(), saved.c_str(), 1);
    }
    std::string ignored;
    (void)p->reload(ignored);
    if (!ok) {
        why = name + ": " + bad;
    }
    return ok;
}

ParseOutcome parse_options(int argc, const char* const* argv, const char* env_timeout,
                           Options& out, std::string& error)
{
    Options o;
    AppContext app;
    bool timeout_given = false;
    bool need_program = false; // after a ':'
    int i = 1;
    auto fail = [&](std::string why) {
        error = std::move(why);
        return ParseOutcome::error;
    };
    while (i < argc) {
        std::string arg = argv[i];
        if (arg == ":") {
            return fail("':' must follow a program");
        }
        if (arg == "--") {
            ++i;
            if (i >= argc) {
                return fail("no program after '--'");
            }
            arg = argv[i];
        } else if (arg.size() > 1 && arg[0] == '-') {
            // An option.
            std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
            std::optional<std::string> inline_value;
            if (std::size_t eq = name.find('='); eq != std::string::npos) {
                inline_value = name.substr(eq + 1);
                name.resize(eq);
            }
            const OptSpec* spec = find_option(name);
            if (spec == nullptr) {
                return fail("unknown option '" + arg + "' (mpirun --help lists them)");
            }
            std::string value;
            if (spec->takes_value) {
                if (inline_value) {
                    value = *inline_value;
                } else if (i + 1 < argc) {
                    value = argv[++i];
                } else {
                    return fail("option '" + arg + "' needs a value");
                }
            } else if (inline_value) {
                return fail("option '--" + name + "' takes no value");
            }
            ++i;
            switch (spec->opt) {
            case Opt::np:
                if (!parse_count(value, app.np)) {
                    return fail("-n: '" + value + "' is not a process count (1 or more)");
                }
                app.np_given = true;
                break;
            case Opt::export_env: {
                std::size_t eq = value.find('=');
                std::string var = value.substr(0, eq);
                if (!valid_env_name(var)) {
                    return fail("-x: '" + var + "' is not an environment variable name");
                }
                if (eq == std::string::npos) {
                    o.exports.emplace_back(var, std::nullopt);
                } else {
                    o.exports.emplace_back(var, value.substr(eq + 1));
                }
                break;
            }
            case Opt::param: {
                std::size_t eq = value.find('=');
                if (eq == std::string::npos || eq == 0) {
                    return fail("--param: expected name=value, got '" + value + "'");
                }
                std::string pname = value.substr(0, eq);
                for (char& c : pname) {
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                }
                std::string pvalue = value.substr(eq + 1);
                std::string why;
                if (!check_param(pname, pvalue, why)) {
                    return fail("--param " + value + ": " + why);
                }
                o.params.emplace_back(pname, pvalue);
                break;
            }
            case Opt::reliability:
                // Shorthands for the ULM parameters (ulmpi_info lists them).
                if (value != "on" && value != "off" && value != "auto") {
                    return fail("--reliability: expected on, off or auto, got '" + value + "'");
                }
                o.params.emplace_back("ulm_reliability", value);
                break;
            case Opt::checksum:
                if (value != "crc32c" && value != "none" && value != "auto") {
                    return fail("--checksum: expected crc32c, none or auto, got '" + value + "'");
                }
                o.params.emplace_back("ulm_checksum", value);
                break;
            case Opt::stats: o.params.emplace_back("ulm_stats", "on"); break;
            case Opt::tag_output: o.tag_output = true; break;
            case Opt::timeout:
                if (!parse_seconds(value, o.timeout_s)) {
                    return fail("--timeout: '" + value + "' is not a number of seconds");
                }
                timeout_given = true;
                break;
            case Opt::wdir:
                if (value.empty()) {
                    return fail("--wdir needs a directory");
                }
                o.wdir = value;
                break;
            case Opt::bind_to:
                if (value == "core") {
                    o.bind = BindMode::core;
                } else if (value == "hwthread") {
                    o.bind = BindMode::hwthread;
                } else if (value == "none") {
                    o.bind = BindMode::none;
                } else {
                    return fail("--bind-to: '" + value + "' is not core, hwthread or none");
                }
                break;
            case Opt::oversubscribe: break; // we never refuse to oversubscribe
            case Opt::stdin_target:
                if (value == "none") {
                    o.stdin_rank = -1;
                } else {
                    std::int64_t r = 0;
                    if (!parse_integer(value, r) || r < 0 || r > 0x7fffffff) {
                        return fail("--stdin: '" + value + "' is not a rank or 'none'");
                    }
                    o.stdin_rank = static_cast<int>(r);
                }
                break;
            case Opt::boot:
                if (value == "unix") {
                    o.boot = BootKind::unix_abstract;
                } else if (value == "tcp") {
                    o.boot = BootKind::tcp;
                } else if (value.starts_with("tcp:")) {
                    o.boot = BootKind::tcp;
                    o.boot_ip = value.substr(4);
                } else {
                    return fail("--boot: '" + value + "' is not unix, tcp or tcp:IP");
                }
                break;
            case Opt::host: {
                std::size_t pos = 0;
                while (pos <= value.size()) {
                    std::size_t comma = value.find(',', pos);
                    std::string one = value.substr(pos, comma == std::string::npos
                                                            ? std::string::npos
                                                            : comma - pos);
                    HostSpec h;
                    std::string why;
                    if (!parse_host(one, h, why)) {
                        return fail("-H " + value + ": " + why);
                    }
                    o.hosts.push_back(std::move(h));
                    if (comma == std::string::npos) {
                        break;
                    }
                    pos = comma + 1;
                }
                break;
            }
            case Opt::hostfile: {
                std::string why;
                if (!read_hostfile(value, o.hosts, why)) {
                    return fail(why);
                }
                break;
            }
            case Opt::map_by:
                // Open MPI spells modifiers after a colon (node:OVERSUBSCRIBE): we
                // never refuse to oversubscribe, so they are accepted and ignored.
                if (std::string kind = value.substr(0, value.find(':')); kind == "slot" ||
                                                                         kind == "core") {
                    o.map_by = MapBy::slot;
                } else if (kind == "node") {
                    o.map_by = MapBy::node;
                } else {
                    return fail("--map-by: '" + value + "' is not slot or node");
                }
                break;
            case Opt::npernode:
                if (!parse_count(value, o.npernode)) {
                    return fail("--npernode: '" + value + "' is not a count (1 or more)");
                }
                break;
            case Opt::launch_agent:
                if (value.find_first_not_of(" \t") == std::string::npos) {
                    return fail("--launch-agent needs a command");
                }
                o.launch_agent = value;
                break;
            case Opt::boot_if:
                if (value.empty()) {
                    return fail("--boot-if needs an interface, address or subnet");
                }
                o.boot_if = value;
                break;
            case Opt::verbose: o.verbose = true; break;
            case Opt::display_map: o.display_map = true; break;
            case Opt::replica_check: o.params.emplace_back("rep_check", "1"); break;
            case Opt::replicas:
                if (!parse_count(value, o.replicas) || o.replicas > 32) {
                    return fail("--replicas: '" + value + "' is not a replica count (1 to 32)");
                }
                o.params.emplace_back("rep_replicas", std::to_string(o.replicas));
                break;
            case Opt::spawn_slots:
                if (std::int64_t v = 0; !parse_integer(value, v) || v < 0 || v > 4096) {
                    return fail("--spawn-slots: '" + value +
                                "' is not a number of processes per host (0 to 4096)");
                } else {
                    o.spawn_slots = static_cast<int>(v);
                }
                break;
            case Opt::max_restarts:
                if (std::int64_t v = 0; !parse_integer(value, v) || v < 0 || v > 1000000) {
                    return fail("--max-restarts: '" + value +
                                "' is not a number of new processes per rank (0 to 1000000)");
                } else {
                    o.max_restarts = static_cast<int>(v);
                }
                break;
            case Opt::with_ft: {
                FtMode m = FtMode::none;
                if (!parse_ft_mode(value, m)) {
                    return fail("--with-ft: '" + value + "' is not ulfm, mpi or no");
                }
                o.params.emplace_back("ft", value);
                o.mpich_ft = false;
                break;
            }
            case Opt::ft_comm_mode:
                // FT-MPI's modes (docs/ftmpi.md): the ranks' parameters; a
                // mode other than abort keeps the job alive as --with-ft does.
                if (value != "abort" && value != "rebuild" && value != "blank" &&
                    value != "shrink") {
                    return fail("--ft-mode: '" + value +
                                "' is not abort, rebuild, blank or shrink");
                }
                o.params.emplace_back("ft_mode", value);
                o.params.emplace_back("ft", value == "abort" ? "no" : "ulfm");
                break;
            case Opt::ft_msg_mode:
                if (value != "reset" && value != "cont") {
                    return fail("--ft-msg-mode: '" + value + "' is not reset or cont");
                }
                o.params.emplace_back("ft_msg_mode", value);
                break;
            case Opt::ft_coll_mode:
                if (value != "atomic" && value != "nonatomic") {
                    return fail("--ft-coll-mode: '" + value + "' is not atomic or nonatomic");
                }
                o.params.emplace_back("ft_coll_mode", value);
                break;
            case Opt::ft_recovery:
                if (value != "auto" && value != "manual") {
                    return fail("--ft-recovery: '" + value + "' is not auto or manual");
                }
                o.params.emplace_back("ft_recovery", value);
                break;
            case Opt::disable_auto_cleanup:
                o.params.emplace_back("ft", "ulfm");
                o.mpich_ft = true;
                break;
            case Opt::initial_errhandler: {
                std::string v = value;
                for (char& c : v) {
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                }
                if (v != "mpi_errors_are_fatal" && v != "mpi_errors_return" &&
                    v != "mpi_errors_abort") {
                    return fail("--initial-errhandler: '" + value +
                                "' is not mpi_errors_are_fatal, mpi_errors_abort or "
                                "mpi_errors_return");
                }
                o.params.emplace_back("initial_errhandler", v);
                break;
            }
            case Opt::help: return ParseOutcome::help;
            case Opt::version: return ParseOutcome::version;
            }
            continue;
        }
        // The program and its arguments, up to a lone ':'.
        app.argv.push_back(arg);
        ++i;
        while (i < argc && std::strcmp(argv[i], ":") != 0) {
            app.argv.push_back(argv[i++]);
        }
        o.apps.push_back(std::move(app));
        app = AppContext{};
        need_program = i < argc;
        if (need_program) {
            ++i; // the ':'
        }
    }
    if (o.apps.empty()) {
        return fail("no program to run (mpirun --help shows the usage)");
    }
    if (need_program) {
        // Options after a program belong to it, so only a trailing ':' (with
        // or without options after it) lands here.
        return fail("no program after ':'");
    }
    if (!timeout_given && env_timeout != nullptr && *env_timeout != '\0') {
        if (!parse_seconds(env_timeout, o.timeout_s)) {
            return fail(std::string("MPIEXEC_TIMEOUT: '") + env_timeout +
                        "' is not a number of seconds");
        }
    }
    // The fault-tolerance mode mpirun itself acts on: the last --with-ft,
    // --disable-auto-cleanup or --param ft=..., else mpirun's ULMPI_FT.
    o.ft = ft_mode();
    // An FT-MPI communicator mode from mpirun's environment (ULMPI_FT_MODE)
    // keeps the job alive too (the ranks run the same modes).
    if (const char* m = std::getenv("ULMPI_FT_MODE");
        m != nullptr && *m != '\0' && std::string_view(m) != "abort") {
        o.ft = FtMode::ulfm;
    }
    for (const auto& [name, value] : o.params) {
        if (name == "ft") {
            (void)parse_ft_mode(value, o.ft); // checked above
        }
    }
    if (o.spawn_slots < 0) {
        o.spawn_slots = rt::boot::spawn_slots_param(); // not given: ULMPI_SPAWN_SLOTS
    }
    if (o.spawn_slots < 0) {
        // Neither: automatic (main.cpp), except where slots are not
        // combined: replication and the FT-MPI modes.
        bool ftmpi = false;
        if (const char* m = std::getenv("ULMPI_FT_MODE");
            m != nullptr && *m != '\0' && std::string_view(m) != "abort") {
            ftmpi = true;
        }
        for (const auto& [name, value] : o.params) {
            ftmpi = ftmpi || (name == "ft_mode" && value != "abort");
        }
        if (o.replicas > 1 || ftmpi) {
            o.spawn_slots = 0;
        }
    }
    if (o.spawn_slots > 0 && o.replicas > 1) {
        return fail("--spawn-slots cannot be combined with --replicas");
    }
    if (o.replicas > 1) {
        // A replica's death is the replication layer's business: mpirun
        // announces it and the job goes on (the ranks do not run ULFM).
        o.ft = FtMode::ulfm;
    }
    out = std::move(o);
    return ParseOutcome::run;
}

std::string help_text(const char* prog)
{
    std::string p = prog;
    return "Usage: " + p + R"( [options] program [args] [: [options] program [args]]...

Starts the ranks of an MPI job on this host and others, runs their key-value
(wire-up) service, forwards their output and signals, and ends the whole job
as soon as one rank fails (unless --with-ft says the job lives on). A program
started without mpirun is a job of one rank.

Options (also accepted with a single dash, e.g. -np 4):
  -n, -np, -c N        number of processes of the program that follows
                       (default 1 per program; not the number of slots)
  -x VAR[=value]       set VAR in the ranks' environment (VAR alone: take
                       mpirun's value); the whole environment is passed anyway
  --param name=value   set ulmpi parameter `name` for every rank (becomes
                       ULMPI_<NAME>=value; repeatable; ulmpi_info lists them)
  --reliability on|off|auto
                       acknowledge, checksum and retransmit every fragment
                       (auto: on for network paths, off for shared memory)
  --checksum crc32c|none|auto
                       CRC32C over every fragment (auto: where reliability is on)
  --stats              each rank prints its per-peer and per-path counters
                       (fragments, bytes, retransmissions, CRC failures,
                       duplicates, ACKs) at MPI_Finalize
  --tag-output         prefix every output line with "[rank] "
  --timeout SECONDS    end the job after SECONDS (also MPIEXEC_TIMEOUT; the
                       option wins); exit status 124
  --wdir DIR           run the ranks in DIR (programs given with a relative
                       path are still found from mpirun's directory)
  --bind-to core|hwthread|none
                       pin each rank, round-robin over the CPUs mpirun may
                       use; default: core when the ranks fit on the CPUs
                       (hwthread when they fit only on hardware threads),
                       none when oversubscribed
  --oversubscribe      accepted; mpirun never refuses more ranks than CPUs
  --stdin RANK|none    which rank reads mpirun's standard input (default 0);
                       every other rank reads /dev/null
  -H, --host h[:n],... hosts of the job map with n slots each (default: this
                       machine's CPUs for this machine, 1 for another host;
                       a name given twice adds up its slots)
  --hostfile FILE      the same from a file: "host[:n] [slots=n]" per line
  --map-by slot|node   fill each host's slots in turn (slot, the default) or
                       place ranks round-robin over the hosts (node); ranks
                       beyond every slot wrap around (never refused)
  --npernode N, -N N   at most N ranks per host; without -n, N per host
  --launch-agent CMD   how a daemon is started on another host (default
                       "ssh -o BatchMode=yes", also ULMPI_BOOT_LAUNCH_AGENT);
                       {host} in CMD is replaced by the host's name, else the
                       name is added after CMD; e.g. 'ip netns exec {host}'
  --boot-if IF|IP|NET/n  where daemons of other hosts reach mpirun: an
                       interface, an address of this machine or a subnet
                       (also ULMPI_BOOT_IF; default: the interface on the
                       first remote host's subnet, else the first one up)
  --boot unix|tcp[:IP] transport of the rank <-> mpirun connection (default
                       an abstract Unix socket; tcp listens on 127.0.0.1)
  --with-ft ulfm|mpi|no
                       process fault tolerance: with ulfm (or its other
                       spelling mpi) a rank that dies or a host that is lost
                       no longer ends the job; every survivor is told and
                       sees MPIX_ERR_PROC_FAILED (the ULFM interface). no:
                       the default. Also --param ft=..., ULMPI_FT
  --disable-auto-cleanup
                       --with-ft ulfm as MPICH's mpiexec has it: mpirun
                       says nothing about failed ranks, and exits with the
                       first failure's status (MPICH's FT tests expect both)
  --ft-mode abort|rebuild|blank|shrink
                       FT-MPI's communicator mode after a failure (params
                       ft_mode; every mode but abort implies --with-ft ulfm):
                       rebuild starts a new process for every failed rank
                       (same rank, on its host; a lost host's ranks on
                       mpirun's host; see --max-restarts), blank
                       leaves holes, shrink renumbers the survivors
                       (docs/ftmpi.md)
  --ft-msg-mode reset|cont      FT-MPI message mode (ft_msg_mode)
  --ft-coll-mode atomic|nonatomic  FT-MPI collective mode (ft_coll_mode)
  --ft-recovery auto|manual     FT-MPI recovery (ft_recovery)
  --max-restarts N     --ft-mode rebuild: start one rank again at most N times
                       (default 16); its next failure ends the job, which
                       otherwise would restart a rank that always fails forever
  --initial-errhandler mpi_errors_are_fatal|mpi_errors_abort|mpi_errors_return
                       the error handler MPI_COMM_WORLD and MPI_COMM_SELF
                       start with (MPI-4; default mpi_errors_are_fatal);
                       MPI_INFO_ENV says it under mpi_initial_errhandler
  --replicas R         run every rank as R processes (active replication of
                       send-deterministic programs, docs/replication.md): the
                       program sees the -n ranks; the job survives the death of
                       any process while one replica of each rank lives
  --replica-check      with --replicas: the replicas of a rank compare a CRC32C
                       of every message they send and report a difference
                       (with 3 or more, the outvoted replica leaves the job)
  --display-map        print which host runs every process (and replica)
  --spawn-slots N      keep room on every host of the job for N processes
                       started later by MPI_Comm_spawn[_multiple] at once (a
                       slot whose process ended is used again); default: the
                       host's slots (-H host:N, hostfile, else its CPUs), at
                       least 8; 0 with --replicas or --ft-mode, and 0 turns
                       spawning off; MPI_UNIVERSE_SIZE counts them (also
                       ULMPI_SPAWN_SLOTS; docs/dynamic_processes.md)
  -v, --verbose        log what mpirun does
  -h, --help           this text
  -V, --version        print "ulmpi <version>"

MPMD: `mpirun -n 1 master : -n 4 worker` starts ranks 0 (master) and 1-4
(worker); ULMPI_APPNUM tells each rank the index of its program.

Hosts other than this machine get one ulmpi_daemon each, started through
the launch agent; it forks the host's ranks, relays their wire-up and
output, and ends with the job. A host whose daemon disappears ends the job
(with --with-ft: its ranks are failed and the job goes on).

With --with-ft ulfm, a rank that dies, exits without MPI_Finalize or loses
its connection is announced to every survivor (on its host within
milliseconds) and killed if anything is left of it; the wire-up fences and
MPI_Finalize stop waiting for it. MPI_Abort, --timeout, a signal to mpirun
and a program that cannot start still end the whole job.

Every rank runs in its own process group and never outlives mpirun. SIGINT,
SIGTERM and SIGHUP are forwarded to the ranks; those still alive 2 seconds
later (or at a second Ctrl-C) are killed.

Exit status:
  0        every rank succeeded
  N        a rank called MPI_Abort with code N (the low 8 bits; 1 if those
           are 0 for a nonzero code)
  N        the first rank that failed exited with status N
  1        a rank left MPI without MPI_Finalize (exited 0 after MPI_Init,
           lost its connection, or exited while the others wait for it);
           a host was lost (its daemon died or its connection broke)
  128+S    the first rank that failed was killed by signal S
  2        usage error (bad option or value)
  124      --timeout / MPIEXEC_TIMEOUT expired
  126      a program could not be executed (not executable, bad format)
  127      a program was not found
  129/130/143  mpirun got SIGHUP / SIGINT / SIGTERM

Exit status with --with-ft ulfm, when nothing ended the job early:
  0        every rank that did not fail called MPI_Finalize and exited 0
           (the failed ranks are named on stderr all the same)
  N        a rank exited with status N (128+S: signal S) after MPI_Finalize
  else     every rank failed: the status of the first failure, as above
)";
}

} // namespace ulmpi::rt::mpirun
