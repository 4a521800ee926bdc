#include "runtime/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

namespace ulmpi::rt {
namespace {

char g_identity[64] = "ulmpi";
LogLevel g_level = LogLevel::warn;
bool g_time = false;

const char* level_word(LogLevel level)
{
    switch (level) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warning";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
    case LogLevel::trace: return "trace";
    }
    return "";
}

void write_all(int fd, const char* buf, size_t len)
{
    while (len > 0) {
        ssize_t n = ::write(fd, buf, len);
        if (n < 0) {
            return;
        }
        buf += n;
        len -= static_cast<size_t>(n);
    }
}

} // namespace

void set_log_identity(const char* who) noexcept
{
    std::snprintf(g_identity, sizeof g_identity, "%s", who);
}

const char* log_identity() noexcept { return g_identity; }
void set_log_level(LogLevel level) noexcept { g_level = level; }
LogLevel log_level() noexcept { return g_level; }
void set_log_time(bool on) noexcept { g_time = on; }

void vlog(LogLevel level, const char* fmt, va_list ap) noexcept
{
    char line[2048];
    int n = 0;
    if (g_time) {
        timespec ts{};
        ::clock_gettime(CLOCK_REALTIME, &ts);
        tm t{};
        ::gmtime_r(&ts.tv_sec, &t);
        n = std::snprintf(line, sizeof line, "%02d:%02d:%02d.%06ld ", t.tm_hour, t.tm_min, t.tm_sec,
                          ts.tv_nsec / 1000);
    }
    const int k = std::snprintf(line + n, sizeof line - static_cast<size_t>(n), "%s: %s: ", g_identity,
                                level_word(level));
    if (n < 0 || k < 0) {
        return;
    }
    n += k;
    int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n) - 1, fmt, ap);
    size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
    if (len > sizeof line - 2) {
        len = sizeof line - 2;
    }
    line[len++] = '\n';
    write_all(STDERR_FILENO, line, len);
}

void log(LogLevel level, const char* fmt, ...) noexcept
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void fatal(const char* fmt, ...) noexcept
{
    va_list ap;
    va_start(ap, fmt);
    vlog(LogLevel::error, fmt, ap);
    va_end(ap);
    std::abort();
}

} // namespace ulmpi::rt
