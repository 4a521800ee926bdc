// SingletonBootstrap: a program started without a launcher is a job of one
// rank. put/get stay in this process, fence has nobody to wait for, abort
// prints the message and exits with the code.
#include "runtime/boot_wire.h"
#include "runtime/bootstrap.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <sys/random.h>
#include <unistd.h>
#include <utility>

namespace ulmpi::rt {
namespace {

class SingletonBootstrap final : public Bootstrap {
public:
    SingletonBootstrap()
    {
        char host[256] = {};
        if (::gethostname(host, sizeof host - 1) != 0) {
            std::snprintf(host, sizeof host, "localhost");
        }
        job_.host = host;
        job_.jobid = random_jobid();
        job_.node_of_rank = {0};
    }

    const JobInfo& job() const override { return job_; }

    Status put(std::string_view key, const void* data, std::size_t len) override
    {
        const auto* b = static_cast<const std::byte*>(data);
        store_[std::string(key)].assign(b, b + len);
        return Errc::ok;
    }

    Status fence() override { return Errc::ok; }

    Status get(int rank, std::string_view key, std::vector<std::byte>& out) override
    {
        if (rank != 0) {
            return Errc::invalid_arg;
        }
        auto it = store_.find(std::string(key));
        if (it == store_.end()) {
            return Errc::invalid_arg;
        }
        out = it->second;
        return Errc::ok;
    }

    [[noreturn]] void abort(int code, std::string_view msg) override
    {
        char line[1024];
        int n = std::snprintf(line, sizeof line,
                              "ulmpi: rank 0 called MPI_Abort with code %d%s%.*s\n", code,
                              msg.empty() ? "" : ": ", static_cast<int>(msg.size()), msg.data());
        if (n > 0) {
            ssize_t w = ::write(STDERR_FILENO, line,
                                std::min(static_cast<std::size_t>(n), sizeof line - 1));
            (void)w;
        }
        ::_exit(wire::abort_exit_status(code));
    }

    // The job is this process: its names too.
    Status publish_name(std::string_view service, std::string_view port) override
    {
        return names_.emplace(std::string(service), std::string(port)).second ? Errc::ok
                                                                                : Errc::again;
    }
    Status unpublish_name(std::string_view service) override
    {
        return names_.erase(std::string(service)) != 0 ? Errc::ok : Errc::invalid_arg;
    }
    Status lookup_name(std::string_view service, std::string& port) override
    {
        auto it = names_.find(std::string(service));
        if (it == names_.end()) {
            return Errc::invalid_arg;
        }
        port = it->second;
        return Errc::ok;
    }

    Status finalize() override { return Errc::ok; }
    bool poll_event(FailureEvent&) override { return false; }
    int event_fd() const override { return -1; }
    const char* name() const override { return "singleton"; }

private:
    static std::string random_jobid()
    {
        unsigned char raw[8] = {};
        if (::getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw)) {
            // Unlikely; the pid keeps concurrent singletons apart.
            std::uint64_t v = static_cast<std::uint64_t>(::getpid()) * 0x9e3779b97f4a7c15ULL;
            std::memcpy(raw, &v, sizeof raw);
        }
        static constexpr char digits[] = "0123456789abcdef";
        std::string out;
        for (unsigned char b : raw) {
            out.push_back(digits[b >> 4]);
            out.push_back(digits[b & 15]);
        }
        return out;
    }

    JobInfo job_;
    std::map<std::string, std::vector<std::byte>> store_;
    std::map<std::string, std::string> names_; // MPI_Publish_name
};

} // namespace

std::unique_ptr<Bootstrap> make_singleton_bootstrap(std::string&)
{
    return std::make_unique<SingletonBootstrap>();
}

} // namespace ulmpi::rt
