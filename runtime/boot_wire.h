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
//                 The job's name service (MPI_Publish_name) rides on these:
//                 PUT "name+/<service>" port: publish, answered by VALUE
//                 (found 1: published, 0: the name was taken); PUT
//                 "name-/<service>": unpublish, answered by VALUE (found 1:
//                 it was published); GET rank -1 "name/<service>": lookup.
//                 Names are the job's, not a rank's; no fence carries them.
//     ABORT       i32 code str message
//     FINALIZE    (empty)
//     EVENT       u8 kind i32 rank i32 node i32 incarnation str detail
//                                                    server -> rank (and
//                 to every daemon, which marks its host's notice board)
//     RESPAWN     i32 rank i32 incarnation              rank -> server: start
//                 a new process for `rank` (failed) as that incarnation (FT-MPI
//                 REBUILD); asked by every survivor, done once per incarnation
//     SPAWN       u32 id i32 pair i32 root u32 np i32 parent[np]
//                 u32 napps { strs argv i32 maxprocs str host str wdir } x napps
//                                                       rank -> server: start new
//                 processes into the job (MPI_Comm_spawn[_multiple]); see struct Spawn
//     SPAWN_RESULT u32 id i32 group i32 world_group str reason
//                 u32 n { i32 rank i32 err i32 incarnation } x n   server -> rank: the
//                 world ranks given to the new processes (-1 and an errno: not
//                 started) and their incarnations (> 0: a slot used again)
//     GROUP_FENCE i32 group                             rank -> server: a fence over
//                 the members of a spawn's group, not the whole job (FENCE_DONE
//                 to each member, with what the members put since its last round)
//
// Between mpirun and the per-host daemon (ulmpi_daemon) of a remote host, on
// the same connection that relays the bootstrap frames of the host's ranks
// (header rank: the rank concerned, -1 for the whole host):
//
//     DAEMON_HELLO secret[16] i32 node u32 pid str host  daemon -> mpirun, first
//     LAUNCH      the host's part of the job (see struct Launch)  -> daemon
//     SPAWNED     u32 pid i32 err str step               a rank started (err 0)
//                 or could not be (errno of `step`: fork, pipe, chdir, exec)
//     OUTPUT      u8 stream bytes data                   stdout (1) / stderr (2)
//                 of a rank; empty data: end of that stream
//     EXITED      i32 wait_status                        the rank's process ended
//     RANK_CLOSED (empty)                                the rank's own bootstrap
//                 connection to the daemon ended
//     STDIN       bytes data                             -> daemon, for the stdin
//                 rank; empty: end of file
//     SIGNAL      i32 signal                             -> daemon: to every rank's
//                 process group on the host (header rank >= 0: that rank's only)
//     SHUTDOWN    (empty)                                -> daemon: kill what is
//                 left, remove /dev/shm/ulmpi-<jobid>*, answer BYE, exit
//     BYE         u32 refused u32 shm_removed            daemon -> mpirun, last
//     ADOPT       u8 step i32 incarnation u32 pid i32 out_fd i32 err_fd
//                                                        -> daemon (replica recovery,
//                 docs/replication.md; header rank: the process re-created):
//                 step expect: a rank of this host (the substitute) forks a new
//                 process for it: its HELLO is to be taken here; step take: that
//                 process (pid; the daemon, a child subreaper, is or becomes its
//                 parent) said REPLICA adopt: open its stdout/stderr read ends
//                 (numbers in its own descriptor table) through /proc, and from
//                 then on it is a rank of this host (OUTPUT, EXITED, SIGNAL);
//                 answered ADOPTED
//     ADOPTED     i32 err str reason                     daemon -> mpirun: the
//                 answer to ADOPT take (err 0: taken; else an errno and why)
//
// A connection is trusted only after a HELLO (or DAEMON_HELLO) carrying the
// job secret; until then its frames are limited to kMaxHelloFrame bytes.
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

// 3: ADOPT and ADOPTED (a daemon adopts a re-created replica).
inline constexpr std::uint8_t kWireVersion = 3;
inline constexpr std::size_t kHeaderBytes = 12;
inline constexpr std::size_t kMaxFrame = 64u << 20;  // a FENCE_DONE of a big job
inline constexpr std::size_t kMaxHelloFrame = 4096;  // before the secret is checked
inline constexpr std::size_t kMaxKey = 1024;
// The name service's keys (see GET / VALUE above).
inline constexpr std::string_view kNamePublish = "name+/";
inline constexpr std::string_view kNameUnpublish = "name-/";
inline constexpr std::string_view kNameLookup = "name/";

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
    daemon_hello = 12,
    launch = 13,
    spawned = 14,
    output = 15,
    exited = 16,
    rank_closed = 17,
    stdin_data = 18,
    signal = 19,
    shutdown = 20,
    bye = 21,
    respawn = 22,
    spawn = 23,
    spawn_result = 24,
    group_fence = 25,
    replica = 26,
    adopt = 27,
    adopted = 28,
};
inline constexpr MsgType kLastMsgType = MsgType::adopted;
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
    // rank_failed: which process of the rank failed (0: the first; a process
    // that replaced a dead one, or a spawn slot used again, is a later one).
    std::int32_t incarnation = 0;
};

struct DaemonHello {
    Secret secret{};
    std::int32_t node = 0;
    std::uint32_t pid = 0;
    std::string host;
};
// One rank the daemon starts.
struct LaunchRank {
    std::int32_t rank = 0;
    std::int32_t local_rank = 0;
    std::int32_t app = 0;
    bool stdin_pipe = false; // this rank reads mpirun's stdin (STDIN frames)
    // > 0: the process replaces an earlier one of the rank (FT-MPI REBUILD)
    // or of the spawn slot (ULMPI_INCARNATION).
    std::int32_t incarnation = 0;
};
// The host's part of the job. The daemon adds the launcher contract
// variables (env::*) to `env` for every rank; its own ranks connect to it.
struct Launch {
    std::string jobid;
    std::string host;           // the job-map name of this host
    std::int32_t node = 0;
    std::uint32_t size = 0;     // ranks in the job
    std::uint32_t num_nodes = 0;
    std::uint32_t universe_size = 0;
    std::uint8_t bind = 0;      // BindMode of mpirun's options
    std::string cwd;            // mpirun's directory: the ranks start there if it exists
    std::string wdir;           // --wdir (empty: none)
    std::vector<std::vector<std::string>> apps; // argv of every app context
    std::vector<std::string> env;               // NAME=value, common to every rank
    std::vector<LaunchRank> ranks;
};
struct Spawned {
    std::uint32_t pid = 0;
    std::int32_t err = 0;
    std::string step;
};
struct Output {
    std::uint8_t stream = 1; // 1 stdout, 2 stderr
    Bytes data;              // empty: end of stream
};
struct Exited {
    std::int32_t status = 0; // as waitpid() reports it
};
struct RankClosed {};
struct StdinData {
    Bytes data; // empty: end of file
};
struct Signal {
    std::int32_t sig = 0;
};
struct Shutdown {};
struct Bye {
    std::uint32_t refused = 0;     // rank connections without the secret
    std::uint32_t shm_removed = 0;
};
struct Respawn {
    std::int32_t rank = -1;        // the failed rank to start again
    std::int32_t incarnation = 0;  // > 0: the new process's
};

// One command of MPI_Comm_spawn_multiple.
struct SpawnApp {
    std::vector<std::string> argv; // argv[0]: the command
    std::int32_t maxprocs = 1;
    std::string host;              // info key "host": a host of the job map ("" any)
    std::string wdir;              // info key "wdir" ("" : mpirun's directory)
};
// MPI_Comm_spawn[_multiple] from the root of the spawning communicator.
struct Spawn {
    std::uint32_t id = 0;             // chosen by the asking rank, echoed back
    std::int32_t pair = -1;           // context pair of the parent-child intercommunicator
    std::int32_t root = 0;            // root's rank in the parent group
    std::vector<std::int32_t> parents; // world ranks of the spawning communicator
    std::vector<SpawnApp> apps;
};
struct SpawnedRank {
    std::int32_t rank = -1; // world rank of the new process, -1: not started
    std::int32_t err = 0;   // errno of what failed (ENOENT: no such command ...)
    std::int32_t incarnation = 0; // > 0: the slot held processes before (ULMPI_INCARNATION)
};
struct SpawnResult {
    std::uint32_t id = 0;
    std::int32_t group = -1;       // GROUP_FENCE group of parents and children (wire-up)
    std::int32_t world_group = -1; // the children's own group (their MPI_COMM_WORLD)
    std::string reason;            // empty when every process started
    std::vector<SpawnedRank> procs; // one per process asked for, in order
};
struct GroupFence {
    std::int32_t group = -1;
};
// Replica recovery (mpirun --replicas, docs/replication.md "Recovery"):
//   fork     substitute -> mpirun: may I fork a new process for `rank`
//            (dead) as `incarnation`?  answered granted | refused | busy
//   adopt    the new process, on its own connection after HELLO: its pid
//            and the read ends of its stdout/stderr pipes (numbers in its
//            own descriptor table; mpirun opens them through /proc)
//            answered granted (it may close them) | refused
//   back     the new process: every live process knows it; the next
//            recovery may start
enum class ReplicaOp : std::uint8_t { fork = 1, granted = 2, refused = 3, busy = 4, adopt = 5, back = 6 };
struct Replica {
    ReplicaOp op = ReplicaOp::fork;
    std::int32_t rank = -1;
    std::int32_t incarnation = 0;
    std::uint32_t pid = 0;
    std::int32_t out_fd = -1;
    std::int32_t err_fd = -1;
    std::string reason;
};

// mpirun -> the daemon of the substitute's host (see ADOPT above).
enum class AdoptStep : std::uint8_t { expect = 1, take = 2 };
struct Adopt {
    AdoptStep step = AdoptStep::expect;
    std::int32_t incarnation = 0; // of the new process
    std::uint32_t pid = 0;        // take: the new process
    std::int32_t out_fd = -1;     // take: in the new process's descriptor table
    std::int32_t err_fd = -1;
};
struct Adopted {
    std::int32_t err = 0; // 0: the daemon has it; else an errno
    std::string reason;
};

using Body = std::variant<Hello, Welcome, Refused, Put, Fence, FenceDone, Get, Value, Abort,
                          Finalize, Event, DaemonHello, Launch, Spawned, Output, Exited,
                          RankClosed, StdinData, Signal, Shutdown, Bye, Respawn, Spawn,
                          SpawnResult, GroupFence, Replica, Adopt, Adopted>;

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
// CPUs the launcher could place this host's ranks on (before binding each
// rank to one of them): what a rank compares local_size with to know it
// shares a CPU.
inline constexpr const char* local_cpus = "ULMPI_LOCAL_CPUS";
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
// A job whose failed ranks may be started again (FT-MPI REBUILD): "1".
inline constexpr const char* respawnable = "ULMPI_RESPAWNABLE";
// A respawned process: the incarnations of the other ranks that are not 0,
// "rank:incarnation,..." (its links start in the right epochs).
inline constexpr const char* peer_incarnations = "ULMPI_PEER_INCARNATIONS";
// Fault-tolerant jobs: the inherited descriptor of the host's notice board
// (runtime/notice_board.h).
inline constexpr const char* notice_fd = "ULMPI_NOTICE_FD";
// The inherited descriptor of the host's shared-memory segment (an
// anonymous one the launcher made: runtime/shm_segment.h).
inline constexpr const char* shm_fd = "ULMPI_SHM_FD";
// A job with spawn slots (mpirun --spawn-slots): ranks from this one on are
// spawn slots (MPI_Comm_spawn); below it, the ranks the job started with.
inline constexpr const char* first_slot = "ULMPI_FIRST_SLOT";
// A spawned process: its MPI_COMM_WORLD as world ranks, "a,b,c".
inline constexpr const char* world_ranks = "ULMPI_WORLD_RANKS";
// A spawned process: "group:world_group", its GROUP_FENCE groups (the
// wire-up with its parents; its own MPI_COMM_WORLD afterwards).
inline constexpr const char* spawn_groups = "ULMPI_SPAWN_GROUPS";
// A spawned process: "pair:root:p0,p1,...", the context pair of the
// intercommunicator to its parents, the root's rank among them and their
// world ranks (MPI_Comm_get_parent).
inline constexpr const char* parent = "ULMPI_PARENT";
inline constexpr const char* all[] = {rank,   size,      local_rank,    local_size, local_cpus, node_id,
                                      num_nodes, host,   jobid,         boot_addr,  job_secret,
                                      universe_size, appnum, incarnation, restarted,
                                      respawnable, peer_incarnations, notice_fd, shm_fd, first_slot,
                                      world_ranks, spawn_groups, parent};
} // namespace env

} // namespace ulmpi::rt::wire

namespace ulmpi::rt {
class ParamBase;
namespace boot {
// Parameters of the multi-host launch (ulmpi_info lists them; mpirun options
// override them). Declared here because mpirun, ulmpi_daemon and libmpi all
// link this file, so a rank does not warn about ULMPI_BOOT_* in its environment.
const std::string& if_param();           // ULMPI_BOOT_IF
const std::string& launch_agent_param(); // ULMPI_BOOT_LAUNCH_AGENT
const std::string& daemon_param();       // ULMPI_BOOT_DAEMON
double keepalive_param();                // ULMPI_BOOT_KEEPALIVE
double launch_timeout_param();           // ULMPI_BOOT_LAUNCH_TIMEOUT
int spawn_slots_param();                 // ULMPI_SPAWN_SLOTS
} // namespace boot
} // namespace ulmpi::rt
