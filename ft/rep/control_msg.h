// The replicator's control messages, on kRepContext between physical
// processes (replicator.cpp, recovery.cpp): acknowledgements, requests (an
// orphan or a new process asks a server for a rank's messages), digests
// (cross-checking), the recovery's notice, welcome, ready and ack_upto, and
// resends (a receiver asks its server again for messages cut mid-stream).
// A request, an ack_upto and a resend are a RequestMsg followed by `nholes`
// numbers and then `npending` numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ulmpi::rep {

enum class Kind : std::uint8_t {
    ack = 1,
    request = 2,
    digest = 3,
    notice = 4,
    welcome = 5,
    ready = 6,
    ack_upto = 7,
    resend = 8,
};

struct AckMsg {
    Kind kind;
    std::uint8_t pad[3];
    std::uint32_t count;          // acknowledged messages that follow
};
struct RequestMsg {
    Kind kind;                    // request, ack_upto (a new process has every message up
    std::uint8_t pad[3];          // to `next` but the numbers that follow) or resend
    std::uint32_t nholes;         // request: numbers to send first; resend: to send again
    std::uint64_t next;           // request: first number not received
    std::uint32_t epoch;          // incarnation of the server it replaces (stale requests)
    std::uint32_t npending;       // request, ack_upto: numbers (after the holes) received
                                  // in part: not to send, not acknowledged either
};
// notice (substitute -> everyone: `phys` re-created as `incarnation`, 0: not
// re-created), welcome (-> the substitute: I know it), ready (substitute ->
// the new process: `phys`, in `incarnation`, knows you).
struct NoticeMsg {
    Kind kind;
    std::uint8_t pad[3];
    std::uint32_t phys;
    std::uint32_t incarnation;
    std::uint32_t pad2;
};
struct DigestMsg {
    Kind kind;
    std::uint8_t pad[3];
    std::uint32_t dst;            // logical destination
    std::uint64_t m;              // the message's number to it
    std::int32_t tag;
    std::uint32_t crc;            // CRC32C of its bytes
};
static_assert(sizeof(AckMsg) == 8 && sizeof(RequestMsg) == 24 && sizeof(DigestMsg) == 24 &&
              sizeof(NoticeMsg) == 16);

template <class T> void append(std::vector<std::byte>& v, const T& x)
{
    const auto* p = reinterpret_cast<const std::byte*>(&x);
    v.insert(v.end(), p, p + sizeof x);
}

template <class T> std::vector<std::byte> bytes_of(const T& x)
{
    std::vector<std::byte> v;
    append(v, x);
    return v;
}

// A request, an ack_upto or a resend, with its numbers.
inline std::vector<std::byte> request_bytes(Kind kind, std::uint64_t next, std::uint32_t epoch,
                                            const std::vector<std::uint64_t>& numbers,
                                            const std::vector<std::uint64_t>& pending = {})
{
    std::vector<std::byte> b =
        bytes_of(RequestMsg{kind, {}, static_cast<std::uint32_t>(numbers.size()), next, epoch,
                            static_cast<std::uint32_t>(pending.size())});
    for (std::uint64_t m : numbers) {
        append(b, m);
    }
    for (std::uint64_t m : pending) {
        append(b, m);
    }
    return b;
}

// Reads a request, an ack_upto or a resend of `len` bytes (at least a
// RequestMsg): the header, the holes and the pending numbers that follow it
// (as many as `len` holds).
inline RequestMsg read_request(const std::byte* msg, std::size_t len,
                               std::vector<std::uint64_t>& numbers,
                               std::vector<std::uint64_t>& pending)
{
    RequestMsg q;
    std::memcpy(&q, msg, sizeof q);
    const std::size_t total = std::size_t{q.nholes} + q.npending;
    for (std::size_t i = 0; i < total && sizeof q + (i + 1) * 8 <= len; ++i) {
        std::uint64_t m;
        std::memcpy(&m, msg + sizeof q + i * 8, 8);
        (i < q.nholes ? numbers : pending).push_back(m);
    }
    return q;
}

} // namespace ulmpi::rep
