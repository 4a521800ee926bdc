// Logging: one line per message, prefixed with the process identity, written
// with a single write(2) so lines from many ranks never interleave.
#pragma once

#include <cstdarg>

namespace ulmpi::rt {

enum class LogLevel : int { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

// Identity printed in front of every line: "ulmpi[rank 3]" or "mpirun".
void set_log_identity(const char* who) noexcept;
const char* log_identity() noexcept;
void set_log_level(LogLevel level) noexcept;
// Prefix every line with the wall-clock time (UTC, microseconds): lines of
// several hosts line up with each other and with outside events.
void set_log_time(bool on) noexcept;
LogLevel log_level() noexcept;

[[gnu::format(printf, 2, 3)]] void log(LogLevel level, const char* fmt, ...) noexcept;
void vlog(LogLevel level, const char* fmt, va_list ap) noexcept;

// Print and terminate the process at once (internal invariant broken).
[[noreturn, gnu::format(printf, 1, 2)]] void fatal(const char* fmt, ...) noexcept;

} // namespace ulmpi::rt

#define ULMPI_LOG(level, ...)                                                                      \
    do {                                                                                           \
        if (static_cast<int>(level) <= static_cast<int>(::ulmpi::rt::log_level())) {               \
            ::ulmpi::rt::log(level, __VA_ARGS__);                                                  \
        }                                                                                          \
    } while (0)
#define ULMPI_ERROR(...) ULMPI_LOG(::ulmpi::rt::LogLevel::error, __VA_ARGS__)
#define ULMPI_WARN(...) ULMPI_LOG(::ulmpi::rt::LogLevel::warn, __VA_ARGS__)
#define ULMPI_INFO(...) ULMPI_LOG(::ulmpi::rt::LogLevel::info, __VA_ARGS__)
#define ULMPI_DEBUG(...) ULMPI_LOG(::ulmpi::rt::LogLevel::debug, __VA_ARGS__)
#define ULMPI_TRACE(...) ULMPI_LOG(::ulmpi::rt::LogLevel::trace, __VA_ARGS__)

#define ULMPI_LIKELY(x) __builtin_expect(!!(x), 1)
#define ULMPI_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define ULMPI_ASSERT(cond)                                                                         \
    do {                                                                                           \
        if (ULMPI_UNLIKELY(!(cond))) {                                                             \
            ::ulmpi::rt::fatal("assertion failed: %s (%s:%d)", #cond, __FILE__, __LINE__);         \
        }                                                                                          \
    } while (0)
