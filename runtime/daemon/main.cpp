// ulmpi_daemon: started by mpirun on every other host of a job (see daemon.h).
//
//   ulmpi_daemon --boot tcp:IP:PORT --node N --host NAME --jobid ID [--keepalive S]
//                [--verbose]
//
// The job secret (32 hex digits and a newline) comes on stdin: a command
// line is visible to every user of the host.
#include "runtime/daemon/daemon.h"
#include "runtime/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <unistd.h>

namespace {

constexpr int kSecretWaitMs = 30000;

int usage(const char* why)
{
    std::fprintf(stderr,
                 "ulmpi_daemon: %s\nusage: ulmpi_daemon --boot tcp:IP:PORT --node N --host NAME "
                 "--jobid ID [--keepalive S] [--verbose]   (job secret on stdin)\nmpirun "
                 "starts it; it is not "
                 "meant to be run by hand.\n",
                 why);
    return 2;
}

bool read_secret(std::string& out)
{
    std::string line;
    while (line.find('\n') == std::string::npos && line.size() < 256) {
        pollfd p{STDIN_FILENO, POLLIN, 0};
        if (::poll(&p, 1, kSecretWaitMs) <= 0) {
            return false;
        }
        char buf[128];
        ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        line.append(buf, static_cast<std::size_t>(n));
    }
    out = line.substr(0, line.find('\n'));
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    namespace rt = ulmpi::rt;
    rt::daemon::DaemonArgs args;
    std::string boot;
    bool have_node = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--verbose" || a == "-v") {
            rt::set_log_level(rt::LogLevel::debug);
            continue;
        }
        if (a == "--help" || a == "-h") {
            usage("the per-host daemon of ulmpi's mpirun");
            return 0;
        }
        if (i + 1 >= argc) {
            return usage(("option " + a + " needs a value").c_str());
        }
        std::string v = argv[++i];
        if (a == "--boot") {
            boot = v;
        } else if (a == "--node") {
            char* end = nullptr;
            long n = std::strtol(v.c_str(), &end, 10);
            if (*end != '\0' || n < 0 || n > 1000000) {
                return usage("--node needs a node number");
            }
            args.node = static_cast<int>(n);
            have_node = true;
        } else if (a == "--host") {
            args.host = v;
        } else if (a == "--jobid") {
            args.jobid = v;
        } else if (a == "--keepalive") {
            // mpirun's ULMPI_BOOT_KEEPALIVE, read (lazily) by the parameter.
            ::setenv("ULMPI_BOOT_KEEPALIVE", v.c_str(), 1);
        } else {
            return usage(("unknown option " + a).c_str());
        }
    }
    static std::string identity = "ulmpi_daemon(" + args.host + ")";
    rt::set_log_identity(identity.c_str());
    std::string why;
    if (boot.empty() || !have_node || args.host.empty() || args.jobid.empty()) {
        return usage("--boot, --node, --host and --jobid are required");
    }
    if (!rt::wire::parse_boot_addr(boot, args.boot, why)) {
        return usage(("--boot " + boot + ": " + why).c_str());
    }
    std::string hex;
    if (!read_secret(hex) || !rt::wire::secret_from_hex(hex, args.secret)) {
        ULMPI_ERROR("no job secret on stdin");
        return 2;
    }
    // The ranks get their own stdin; the daemon's is done.
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) {
        ::dup2(null, STDIN_FILENO);
        ::close(null);
    }
    rt::daemon::Daemon d(std::move(args));
    return d.run();
}
