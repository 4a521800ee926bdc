#include "runtime/boot_wire.h"

#include <algorithm>

#include "runtime/config.h"

#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

namespace ulmpi::rt::wire {
namespace {

// Little-endian appender.
class Writer {
public:
    explicit Writer(Bytes& out) : out_(out) {}
    void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
    void u16(std::uint16_t v)
    {
        u8(static_cast<std::uint8_t>(v));
        u8(static_cast<std::uint8_t>(v >> 8));
    }
    void u32(std::uint32_t v)
    {
        for (int i = 0; i < 4; ++i) {
            u8(static_cast<std::uint8_t>(v >> (8 * i)));
        }
    }
    void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
    void raw(const void* p, std::size_t n)
    {
        const auto* b = static_cast<const std::byte*>(p);
        out_.insert(out_.end(), b, b + n);
    }
    void str(std::string_view s)
    {
        u32(static_cast<std::uint32_t>(s.size()));
        raw(s.data(), s.size());
    }
    void bytes(const Bytes& b)
    {
        u32(static_cast<std::uint32_t>(b.size()));
        raw(b.data(), b.size());
    }
    void put_u32_at(std::size_t at, std::uint32_t v)
    {
        for (int i = 0; i < 4; ++i) {
            out_[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(v >> (8 * i));
        }
    }

private:
    Bytes& out_;
};

// Bounds-checked little-endian reader; every getter fails once past the end.
class Reader {
public:
    explicit Reader(std::span<const std::byte> in) : in_(in) {}
    bool u8(std::uint8_t& v)
    {
        if (left() < 1) {
            return false;
        }
        v = static_cast<std::uint8_t>(in_[pos_++]);
        return true;
    }
    bool u16(std::uint16_t& v)
    {
        std::uint8_t a = 0;
        std::uint8_t b = 0;
        if (!u8(a) || !u8(b)) {
            return false;
        }
        v = static_cast<std::uint16_t>(a | (b << 8));
        return true;
    }
    bool u32(std::uint32_t& v)
    {
        if (left() < 4) {
            return false;
        }
        v = 0;
        for (int i = 0; i < 4; ++i) {
            v |= static_cast<std::uint32_t>(in_[pos_++]) << (8 * i);
        }
        return true;
    }
    bool i32(std::int32_t& v)
    {
        std::uint32_t u = 0;
        if (!u32(u)) {
            return false;
        }
        v = static_cast<std::int32_t>(u);
        return true;
    }
    bool raw(void* p, std::size_t n)
    {
        if (left() < n) {
            return false;
        }
        std::memcpy(p, in_.data() + pos_, n);
        pos_ += n;
        return true;
    }
    bool str(std::string& s, std::size_t max)
    {
        std::uint32_t n = 0;
        if (!u32(n) || n > left() || n > max) {
            return false;
        }
        s.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
        pos_ += n;
        return true;
    }
    bool bytes(Bytes& b)
    {
        std::uint32_t n = 0;
        if (!u32(n) || n > left()) {
            return false;
        }
        b.assign(in_.begin() + static_cast<std::ptrdiff_t>(pos_),
                 in_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
        pos_ += n;
        return true;
    }
    std::size_t left() const { return in_.size() - pos_; }

private:
    std::span<const std::byte> in_;
    std::size_t pos_ = 0;
};

constexpr std::size_t kMaxText = 64 * 1024; // reasons, messages, event details

struct BodyEncoder {
    Writer& w;
    void operator()(const Hello& m)
    {
        w.raw(m.secret.data(), m.secret.size());
        w.i32(m.rank);
        w.u32(m.pid);
    }
    void operator()(const Welcome& m)
    {
        w.u32(m.universe_size);
        w.u32(static_cast<std::uint32_t>(m.node_of_rank.size()));
        for (std::int32_t n : m.node_of_rank) {
            w.i32(n);
        }
    }
    void operator()(const Refused& m) { w.str(m.reason); }
    void operator()(const Put& m)
    {
        w.str(m.key);
        w.bytes(m.value);
    }
    void operator()(const Fence&) {}
    void operator()(const FenceDone& m)
    {
        w.u32(static_cast<std::uint32_t>(m.entries.size()));
        for (const KeyValue& kv : m.entries) {
            w.i32(kv.rank);
            w.str(kv.key);
            w.bytes(kv.value);
        }
    }
    void operator()(const Get& m)
    {
        w.i32(m.rank);
        w.str(m.key);
    }
    void operator()(const Value& m)
    {
        w.u8(m.found ? 1 : 0);
        w.bytes(m.value);
    }
    void operator()(const Abort& m)
    {
        w.i32(m.code);
        w.str(m.message);
    }
    void operator()(const Finalize&) {}
    void operator()(const Event& m)
    {
        w.u8(static_cast<std::uint8_t>(m.kind));
        w.i32(m.rank);
        w.i32(m.node);
        w.i32(m.incarnation);
        w.str(m.detail);
    }
    void operator()(const DaemonHello& m)
    {
        w.raw(m.secret.data(), m.secret.size());
        w.i32(m.node);
        w.u32(m.pid);
        w.str(m.host);
    }
    void strings(const std::vector<std::string>& v)
    {
        w.u32(static_cast<std::uint32_t>(v.size()));
        for (const std::string& s : v) {
            w.str(s);
        }
    }
    void operator()(const Launch& m)
    {
        w.str(m.jobid);
        w.str(m.host);
        w.i32(m.node);
        w.u32(m.size);
        w.u32(m.num_nodes);
        w.u32(m.universe_size);
        w.u8(m.bind);
        w.str(m.cwd);
        w.str(m.wdir);
        w.u32(static_cast<std::uint32_t>(m.apps.size()));
        for (const auto& argv : m.apps) {
            strings(argv);
        }
        strings(m.env);
        w.u32(static_cast<std::uint32_t>(m.ranks.size()));
        for (const LaunchRank& r : m.ranks) {
            w.i32(r.rank);
            w.i32(r.local_rank);
            w.i32(r.app);
            w.u8(r.stdin_pipe ? 1 : 0);
            w.i32(r.incarnation);
        }
    }
    void operator()(const Spawned& m)
    {
        w.u32(m.pid);
        w.i32(m.err);
        w.str(m.step);
    }
    void operator()(const Output& m)
    {
        w.u8(m.stream);
        w.bytes(m.data);
    }
    void operator()(const Exited& m) { w.i32(m.status); }
    void operator()(const RankClosed&) {}
    void operator()(const StdinData& m) { w.bytes(m.data); }
    void operator()(const Signal& m) { w.i32(m.sig); }
    void operator()(const Shutdown&) {}
    void operator()(const Bye& m)
    {
        w.u32(m.refused);
        w.u32(m.shm_removed);
    }
    void operator()(const Respawn& m)
    {
        w.i32(m.rank);
        w.i32(m.incarnation);
    }
    void operator()(const Spawn& m)
    {
        w.u32(m.id);
        w.i32(m.pair);
        w.i32(m.root);
        w.u32(static_cast<std::uint32_t>(m.parents.size()));
        for (std::int32_t p : m.parents) {
            w.i32(p);
        }
        w.u32(static_cast<std::uint32_t>(m.apps.size()));
        for (const SpawnApp& a : m.apps) {
            strings(a.argv);
            w.i32(a.maxprocs);
            w.str(a.host);
            w.str(a.wdir);
        }
    }
    void operator()(const SpawnResult& m)
    {
        w.u32(m.id);
        w.i32(m.group);
        w.i32(m.world_group);
        w.str(m.reason);
        w.u32(static_cast<std::uint32_t>(m.procs.size()));
        for (const SpawnedRank& p : m.procs) {
            w.i32(p.rank);
            w.i32(p.err);
            w.i32(p.incarnation);
        }
    }
    void operator()(const GroupFence& m) { w.i32(m.group); }
    void operator()(const Replica& m)
    {
        w.u8(static_cast<std::uint8_t>(m.op));
        w.i32(m.rank);
        w.i32(m.incarnation);
        w.u32(m.pid);
        w.i32(m.out_fd);
        w.i32(m.err_fd);
        w.str(m.reason);
    }
    void operator()(const Adopt& m)
    {
        w.u8(static_cast<std::uint8_t>(m.step));
        w.i32(m.incarnation);
        w.u32(m.pid);
        w.i32(m.out_fd);
        w.i32(m.err_fd);
    }
    void operator()(const Adopted& m)
    {
        w.i32(m.err);
        w.str(m.reason);
    }
};

// A list of strings; every entry takes at least 4 bytes, which bounds n.
bool read_strings(Reader& r, std::vector<std::string>& out, std::size_t max_each)
{
    std::uint32_t n = 0;
    if (!r.u32(n) || n > r.left() / 4) {
        return false;
    }
    out.resize(n);
    for (std::string& s : out) {
        if (!r.str(s, max_each)) {
            return false;
        }
    }
    return true;
}

bool decode_body(MsgType type, Reader& r, Body& body, std::string& why)
{
    switch (type) {
    case MsgType::hello: {
        Hello m;
        if (!r.raw(m.secret.data(), m.secret.size()) || !r.i32(m.rank) || !r.u32(m.pid)) {
            break;
        }
        body = m;
        return true;
    }
    case MsgType::welcome: {
        Welcome m;
        std::uint32_t n = 0;
        if (!r.u32(m.universe_size) || !r.u32(n) || n > r.left() / 4) {
            break;
        }
        m.node_of_rank.resize(n);
        for (std::int32_t& v : m.node_of_rank) {
            if (!r.i32(v)) {
                return false;
            }
        }
        body = std::move(m);
        return true;
    }
    case MsgType::refused: {
        Refused m;
        if (!r.str(m.reason, kMaxText)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::put: {
        Put m;
        if (!r.str(m.key, kMaxKey) || !r.bytes(m.value)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::fence: body = Fence{}; return true;
    case MsgType::fence_done: {
        FenceDone m;
        std::uint32_t n = 0;
        // Every entry takes at least 12 bytes: bound n before reserving.
        if (!r.u32(n) || n > r.left() / 12) {
            break;
        }
        m.entries.resize(n);
        for (KeyValue& kv : m.entries) {
            if (!r.i32(kv.rank) || !r.str(kv.key, kMaxKey) || !r.bytes(kv.value)) {
                why = "FENCE_DONE entry past the end of the frame";
                return false;
            }
        }
        body = std::move(m);
        return true;
    }
    case MsgType::get: {
        Get m;
        if (!r.i32(m.rank) || !r.str(m.key, kMaxKey)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::value: {
        Value m;
        std::uint8_t found = 0;
        if (!r.u8(found) || found > 1 || !r.bytes(m.value)) {
            break;
        }
        m.found = found == 1;
        body = std::move(m);
        return true;
    }
    case MsgType::abort: {
        Abort m;
        if (!r.i32(m.code) || !r.str(m.message, kMaxText)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::finalize: body = Finalize{}; return true;
    case MsgType::event: {
        Event m;
        std::uint8_t kind = 0;
        if (!r.u8(kind) || kind > static_cast<std::uint8_t>(EventKind::job_ending) ||
            !r.i32(m.rank) || !r.i32(m.node) || !r.i32(m.incarnation) ||
            !r.str(m.detail, kMaxText)) {
            break;
        }
        m.kind = static_cast<EventKind>(kind);
        body = std::move(m);
        return true;
    }
    case MsgType::daemon_hello: {
        DaemonHello m;
        if (!r.raw(m.secret.data(), m.secret.size()) || !r.i32(m.node) || !r.u32(m.pid) ||
            !r.str(m.host, kMaxText)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::launch: {
        Launch m;
        std::uint32_t napps = 0;
        if (!r.str(m.jobid, kMaxText) || !r.str(m.host, kMaxText) || !r.i32(m.node) ||
            !r.u32(m.size) || !r.u32(m.num_nodes) || !r.u32(m.universe_size) || !r.u8(m.bind) ||
            !r.str(m.cwd, kMaxText) || !r.str(m.wdir, kMaxText) || !r.u32(napps) ||
            napps > r.left() / 4) {
            break;
        }
        m.apps.resize(napps);
        bool ok = true;
        for (auto& argv : m.apps) {
            ok = ok && read_strings(r, argv, kMaxFrame);
        }
        std::uint32_t nranks = 0;
        if (!ok || !read_strings(r, m.env, kMaxFrame) || !r.u32(nranks) ||
            nranks > r.left() / 17) {
            break;
        }
        m.ranks.resize(nranks);
        for (LaunchRank& lr : m.ranks) {
            std::uint8_t in = 0;
            if (!r.i32(lr.rank) || !r.i32(lr.local_rank) || !r.i32(lr.app) || !r.u8(in) ||
                in > 1 || !r.i32(lr.incarnation) || lr.incarnation < 0) {
                ok = false;
                break;
            }
            lr.stdin_pipe = in == 1;
        }
        if (!ok) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::spawned: {
        Spawned m;
        if (!r.u32(m.pid) || !r.i32(m.err) || !r.str(m.step, kMaxText)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::output: {
        Output m;
        if (!r.u8(m.stream) || m.stream < 1 || m.stream > 2 || !r.bytes(m.data)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::exited: {
        Exited m;
        if (!r.i32(m.status)) {
            break;
        }
        body = m;
        return true;
    }
    case MsgType::rank_closed: body = RankClosed{}; return true;
    case MsgType::stdin_data: {
        StdinData m;
        if (!r.bytes(m.data)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::signal: {
        Signal m;
        if (!r.i32(m.sig) || m.sig < 1 || m.sig > 64) {
            break;
        }
        body = m;
        return true;
    }
    case MsgType::shutdown: body = Shutdown{}; return true;
    case MsgType::bye: {
        Bye m;
        if (!r.u32(m.refused) || !r.u32(m.shm_removed)) {
            break;
        }
        body = m;
        return true;
    }
    case MsgType::respawn: {
        Respawn m;
        if (!r.i32(m.rank) || !r.i32(m.incarnation) || m.rank < 0 || m.incarnation < 1) {
            break;
        }
        body = m;
        return true;
    }
    case MsgType::spawn: {
        Spawn m;
        std::uint32_t np = 0;
        if (!r.u32(m.id) || !r.i32(m.pair) || !r.i32(m.root) || !r.u32(np) ||
            np > r.left() / 4) {
            break;
        }
        m.parents.resize(np);
        bool ok = true;
        for (std::int32_t& p : m.parents) {
            ok = ok && r.i32(p) && p >= 0;
        }
        std::uint32_t napps = 0;
        if (!ok || !r.u32(napps) || napps > r.left() / 16) {
            break;
        }
        m.apps.resize(napps);
        for (SpawnApp& a : m.apps) {
            ok = ok && read_strings(r, a.argv, kMaxFrame) && !a.argv.empty() &&
                 r.i32(a.maxprocs) && a.maxprocs >= 0 && r.str(a.host, kMaxText) &&
                 r.str(a.wdir, kMaxText);
        }
        if (!ok) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::spawn_result: {
        SpawnResult m;
        std::uint32_t n = 0;
        if (!r.u32(m.id) || !r.i32(m.group) || !r.i32(m.world_group) ||
            !r.str(m.reason, kMaxText) || !r.u32(n) || n > r.left() / 12) {
            break;
        }
        m.procs.resize(n);
        bool ok = true;
        for (SpawnedRank& p : m.procs) {
            ok = ok && r.i32(p.rank) && r.i32(p.err) && r.i32(p.incarnation) &&
                 p.incarnation >= 0;
        }
        if (!ok) {
            break;
        }
        body = std::move(m);
        return true;
    }
    case MsgType::group_fence: {
        GroupFence m;
        if (!r.i32(m.group) || m.group < 0) {
            break;
        }
        body = m;
        return true;
    }
    case MsgType::replica: {
        Replica m;
        std::uint8_t op = 0;
        if (!r.u8(op) || op < 1 || op > static_cast<std::uint8_t>(ReplicaOp::back) ||
            !r.i32(m.rank) || !r.i32(m.incarnation) || !r.u32(m.pid) || !r.i32(m.out_fd) ||
            !r.i32(m.err_fd) || !r.str(m.reason, kMaxText)) {
            break;
        }
        m.op = static_cast<ReplicaOp>(op);
        body = std::move(m);
        return true;
    }
    case MsgType::adopt: {
        Adopt m;
        std::uint8_t step = 0;
        if (!r.u8(step) || step < 1 || step > static_cast<std::uint8_t>(AdoptStep::take) ||
            !r.i32(m.incarnation) || m.incarnation < 1 || !r.u32(m.pid) || !r.i32(m.out_fd) ||
            !r.i32(m.err_fd)) {
            break;
        }
        m.step = static_cast<AdoptStep>(step);
        body = m;
        return true;
    }
    case MsgType::adopted: {
        Adopted m;
        if (!r.i32(m.err) || !r.str(m.reason, kMaxText)) {
            break;
        }
        body = std::move(m);
        return true;
    }
    }
    if (why.empty()) {
        why = std::string(msg_type_name(type)) + " body is malformed or truncated";
    }
    return false;
}

int hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

} // namespace

const char* msg_type_name(MsgType t) noexcept
{
    switch (t) {
    case MsgType::hello: return "HELLO";
    case MsgType::welcome: return "WELCOME";
    case MsgType::refused: return "REFUSED";
    case MsgType::put: return "PUT";
    case MsgType::fence: return "FENCE";
    case MsgType::fence_done: return "FENCE_DONE";
    case MsgType::get: return "GET";
    case MsgType::value: return "VALUE";
    case MsgType::abort: return "ABORT";
    case MsgType::finalize: return "FINALIZE";
    case MsgType::event: return "EVENT";
    case MsgType::daemon_hello: return "DAEMON_HELLO";
    case MsgType::launch: return "LAUNCH";
    case MsgType::spawned: return "SPAWNED";
    case MsgType::output: return "OUTPUT";
    case MsgType::exited: return "EXITED";
    case MsgType::rank_closed: return "RANK_CLOSED";
    case MsgType::stdin_data: return "STDIN";
    case MsgType::signal: return "SIGNAL";
    case MsgType::shutdown: return "SHUTDOWN";
    case MsgType::bye: return "BYE";
    case MsgType::respawn: return "RESPAWN";
    case MsgType::spawn: return "SPAWN";
    case MsgType::spawn_result: return "SPAWN_RESULT";
    case MsgType::group_fence: return "GROUP_FENCE";
    case MsgType::replica: return "REPLICA";
    case MsgType::adopt: return "ADOPT";
    case MsgType::adopted: return "ADOPTED";
    }
    return "UNKNOWN";
}

MsgType type_of(const Body& body) noexcept
{
    // The variant's alternatives are in MsgType order, starting at 1.
    return static_cast<MsgType>(body.index() + 1);
}
static_assert(std::variant_size_v<Body> == static_cast<std::size_t>(kLastMsgType));

void encode(const Message& msg, Bytes& out)
{
    std::size_t start = out.size();
    Writer w(out);
    w.u32(0); // patched below
    w.u8(kWireVersion);
    w.u8(static_cast<std::uint8_t>(type_of(msg.body)));
    w.u16(0);
    w.i32(msg.rank);
    std::visit(BodyEncoder{w}, msg.body);
    w.put_u32_at(start, static_cast<std::uint32_t>(out.size() - start - kHeaderBytes));
}

Status decode(std::span<const std::byte> in, std::size_t max_frame, Message& out,
              std::size_t& consumed, std::string& why)
{
    if (in.size() < kHeaderBytes) {
        return Errc::again;
    }
    Reader h(in.first(kHeaderBytes));
    std::uint32_t len = 0;
    std::uint8_t version = 0;
    std::uint8_t type = 0;
    std::uint16_t reserved = 0;
    std::int32_t rank = 0;
    (void)(h.u32(len) && h.u8(version) && h.u8(type) && h.u16(reserved) && h.i32(rank));
    if (version != kWireVersion) {
        why = "wire version " + std::to_string(version) + " (expected " +
              std::to_string(kWireVersion) + ")";
        return Errc::protocol;
    }
    if (type < static_cast<std::uint8_t>(MsgType::hello) ||
        type > static_cast<std::uint8_t>(kLastMsgType)) {
        why = "unknown message type " + std::to_string(type);
        return Errc::protocol;
    }
    if (reserved != 0) {
        why = "reserved header field is not zero";
        return Errc::protocol;
    }
    if (len > max_frame) {
        why = "frame of " + std::to_string(len) + " bytes exceeds the limit of " +
              std::to_string(max_frame);
        return Errc::protocol;
    }
    if (in.size() - kHeaderBytes < len) {
        return Errc::again;
    }
    Reader r(in.subspan(kHeaderBytes, len));
    auto mt = static_cast<MsgType>(type);
    if (!decode_body(mt, r, out.body, why)) {
        return Errc::protocol;
    }
    if (r.left() != 0) {
        why = std::string(msg_type_name(mt)) + " has " + std::to_string(r.left()) +
              " trailing bytes";
        return Errc::protocol;
    }
    out.rank = rank;
    consumed = kHeaderBytes + len;
    return Errc::ok;
}

void FrameReader::append(const void* data, std::size_t len)
{
    if (pos_ > 0 && pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
    } else if (pos_ > 65536 && pos_ > buf_.size() / 2) {
        buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
        pos_ = 0;
    }
    const auto* b = static_cast<const std::byte*>(data);
    buf_.insert(buf_.end(), b, b + len);
}

Status FrameReader::next(Message& out, std::string& why)
{
    std::size_t consumed = 0;
    Status st = decode(std::span<const std::byte>(buf_).subspan(pos_), max_frame_, out,
                       consumed, why);
    if (st.ok()) {
        pos_ += consumed;
    }
    return st;
}

int abort_exit_status(int code) noexcept
{
    int status = static_cast<int>(static_cast<unsigned>(code) & 0xffu);
    return (status == 0 && code != 0) ? 1 : status;
}

std::string secret_to_hex(const Secret& s)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() * 2);
    for (std::uint8_t b : s) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

bool secret_from_hex(std::string_view hex, Secret& out)
{
    if (hex.size() != out.size() * 2) {
        return false;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
        int hi = hex_digit(hex[2 * i]);
        int lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return true;
}

bool secret_equal(const Secret& a, const Secret& b) noexcept
{
    std::uint8_t diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = static_cast<std::uint8_t>(diff | (a[i] ^ b[i]));
    }
    return diff == 0;
}

bool parse_boot_addr(std::string_view text, BootAddr& out, std::string& why)
{
    constexpr std::string_view abstract_prefix = "unix-abstract:";
    constexpr std::string_view unix_prefix = "unix:";
    constexpr std::string_view tcp_prefix = "tcp:";
    constexpr std::size_t max_path = sizeof(sockaddr_un::sun_path) - 1;
    BootAddr a;
    if (text.starts_with(abstract_prefix)) {
        a.kind = BootAddr::Kind::unix_abstract;
        a.name = text.substr(abstract_prefix.size());
        if (a.name.empty() || a.name.size() > max_path) {
            why = "abstract socket name must have 1 to " + std::to_string(max_path) +
                  " characters";
            return false;
        }
    } else if (text.starts_with(unix_prefix)) {
        a.kind = BootAddr::Kind::unix_path;
        a.name = text.substr(unix_prefix.size());
        if (a.name.empty() || a.name.size() > max_path) {
            why = "socket path must have 1 to " + std::to_string(max_path) + " characters";
            return false;
        }
    } else if (text.starts_with(tcp_prefix)) {
        a.kind = BootAddr::Kind::tcp;
        std::string_view rest = text.substr(tcp_prefix.size());
        std::size_t colon = rest.rfind(':');
        if (colon == std::string_view::npos) {
            why = "expected tcp:IP:PORT";
            return false;
        }
        a.ip = rest.substr(0, colon);
        std::string_view port = rest.substr(colon + 1);
        in_addr probe{};
        if (::inet_pton(AF_INET, a.ip.c_str(), &probe) != 1) {
            why = "'" + a.ip + "' is not an IPv4 address";
            return false;
        }
        unsigned long v = 0;
        if (port.empty() || port.size() > 5) {
            why = "bad port";
            return false;
        }
        for (char c : port) {
            if (c < '0' || c > '9') {
                why = "bad port";
                return false;
            }
            v = v * 10 + static_cast<unsigned long>(c - '0');
        }
        if (v == 0 || v > 65535) {
            why = "port out of range";
            return false;
        }
        a.port = static_cast<std::uint16_t>(v);
    } else {
        why = "unknown address kind (expected unix-abstract:, unix: or tcp:)";
        return false;
    }
    out = std::move(a);
    return true;
}

std::string format_boot_addr(const BootAddr& addr)
{
    switch (addr.kind) {
    case BootAddr::Kind::unix_abstract: return "unix-abstract:" + addr.name;
    case BootAddr::Kind::unix_path: return "unix:" + addr.name;
    case BootAddr::Kind::tcp: return "tcp:" + addr.ip + ":" + std::to_string(addr.port);
    }
    return {};
}

unsigned to_sockaddr(const BootAddr& addr, sockaddr_storage& ss)
{
    std::memset(&ss, 0, sizeof ss);
    switch (addr.kind) {
    case BootAddr::Kind::unix_abstract:
    case BootAddr::Kind::unix_path: {
        auto* un = reinterpret_cast<sockaddr_un*>(&ss);
        un->sun_family = AF_UNIX;
        bool abstract = addr.kind == BootAddr::Kind::unix_abstract;
        std::size_t off = abstract ? 1 : 0; // abstract names start with a NUL byte
        if (addr.name.size() + off >= sizeof un->sun_path) {
            return 0;
        }
        std::memcpy(un->sun_path + off, addr.name.data(), addr.name.size());
        // An abstract name is exactly the bytes given: the length must not
        // include trailing NULs.
        return static_cast<unsigned>(offsetof(sockaddr_un, sun_path) + off + addr.name.size() +
                                     (abstract ? 0 : 1));
    }
    case BootAddr::Kind::tcp: {
        auto* in = reinterpret_cast<sockaddr_in*>(&ss);
        in->sin_family = AF_INET;
        in->sin_port = htons(addr.port);
        if (::inet_pton(AF_INET, addr.ip.c_str(), &in->sin_addr) != 1) {
            return 0;
        }
        return sizeof(sockaddr_in);
    }
    }
    return 0;
}

} // namespace ulmpi::rt::wire

namespace ulmpi::rt::boot {
namespace {

const TextParam boot_if{"boot_if", "",
                        "interface, IPv4 address or subnet (a.b.c.d/n) on which mpirun "
                        "listens for the daemons of other hosts (default: chosen from the hosts)"};
const TextParam boot_launch_agent{"boot_launch_agent", "ssh -o BatchMode=yes",
                                  "command that starts ulmpi_daemon on another host; {host} "
                                  "is replaced by the host name, else the name is appended"};
const TextParam boot_daemon{"boot_daemon", "",
                            "path of ulmpi_daemon on the other hosts (default: next to mpirun)"};
const RealParam boot_keepalive{"boot_keepalive", 10.0,
                               "seconds after which a silent mpirun <-> daemon connection is "
                               "declared lost (TCP keepalive and user timeout)"};
const RealParam boot_launch_timeout{"boot_launch_timeout", 60.0,
                                    "seconds a host's daemon may take to connect to mpirun"};
const IntParam spawn_slots{"spawn_slots", -1,
                           "processes per host that MPI_Comm_spawn may start into a job at "
                           "once; -1: the host's slots, at least 8 (mpirun --spawn-slots "
                           "wins over it)"};

} // namespace

const std::string& if_param() { return boot_if.get(); }
const std::string& launch_agent_param() { return boot_launch_agent.get(); }
const std::string& daemon_param() { return boot_daemon.get(); }
double keepalive_param() { return boot_keepalive.get(); }
double launch_timeout_param() { return boot_launch_timeout.get(); }
int spawn_slots_param()
{
    return static_cast<int>(std::clamp<std::int64_t>(spawn_slots.get(), -1, 4096));
}

} // namespace ulmpi::rt::boot
