#include "runtime/boot_wire.h"
#include "runtime/config.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>

using namespace ulmpi::rt;
using namespace ulmpi::rt::wire;

namespace {

Bytes bytes_of(std::string_view s)
{
    Bytes b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
}

Message round_trip(const Message& in)
{
    Bytes frame = encode(in);
    Message out;
    std::size_t consumed = 0;
    std::string why;
    Status st = decode(frame, kMaxFrame, out, consumed, why);
    EXPECT_TRUE(st.ok()) << why;
    EXPECT_EQ(consumed, frame.size());
    EXPECT_EQ(out.rank, in.rank);
    EXPECT_EQ(type_of(out.body), type_of(in.body));
    return out;
}

Status decode_status(const Bytes& frame, std::size_t max = kMaxFrame)
{
    Message out;
    std::size_t consumed = 0;
    std::string why;
    return decode(frame, max, out, consumed, why);
}

Secret test_secret()
{
    Secret s;
    for (std::size_t i = 0; i < s.size(); ++i) {
        s[i] = static_cast<std::uint8_t>(i * 17 + 3);
    }
    return s;
}

} // namespace

TEST(BootWire, header_is_twelve_bytes_little_endian)
{
    Bytes f = encode(Message{0x01020304, Fence{}});
    ASSERT_EQ(f.size(), kHeaderBytes);
    EXPECT_EQ(f[0], std::byte{0}); // body length 0
    EXPECT_EQ(f[4], std::byte{kWireVersion});
    EXPECT_EQ(f[5], std::byte{static_cast<std::uint8_t>(MsgType::fence)});
    EXPECT_EQ(f[8], std::byte{0x04}); // rank, little-endian
    EXPECT_EQ(f[11], std::byte{0x01});
}

TEST(BootWire, hello_round_trips)
{
    Hello h;
    h.secret = test_secret();
    h.rank = 7;
    h.pid = 123456;
    Message out = round_trip(Message{7, h});
    const auto& g = std::get<Hello>(out.body);
    EXPECT_EQ(g.secret, h.secret);
    EXPECT_EQ(g.rank, 7);
    EXPECT_EQ(g.pid, 123456u);
}

TEST(BootWire, every_other_message_round_trips)
{
    Welcome w{9, {0, 0, 1, 1, 2}};
    EXPECT_EQ(std::get<Welcome>(round_trip(Message{3, w}).body).node_of_rank, w.node_of_rank);
    EXPECT_EQ(std::get<Welcome>(round_trip(Message{3, w}).body).universe_size, 9u);

    EXPECT_EQ(std::get<Refused>(round_trip(Message{-1, Refused{"no"}}).body).reason, "no");

    Put p{"addr.shm", bytes_of(std::string("\0\1binary\xff", 9))};
    auto pp = std::get<Put>(round_trip(Message{2, p}).body);
    EXPECT_EQ(pp.key, p.key);
    EXPECT_EQ(pp.value, p.value);

    round_trip(Message{2, Fence{}});
    round_trip(Message{2, Finalize{}});

    FenceDone d;
    d.entries.push_back(KeyValue{0, "a", bytes_of("x")});
    d.entries.push_back(KeyValue{5, "bb", {}});
    auto dd = std::get<FenceDone>(round_trip(Message{-1, d}).body);
    ASSERT_EQ(dd.entries.size(), 2u);
    EXPECT_EQ(dd.entries[1].rank, 5);
    EXPECT_EQ(dd.entries[1].key, "bb");
    EXPECT_TRUE(dd.entries[1].value.empty());
    EXPECT_EQ(dd.entries[0].value, bytes_of("x"));

    auto gg = std::get<Get>(round_trip(Message{1, Get{4, "k"}}).body);
    EXPECT_EQ(gg.rank, 4);
    EXPECT_EQ(gg.key, "k");

    auto vv = std::get<Value>(round_trip(Message{1, Value{true, bytes_of("v")}}).body);
    EXPECT_TRUE(vv.found);
    EXPECT_EQ(vv.value, bytes_of("v"));
    EXPECT_FALSE(std::get<Value>(round_trip(Message{1, Value{}}).body).found);

    auto aa = std::get<Abort>(round_trip(Message{1, Abort{-3, "bye"}}).body);
    EXPECT_EQ(aa.code, -3);
    EXPECT_EQ(aa.message, "bye");

    Event e{EventKind::host_failed, -1, 2, "host down"};
    auto ee = std::get<Event>(round_trip(Message{-1, e}).body);
    EXPECT_EQ(ee.kind, EventKind::host_failed);
    EXPECT_EQ(ee.node, 2);
    EXPECT_EQ(ee.detail, "host down");
    auto ef = std::get<Event>(
        round_trip(Message{-1, Event{EventKind::rank_failed, 5, 1, "killed", 3}}).body);
    EXPECT_EQ(ef.rank, 5);
    EXPECT_EQ(ef.incarnation, 3) << "which process of the rank failed";

    auto rr = std::get<Respawn>(round_trip(Message{1, Respawn{3, 2}}).body);
    EXPECT_EQ(rr.rank, 3);
    EXPECT_EQ(rr.incarnation, 2);
}

TEST(BootWire, spawn_messages_round_trip)
{
    Spawn q;
    q.id = 7;
    q.pair = 5;
    q.root = 1;
    q.parents = {0, 2, 3};
    q.apps.push_back(SpawnApp{{"./a", "x"}, 2, "h1", "/tmp"});
    q.apps.push_back(SpawnApp{{"b"}, 1, "", ""});
    auto qq = std::get<Spawn>(round_trip(Message{1, q}).body);
    EXPECT_EQ(qq.id, 7u);
    EXPECT_EQ(qq.pair, 5);
    EXPECT_EQ(qq.root, 1);
    EXPECT_EQ(qq.parents, (std::vector<std::int32_t>{0, 2, 3}));
    ASSERT_EQ(qq.apps.size(), 2u);
    EXPECT_EQ(qq.apps[0].argv, (std::vector<std::string>{"./a", "x"}));
    EXPECT_EQ(qq.apps[0].maxprocs, 2);
    EXPECT_EQ(qq.apps[0].host, "h1");
    EXPECT_EQ(qq.apps[0].wdir, "/tmp");
    EXPECT_EQ(qq.apps[1].argv, (std::vector<std::string>{"b"}));

    SpawnResult res;
    res.id = 7;
    res.group = 3;
    res.world_group = 4;
    res.reason = "r";
    res.procs = {SpawnedRank{9, 0, 3}, SpawnedRank{-1, 2}};
    auto rr = std::get<SpawnResult>(round_trip(Message{1, res}).body);
    EXPECT_EQ(rr.group, 3);
    EXPECT_EQ(rr.world_group, 4);
    EXPECT_EQ(rr.reason, "r");
    ASSERT_EQ(rr.procs.size(), 2u);
    EXPECT_EQ(rr.procs[0].rank, 9);
    EXPECT_EQ(rr.procs[0].incarnation, 3); // a spawn slot used again
    EXPECT_EQ(rr.procs[1].err, 2);

    EXPECT_EQ(std::get<GroupFence>(round_trip(Message{1, GroupFence{6}}).body).group, 6);
}

TEST(BootWire, spawn_without_a_command_or_a_negative_group_is_refused)
{
    Message m;
    std::size_t used = 0;
    std::string why;
    Spawn q;
    q.parents = {0};
    q.apps.push_back(SpawnApp{{}, 1, "", ""});
    Bytes frame = encode(Message{0, q});
    EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
    frame = encode(Message{0, GroupFence{-1}});
    EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
}

TEST(BootWire, respawn_of_a_negative_rank_or_incarnation_0_is_refused)
{
    Message m;
    std::size_t used = 0;
    std::string why;
    for (Respawn r : {Respawn{-1, 1}, Respawn{2, 0}}) {
        Bytes frame = encode(Message{1, r});
        EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
    }
}

TEST(BootWire, truncated_frame_asks_for_more)
{
    Bytes f = encode(Message{1, Put{"key", bytes_of("value")}});
    for (std::size_t n = 0; n < f.size(); ++n) {
        Bytes part(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_EQ(decode_status(part).code(), Errc::again) << n;
    }
}

TEST(BootWire, oversize_frame_is_rejected_from_the_header_alone)
{
    Bytes f = encode(Message{1, Put{"key", Bytes(5000)}});
    Bytes header(f.begin(), f.begin() + kHeaderBytes);
    EXPECT_EQ(decode_status(header, kMaxHelloFrame).code(), Errc::protocol);
    EXPECT_TRUE(decode_status(f, 8192).ok());
    // A forged length far beyond the limit.
    header[3] = std::byte{0x7f};
    EXPECT_EQ(decode_status(header).code(), Errc::protocol);
}

TEST(BootWire, bad_version_type_or_reserved_is_rejected)
{
    Bytes f = encode(Message{1, Fence{}});
    Bytes bad = f;
    bad[4] = std::byte{kWireVersion + 1};
    EXPECT_EQ(decode_status(bad).code(), Errc::protocol);
    bad = f;
    bad[5] = std::byte{0};
    EXPECT_EQ(decode_status(bad).code(), Errc::protocol);
    bad[5] = std::byte{200};
    EXPECT_EQ(decode_status(bad).code(), Errc::protocol);
    bad = f;
    bad[6] = std::byte{1};
    EXPECT_EQ(decode_status(bad).code(), Errc::protocol);
}

TEST(BootWire, fields_past_the_body_or_trailing_bytes_are_rejected)
{
    // PUT whose key claims more bytes than the body holds.
    Bytes f = encode(Message{1, Put{"key", bytes_of("v")}});
    f[kHeaderBytes] = std::byte{200};
    EXPECT_EQ(decode_status(f).code(), Errc::protocol);

    // FENCE with a body.
    Bytes g = encode(Message{1, Fence{}});
    g[0] = std::byte{1};
    g.push_back(std::byte{0});
    EXPECT_EQ(decode_status(g).code(), Errc::protocol);

    // FENCE_DONE claiming a million entries in a few bytes.
    Bytes h = encode(Message{-1, FenceDone{}});
    ASSERT_EQ(h.size(), kHeaderBytes + 4);
    h[kHeaderBytes] = std::byte{0x40};
    h[kHeaderBytes + 1] = std::byte{0x42};
    h[kHeaderBytes + 2] = std::byte{0x0f};
    EXPECT_EQ(decode_status(h).code(), Errc::protocol);

    // VALUE with a found flag other than 0/1; EVENT with an unknown kind.
    Bytes v = encode(Message{1, Value{true, {}}});
    v[kHeaderBytes] = std::byte{2};
    EXPECT_EQ(decode_status(v).code(), Errc::protocol);
    Bytes e = encode(Message{1, Event{}});
    e[kHeaderBytes] = std::byte{9};
    EXPECT_EQ(decode_status(e).code(), Errc::protocol);

    // A key longer than kMaxKey.
    EXPECT_EQ(decode_status(encode(Message{1, Get{0, std::string(kMaxKey + 1, 'k')}})).code(),
              Errc::protocol);
}

TEST(BootWire, frame_reader_cuts_a_byte_stream)
{
    Bytes stream;
    encode(Message{0, Put{"a", bytes_of("1")}}, stream);
    encode(Message{0, Fence{}}, stream);
    encode(Message{0, Abort{4, "x"}}, stream);
    FrameReader r;
    std::vector<MsgType> got;
    for (std::byte b : stream) {
        r.append(&b, 1);
        Message m;
        std::string why;
        Status st = r.next(m, why);
        if (st.ok()) {
            got.push_back(type_of(m.body));
        } else {
            ASSERT_EQ(st.code(), Errc::again) << why;
        }
    }
    EXPECT_EQ(got, (std::vector<MsgType>{MsgType::put, MsgType::fence, MsgType::abort}));
    EXPECT_EQ(r.buffered(), 0u);
}

TEST(BootWire, secret_hex_and_comparison)
{
    Secret s = test_secret();
    std::string hex = secret_to_hex(s);
    EXPECT_EQ(hex.size(), 32u);
    Secret back{};
    ASSERT_TRUE(secret_from_hex(hex, back));
    EXPECT_TRUE(secret_equal(s, back));
    back[15] ^= 1;
    EXPECT_FALSE(secret_equal(s, back));
    EXPECT_FALSE(secret_from_hex(hex.substr(1), back));
    EXPECT_FALSE(secret_from_hex(std::string(31, '0') + "g", back));
    ASSERT_TRUE(secret_from_hex(std::string(32, 'F'), back));
    EXPECT_EQ(back[0], 0xff);
}

TEST(BootWire, boot_addresses_parse_and_format)
{
    BootAddr a;
    std::string why;
    ASSERT_TRUE(parse_boot_addr("unix-abstract:ulmpi-abc", a, why));
    EXPECT_EQ(a.kind, BootAddr::Kind::unix_abstract);
    EXPECT_EQ(a.name, "ulmpi-abc");
    EXPECT_EQ(format_boot_addr(a), "unix-abstract:ulmpi-abc");
    sockaddr_storage ss{};
    unsigned len = to_sockaddr(a, ss);
    const auto* un = reinterpret_cast<const sockaddr_un*>(&ss);
    EXPECT_EQ(un->sun_path[0], '\0');
    EXPECT_EQ(len, offsetof(sockaddr_un, sun_path) + 1 + 9);

    ASSERT_TRUE(parse_boot_addr("tcp:10.1.2.3:4567", a, why));
    EXPECT_EQ(a.kind, BootAddr::Kind::tcp);
    EXPECT_EQ(a.ip, "10.1.2.3");
    EXPECT_EQ(a.port, 4567);
    EXPECT_EQ(format_boot_addr(a), "tcp:10.1.2.3:4567");

    ASSERT_TRUE(parse_boot_addr("unix:/tmp/x.sock", a, why));
    EXPECT_EQ(a.kind, BootAddr::Kind::unix_path);

    for (const char* bad : {"", "udp:1.2.3.4:5", "tcp:1.2.3.4", "tcp:host:80", "tcp:1.2.3.4:0",
                            "tcp:1.2.3.4:70000", "tcp:1.2.3.4:8x", "unix-abstract:", "unix:"}) {
        EXPECT_FALSE(parse_boot_addr(bad, a, why)) << bad;
    }
    EXPECT_FALSE(parse_boot_addr("unix-abstract:" + std::string(200, 'x'), a, why));
}

TEST(BootWire, abort_exit_status_is_never_zero_for_a_nonzero_code)
{
    EXPECT_EQ(abort_exit_status(0), 0);
    EXPECT_EQ(abort_exit_status(5), 5);
    EXPECT_EQ(abort_exit_status(255), 255);
    EXPECT_EQ(abort_exit_status(256), 1);
    EXPECT_EQ(abort_exit_status(257), 1);
    EXPECT_EQ(abort_exit_status(-1), 255);
}

TEST(BootWire, contract_variables_are_known_to_the_parameter_registry)
{
    for (const char* name : env::all) {
        EXPECT_TRUE(is_runtime_variable(name)) << name;
    }
}

TEST(BootWire, daemon_messages_round_trip)
{
    using namespace ulmpi::rt::wire;
    Launch l;
    l.jobid = "00ff";
    l.host = "h1";
    l.node = 1;
    l.size = 4;
    l.num_nodes = 2;
    l.universe_size = 4;
    l.bind = 2;
    l.cwd = "/tmp";
    l.apps = {{"prog", "a b"}, {"other"}};
    l.env = {"A=1", "PATH=/bin"};
    l.ranks = {{2, 0, 0, false}, {3, 1, 1, true, 4}};
    Bytes frame = encode(Message{-1, l});
    Message m;
    std::size_t used = 0;
    std::string why;
    ASSERT_TRUE(decode(frame, kMaxFrame, m, used, why).ok()) << why;
    EXPECT_EQ(used, frame.size());
    const auto& g = std::get<Launch>(m.body);
    EXPECT_EQ(g.host, "h1");
    EXPECT_EQ(g.apps, l.apps);
    EXPECT_EQ(g.env, l.env);
    ASSERT_EQ(g.ranks.size(), 2u);
    EXPECT_EQ(g.ranks[1].rank, 3);
    EXPECT_TRUE(g.ranks[1].stdin_pipe);
    EXPECT_EQ(g.ranks[0].incarnation, 0);
    EXPECT_EQ(g.ranks[1].incarnation, 4); // a new process for rank 3 (REBUILD)
    EXPECT_EQ(g.bind, 2);

    Output o;
    o.stream = 2;
    o.data = {std::byte{'x'}, std::byte{'\n'}};
    frame = encode(Message{5, o});
    ASSERT_TRUE(decode(frame, kMaxFrame, m, used, why).ok()) << why;
    EXPECT_EQ(m.rank, 5);
    EXPECT_EQ(std::get<Output>(m.body).data.size(), 2u);
    // A stream other than stdout/stderr, and a signal out of range, are refused.
    frame[kHeaderBytes] = std::byte{3};
    EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
    frame = encode(Message{-1, Signal{0}});
    EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
    for (const Body& b : {Body{DaemonHello{{}, 3, 77, "h3"}}, Body{Spawned{12, 2, "exec"}},
                          Body{Exited{0x0b00}}, Body{RankClosed{}}, Body{StdinData{}},
                          Body{Shutdown{}}, Body{Bye{1, 2}}}) {
        frame = encode(Message{1, b});
        ASSERT_TRUE(decode(frame, kMaxFrame, m, used, why).ok()) << msg_type_name(type_of(b));
        EXPECT_EQ(type_of(m.body), type_of(b));
    }
    // Replica recovery on a daemon's host: ADOPT expect / take, ADOPTED.
    Adopt ad;
    ad.step = AdoptStep::take;
    ad.incarnation = 2;
    ad.pid = 4321;
    ad.out_fd = 7;
    ad.err_fd = 9;
    frame = encode(Message{5, ad});
    ASSERT_TRUE(decode(frame, kMaxFrame, m, used, why).ok()) << why;
    EXPECT_EQ(m.rank, 5);
    const auto& ga = std::get<Adopt>(m.body);
    EXPECT_EQ(ga.step, AdoptStep::take);
    EXPECT_EQ(ga.incarnation, 2);
    EXPECT_EQ(ga.pid, 4321u);
    EXPECT_EQ(ga.out_fd, 7);
    EXPECT_EQ(ga.err_fd, 9);
    frame[kHeaderBytes] = std::byte{3}; // no such step
    EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
    ad.incarnation = 0; // a new process is a later incarnation
    frame = encode(Message{5, ad});
    EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
    frame = encode(Message{5, Adopted{13, "cannot open /proc/4321/fd/7"}});
    ASSERT_TRUE(decode(frame, kMaxFrame, m, used, why).ok()) << why;
    EXPECT_EQ(std::get<Adopted>(m.body).err, 13);
    EXPECT_EQ(std::get<Adopted>(m.body).reason, "cannot open /proc/4321/fd/7");
    // A LAUNCH whose counts promise more than the frame holds is refused.
    frame = encode(Message{-1, l});
    frame.resize(frame.size() - 3);
    std::uint32_t body = static_cast<std::uint32_t>(frame.size() - kHeaderBytes);
    for (int i = 0; i < 4; ++i) {
        frame[static_cast<std::size_t>(i)] = static_cast<std::byte>(body >> (8 * i));
    }
    EXPECT_EQ(decode(frame, kMaxFrame, m, used, why).code(), ulmpi::rt::Errc::protocol);
}
