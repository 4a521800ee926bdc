// UdpPath over loopback: two paths of one process (ranks 0 and 1 of a fake
// job) exchange datagrams on both lanes; the long lane's payload is
// scattered straight into the reader's iovecs (in slices, partly, or not at
// all); strays sent from a plain socket are refused and counted; then the
// ULM engine runs over udp (and over lossy(udp)) between two processes.
#include "tests/support/test_bootstrap.h"

#include "paths/lossy/lossy_path.h"
#include "paths/self/self_path.h"
#include "paths/udp/udp_path.h"
#include "runtime/opt_lock.h"
#include "ulm/engine.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sched.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace ulmpi::test {
namespace {

using path::Lane;
using path::RxFrag;
using path::SendResult;
using path::TxBuffer;
using path::UdpOptions;
using path::UdpPath;

// Test fragments: byte 0 is the header length, then header bytes, payload.
std::size_t test_header_length(const std::byte* data, std::size_t len)
{
    if (len < 1) {
        return 0;
    }
    auto h = static_cast<std::size_t>(data[0]);
    return h >= 1 && h <= len ? h : 0;
}

std::vector<std::byte> make_frag(std::size_t hlen, std::size_t plen, int seed)
{
    std::vector<std::byte> v(hlen + plen);
    v[0] = static_cast<std::byte>(hlen);
    for (std::size_t i = 1; i < v.size(); ++i) {
        v[i] = static_cast<std::byte>((i * 131 + static_cast<std::size_t>(seed) * 7) & 0xff);
    }
    return v;
}

struct Got {
    int peer = -1;
    bool addressable = true;
    std::size_t len = 0;
    std::vector<std::byte> bytes; // header + what was read of the payload
    std::size_t read = 0;         // payload bytes read_payload() answered
};

// Reads each fragment with `reader` (default: the whole payload at once).
class TestSink final : public path::Sink {
public:
    using Reader = std::function<void(RxFrag&, Got&)>;
    Reader reader;
    std::vector<Got> got;
    std::vector<int> down;

    void on_frag(path::Path&, RxFrag& f) override
    {
        Got g;
        g.peer = f.peer;
        g.addressable = f.addressable;
        g.len = f.len;
        if (f.addressable) {
            g.bytes.assign(f.data, f.data + f.len);
            g.read = f.len - test_header_length(f.data, f.len);
        } else if (reader) {
            reader(f, g);
        } else {
            const std::size_t h = test_header_length(f.data, f.len);
            g.bytes.assign(f.data, f.data + h);
            g.bytes.resize(f.len);
            iovec v{g.bytes.data() + h, f.len - h};
            g.read = f.read_payload(0, &v, 1);
        }
        got.push_back(std::move(g));
    }
    void on_path_down(path::Path&, int peer) override { down.push_back(peer); }
    void on_path_up(path::Path&, int) override {}
};

class UdpPair : public ::testing::Test {
protected:
    void SetUp() override { path::set_frag_header_length(&test_header_length); }
    void TearDown() override { path::set_frag_header_length(nullptr); }

    // Opens and connects rank 0 and rank 1 over loopback.
    void make(UdpOptions oa = {}, UdpOptions ob = {}, std::vector<int> nodes = {0, 1})
    {
        oa.ifaces = oa.ifaces.empty() ? "lo" : oa.ifaces;
        ob.ifaces = ob.ifaces.empty() ? "lo" : ob.ifaces;
        a_.reset();
        b_.reset();
        // One thread opens both paths before connecting either: no fences.
        job_ = std::make_unique<LocalJob>(2, LocalJob::Fences::none);
        ba_ = std::make_unique<LocalBootstrap>(*job_, 0, nodes);
        bb_ = std::make_unique<LocalBootstrap>(*job_, 1, nodes);
        a_ = std::make_unique<UdpPath>(ba_->job(), oa);
        b_ = std::make_unique<UdpPath>(bb_->job(), ob);
        ASSERT_TRUE(a_->open(*ba_).ok());
        ASSERT_TRUE(b_->open(*bb_).ok());
        ASSERT_TRUE(a_->connect(*ba_).ok());
        ASSERT_TRUE(b_->connect(*bb_).ok());
    }

    void put(UdpPath& p, int peer, const std::vector<std::byte>& frag, Lane lane)
    {
        TxBuffer buf;
        buf.lane = lane;
        ASSERT_TRUE(p.acquire(peer, frag.size(), buf));
        ASSERT_GE(buf.cap, frag.size());
        std::memcpy(buf.data, frag.data(), frag.size());
        EXPECT_EQ(p.commit(peer, buf, frag.size()), SendResult::done);
    }

    // Progresses `p` until the sink holds `n` fragments (or 5 s passed).
    bool collect(UdpPath& p, TestSink& s, std::size_t n)
    {
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (s.got.size() < n && std::chrono::steady_clock::now() < end) {
            if (p.progress(s) == 0) {
                ::usleep(100);
            }
        }
        return s.got.size() >= n;
    }

    // Sends raw bytes from a socket outside the job to one of b's ports.
    void stray(const void* data, std::size_t len, Lane lane)
    {
        int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
        ASSERT_GE(fd, 0);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        to.sin_port = htons(b_->endpoints()[0].port[static_cast<int>(lane)]);
        EXPECT_EQ(::sendto(fd, data, len, 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
                  static_cast<ssize_t>(len));
        ::close(fd);
    }

    std::unique_ptr<LocalJob> job_;
    std::unique_ptr<LocalBootstrap> ba_, bb_;
    std::unique_ptr<UdpPath> a_, b_;
};

TEST_F(UdpPair, control_datagrams_arrive_whole_and_addressable)
{
    make();
    EXPECT_STREQ(a_->info().name, "udp");
    EXPECT_TRUE(a_->info().reliable_default);
    EXPECT_EQ(a_->info().max_frag, 65507u - sizeof(path::udp::Header)); // loopback MTU 65536
    EXPECT_EQ(a_->info().eager_limit, a_->info().max_frag);
    TestSink sink;
    std::vector<std::vector<std::byte>> sent;
    for (std::size_t n : {1, 64, 1000, 65000}) {
        sent.push_back(make_frag(std::min<std::size_t>(n, 40), n - std::min<std::size_t>(n, 40),
                                 static_cast<int>(n)));
        put(*a_, 1, sent.back(), Lane::control);
    }
    ASSERT_TRUE(collect(*b_, sink, sent.size()));
    for (std::size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(sink.got[i].peer, 0);
        EXPECT_TRUE(sink.got[i].addressable);
        EXPECT_TRUE(sink.got[i].bytes == sent[i]) << i;
    }
    EXPECT_EQ(b_->counters().frags_received, sent.size());
    EXPECT_EQ(a_->counters().frags_sent, sent.size());
    EXPECT_EQ(b_->refusals().total(), 0u);
}

TEST_F(UdpPair, bulk_payload_is_scattered_straight_into_the_readers_iovecs)
{
    make();
    TestSink sink;
    std::vector<std::byte> a(1000), b(7), c(40000);
    sink.reader = [&](RxFrag& f, Got& g) {
        EXPECT_FALSE(f.addressable);
        const std::size_t h = test_header_length(f.data, f.len);
        ASSERT_EQ(h, 48u);
        g.bytes.assign(f.data, f.data + h);
        iovec v[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
        g.read = f.read_payload(0, v, 3);
        g.bytes.insert(g.bytes.end(), a.begin(), a.end());
        g.bytes.insert(g.bytes.end(), b.begin(), b.end());
        g.bytes.insert(g.bytes.end(), c.begin(),
                       c.begin() + static_cast<std::ptrdiff_t>(f.len - h - 1007));
    };
    auto frag = make_frag(48, 1007 + 30000, 5);
    put(*a_, 1, frag, Lane::bulk);
    ASSERT_TRUE(collect(*b_, sink, 1));
    EXPECT_EQ(sink.got[0].len, frag.size());
    EXPECT_EQ(sink.got[0].read, 31007u);
    EXPECT_TRUE(sink.got[0].bytes == frag);
}

TEST_F(UdpPair, payload_is_read_in_slices_and_beyond_the_buffer)
{
    make();
    TestSink sink;
    auto frag = make_frag(32, 5000, 9);
    std::vector<std::byte> first(1200), second(3000), rest(800);
    sink.reader = [&](RxFrag& f, Got& g) {
        iovec v1{first.data(), first.size()};
        iovec v2{second.data(), second.size()};
        iovec v3{rest.data(), rest.size()};
        g.read = f.read_payload(0, &v1, 1);
        g.read += f.read_payload(1200, &v2, 1);
        g.read += f.read_payload(4200, &v3, 1);
        // Bytes already scattered by the first call cannot be read twice.
        EXPECT_EQ(f.read_payload(100, &v3, 1), 0u);
        // Past the end: nothing.
        EXPECT_EQ(f.read_payload(5000, &v3, 1), 0u);
    };
    put(*a_, 1, frag, Lane::bulk);
    ASSERT_TRUE(collect(*b_, sink, 1));
    EXPECT_EQ(sink.got[0].read, 5000u);
    std::vector<std::byte> all(frag.begin(), frag.begin() + 32);
    all.insert(all.end(), first.begin(), first.end());
    all.insert(all.end(), second.begin(), second.end());
    all.insert(all.end(), rest.begin(), rest.end());
    EXPECT_TRUE(all == frag);
}

TEST_F(UdpPair, more_iovecs_than_one_recvmsg_takes_are_filled_from_the_stash)
{
    make();
    TestSink sink;
    auto frag = make_frag(16, 3000, 3);
    std::vector<std::byte> out(3000);
    sink.reader = [&](RxFrag& f, Got& g) {
        std::vector<iovec> v(300);
        for (std::size_t i = 0; i < v.size(); ++i) {
            v[i] = {out.data() + i * 10, 10};
        }
        g.read = f.read_payload(0, v.data(), static_cast<int>(v.size()));
    };
    put(*a_, 1, frag, Lane::bulk);
    ASSERT_TRUE(collect(*b_, sink, 1));
    EXPECT_EQ(sink.got[0].read, 3000u);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), frag.begin() + 16));
}

TEST_F(UdpPair, a_datagram_left_unread_is_discarded_and_the_next_one_is_intact)
{
    make();
    TestSink sink;
    int calls = 0;
    sink.reader = [&](RxFrag& f, Got& g) {
        if (calls++ == 0) {
            return; // ULM did not want it (a stale data fragment)
        }
        const std::size_t h = test_header_length(f.data, f.len);
        g.bytes.assign(f.data, f.data + h);
        g.bytes.resize(f.len);
        iovec v{g.bytes.data() + h, f.len - h};
        g.read = f.read_payload(0, &v, 1);
    };
    auto f1 = make_frag(48, 2000, 1);
    auto f2 = make_frag(48, 300, 2);
    put(*a_, 1, f1, Lane::bulk);
    put(*a_, 1, f2, Lane::bulk);
    ASSERT_TRUE(collect(*b_, sink, 2));
    EXPECT_TRUE(sink.got[1].bytes == f2);
    EXPECT_EQ(b_->progress(sink), 0);
}

TEST_F(UdpPair, gathered_send_carries_several_iovecs_on_either_lane)
{
    make();
    TestSink sink;
    auto frag = make_frag(48, 5000, 4);
    iovec v[3] = {{frag.data(), 48}, {frag.data() + 48, 2000}, {frag.data() + 2048, 3000}};
    EXPECT_EQ(a_->send(1, v, 3, Lane::bulk), SendResult::done);
    EXPECT_EQ(a_->send(1, v, 3, Lane::control), SendResult::done);
    ASSERT_TRUE(collect(*b_, sink, 2));
    EXPECT_TRUE(sink.got[0].bytes == frag || sink.got[1].bytes == frag);
    EXPECT_TRUE(sink.got[0].bytes == sink.got[1].bytes);
    std::vector<std::byte> big(a_->info().max_frag + 1);
    iovec vb{big.data(), big.size()};
    EXPECT_EQ(a_->send(1, &vb, 1, Lane::bulk), SendResult::failed);
}

TEST_F(UdpPair, stray_datagrams_are_refused_counted_and_never_reach_the_sink)
{
    make();
    TestSink sink;
    path::udp::Header h{};
    h.magic = path::udp::kMagic;
    h.version = path::udp::kVersion;
    h.lane = 0;
    h.src = 0;
    h.dst = 1;
    h.token = b_->token() ^ 1;
    std::vector<std::byte> d(sizeof h + 100);

    stray("hello", 5, Lane::control); // malformed
    std::memcpy(d.data(), &h, sizeof h);
    stray(d.data(), d.size(), Lane::control); // wrong token
    h.token = b_->token();
    h.dst = 0;
    std::memcpy(d.data(), &h, sizeof h);
    stray(d.data(), d.size(), Lane::control); // not addressed to rank 1
    h.dst = 1;
    std::memcpy(d.data(), &h, sizeof h);
    stray(d.data(), d.size(), Lane::control); // right token, but not rank 0's address
    stray(d.data(), d.size(), Lane::bulk);    // lane 0 header on the long socket
    h.lane = 1;
    std::memcpy(d.data(), &h, sizeof h);
    stray(d.data(), d.size(), Lane::bulk); // not rank 0's address either
    auto good = make_frag(48, 10, 1);
    put(*a_, 1, good, Lane::control);
    ASSERT_TRUE(collect(*b_, sink, 1));
    for (int i = 0; i < 20; ++i) {
        b_->progress(sink);
    }
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_TRUE(sink.got[0].bytes == good);
    const auto& r = b_->refusals();
    EXPECT_EQ(r.malformed, 2u);
    EXPECT_EQ(r.token, 1u);
    EXPECT_EQ(r.rank, 1u);
    EXPECT_EQ(r.address, 2u);
    EXPECT_EQ(r.total(), 6u);
    EXPECT_NE(std::string(b_->describe()).find("refused 6 datagrams"), std::string::npos)
        << b_->describe();
}

TEST_F(UdpPair, datagrams_longer_than_the_jobs_fragments_are_refused)
{
    UdpOptions small;
    small.frag_size = 1500;
    make({}, small);
    EXPECT_EQ(b_->info().max_frag, 1500u - sizeof(path::udp::Header));
    TestSink sink;
    auto big = make_frag(48, 3000, 1);
    iovec v{big.data(), big.size()};
    EXPECT_EQ(a_->send(1, &v, 1, Lane::bulk), SendResult::done);
    EXPECT_EQ(a_->send(1, &v, 1, Lane::control), SendResult::done);
    auto ok = make_frag(48, 100, 2);
    put(*a_, 1, ok, Lane::bulk);
    ASSERT_TRUE(collect(*b_, sink, 1));
    EXPECT_TRUE(sink.got[0].bytes == ok);
    for (int i = 0; i < 20 && b_->refusals().oversize < 2; ++i) {
        b_->progress(sink);
    }
    EXPECT_EQ(b_->refusals().oversize, 2u);
    EXPECT_EQ(sink.got.size(), 1u);
}

TEST_F(UdpPair, reaches_other_hosts_and_this_host_only_when_asked)
{
    make();
    EXPECT_TRUE(a_->can_reach(1));
    EXPECT_FALSE(a_->can_reach(0));
    EXPECT_FALSE(a_->can_reach(2));
    EXPECT_FALSE(a_->can_reach(-1));
}

TEST_F(UdpPair, same_host_ranks_need_everywhere)
{
    make({}, {}, {0, 0});
    EXPECT_FALSE(a_->can_reach(1));
    UdpOptions ev;
    ev.everywhere = true;
    make(ev, ev, {0, 0});
    EXPECT_TRUE(a_->can_reach(1));
    EXPECT_TRUE(a_->can_reach(0)); // itself too, for ULMPI_PATH_INCLUDE=udp alone
    TestSink sink;
    auto f = make_frag(48, 700, 3);
    put(*a_, 0, f, Lane::bulk);
    ASSERT_TRUE(collect(*a_, sink, 1));
    EXPECT_TRUE(sink.got[0].bytes == f);
}

// Replica recovery (path.h, become()): rank 2 died on host 2; its new
// process, forked from rank 1 on host 1, takes new sockets and publishes
// them as rank 2's. Every peer that reset and connected it again reads the
// new addresses (rank 1 reaches it over udp on its own host: it has no
// place in host 1's shared memory); the new process sends to nobody but
// rank 1 (`ready`) and takes nothing from anybody else until
// connect_peer() says that peer knows it.
TEST_F(UdpPair, a_new_process_publishes_sockets_of_its_own_that_peers_read_after_reset)
{
    const std::vector<int> nodes = {0, 1, 2};
    LocalJob job(3, LocalJob::Fences::none);
    std::vector<std::unique_ptr<LocalBootstrap>> boot;
    std::vector<std::unique_ptr<UdpPath>> p;
    UdpOptions o;
    o.ifaces = "lo";
    for (int r = 0; r < 3; ++r) {
        boot.push_back(std::make_unique<LocalBootstrap>(job, r, nodes));
        p.push_back(std::make_unique<UdpPath>(boot[static_cast<std::size_t>(r)]->job(), o));
        ASSERT_TRUE(p.back()->open(*boot.back()).ok());
    }
    for (int r = 0; r < 3; ++r) {
        ASSERT_TRUE(p[static_cast<std::size_t>(r)]->connect(*boot[static_cast<std::size_t>(r)]).ok());
    }
    EXPECT_FALSE(p[1]->can_reach(1));
    const std::uint16_t old_port = p[2]->endpoints()[0].port[0];

    // Rank 2 dies; ranks 0 and 1 forget it; its new process runs on host 1.
    ASSERT_TRUE(p[0]->reset_peer(2, *boot[0]).ok());
    ASSERT_TRUE(p[1]->reset_peer(2, *boot[1]).ok());
    EXPECT_FALSE(p[0]->can_reach(2));
    boot[2]->mutable_job().node_id = 1;
    boot[2]->moved(2, 1);
    ASSERT_TRUE(p[2]->become(2, 1, *boot[2]).ok());
    EXPECT_NE(p[2]->endpoints()[0].port[0], old_port);
    EXPECT_TRUE(p[2]->can_reach(0));
    EXPECT_TRUE(p[2]->can_reach(1)); // one host, but no shared segment
    TestSink sink;
    TxBuffer buf;
    buf.lane = Lane::control;
    EXPECT_FALSE(p[2]->acquire(0, 64, buf)); // rank 0 does not know it yet

    // The substitute reads the new addresses and the two talk.
    boot[1]->moved(2, 1);
    ASSERT_TRUE(p[1]->connect_peer(2, *boot[1]).ok());
    EXPECT_TRUE(p[1]->can_reach(2));
    auto f = make_frag(32, 100, 1);
    put(*p[2], 1, f, Lane::control);
    ASSERT_TRUE(collect(*p[1], sink, 1));
    EXPECT_EQ(sink.got[0].peer, 2);
    EXPECT_TRUE(sink.got[0].bytes == f);

    // Rank 0 hears of it: its datagrams are refused until the new process
    // is told rank 0 knows it, then both ways work.
    boot[0]->moved(2, 1);
    ASSERT_TRUE(p[0]->connect_peer(2, *boot[0]).ok());
    auto g = make_frag(24, 50, 2);
    put(*p[0], 2, g, Lane::control);
    TestSink early;
    for (int i = 0; i < 200 && p[2]->refusals().address == 0; ++i) {
        p[2]->progress(early);
        ::usleep(100);
    }
    EXPECT_EQ(p[2]->refusals().address, 1u);
    EXPECT_TRUE(early.got.empty());
    ASSERT_TRUE(p[2]->connect_peer(0, *boot[2]).ok());
    put(*p[0], 2, g, Lane::control);
    TestSink at2;
    ASSERT_TRUE(collect(*p[2], at2, 1));
    EXPECT_EQ(at2.got[0].peer, 0);
    EXPECT_TRUE(at2.got[0].bytes == g);
    put(*p[2], 0, f, Lane::bulk);
    TestSink at0;
    ASSERT_TRUE(collect(*p[0], at0, 1));
    EXPECT_EQ(at0.got[0].peer, 2);
    EXPECT_TRUE(at0.got[0].bytes == f);
}

TEST_F(UdpPair, explicit_eager_limit_and_fragment_size)
{
    UdpOptions o;
    o.eager_limit = 8192;
    o.frag_size = 9000;
    make(o, o);
    EXPECT_EQ(a_->info().eager_limit, 8192u);
    EXPECT_EQ(a_->info().max_frag, 9000u - sizeof(path::udp::Header));
    EXPECT_NE(std::string(a_->describe()).find("ULMPI_UDP_FRAG_SIZE"), std::string::npos);
}

TEST_F(UdpPair, unknown_interface_fails_open_with_its_name_in_the_log)
{
    LocalJob job(2, LocalJob::Fences::none);
    LocalBootstrap boot(job, 0, {0, 1});
    UdpOptions o;
    o.ifaces = "nosuchif0";
    UdpPath p(boot.job(), o);
    EXPECT_FALSE(p.open(boot).ok());
}

// Fills a's window to b with 1000-byte fragments; returns how many went.
int fill_window(UdpPath& a, Lane lane = Lane::bulk, std::size_t len = 1000)
{
    int n = 0;
    for (; n < 100; ++n) {
        TxBuffer buf;
        buf.lane = lane;
        if (!a.acquire(1, len, buf)) {
            break;
        }
        auto f = make_frag(48, len - 48, n);
        std::memcpy(buf.data, f.data(), f.size());
        EXPECT_EQ(a.commit(1, buf, f.size()), SendResult::done);
    }
    return n;
}

constexpr std::uint64_t kThree = 3 * (1000 + UdpPath::kDatagramCost); // three 1000-byte datagrams

UdpOptions windowed(std::int64_t probe_us = 10000000)
{
    UdpOptions o;
    o.frag_size = 1500;
    o.window = kThree;
    o.probe_us = probe_us;
    return o;
}

TEST_F(UdpPair, window_shuts_until_the_receiver_sends_credit)
{
    make(windowed(), windowed());
    EXPECT_EQ(a_->window(), kThree);
    EXPECT_EQ(fill_window(*a_), 3);
    EXPECT_EQ(a_->window_stalls(), 1u);
    // The other lane has a window of its own.
    EXPECT_EQ(fill_window(*a_, Lane::control), 3);
    TestSink sb, sa;
    ASSERT_TRUE(collect(*b_, sb, 6));
    EXPECT_EQ(b_->credits_sent(), 0u);
    b_->progress(sb); // owes credit and has no traffic for a: a header-only credit
    EXPECT_EQ(b_->credits_sent(), 1u);
    int went = 0;
    for (int i = 0; i < 100 && went == 0; ++i) {
        a_->progress(sa);
        went = fill_window(*a_);
        ::usleep(1000);
    }
    EXPECT_EQ(went, 3);
    EXPECT_EQ(fill_window(*a_, Lane::control), 3);
    EXPECT_TRUE(sa.got.empty()) << "a credit is not a fragment";
    EXPECT_EQ(a_->window_probes(), 0u);
}

TEST_F(UdpPair, header_sized_fragments_may_go_a_little_past_the_window)
{
    make(windowed(), windowed());
    EXPECT_EQ(fill_window(*a_, Lane::control), 3);
    // ACK-sized fragments still go, up to kSmallSlack past the window.
    const std::uint64_t small = path::kMaxFragHeader + UdpPath::kDatagramCost;
    EXPECT_EQ(static_cast<std::uint64_t>(fill_window(*a_, Lane::control, path::kMaxFragHeader)),
              std::min<std::uint64_t>(100, UdpPath::kSmallSlack / small));
}

TEST_F(UdpPair, credit_rides_on_traffic_back_to_the_sender)
{
    make(windowed(), windowed());
    EXPECT_EQ(fill_window(*a_), 3);
    TestSink sb, sa;
    ASSERT_TRUE(collect(*b_, sb, 3));
    put(*b_, 0, make_frag(48, 10, 2), Lane::control); // e.g. ULM's ACK
    b_->progress(sb);
    EXPECT_EQ(b_->credits_sent(), 0u);
    ASSERT_TRUE(collect(*a_, sa, 1));
    EXPECT_EQ(fill_window(*a_), 3);
}

TEST_F(UdpPair, a_window_shut_for_long_lets_one_datagram_through)
{
    make(windowed(20000), windowed(20000));
    EXPECT_EQ(fill_window(*a_), 3); // b never reads: every credit is "lost"
    ::usleep(30000);
    EXPECT_EQ(fill_window(*a_), 1);
    EXPECT_EQ(a_->window_probes(), 1u);
    EXPECT_EQ(fill_window(*a_), 0);
    ::usleep(30000);
    EXPECT_EQ(fill_window(*a_), 1);
    EXPECT_EQ(a_->window_probes(), 2u);
}

// ---------------------------------------------------------------------------
// UDP GSO and GRO with Ethernet-sized datagrams over loopback (which carries
// a GSO batch whole to a socket with UDP_GRO, as veth does).

UdpOptions ethernet(bool gso = true, bool gro = true)
{
    UdpOptions o;
    o.frag_size = 1472;
    o.gso = gso;
    o.gro = gro;
    return o;
}

TEST_F(UdpPair, bulk_datagrams_go_in_gso_batches_and_come_back_apart)
{
    make(ethernet(), ethernet());
    ASSERT_TRUE(a_->gso());
    ASSERT_TRUE(b_->gro());
    const std::size_t full = a_->info().max_frag;
    EXPECT_EQ(full, 1472u - sizeof(path::udp::Header));
    EXPECT_NE(std::string(a_->describe()).find("GSO batches of up to 44 datagrams; GRO on"),
              std::string::npos)
        << a_->describe();
    std::vector<std::vector<std::byte>> sent;
    for (int i = 0; i < 100; ++i) {
        sent.push_back(make_frag(48, full - 48, i));
        put(*a_, 1, sent.back(), Lane::bulk);
    }
    sent.push_back(make_frag(48, 100, 100)); // short: ends the batch
    put(*a_, 1, sent.back(), Lane::bulk);
    EXPECT_EQ(a_->stalled(), 0u);
    TestSink sink;
    ASSERT_TRUE(collect(*b_, sink, sent.size()));
    for (std::size_t i = 0; i < sent.size(); ++i) {
        EXPECT_TRUE(sink.got[i].addressable);
        EXPECT_TRUE(sink.got[i].bytes == sent[i]) << i;
    }
    EXPECT_EQ(a_->gso_sends(), 3u); // 44 + 44 + (12 + the short one)
    EXPECT_EQ(a_->gso_datagrams(), sent.size());
    EXPECT_EQ(a_->counters().frags_sent, sent.size());
    EXPECT_GE(b_->gro_reads(), 1u);
    EXPECT_EQ(b_->counters().frags_received, sent.size());
    EXPECT_EQ(b_->refusals().total(), 0u);
}

TEST_F(UdpPair, a_partial_batch_waits_for_progress_and_control_never_waits)
{
    make(ethernet(), ethernet());
    const std::size_t full = a_->info().max_frag;
    for (int i = 0; i < 3; ++i) {
        put(*a_, 1, make_frag(48, full - 48, i), Lane::bulk);
    }
    EXPECT_EQ(a_->stalled(), 3u);
    auto ctl = make_frag(48, 10, 9);
    put(*a_, 1, ctl, Lane::control);
    TestSink sink;
    ASSERT_TRUE(collect(*b_, sink, 1));
    EXPECT_TRUE(sink.got[0].bytes == ctl);
    TestSink sa;
    EXPECT_GE(a_->progress(sa), 1); // sends the batch
    EXPECT_EQ(a_->stalled(), 0u);
    ASSERT_TRUE(collect(*b_, sink, 4));
    EXPECT_EQ(a_->gso_sends(), 1u);
}

TEST_F(UdpPair, a_batch_ends_at_a_longer_datagram)
{
    make(ethernet(), ethernet());
    put(*a_, 1, make_frag(48, 500, 1), Lane::bulk);
    put(*a_, 1, make_frag(48, 500, 2), Lane::bulk);
    put(*a_, 1, make_frag(48, 900, 3), Lane::bulk); // longer than the batch's size
    EXPECT_EQ(a_->stalled(), 1u);
    EXPECT_EQ(a_->gso_sends(), 1u);
    TestSink sa, sink;
    a_->progress(sa);
    ASSERT_TRUE(collect(*b_, sink, 3));
    EXPECT_EQ(sink.got[2].len, 948u);
    EXPECT_EQ(a_->gso_sends(), 1u); // a single datagram goes plain
}

TEST_F(UdpPair, without_gso_and_gro_bulk_is_sent_alone_and_peeked)
{
    make(ethernet(false, false), ethernet(false, false));
    EXPECT_FALSE(a_->gso());
    EXPECT_FALSE(b_->gro());
    EXPECT_NE(std::string(a_->describe()).find("GSO off; GRO off, bulk peeked"), std::string::npos)
        << a_->describe();
    for (int i = 0; i < 5; ++i) {
        put(*a_, 1, make_frag(48, 1000, i), Lane::bulk);
    }
    EXPECT_EQ(a_->stalled(), 0u);
    TestSink sink;
    ASSERT_TRUE(collect(*b_, sink, 5));
    EXPECT_FALSE(sink.got[0].addressable);
    EXPECT_EQ(a_->gso_sends(), 0u);
    EXPECT_EQ(b_->gro_reads(), 0u);
}

TEST_F(UdpPair, gso_and_gro_stay_off_where_one_datagram_fills_a_batch)
{
    make(); // loopback: 65507-byte datagrams
    EXPECT_FALSE(a_->gso());
    EXPECT_FALSE(a_->gro());
    EXPECT_NE(std::string(a_->describe()).find("GSO off: one datagram fills a batch; GRO off: "
                                               "one datagram fills 64 KiB, bulk peeked"),
              std::string::npos)
        << a_->describe();
}

TEST_F(UdpPair, each_datagram_of_a_gro_read_is_checked_on_its_own)
{
    make(ethernet(), ethernet());
    // Three datagrams in one GSO send from a socket outside the job: the
    // second is malformed, the last is short. All come in one GRO read; the
    // malformed one is refused as such, the others for their address.
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(fd, 0);
    path::udp::Header h{};
    h.magic = path::udp::kMagic;
    h.version = path::udp::kVersion;
    h.lane = 1;
    h.src = 0;
    h.dst = 1;
    h.token = b_->token();
    const std::size_t seg = 1000;
    std::vector<std::byte> d(2 * seg + 100);
    std::memcpy(d.data(), &h, sizeof h);
    std::memcpy(d.data() + 2 * seg, &h, sizeof h);
    std::memcpy(d.data() + seg, "garbage", 7);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(b_->endpoints()[0].port[1]);
    iovec v{d.data(), d.size()};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(std::uint16_t))] = {};
    msghdr m{};
    m.msg_name = &to;
    m.msg_namelen = sizeof to;
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
    const auto s16 = static_cast<std::uint16_t>(seg);
    std::memcpy(CMSG_DATA(c), &s16, sizeof s16);
    ASSERT_EQ(::sendmsg(fd, &m, 0), static_cast<ssize_t>(d.size()));
    ::close(fd);
    TestSink sink;
    for (int i = 0; i < 200 && b_->refusals().total() < 3; ++i) {
        b_->progress(sink);
        ::usleep(100);
    }
    EXPECT_EQ(b_->gro_reads(), 1u);
    EXPECT_EQ(b_->gro_datagrams(), 3u);
    EXPECT_EQ(b_->refusals().malformed, 1u);
    EXPECT_EQ(b_->refusals().address, 2u);
    EXPECT_TRUE(sink.got.empty());
}

// ---------------------------------------------------------------------------
// Threads (udp_path.h, "Threads"): with the fine locks on, senders share the
// sockets and the peer's window while pollers read both sockets at once and
// the senders poll for credit. Every datagram arrives exactly once, and each
// sender's datagrams in its order on its lane.
class ThreadedSink final : public path::Sink {
public:
    static constexpr std::size_t kHeader = 16; // [0] length, [1] sender, [8..15] sequence

    void on_frag(path::Path&, RxFrag& f) override
    {
        ASSERT_GE(f.len, kHeader);
        const auto sender = static_cast<std::size_t>(f.data[1]);
        std::uint64_t seq = 0;
        std::memcpy(&seq, f.data + 8, sizeof seq);
        std::lock_guard<std::mutex> g(m_);
        ASSERT_LT(sender, seqs.size());
        seqs[sender].push_back(seq);
        total.fetch_add(1, std::memory_order_relaxed);
    }
    void on_path_down(path::Path&, int) override {}
    void on_path_up(path::Path&, int) override {}

    std::vector<std::vector<std::uint64_t>> seqs;
    std::atomic<std::uint64_t> total{0};

private:
    std::mutex m_;
};

void run_threads(UdpPath& a, UdpPath& b)
{
    struct FineOn {
        FineOn() { rt::set_fine_locks(true); }
        ~FineOn() { rt::set_fine_locks(false); }
    } on;
    constexpr int kSenders = 4; // even: control lane, odd: bulk lane
    constexpr std::uint64_t kEach = 3000;
    ThreadedSink sb;
    ThreadedSink sa; // a hears only credits
    sb.seqs.resize(kSenders);
    sa.seqs.resize(kSenders);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::atomic<bool> stuck{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < kSenders; ++t) {
        ts.emplace_back([&, t] {
            const Lane lane = t % 2 == 0 ? Lane::control : Lane::bulk;
            const std::size_t len = lane == Lane::control ? 100 : 1200;
            std::vector<std::byte> f(len);
            f[0] = static_cast<std::byte>(ThreadedSink::kHeader);
            f[1] = static_cast<std::byte>(t);
            for (std::uint64_t seq = 0; seq < kEach && !stuck; ++seq) {
                std::memcpy(f.data() + 8, &seq, sizeof seq);
                TxBuffer buf;
                buf.lane = lane;
                while (!a.acquire(1, len, buf)) {
                    a.progress(sa); // staged batches go, credits come in
                    if (std::chrono::steady_clock::now() > end) {
                        stuck = true;
                        return;
                    }
                    sched_yield();
                }
                std::memcpy(buf.data, f.data(), len);
                EXPECT_EQ(a.commit(1, buf, len), SendResult::done);
            }
            while (a.stalled() > 0 && !stuck && std::chrono::steady_clock::now() < end) {
                a.progress(sa);
            }
        });
    }
    for (int t = 0; t < 2; ++t) {
        ts.emplace_back([&] {
            while (sb.total.load() < kSenders * kEach && !stuck) {
                if (b.progress(sb) == 0) {
                    a.progress(sa); // a partial batch waits for a poll
                    sched_yield();
                }
                if (std::chrono::steady_clock::now() > end) {
                    stuck = true;
                }
            }
        });
    }
    for (auto& t : ts) {
        t.join();
    }
    ASSERT_FALSE(stuck) << "received " << sb.total.load() << " of " << kSenders * kEach;
    for (int t = 0; t < kSenders; ++t) {
        const auto& got = sb.seqs[static_cast<std::size_t>(t)];
        ASSERT_EQ(got.size(), kEach) << "sender " << t;
        for (std::uint64_t i = 0; i < kEach; ++i) {
            ASSERT_EQ(got[i], i) << "sender " << t << " out of order or twice";
        }
    }
    EXPECT_EQ(b.refusals().total(), 0u);
    EXPECT_EQ(sa.total.load(), 0u);
}

TEST_F(UdpPair, threads_send_and_poll_at_once_and_every_datagram_arrives_once_in_order)
{
    make(); // loopback: the long socket is peeked
    run_threads(*a_, *b_);
}

TEST_F(UdpPair, threads_share_gso_batches_and_gro_reads)
{
    make(ethernet(), ethernet());
    ASSERT_TRUE(a_->gso());
    run_threads(*a_, *b_);
    EXPECT_GT(a_->gso_sends(), 0u);
}

// The ULM engine over udp between two processes (both on loopback).

const ulm::Run kByteRun{0, 1};
const std::uint64_t kBytePrefix[2] = {0, 1};
const ulm::Layout kBytes{1, 1, 1, &kByteRun, kBytePrefix, true};
// 3 bytes of every 5: a receive buffer that needs many iovecs.
const ulm::Run kStrideRun{0, 3};
const std::uint64_t kStridePrefix[2] = {0, 3};
const ulm::Layout kStride{3, 5, 1, &kStrideRun, kStridePrefix, false};

std::vector<std::byte> msg_bytes(std::size_t n, int i)
{
    std::vector<std::byte> v(n);
    for (std::size_t k = 0; k < n; ++k) {
        v[k] = static_cast<std::byte>((k * 7 + static_cast<std::size_t>(i) * 13 + (k >> 9)) & 0xff);
    }
    return v;
}

// Rank 0 sends messages of every protocol; rank 1 echoes each back, one of
// them received into a strided buffer. `lossy` wraps udp in the decorator.
int engine_body(SocketBootstrap& boot, const path::LossyConfig* lossy, std::uint64_t frag_size)
{
    const int me = boot.job().rank;
    const int peer = 1 - me;
    UdpOptions o;
    o.ifaces = "lo";
    o.everywhere = true;
    o.frag_size = frag_size;
    std::unique_ptr<path::Path> udp = std::make_unique<UdpPath>(boot.job(), o);
    UdpPath* raw = static_cast<UdpPath*>(udp.get());
    if (lossy != nullptr) {
        udp = std::make_unique<path::LossyPath>(std::move(udp), *lossy, me);
    }
    std::vector<std::unique_ptr<path::Path>> paths;
    paths.push_back(std::make_unique<path::SelfPath>(me));
    paths.push_back(std::move(udp));
    ulm::Engine e;
    std::string why;
    if (!e.init(boot, std::move(paths), why).ok()) {
        ADD_FAILURE() << "init: " << why;
        return 1;
    }
    EXPECT_STREQ(e.primary_path(peer)->info().name, "udp");
    EXPECT_TRUE(e.reliable(e.primary_path(peer)));
    auto wait = [&](auto done) {
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done()) {
            if (e.progress() == 0) {
                sched_yield();
            }
            if (std::chrono::steady_clock::now() > end) {
                return false;
            }
        }
        return true;
    };
    const std::size_t sizes[] = {0, 1, 1400, 1500, 8000, 65000, 70000, 300000, 4u << 20};
    int i = 0;
    for (std::size_t n : sizes) {
        for (ulm::SendMode mode : {ulm::SendMode::standard, ulm::SendMode::synchronous}) {
            ++i;
            const bool strided = me == 1 && n == 300000 && mode == ulm::SendMode::standard;
            std::vector<std::byte> in(strided ? n / 3 * 5 : n);
            ulm::DataRef rref = strided ? ulm::DataRef{in.data(), n / 3, &kStride}
                                        : ulm::DataRef{in.data(), n, &kBytes};
            ulm::RecvMsg* r = nullptr;
            ulm::SendMsg* s = nullptr;
            std::vector<std::byte> out = me == 0 ? msg_bytes(n, i) : std::vector<std::byte>();
            if (me == 0) {
                EXPECT_TRUE(e.isend(ulm::DataRef{out.data(), n, &kBytes}, peer, i,
                                    ulm::ContextId(1), mode, &s)
                                .ok());
                EXPECT_TRUE(
                    e.irecv(ulm::DataRef{in.data(), n, &kBytes}, peer, i, ulm::ContextId(1), &r)
                        .ok());
            } else {
                EXPECT_TRUE(e.irecv(rref, peer, i, ulm::ContextId(1), &r).ok());
                if (!wait([&] { return r->complete; })) {
                    ADD_FAILURE() << "rank 1 never got message " << i << " (" << n << " bytes)";
                    return 1;
                }
                out.resize(n);
                if (strided) {
                    for (std::size_t k = 0; k < n / 3; ++k) {
                        std::memcpy(out.data() + 3 * k, in.data() + 5 * k, 3);
                    }
                } else {
                    out = in;
                }
                EXPECT_TRUE(out == msg_bytes(n, i)) << n << " bytes" << (strided ? " strided" : "");
                e.release(r);
                r = nullptr;
                EXPECT_TRUE(e.isend(ulm::DataRef{out.data(), n, &kBytes}, peer, i,
                                    ulm::ContextId(1), mode, &s)
                                .ok());
            }
            if (!wait([&] { return s->complete && (r == nullptr || r->complete); })) {
                e.print_stats(); // what each side saw, for the failure report
                ADD_FAILURE() << "rank " << me << " stuck at message " << i << " (" << n
                              << " bytes)";
                return 1;
            }
            if (me == 0) {
                EXPECT_TRUE(in == out) << "echo of " << n << " bytes";
                e.release(r);
            }
            e.release(s);
        }
    }
    EXPECT_GT(raw->counters().frags_received, 0u);
    EXPECT_EQ(raw->refusals().total(), 0u);
    if (lossy != nullptr) {
        EXPECT_GT(e.counters(peer).retransmits + e.counters(peer).duplicates, 0u);
    }
    EXPECT_TRUE(e.finalize().ok());
    return 0;
}

class UdpEngine : public ::testing::Test {
protected:
    void TearDown() override { path::set_frag_header_length(nullptr); }
};

TEST_F(UdpEngine, messages_of_all_protocols_flow_between_two_processes)
{
    EXPECT_EQ(run_pair([](SocketBootstrap& boot) { return engine_body(boot, nullptr, 0); }, 120),
              0);
}

TEST_F(UdpEngine, ethernet_sized_datagrams_carry_everything_too)
{
    EXPECT_EQ(
        run_pair([](SocketBootstrap& boot) { return engine_body(boot, nullptr, 1500); }, 120),
        0);
}

TEST_F(UdpEngine, everything_arrives_through_drops_duplicates_corruption_and_reordering)
{
    path::LossyConfig cfg;
    cfg.drop = 0.03;
    cfg.dup = 0.02;
    cfg.corrupt = 0.02;
    cfg.reorder = 0.03;
    cfg.seed = 11;
    EXPECT_EQ(
        run_pair([&](SocketBootstrap& boot) { return engine_body(boot, &cfg, 9000); }, 120), 0);
}

} // namespace
} // namespace ulmpi::test
