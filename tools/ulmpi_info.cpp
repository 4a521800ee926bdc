// ulmpi_info: what this ulmpi is and how it is set up on this machine.
//
//   ulmpi_info                 version, build, paths, shared-memory single copy,
//                              every parameter (type, default, value, help)
//   ulmpi_info --all           the same with every parameter in long form
//   ulmpi_info --params        only the parameters
//   ulmpi_info --param NAME    one parameter in long form (exit 1 if unknown)
//   ulmpi_info --parsable      the same facts, one "key:value" per line
//
// It links the layer libraries whole (not libmpi.so, which hides them), so
// every parameter's registrar and every path's registrar is present.
//
// Single copy on shared memory needs process_vm_readv between two ranks of a
// job, which are sibling processes (children of mpirun). The probe below does
// exactly that: it forks two siblings and lets one read the other's memory. A
// refusal is explained from what the kernel tells (Yama ptrace_scope, seccomp).
#include "mpi.h"
#include "paths/registry.h"
#include "paths/ofi/ofi_info.h"
#include "paths/verbs/verbs_info.h"
#include "runtime/bootstrap.h"
#include "runtime/config.h"
#include "runtime/crc32c.h"
#include "runtime/log.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <poll.h>
#include <signal.h>
#include <string>
#include <string_view>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#ifndef ULMPI_INFO_PREFIX
#define ULMPI_INFO_PREFIX "(unknown)"
#endif
#ifndef ULMPI_INFO_BUILDTYPE
#define ULMPI_INFO_BUILDTYPE "(unknown)"
#endif

namespace {

using ulmpi::rt::ParamBase;
using ulmpi::rt::ParamKind;

// ---------------------------------------------------------------- the probe

struct SingleCopy {
    bool kernel_allows = false; // process_vm_readv between siblings worked
    std::string why;            // the reason when it did not (errno and hints)
};

std::string read_first_line(const char* file)
{
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return line;
}

std::string status_field(const char* field)
{
    std::ifstream in("/proc/self/status");
    std::string line;
    std::string want = std::string(field) + ":";
    while (std::getline(in, line)) {
        if (line.starts_with(want)) {
            std::string v = line.substr(want.size());
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        }
    }
    return "";
}

// Why process_vm_readv between two siblings failed with `err`.
std::string explain(int err)
{
    std::string why = std::string("process_vm_readv between two sibling processes failed: ") +
                      std::strerror(err);
    std::string yama = read_first_line("/proc/sys/kernel/yama/ptrace_scope");
    std::string seccomp = status_field("Seccomp");
    if (err == EPERM) {
        if (yama == "1") {
            why += "; kernel.yama.ptrace_scope = 1 lets a process read only its descendants, "
                   "and the ranks of a job are siblings (`sysctl kernel.yama.ptrace_scope=0` "
                   "allows it)";
        } else if (yama == "2") {
            why += "; kernel.yama.ptrace_scope = 2 reserves it to CAP_SYS_PTRACE";
        } else if (yama == "3") {
            why += "; kernel.yama.ptrace_scope = 3 forbids it until reboot";
        }
    }
    if (err == ENOSYS) {
        why += "; the kernel lacks CONFIG_CROSS_MEMORY_ATTACH or a seccomp filter answers ENOSYS";
    }
    if (seccomp == "2" && (err == EPERM || err == ENOSYS)) {
        why += "; a seccomp filter is active (a container's default profile forbids "
               "process_vm_readv without CAP_SYS_PTRACE)";
    }
    return why;
}

// Reads exactly n bytes; false at EOF or error.
bool read_all(int fd, void* buf, size_t n)
{
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
        ssize_t got = ::read(fd, p, n);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return false;
        }
        p += got;
        n -= static_cast<size_t>(got);
    }
    return true;
}

bool write_all(int fd, const void* buf, size_t n)
{
    const auto* p = static_cast<const char*>(buf);
    while (n > 0) {
        ssize_t put = ::write(fd, p, n);
        if (put < 0 && errno == EINTR) {
            continue;
        }
        if (put <= 0) {
            return false;
        }
        p += put;
        n -= static_cast<size_t>(put);
    }
    return true;
}

SingleCopy probe_single_copy()
{
    constexpr std::uint64_t magic = 0x756c6d7069636d61ULL;
    struct Target {
        std::uint64_t pid;
        std::uint64_t addr;
    };
    struct Result {
        std::int32_t err; // 0: read the right value
        std::int32_t short_read;
    };

    int to_reader[2];  // target -> reader: pid and address
    int to_parent[2];  // reader -> parent: the result
    int hold[2];       // the target waits on this until everyone closes it
    if (::pipe(to_reader) != 0 || ::pipe(to_parent) != 0 || ::pipe(hold) != 0) {
        return {false, std::string("could not run the probe: pipe: ") + std::strerror(errno)};
    }
    std::fflush(nullptr);

    pid_t target = ::fork();
    if (target == 0) {
        ::close(to_reader[0]);
        ::close(to_parent[0]);
        ::close(to_parent[1]);
        ::close(hold[1]);
        static volatile std::uint64_t word = magic;
        Target t{static_cast<std::uint64_t>(::getpid()),
                 reinterpret_cast<std::uint64_t>(&word)};
        (void)write_all(to_reader[1], &t, sizeof t);
        char c;
        while (::read(hold[0], &c, 1) < 0 && errno == EINTR) {
        }
        ::_exit(0);
    }
    pid_t reader = target < 0 ? -1 : ::fork();
    if (reader == 0) {
        ::close(to_reader[1]);
        ::close(to_parent[0]);
        ::close(hold[0]);
        ::close(hold[1]);
        Result r{0, 0};
        Target t{};
        if (!read_all(to_reader[0], &t, sizeof t)) {
            r.err = EPIPE;
        } else {
            std::uint64_t got = 0;
            iovec local{&got, sizeof got};
            iovec remote{reinterpret_cast<void*>(t.addr), sizeof got};
            ssize_t n = ::process_vm_readv(static_cast<pid_t>(t.pid), &local, 1, &remote, 1, 0);
            if (n < 0) {
                r.err = errno;
            } else if (n != static_cast<ssize_t>(sizeof got) || got != magic) {
                r.short_read = 1;
            }
        }
        (void)write_all(to_parent[1], &r, sizeof r);
        ::_exit(0);
    }

    ::close(to_reader[0]);
    ::close(to_reader[1]);
    ::close(to_parent[1]);
    ::close(hold[0]);
    SingleCopy out;
    Result r{};
    pollfd pfd{to_parent[0], POLLIN, 0};
    if (target < 0 || reader < 0) {
        out.why = std::string("could not run the probe: fork: ") + std::strerror(errno);
    } else if (::poll(&pfd, 1, 10000) <= 0 || !read_all(to_parent[0], &r, sizeof r)) {
        out.why = "could not run the probe: the probe processes did not answer";
    } else if (r.err != 0) {
        out.why = explain(r.err);
    } else if (r.short_read != 0) {
        out.why = "process_vm_readv between two sibling processes read the wrong bytes";
    } else {
        out.kernel_allows = true;
    }
    ::close(hold[1]);
    ::close(to_parent[0]);
    for (pid_t p : {target, reader}) {
        if (p > 0) {
            if (!out.kernel_allows) {
                ::kill(p, SIGKILL); // harmless if it has exited already
            }
            while (::waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }
    return out;
}

// ---------------------------------------------------------------- parameters

const char* kind_name(ParamKind k)
{
    switch (k) {
    case ParamKind::integer: return "integer";
    case ParamKind::size: return "size";
    case ParamKind::boolean: return "on/off";
    case ParamKind::real: return "real";
    case ParamKind::text: return "text";
    case ParamKind::choice: return "choice";
    }
    return "?";
}

std::string type_text(const ParamBase& p)
{
    if (p.kind() == ParamKind::choice && p.choices() != nullptr) {
        return std::string("one of ") + p.choices();
    }
    return kind_name(p.kind());
}

// The help line, naming the choices when the help does not already.
std::string help_text(const ParamBase& p)
{
    std::string h = p.help();
    if (p.kind() == ParamKind::choice && p.choices() != nullptr &&
        h.find(p.choices()) == std::string::npos) {
        h += std::string(" (") + p.choices() + ")";
    }
    return h;
}

// The current value and where it comes from.
struct Value {
    std::string text;
    std::string source; // "default", "environment", or why the setting is ignored
    bool invalid = false;
};

Value current(ParamBase& p)
{
    Value v;
    std::string why;
    bool ok = p.reload(why);
    v.text = p.value_text();
    if (p.env_value() == nullptr) {
        v.source = "default";
    } else if (ok) {
        v.source = "environment";
    } else {
        v.invalid = true;
        v.source = p.env_name() + " ignored: " + why;
    }
    return v;
}

std::string prefix_of(const ParamBase& p)
{
    std::string_view n = p.name();
    return std::string(n.substr(0, n.find('_')));
}

// Layer of a parameter prefix, for the group headings and their order.
std::pair<int, std::string> layer_of(const std::string& prefix)
{
    if (prefix == "mpi" || prefix == "coll" || prefix == "initial") { // initial_errhandler
        return {0, "mpi/"};
    }
    if (prefix == "intra") {
        return {1, "ft/intra/"};
    }
    if (prefix == "rep") {
        return {2, "ft/rep/"};
    }
    if (prefix == "ft") {
        return {3, "ft/"};
    }
    if (prefix == "ulm") {
        return {4, "ulm/"};
    }
    if (prefix == "path" || prefix == "lossy") {
        return {5, "paths/"};
    }
    for (const auto& r : ulmpi::path::registered_paths()) {
        if (prefix == r.name) {
            return {5, "paths/" + prefix + "/"};
        }
    }
    return {6, "runtime/"};
}

// Parameters grouped by prefix, groups in layer order (mpi first).
std::vector<std::pair<std::string, std::vector<ParamBase*>>> grouped()
{
    std::map<std::string, std::vector<ParamBase*>> by_prefix;
    for (ParamBase* p : ulmpi::rt::all_params()) {
        by_prefix[prefix_of(*p)].push_back(p);
    }
    std::vector<std::pair<std::string, std::vector<ParamBase*>>> out(by_prefix.begin(),
                                                                     by_prefix.end());
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return layer_of(a.first).first < layer_of(b.first).first;
    });
    return out;
}

void print_param_long(ParamBase& p)
{
    Value v = current(p);
    std::printf("%s\n", p.name());
    std::printf("    %s\n", help_text(p).c_str());
    std::printf("    type:        %s\n", type_text(p).c_str());
    std::printf("    default:     %s\n", p.default_text().c_str());
    std::printf("    value:       %s (%s)\n", v.text.c_str(), v.source.c_str());
    std::printf("    set with:    %s=VALUE or mpirun --param %s=VALUE\n", p.env_name().c_str(),
                p.name());
}

void print_params(bool long_form)
{
    auto groups = grouped();
    size_t wname = 4;
    size_t wtype = 4;
    size_t wdef = 7;
    size_t wval = 5;
    for (ParamBase* p : ulmpi::rt::all_params()) {
        Value v = current(*p);
        wname = std::max(wname, std::strlen(p->name()));
        wtype = std::max(wtype, std::strlen(kind_name(p->kind())));
        wdef = std::max(wdef, p->default_text().size());
        wval = std::max(wval, v.text.size() + (v.source == "default" ? 0 : 2));
    }
    std::printf("Parameters (%zu). Set one with ULMPI_<NAME>=VALUE or mpirun --param name=value;\n"
                "a value marked * comes from the environment, ! marks a setting that is ignored.\n",
                ulmpi::rt::all_params().size());
    if (!long_form) {
        std::printf("\n  %-*s  %-*s  %-*s  %-*s  %s\n", static_cast<int>(wname), "name",
                    static_cast<int>(wtype), "type", static_cast<int>(wdef), "default",
                    static_cast<int>(wval), "value", "help");
    }
    std::vector<std::string> ignored;
    for (auto& [prefix, params] : groups) {
        std::printf("\n[%s] %s\n", prefix.c_str(), layer_of(prefix).second.c_str());
        if (long_form) {
            for (ParamBase* p : params) {
                std::printf("  ");
                print_param_long(*p);
            }
            continue;
        }
        for (ParamBase* p : params) {
            Value v = current(*p);
            std::string val = v.text;
            if (v.invalid) {
                val += " !";
                ignored.push_back(v.source);
            } else if (v.source != "default") {
                val += " *";
            }
            std::printf("  %-*s  %-*s  %-*s  %-*s  %s\n", static_cast<int>(wname), p->name(),
                        static_cast<int>(wtype), kind_name(p->kind()), static_cast<int>(wdef),
                        p->default_text().c_str(), static_cast<int>(wval), val.c_str(),
                        help_text(*p).c_str());
        }
    }
    for (const std::string& s : ignored) {
        std::printf("! %s\n", s.c_str());
    }
    auto report = ulmpi::rt::config_validate();
    for (const std::string& w : report.warnings) {
        std::printf("warning: %s\n", w.c_str());
    }
}

// ---------------------------------------------------------------- the rest

std::string default_paths()
{
    ParamBase* inc = ulmpi::rt::find_param("path_include");
    return inc != nullptr ? inc->value_text() : "";
}

bool selected(const std::string& list, const char* name)
{
    std::string padded = "," + list + ",";
    return padded.find(std::string(",") + name + ",") != std::string::npos;
}

void print_header()
{
    std::printf("ulmpi %s (MPI %d.%d interface)\n", ULMPI_VERSION_STRING, MPI_VERSION,
                MPI_SUBVERSION);
    std::printf("  prefix:     %s (configured)\n", ULMPI_INFO_PREFIX);
    char self[4096];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        std::printf("  this copy:  %s\n", self);
    }
    std::printf("  built with: g++ %s, C++%ld, %s build\n", __VERSION__, __cplusplus / 100 % 100,
                ULMPI_INFO_BUILDTYPE);
    std::printf("  crc32c:     %s (ULMPI_CRC32C_IMPL chooses)\n",
                ulmpi::rt::crc32c_implementation());
}

void print_paths()
{
    std::string use = default_paths();
    std::printf("\nPaths built (highest priority first; ULMPI_PATH_INCLUDE=%s chooses):\n",
                use.c_str());
    for (const auto& r : ulmpi::path::registered_paths()) {
        std::printf("  %-8s priority %3d  %s\n", r.name, r.priority,
                    selected(use, r.name) ? "used" : "built, not selected");
    }
}

void print_verbs()
{
    std::printf("\nRDMA devices (verbs path):\n%s", ulmpi::path::verbs::describe_devices().c_str());
}

void print_ofi()
{
    std::printf("\nlibfabric providers (ofi path; docs/ofi.md):\n%s",
                ulmpi::path::ofi::describe_providers().c_str());
}

void print_bootstrap()
{
    ulmpi::rt::BootChoice c = ulmpi::rt::choose_bootstrap();
    std::printf("\nBootstrap (how a rank finds the others; docs/slurm.md):\n");
    std::printf("  here:       %s, because %s\n", ulmpi::rt::boot_kind_name(c.kind),
                c.reason.c_str());
    std::printf("  built:      ulmpi (mpirun), pmi2 (srun --mpi=pmi2), %s, singleton\n",
                ulmpi::rt::pmix_built() ? "pmix (srun --mpi=pmix)"
                                        : "no pmix (libpmix-dev was missing at configure time)");
}

bool shm_built()
{
    for (const auto& r : ulmpi::path::registered_paths()) {
        if (std::string_view(r.name) == "shm") {
            return true;
        }
    }
    return false;
}

// "yes"/"no" for the parsable form, a sentence for people.
std::pair<bool, std::string> shm_single_copy(const SingleCopy& probe)
{
    if (!shm_built()) {
        return {false, "the shm path is not built"};
    }
    ParamBase* on = ulmpi::rt::find_param("shm_single_copy");
    bool wanted = on == nullptr || on->value_text() == "on";
    if (!probe.kernel_allows) {
        return {false, probe.why};
    }
    if (!wanted) {
        return {false, "switched off by ULMPI_SHM_SINGLE_COPY (this machine would allow it)"};
    }
    return {true, "process_vm_readv between two sibling processes works"};
}

void print_shm(const SingleCopy& probe)
{
    auto [yes, why] = shm_single_copy(probe);
    std::printf("\nShared memory (shm) large messages:\n");
    if (yes) {
        ParamBase* min = ulmpi::rt::find_param("ulm_single_copy_min");
        ParamBase* max = ulmpi::rt::find_param("shm_single_copy_max");
        std::printf("  single copy: the receiver reads the sender's buffer with process_vm_readv");
        if (min != nullptr) {
            std::printf(" (messages of %s bytes and more", min->value_text().c_str());
            if (max != nullptr && max->value_text() != "0") {
                std::printf(", up to %s; larger ones stream through shared fragments", max->value_text().c_str());
            }
            std::printf(")");
        }
        std::printf("\n  why:         %s\n", why.c_str());
    } else {
        std::printf("  copy-in/copy-out through the shared segment (two copies)\n");
        std::printf("  why:         %s\n", why.c_str());
    }
}

void print_parsable(bool with_probe)
{
    std::printf("version:%s\n", ULMPI_VERSION_STRING);
    std::printf("mpi_version:%d.%d\n", MPI_VERSION, MPI_SUBVERSION);
    std::printf("prefix:%s\n", ULMPI_INFO_PREFIX);
    std::printf("crc32c:%s\n", ulmpi::rt::crc32c_implementation());
    for (const auto& r : ulmpi::path::registered_paths()) {
        std::printf("path:%s:%d\n", r.name, r.priority);
    }
    ulmpi::rt::BootChoice boot = ulmpi::rt::choose_bootstrap();
    std::printf("bootstrap:%s:%s\n", ulmpi::rt::boot_kind_name(boot.kind), boot.reason.c_str());
    std::printf("bootstrap_pmix:%s\n", ulmpi::rt::pmix_built() ? "yes" : "no");
    if (with_probe) {
        auto [yes, why] = shm_single_copy(probe_single_copy());
        std::printf("shm_single_copy:%s:%s\n", yes ? "yes" : "no", why.c_str());
    }
    for (ParamBase* p : ulmpi::rt::all_params()) {
        Value v = current(*p);
        std::printf("param:%s:%s:%s:%s:%s:%s\n", p->name(), type_text(*p).c_str(),
                    p->default_text().c_str(), v.text.c_str(),
                    v.invalid ? "ignored" : v.source.c_str(), p->help());
    }
}

void usage(std::FILE* out)
{
    std::fprintf(out,
                 "Usage: ulmpi_info [--all | --params | --param NAME | --parsable | --version]\n"
                 "\n"
                 "Without options: version, build, paths, whether shared memory can use single\n"
                 "copy here, and every parameter with its type, default, current value (from\n"
                 "the environment) and help, grouped by prefix.\n"
                 "  --all          the same, every parameter in long form\n"
                 "  --params       only the parameters\n"
                 "  --param NAME   one parameter in long form (exit status 1 if unknown)\n"
                 "  --parsable     everything as key:value lines, for scripts\n"
                 "  --version      print \"ulmpi <version>\"\n"
                 "  -h, --help     this text\n");
}

int print_one(const char* name)
{
    ParamBase* p = ulmpi::rt::find_param(name);
    std::string want = name;
    // Accept the environment spelling too: ULMPI_SHM_EAGER_LIMIT.
    if (p == nullptr && (want.starts_with("ULMPI_") || want.starts_with("ulmpi_"))) {
        p = ulmpi::rt::find_param(want.substr(6));
    }
    if (p != nullptr) {
        print_param_long(*p);
        return 0;
    }
    std::fprintf(stderr, "ulmpi_info: no parameter named '%s'", name);
    std::string lower;
    for (char c : want) {
        lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    std::string similar;
    for (ParamBase* q : ulmpi::rt::all_params()) {
        if (std::string_view(q->name()).find(lower) != std::string_view::npos) {
            similar += std::string(similar.empty() ? "" : ", ") + q->name();
        }
    }
    if (!similar.empty()) {
        std::fprintf(stderr, "; similar: %s", similar.c_str());
    }
    std::fprintf(stderr, " (ulmpi_info --params lists them all)\n");
    return 1;
}

} // namespace

int main(int argc, char** argv)
{
    enum class Mode { summary, all, params, one, parsable } mode = Mode::summary;
    const char* name = nullptr;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--all" || a == "-a") {
            mode = Mode::all;
        } else if (a == "--params") {
            mode = Mode::params;
        } else if (a == "--param" && i + 1 < argc) {
            mode = Mode::one;
            name = argv[++i];
        } else if (a.starts_with("--param=")) {
            mode = Mode::one;
            name = argv[i] + 8;
        } else if (a == "--parsable") {
            mode = Mode::parsable;
        } else if (a == "--version" || a == "-V") {
            std::printf("ulmpi %s\n", ULMPI_VERSION_STRING);
            return 0;
        } else if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "ulmpi_info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    // ulmpi_info reports malformed settings itself; the registry's own log line
    // (printed when a value is first read) would only repeat them.
    ulmpi::rt::set_log_level(static_cast<ulmpi::rt::LogLevel>(-1));

    switch (mode) {
    case Mode::one:
        return print_one(name);
    case Mode::params:
        print_params(false);
        return 0;
    case Mode::parsable:
        print_parsable(true);
        return 0;
    case Mode::summary:
    case Mode::all:
        break;
    }
    SingleCopy probe = shm_built() ? probe_single_copy() : SingleCopy{};
    print_header();
    print_paths();
    print_bootstrap();
    print_shm(probe);
    print_verbs();
    print_ofi();
    std::printf("\n");
    print_params(mode == Mode::all);
    return 0;
}
