#include "runtime/status.h"

namespace ulmpi::rt {

const char* errc_name(Errc code) noexcept
{
    switch (code) {
    case Errc::ok: return "ok";
    case Errc::again: return "no resources (retry)";
    case Errc::no_memory: return "out of memory";
    case Errc::invalid_arg: return "invalid argument";
    case Errc::truncated: return "message truncated";
    case Errc::peer_failed: return "peer process failed";
    case Errc::unreachable: return "peer unreachable";
    case Errc::io_error: return "I/O error";
    case Errc::protocol: return "protocol error";
    case Errc::not_supported: return "not supported";
    case Errc::timeout: return "timed out";
    case Errc::internal: return "internal error";
    case Errc::revoked: return "the communicator was revoked";
    }
    return "unknown error";
}

} // namespace ulmpi::rt
