// The one status type used inside ulmpi. It becomes an MPI error class at the
// noexcept boundary in mpi/entry; nothing below mpi/ knows MPI error classes.
#pragma once

#include <cstdint>

namespace ulmpi::rt {

enum class Errc : std::uint8_t {
    ok = 0,
    again,          // no resources right now: the caller queues and retries
    no_memory,
    invalid_arg,
    truncated,      // incoming message longer than the posted buffer
    peer_failed,    // the peer process is gone
    unreachable,    // no path can reach the peer (retries exhausted, links down)
    io_error,       // a system call failed
    protocol,       // malformed or unexpected wire data
    not_supported,
    timeout,
    internal,
    revoked,        // the communicator was revoked (fault tolerance: MPIX_Comm_revoke)
};

class [[nodiscard]] Status {
public:
    constexpr Status() noexcept = default;
    constexpr Status(Errc code) noexcept : code_(code) {} // NOLINT: implicit by design
    [[nodiscard]] constexpr bool ok() const noexcept { return code_ == Errc::ok; }
    [[nodiscard]] constexpr Errc code() const noexcept { return code_; }
    constexpr bool operator==(Errc other) const noexcept { return code_ == other; }
    // Explicitly discard a status the caller has decided it cannot act on.
    constexpr void ignore() const noexcept {}

private:
    Errc code_ = Errc::ok;
};

const char* errc_name(Errc code) noexcept;

} // namespace ulmpi::rt
