// The bootstrap wire protocol between a rank and mpirun (or, later, the
// per-host daemon that relays for it). This file is a codec only: no I/O, so
// every rule below is checked by unit tests.
//
// A frame is a 12-byte header followed by a body; every integer is fixed
// width and little-endian:
//
//     u32 body_len   bytes after the header; at most the reader's limit
//     u8  version    kWireVersion; any other value is refused
//     u8  type       MsgType
//     u16 reserved   zero
//     i32 rank       the rank the frame is from (rank -> server) or for
//                    (server -> rank); -1 from the server means "every rank
//                    on this connection". A daemon multiplexes the ranks of
//                    its host over one connection by this field.
//
// Bodies (str = u32 length + bytes; bytes = u32 length + bytes):
//
//     HELLO       secret[16] i32 rank u32 pid           rank -> server, first
//     WELCOME     u32 universe_size u32 n i32 node[n]   node of every rank
//     REFUSED     str reason                            then the server closes
//     PUT         str key bytes value
//     FENCE       (empty)
//     FENCE_DONE  u32 n { i32 rank str key bytes value } x n
//                 every value put by any rank since the previous fence
//     GET         i32 rank str key
//     VALUE       u8 found bytes value
//     ABORT       i32 code str message
//     FINALIZE    (empty)
//     EVENT       u8 kind i32 rank i32 node str detail  server -> rank
//
// A connection is trusted only after a HELLO carrying the job secret; until
// then its frames are limited to kMaxHelloFrame bytes.
#pragma once

#include "runtime/status.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

struct sockaddr_storage;

namespace ulmpi::rt::wire {

inline constexpr std::uint8_t kWireVersion = 1;
inline constexpr std::size_t kHeaderBytes = 12;
inline constexpr std::size_t kMaxFrame = 64u << 20;  // a FENCE_DONE of a big job
inline constexpr std::size_t kMaxHelloFrame = 4096;  // before the secret is checked
inline constexpr std::size_t kMaxKey = 1024;

// Layout of the header (documentation and size check; encoding is explicit).
struct FrameHeader {
    std::uint32_t body_len;
    std::uint8_t version;
    std::uint8_t type;
    std::uint16_t reserved;
    std::int32_t rank;
};
static_assert(sizeof(FrameHeader) == kHeaderBytes);
static_assert(std::has_unique_object_representations_v<FrameHeader>);

enum class MsgType : std::uint8_t {
    hello = 1,
    welcome = 2,
    refused = 3,
    put = 4,
    fence = 5,
    fence_done = 6,
    get = 7,
    value = 8,
    abort = 9,
    finalize = 10,
    event = 11,
};
const char* msg_type_name(MsgType t) noexcept;

using Secret = std::array<std::uint8_t, 16>;
using Bytes = std::vector<std::byte>;

struct Hello {
    Secret secret{};
    std::int32_t rank = 0;
    std::uint32_t pid = 0;
};
struct Welcome {
    std::uint32_t universe_size = 0;
    std::vector<std::int32_t> node_of_rank;
};
struct Refused {
    std::string reason;
};
struct Put {
    std::string key;
    Bytes value;
};
struct Fence {};
struct KeyValue {
    std::int32_t rank = 0;
    std::string key;
    Bytes value;
};
struct FenceDone {
    std::vector<KeyValue> entries;
};
struct Get {
    std::int32_t rank = 0;
    std::string key;
};
struct Value {
    bool found = false;
    Bytes value;
};
struct Abort {
    std::int32_t code = 0;
    std::string message;
};
struct Finalize {};
enum class EventKind : std::uint8_t { rank_failed = 0, host_failed = 1, job_ending = 2 };
struct Event {
    EventKind kind = EventKind::rank_failed;
    std::int32_t rank = -1;
    std::int32_t node = -1;
    std::string detail;
};

using Body = std::variant<Hello, Welcome, Refused, Put, Fence, FenceDone, Get, Value, Abort,
                          Finalize, Event>;

struct Message {
    std::int32_t rank = -1; // header rank field
    Body body;
};

MsgType type_of(const Body& body) noexcept;

// Appends one frame to `out`.
void encode(const Message& msg, Bytes& out);
inline Bytes encode(const Message& msg)
{
    Bytes out;
    encode(msg, out);
    return out;
}

// Decodes the first frame of `in`.
//   ok          `out` filled, `consumed` = bytes of the frame
//   again       `in` holds only part of a frame: read more
//   protocol    malformed (bad version, unknown type, nonzero reserved, body
//               longer than max_frame, fields past the body's end, trailing
//               bytes); `why` says what. The stream cannot be resynchronised.
Status decode(std::span<const std::byte> in, std::size_t max_frame, Message& out,
              std::size_t& consumed, std::string& why);

// Accumulates a byte stream and cuts it into messages.
class FrameReader {
public:
    explicit FrameReader(std::size_t max_frame = kMaxFrame) : max_frame_(max_frame) {}
    void set_max_frame(std::size_t max_frame) { max_frame_ = max_frame; }
    void append(const void* data, std::size_t len);
    // ok: one message in `out`; again: need more bytes; protocol: broken stream.
    Status next(Message& out, std::string& why);
    std::size_t buffered() const { return buf_.size() - pos_; }

private:
    Bytes buf_;
    std::size_t pos_ = 0;
    std::size_t max_frame_;
};

// Exit status of a job ended by abort(code): the low 8 bits of the code, but
// never 0 for a nonzero code (256 would otherwise read as success).
int abort_exit_status(int code) noexcept;

// Job secret as 32 lower-case hex digits.
std::string secret_to_hex(const Secret& s);
bool secret_from_hex(std::string_view hex, Secret& out);
// Compares in time independent of where the secrets differ.
bool secret_equal(const Secret& a, const Secret& b) noexcept;

// ULMPI_BOOT_ADDR forms:
//   unix-abstract:NAME   Linux abstract socket (no file left behind)
//   unix:/PATH           socket file
//   tcp:IPV4:PORT        TCP
struct BootAddr {
    enum class Kind : std::uint8_t { unix_abstract, unix_path, tcp };
    Kind kind = Kind::unix_abstract;
    std::string name;        // abstract name or path
    std::string ip;          // tcp
    std::uint16_t port = 0;  // tcp
};
bool parse_boot_addr(std::string_view text, BootAddr& out, std::string& why);
std::string format_boot_addr(const BootAddr& addr);
// Fills a socket address; returns its length, 0 when it cannot be expressed.
unsigned to_sockaddr(const BootAddr& addr, sockaddr_storage& ss);

// The environment mpirun gives every rank (see docs/launcher.md). Each name
// is also listed by rt::is_runtime_variable().
namespace env {
inline constexpr const char* rank = "ULMPI_RANK";
inline constexpr const char* size = "ULMPI_SIZE";
inline constexpr const char* local_rank = "ULMPI_LOCAL_RANK";
inline constexpr const char* local_size = "ULMPI_LOCAL_SIZE";
inline constexpr const char* node_id = "ULMPI_NODE_ID";
inline constexpr const char* num_nodes = "ULMPI_NUM_NODES";
inline constexpr const char* host = "ULMPI_HOST";
inline constexpr const char* jobid = "ULMPI_JOBID";
inline constexpr const char* boot_addr = "ULMPI_BOOT_ADDR";
inline constexpr const char* job_secret = "ULMPI_JOB_SECRET";
inline constexpr const char* universe_size = "ULMPI_UNIVERSE_SIZE";
inline constexpr const char* appnum = "ULMPI_APPNUM";
inline constexpr const char* incarnation = "ULMPI_INCARNATION";
inline constexpr const char* restarted = "ULMPI_RESTARTED";
inline constexpr const char* all[] = {rank,   size,      local_rank,    local_size, node_id,
                                      num_nodes, host,   jobid,         boot_addr,  job_secret,
                                      universe_size, appnum, incarnation, restarted};
} // namespace env

} // namespace ulmpi::rt::wire
