#include "runtime/mpirun/launcher.h"

#include "runtime/boot_wire.h"
#include "runtime/log.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

extern char** environ;

namespace ulmpi::rt::mpirun {
namespace {

// What the child reports through the exec pipe.
struct ChildReport {
    int step; // 1 chdir, 2 exec, 3 setup
    int err;
};

[[noreturn]] void child_fail(int fd, int step, int err)
{
    ChildReport r{step, err};
    ssize_t n = ::write(fd, &r, sizeof r);
    (void)n;
    ::_exit(err == ENOENT ? 127 : 126);
}

// Runs in the forked child: only async-signal-safe calls, no allocation.
[[noreturn]] void child_main(const SpawnSpec& spec, char* const* argv, char* const* envp,
                             pid_t parent, int report_fd, int in_rd, int out_wr, int err_wr)
{
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, spec.death_signal);
    if (::getppid() != parent) {
        ::_exit(1); // mpirun died between fork and prctl
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // mpirun ignores SIGPIPE for itself; the rank gets what mpirun was given.
    // Caught signals are reset by exec anyway.
    ::signal(SIGPIPE, spec.sigpipe_ignored ? SIG_IGN : SIG_DFL);

    int devnull = -1;
    if (in_rd < 0) {
        devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        in_rd = devnull;
    }
    if (in_rd < 0 || ::dup2(in_rd, STDIN_FILENO) < 0 || ::dup2(out_wr, STDOUT_FILENO) < 0 ||
        ::dup2(err_wr, STDERR_FILENO) < 0) {
        child_fail(report_fd, 3, errno);
    }
    if (!spec.wdir.empty() && ::chdir(spec.wdir.c_str()) != 0) {
        child_fail(report_fd, 1, errno);
    }
    if (spec.bind) {
        (void)::sched_setaffinity(0, sizeof spec.cpus, &spec.cpus);
    }
    for (int fd : spec.keep_fds) {
        if (fd > STDERR_FILENO && ::fcntl(fd, F_SETFD, 0) != 0) {
            child_fail(report_fd, 3, errno);
        }
    }
    // execvp searches the PATH of `environ`: make it the rank's.
    environ = const_cast<char**>(envp);
    ::execvp(argv[0], argv);
    child_fail(report_fd, 2, errno);
}

void close_fd(int& fd)
{
    if (fd >= 0) {
        ::close(fd);
        fd = -1;
    }
}

} // namespace

Status start_rank(const SpawnSpec& spec, Child& out, int& report_fd, SpawnFailure& fail)
{
    report_fd = -1;
    // Everything the child needs is built before fork.
    std::vector<char*> argv;
    for (const std::string& a : spec.argv) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : spec.env) {
        envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);

    int report[2] = {-1, -1};
    int outp[2] = {-1, -1};
    int errp[2] = {-1, -1};
    int inp[2] = {-1, -1};
    auto close_all = [&] {
        for (int* p : {report, outp, errp, inp}) {
            close_fd(p[0]);
            close_fd(p[1]);
        }
    };
    if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(outp, O_CLOEXEC) != 0 ||
        ::pipe2(errp, O_CLOEXEC) != 0 || (spec.stdin_pipe && ::pipe2(inp, O_CLOEXEC) != 0)) {
        fail = SpawnFailure{errno, "pipe"};
        close_all();
        return Errc::io_error;
    }
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        fail = SpawnFailure{errno, "fork"};
        close_all();
        return Errc::io_error;
    }
    if (pid == 0) {
        child_main(spec, argv.data(), envp.data(), parent, report[1], inp[0], outp[1], errp[1]);
    }
    // Also from this side, so that signalling the group works at once.
    (void)::setpgid(pid, pid);
    out = Child{};
    out.pid = pid;
    close_fd(report[1]);
    close_fd(outp[1]);
    close_fd(errp[1]);
    close_fd(inp[0]);
    out.out_fd = outp[0];
    out.err_fd = errp[0];
    out.in_fd = inp[1];
    for (int fd : {out.out_fd, out.err_fd}) {
        (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    report_fd = report[0];
    return Errc::ok;
}

Status await_exec(int& report_fd, SpawnFailure& fail)
{
    ChildReport r{0, 0};
    ssize_t n;
    do {
        n = ::read(report_fd, &r, sizeof r);
    } while (n < 0 && errno == EINTR);
    close_fd(report_fd);
    if (n == static_cast<ssize_t>(sizeof r)) {
        fail.err = r.err;
        fail.step = r.step == 1 ? "chdir" : r.step == 2 ? "exec" : "setup";
        return Errc::io_error;
    }
    return Errc::ok;
}

Status spawn_rank(const SpawnSpec& spec, Child& out, SpawnFailure& fail)
{
    int report_fd = -1;
    if (Status st = start_rank(spec, out, report_fd, fail); !st.ok()) {
        return st;
    }
    return await_exec(report_fd, fail);
}

int spawn_exit_status(const SpawnFailure& fail)
{
    return (std::strcmp(fail.step, "exec") == 0 && fail.err == ENOENT) ? 127 : 126;
}

std::vector<std::string> base_environment(const Options& opts, std::vector<std::string>& warnings)
{
    std::map<std::string, std::string> vars; // sorted: stable for tests and diffs
    std::vector<std::string> order;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string kv(*e);
        std::size_t eq = kv.find('=');
        if (eq == std::string::npos) {
            continue;
        }
        std::string name = kv.substr(0, eq);
        bool contract = false;
        for (const char* c : wire::env::all) {
            contract = contract || name == c;
        }
        if (!contract) {
            vars[name] = kv.substr(eq + 1);
        }
    }
    for (const auto& [name, value] : opts.exports) {
        if (value) {
            vars[name] = *value;
        } else if (vars.find(name) == vars.end()) {
            warnings.push_back("-x " + name + ": " + name + " is not set in mpirun's environment");
        }
    }
    for (const auto& [name, value] : opts.params) {
        std::string env = "ULMPI_";
        for (char c : name) {
            env.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
        }
        vars[env] = value;
    }
    std::vector<std::string> out;
    out.reserve(vars.size() + 16);
    for (const auto& [name, value] : vars) {
        out.push_back(name + "=" + value);
    }
    return out;
}

namespace {

// Groups of CPUs that share a core, in the order of their first CPU.
std::vector<std::vector<int>> allowed_cores(const cpu_set_t& allowed)
{
    std::vector<std::vector<int>> cores;
    std::map<std::pair<int, int>, std::size_t> index; // (package, core) -> cores[i]
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) {
            continue;
        }
        std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        int pkg = -1;
        int core = -1;
        std::ifstream(base + "physical_package_id") >> pkg;
        std::ifstream(base + "core_id") >> core;
        if (core < 0) {
            core = 1000000 + cpu; // unknown topology: every CPU is a core
        }
        auto key = std::make_pair(pkg, core);
        auto it = index.find(key);
        if (it == index.end()) {
            index[key] = cores.size();
            cores.push_back({cpu});
        } else {
            cores[it->second].push_back(cpu);
        }
    }
    return cores;
}

} // namespace

int usable_cpus()
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        return 1;
    }
    const int n = CPU_COUNT(&allowed);
    return n > 0 ? n : 1;
}

std::vector<cpu_set_t> binding_sets(BindMode mode, int nranks)
{
    std::vector<cpu_set_t> sets;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (mode == BindMode::none || nranks < 1 ||
        ::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        return sets;
    }
    std::vector<std::vector<int>> cores = allowed_cores(allowed);
    std::vector<int> threads;
    for (const auto& c : cores) {
        threads.insert(threads.end(), c.begin(), c.end());
    }
    if (threads.empty()) {
        return sets;
    }
    if (mode == BindMode::automatic) {
        if (nranks <= static_cast<int>(cores.size())) {
            mode = BindMode::core;
        } else if (nranks <= static_cast<int>(threads.size())) {
            mode = BindMode::hwthread;
        } else {
            return sets; // oversubscribed: let the kernel balance
        }
    }
    for (int r = 0; r < nranks; ++r) {
        cpu_set_t s;
        CPU_ZERO(&s);
        if (mode == BindMode::core) {
            for (int cpu : cores[static_cast<std::size_t>(r) % cores.size()]) {
                CPU_SET(cpu, &s);
            }
        } else {
            CPU_SET(threads[static_cast<std::size_t>(r) % threads.size()], &s);
        }
        sets.push_back(s);
    }
    return sets;
}

std::string random_hex(std::size_t nbytes)
{
    std::vector<unsigned char> raw(nbytes);
    std::size_t got = 0;
    while (got < nbytes) {
        ssize_t n = ::getrandom(raw.data() + got, nbytes - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fatal("getrandom: %s", std::strerror(errno));
        }
        got += static_cast<std::size_t>(n);
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : raw) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

void signal_group(pid_t pgid, int sig)
{
    if (pgid > 1) {
        (void)::kill(-pgid, sig);
    }
}

int remove_job_shm_files(const std::string& jobid)
{
    if (jobid.empty()) {
        return 0;
    }
    std::string prefix = "ulmpi-" + jobid;
    int removed = 0;
    DIR* d = ::opendir("/dev/shm");
    if (d == nullptr) {
        return 0;
    }
    while (dirent* e = ::readdir(d)) {
        if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) {
            std::string path = std::string("/dev/shm/") + e->d_name;
            if (::unlink(path.c_str()) == 0) {
                ++removed;
                ULMPI_DEBUG("removed %s", path.c_str());
            }
        }
    }
    ::closedir(d);
    return removed;
}

std::string local_hostname()
{
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
        return "localhost";
    }
    return host;
}

int allowed_cpu_count()
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        long n = ::sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? static_cast<int>(n) : 1;
    }
    return CPU_COUNT(&allowed);
}

} // namespace ulmpi::rt::mpirun
