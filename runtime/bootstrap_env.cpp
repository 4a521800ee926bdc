#include "runtime/bootstrap_env.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>

namespace ulmpi::rt::bootenv {

bool fill_locality(JobInfo& job, std::string& why)
{
    if (job.node_of_rank.size() != static_cast<std::size_t>(job.size)) {
        why = "the launcher described " + std::to_string(job.node_of_rank.size()) +
              " ranks for a job of " + std::to_string(job.size);
        return false;
    }
    int max_node = -1;
    for (int n : job.node_of_rank) {
        if (n < 0) {
            why = "the launcher did not place every rank on a node";
            return false;
        }
        max_node = std::max(max_node, n);
    }
    job.node_id = job.node_of_rank[static_cast<std::size_t>(job.rank)];
    job.num_nodes = max_node + 1;
    job.local_rank = 0;
    job.local_size = 0;
    for (int r = 0; r < job.size; ++r) {
        if (job.node_of_rank[static_cast<std::size_t>(r)] == job.node_id) {
            if (r < job.rank) {
                ++job.local_rank;
            }
            ++job.local_size;
        }
    }
    return true;
}

std::string safe_jobid(std::string_view prefix, std::string_view id)
{
    std::string out(prefix);
    for (char c : id) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        out += ok ? c : '_';
    }
    return out;
}

bool env_int(const char* name, int& out, std::string& why)
{
    why.clear();
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    long x = std::strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < 0 || x > 0x7fffffff) {
        why = std::string(name) + "='" + v + "' is not a non-negative integer";
        return false;
    }
    out = static_cast<int>(x);
    return true;
}

int slurm_local_cpus()
{
    int cpus = 0;
    std::string why;
    if (!env_int("SLURM_CPUS_ON_NODE", cpus, why) || cpus <= 0) {
        return 0;
    }
    // A test bed may declare more CPUs than the machine has; spinning ranks
    // would then starve each other.
    long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0 && cpus > online) {
        cpus = static_cast<int>(online);
    }
    return cpus;
}

std::string node_name()
{
    const char* n = std::getenv("SLURMD_NODENAME");
    if (n != nullptr && *n != '\0') {
        return n;
    }
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) {
        return "localhost";
    }
    return host;
}

void print_abort(int rank, int code, std::string_view msg)
{
    char line[1024];
    int n = std::snprintf(line, sizeof line, "ulmpi: rank %d called MPI_Abort with code %d%s%.*s\n",
                          rank, code, msg.empty() ? "" : ": ", static_cast<int>(msg.size()),
                          msg.data());
    if (n > 0) {
        ssize_t w = ::write(STDERR_FILENO, line,
                            std::min(static_cast<std::size_t>(n), sizeof line - 1));
        (void)w;
    }
}

} // namespace ulmpi::rt::bootenv

namespace ulmpi::rt::bootenv {

void let_output_drain()
{
    timespec t{0, 300 * 1000 * 1000};
    while (::nanosleep(&t, &t) != 0) {
    }
}

} // namespace ulmpi::rt::bootenv
