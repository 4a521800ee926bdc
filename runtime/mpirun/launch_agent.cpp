#include "runtime/mpirun/launch_agent.h"

#include "runtime/boot_wire.h"

#include <climits>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

namespace ulmpi::rt::mpirun {
namespace {

bool is_executable(const std::string& path)
{
    return ::access(path.c_str(), X_OK) == 0;
}

} // namespace

std::string describe_status(int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char* desc = ::strsignal(sig);
        return "was killed by signal " + std::to_string(sig) + " (" + (desc ? desc : "?") + ")";
    }
    return "exited with status " + std::to_string(WEXITSTATUS(status));
}

std::vector<std::string> split_words(const std::string& text)
{
    std::vector<std::string> out;
    std::string cur;
    bool in_word = false;
    char quote = 0;
    for (char c : text) {
        if (quote != 0) {
            if (c == quote) {
                quote = 0;
            } else {
                cur.push_back(c);
            }
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            if (in_word) {
                out.push_back(cur);
                cur.clear();
                in_word = false;
            }
        } else {
            cur.push_back(c);
            in_word = true;
        }
    }
    if (in_word) {
        out.push_back(cur);
    }
    return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to)
{
    for (std::size_t pos = s.find(from); pos != std::string::npos;
         pos = s.find(from, pos + to.size())) {
        s.replace(pos, from.size(), to);
    }
    return s;
}

std::string shell_quote(const std::string& w)
{
    if (!w.empty() && w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_-+=/.,:@%") == std::string::npos) {
        return w;
    }
    return "'" + replace_all(w, "'", "'\\''") + "'";
}

std::string find_daemon(std::string& why)
{
    const std::string& forced = boot::daemon_param();
    if (!forced.empty()) {
        return forced;
    }
    char self[PATH_MAX] = {};
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        why = "cannot find mpirun's own path to look for ulmpi_daemon next to it";
        return {};
    }
    std::string dir(self, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& candidate :
         {dir + "/ulmpi_daemon", dir + "/../daemon/ulmpi_daemon"}) {
        if (is_executable(candidate)) {
            char real[PATH_MAX] = {};
            return ::realpath(candidate.c_str(), real) != nullptr ? std::string(real) : candidate;
        }
    }
    why = "cannot find ulmpi_daemon in " + dir + " (set ULMPI_BOOT_DAEMON)";
    return {};
}

} // namespace ulmpi::rt::mpirun
