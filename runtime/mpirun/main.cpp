// mpirun / mpiexec: parse the command line, build the job map, run the job.
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/mpirun/exit_codes.h"
#include "runtime/mpirun/job_map.h"
#include "runtime/mpirun/launcher.h"
#include "runtime/mpirun/monitor.h"
#include "runtime/mpirun/options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ULMPI_VERSION
#define ULMPI_VERSION "unknown"
#endif

namespace mr = ulmpi::rt::mpirun;

namespace {

// Descriptors 0-2 must be open before mpirun opens anything, or its sockets
// and pipes would land there and be mistaken for standard streams.
void ensure_std_fds()
{
    for (int fd = 0; fd < 3; ++fd) {
        if (::fcntl(fd, F_GETFD) < 0) {
            int n = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (n >= 0 && n != fd) {
                ::dup2(n, fd);
                ::close(n);
            }
        }
    }
}

int usage_error(const char* prog, const std::string& why)
{
    mr::report(why);
    std::fprintf(stderr, "usage: %s [options] program [args] (%s --help for more)\n", prog, prog);
    return mr::exit_code::usage;
}

} // namespace

int main(int argc, char** argv)
{
    ensure_std_fds();
    const char* slash = std::strrchr(argv[0], '/');
    const char* prog = slash != nullptr ? slash + 1 : argv[0];
    ulmpi::rt::set_log_identity("mpirun");

    mr::Options opts;
    std::string error;
    switch (mr::parse_options(argc, argv, std::getenv("MPIEXEC_TIMEOUT"), opts, error)) {
    case mr::ParseOutcome::help: std::fputs(mr::help_text(prog).c_str(), stdout); return 0;
    case mr::ParseOutcome::version: std::printf("ulmpi %s\n", ULMPI_VERSION); return 0;
    case mr::ParseOutcome::error: return usage_error(prog, error);
    case mr::ParseOutcome::run: break;
    }
    if (opts.verbose) {
        ulmpi::rt::set_log_level(ulmpi::rt::LogLevel::debug);
    }
    // --param boot_*=... concerns mpirun itself (and its daemons) too.
    for (const auto& [name, value] : opts.params) {
        ulmpi::rt::ParamBase* p = ulmpi::rt::find_param(name);
        if (p != nullptr && name.rfind("boot_", 0) == 0) {
            ::setenv(p->env_name().c_str(), value.c_str(), 1);
            std::string why;
            (void)p->reload(why); // checked by parse_options already
        }
    }
    if (!opts.wdir.empty()) {
        struct stat st{};
        if (::stat(opts.wdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            return usage_error(prog, "--wdir: '" + opts.wdir + "' is not a directory");
        }
    }

    mr::JobMap map;
    if (!mr::JobMap::build(opts, mr::allowed_cpu_count(), mr::local_hostname(), map, error)) {
        return usage_error(prog, error);
    }
    if (opts.spawn_slots > 0) {
        map.add_spawn_slots(opts.spawn_slots);
    } else if (opts.spawn_slots < 0) {
        map.add_spawn_slots_auto(mr::kAutoSpawnSlots);
    }
    if (opts.display_map) {
        std::fprintf(stderr, "mpirun: job map (%d processes on %d host(s)):\n%s", map.size(),
                     map.num_nodes(), map.describe(opts.replicas).c_str());
    }
    if (opts.stdin_rank >= map.size()) {
        return usage_error(prog, "--stdin: rank " + std::to_string(opts.stdin_rank) +
                                     " is not in a job of " + std::to_string(map.size()) +
                                     " rank(s)");
    }
    mr::Monitor monitor(opts, map);
    return monitor.run();
}
