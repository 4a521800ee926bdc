#include "runtime/mpirun/kv_server.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

using namespace ulmpi::rt;
using namespace ulmpi::rt::wire;
using ulmpi::rt::mpirun::ConnId;
using ulmpi::rt::mpirun::KvServer;
using Kind = KvServer::Note::Kind;

namespace {

class FakeSink final : public KvServer::Sink {
public:
    void send(ConnId conn, Bytes frame) override
    {
        Bytes& s = sent[conn];
        s.insert(s.end(), frame.begin(), frame.end());
    }
    void close(ConnId conn) override { closed.insert(conn); }

    // Every message sent to `conn` since the last call.
    std::vector<Message> take(ConnId conn)
    {
        std::vector<Message> out;
        FrameReader r;
        Bytes& s = sent[conn];
        r.append(s.data(), s.size());
        s.clear();
        Message m;
        std::string why;
        while (r.next(m, why).ok()) {
            out.push_back(m);
        }
        EXPECT_EQ(r.buffered(), 0u) << why;
        return out;
    }

    std::map<ConnId, Bytes> sent;
    std::set<ConnId> closed;
};

Secret secret()
{
    Secret s{};
    s[0] = 0xab;
    s[15] = 0xcd;
    return s;
}

class KvServerTest : public ::testing::Test {
protected:
    KvServerTest() : kv(secret(), {0, 0, 1}, 4, sink) {}

    void feed(ConnId c, const Message& m)
    {
        Bytes f = encode(m);
        kv.on_data(c, f.data(), f.size());
    }
    // Connection `c` says HELLO as `rank`; returns what came back.
    std::vector<Message> hello(ConnId c, int rank, Secret s = secret(), bool connect = true)
    {
        if (connect) {
            kv.on_connect(c);
        }
        Hello h;
        h.secret = s;
        h.rank = rank;
        h.pid = 1000 + static_cast<std::uint32_t>(rank);
        feed(c, Message{rank, h});
        return sink.take(c);
    }
    void put(ConnId c, int rank, const std::string& key, const std::string& value)
    {
        Bytes v(value.size());
        if (!value.empty()) { // an empty vector's data() may be null
            std::memcpy(v.data(), value.data(), value.size());
        }
        feed(c, Message{rank, Put{key, v}});
    }
    std::vector<Kind> note_kinds()
    {
        std::vector<Kind> out;
        for (auto& n : kv.take_notes()) {
            out.push_back(n.kind);
        }
        return out;
    }

    FakeSink sink;
    KvServer kv;
};

} // namespace

TEST_F(KvServerTest, hello_with_the_secret_is_welcomed_with_the_job_map)
{
    auto got = hello(1, 2);
    ASSERT_EQ(got.size(), 1u);
    const auto& w = std::get<Welcome>(got[0].body);
    EXPECT_EQ(w.node_of_rank, (std::vector<std::int32_t>{0, 0, 1}));
    EXPECT_EQ(w.universe_size, 4u);
    EXPECT_EQ(got[0].rank, 2);
    EXPECT_TRUE(kv.said_hello(2));
    EXPECT_EQ(kv.pid(2), 1002u);
    EXPECT_EQ(kv.conn_of(2), 1);
    EXPECT_EQ(note_kinds(), std::vector<Kind>{Kind::hello});
}

TEST_F(KvServerTest, wrong_secret_is_refused_closed_and_counted)
{
    Secret bad = secret();
    bad[7] ^= 0x10;
    auto got = hello(1, 0, bad);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NE(std::get<Refused>(got[0].body).reason.find("secret"), std::string::npos);
    EXPECT_TRUE(sink.closed.count(1));
    EXPECT_EQ(kv.refused_count(), 1u);
    EXPECT_FALSE(kv.said_hello(0));
    EXPECT_TRUE(note_kinds().empty());
    // Later bytes on the refused connection are ignored.
    feed(1, Message{0, Fence{}});
    EXPECT_EQ(kv.fenced_count(), 0);
}

TEST_F(KvServerTest, anything_before_hello_is_refused)
{
    kv.on_connect(1);
    feed(1, Message{0, Fence{}});
    EXPECT_TRUE(sink.closed.count(1));
    EXPECT_EQ(kv.refused_count(), 1u);
}

TEST_F(KvServerTest, big_frame_before_hello_is_refused)
{
    kv.on_connect(1);
    Bytes f = encode(Message{0, Put{"k", Bytes(kMaxHelloFrame + 1)}});
    kv.on_data(1, f.data(), kHeaderBytes); // the header alone is enough
    EXPECT_TRUE(sink.closed.count(1));
    EXPECT_EQ(kv.refused_count(), 1u);
}

TEST_F(KvServerTest, rank_out_of_range_or_twice_is_refused)
{
    hello(1, 3);
    EXPECT_TRUE(sink.closed.count(1));
    hello(2, 0);
    hello(3, 0);
    EXPECT_FALSE(sink.closed.count(2));
    EXPECT_TRUE(sink.closed.count(3));
    EXPECT_EQ(kv.refused_count(), 2u);
}

TEST_F(KvServerTest, a_bad_hello_on_a_relaying_connection_loses_its_ranks)
{
    kv.on_connect(5);
    hello(5, 0, secret(), false);
    kv.take_notes();
    Secret bad = secret();
    bad[0] ^= 1;
    hello(5, 1, bad, false);
    EXPECT_TRUE(sink.closed.count(5));
    EXPECT_EQ(kv.refused_count(), 1u);
    EXPECT_EQ(kv.conn_of(0), -1);
    EXPECT_EQ(note_kinds(), std::vector<Kind>{Kind::conn_lost});
}

TEST_F(KvServerTest, fence_completes_when_every_rank_fenced_and_carries_the_round_s_puts)
{
    for (int r = 0; r < 3; ++r) {
        hello(10 + r, r);
    }
    kv.take_notes();
    put(10, 0, "a", "zero");
    put(11, 1, "a", "one");
    put(11, 1, "a", "one again"); // the last value wins
    feed(10, Message{0, Fence{}});
    feed(11, Message{1, Fence{}});
    EXPECT_EQ(kv.fenced_count(), 2);
    EXPECT_TRUE(sink.take(10).empty());
    put(12, 2, "b", "two");
    feed(12, Message{2, Fence{}});
    EXPECT_EQ(kv.fenced_count(), 0);
    EXPECT_EQ(kv.fences_completed(), 1u);
    for (ConnId c : {10, 11, 12}) {
        auto got = sink.take(c);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].rank, -1);
        const auto& d = std::get<FenceDone>(got[0].body);
        ASSERT_EQ(d.entries.size(), 3u);
        std::map<std::pair<int, std::string>, std::string> seen;
        for (const auto& e : d.entries) {
            seen[{e.rank, e.key}] = std::string(reinterpret_cast<const char*>(e.value.data()),
                                                e.value.size());
        }
        EXPECT_EQ(seen[std::make_pair(0, std::string("a"))], "zero");
        EXPECT_EQ(seen[std::make_pair(1, std::string("a"))], "one again");
        EXPECT_EQ(seen[std::make_pair(2, std::string("b"))], "two");
    }
    // The next round carries only what was put since.
    put(10, 0, "c", "new");
    for (int r = 0; r < 3; ++r) {
        feed(10 + r, Message{r, Fence{}});
    }
    auto got = sink.take(11);
    ASSERT_EQ(got.size(), 1u);
    const auto& d = std::get<FenceDone>(got[0].body);
    ASSERT_EQ(d.entries.size(), 1u);
    EXPECT_EQ(d.entries[0].key, "c");
    EXPECT_TRUE(note_kinds().empty());
}

TEST_F(KvServerTest, get_answers_from_everything_put)
{
    hello(1, 0);
    hello(2, 1);
    put(1, 0, "k", "v");
    feed(2, Message{1, Get{0, "k"}});
    feed(2, Message{1, Get{0, "nope"}});
    auto got = sink.take(2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].rank, 1);
    EXPECT_TRUE(std::get<Value>(got[0].body).found);
    EXPECT_EQ(std::get<Value>(got[0].body).value.size(), 1u);
    EXPECT_FALSE(std::get<Value>(got[1].body).found);
}

TEST_F(KvServerTest, the_name_service_is_answered_and_kept_out_of_fences)
{
    hello(1, 0);
    hello(2, 1);
    hello(3, 2);
    kv.take_notes();
    put(1, 0, "name+/svc", "port-A"); // publish: VALUE found=1
    put(2, 1, "name+/svc", "port-B"); // taken: VALUE found=0, the first stays
    feed(3, Message{2, Get{-1, "name/svc"}});
    feed(3, Message{2, Get{-1, "name/other"}});
    auto a = sink.take(1);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].rank, 0);
    EXPECT_TRUE(std::get<Value>(a[0].body).found);
    auto b = sink.take(2);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_FALSE(std::get<Value>(b[0].body).found);
    auto c = sink.take(3);
    ASSERT_EQ(c.size(), 2u);
    ASSERT_TRUE(std::get<Value>(c[0].body).found);
    const auto& v = std::get<Value>(c[0].body).value;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.data()), v.size()), "port-A");
    EXPECT_FALSE(std::get<Value>(c[1].body).found);
    // Unpublish by another rank: found=1, then 0; the lookup fails after.
    put(3, 2, "name-/svc", "");
    put(3, 2, "name-/svc", "");
    feed(3, Message{2, Get{-1, "name/svc"}});
    c = sink.take(3);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_TRUE(std::get<Value>(c[0].body).found);
    EXPECT_FALSE(std::get<Value>(c[1].body).found);
    EXPECT_FALSE(std::get<Value>(c[2].body).found);
    // No fence carries names.
    for (int r = 0; r < 3; ++r) {
        feed(1 + r, Message{r, Fence{}});
    }
    auto f = sink.take(1);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_TRUE(std::get<FenceDone>(f[0].body).entries.empty());
    EXPECT_TRUE(note_kinds().empty());
}

TEST_F(KvServerTest, abort_and_finalize_become_notes)
{
    hello(1, 0);
    kv.take_notes();
    feed(1, Message{0, Abort{7, "boom"}});
    feed(1, Message{0, Finalize{}});
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 2u);
    EXPECT_EQ(notes[0].kind, Kind::abort);
    EXPECT_EQ(notes[0].code, 7);
    EXPECT_EQ(notes[0].text, "boom");
    EXPECT_EQ(notes[1].kind, Kind::finalize);
    EXPECT_TRUE(kv.finalized(0));
}

TEST_F(KvServerTest, a_rank_gone_while_others_fence_makes_the_fence_stuck)
{
    hello(1, 0);
    hello(2, 1);
    kv.take_notes();
    kv.rank_gone(2); // never said HELLO, ended
    EXPECT_TRUE(note_kinds().empty()) << "nobody waits yet";
    feed(1, Message{0, Fence{}});
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].kind, Kind::fence_stuck);
    EXPECT_EQ(notes[0].rank, 2);
    EXPECT_NE(notes[0].text.find("without calling MPI_Init"), std::string::npos);
    feed(2, Message{1, Fence{}});
    EXPECT_TRUE(note_kinds().empty()) << "noted once";
}

TEST_F(KvServerTest, a_lost_connection_is_noted_and_blocks_the_fence)
{
    hello(1, 0);
    hello(2, 1);
    hello(3, 2);
    kv.take_notes();
    feed(1, Message{0, Fence{}});
    kv.on_close(2);
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 2u);
    EXPECT_EQ(notes[0].kind, Kind::conn_lost);
    EXPECT_EQ(notes[0].rank, 1);
    EXPECT_EQ(notes[1].kind, Kind::fence_stuck);
    EXPECT_EQ(kv.conn_of(1), -1);
    kv.on_close(2); // twice: ignored
    EXPECT_TRUE(note_kinds().empty());
}

TEST_F(KvServerTest, finalized_rank_closing_is_not_a_loss)
{
    hello(1, 0);
    kv.take_notes();
    feed(1, Message{0, Finalize{}});
    kv.on_close(1);
    EXPECT_EQ(note_kinds(), std::vector<Kind>{Kind::finalize});
}

TEST_F(KvServerTest, one_connection_may_carry_several_ranks_like_a_daemon)
{
    kv.on_connect(5);
    hello(5, 0, secret(), false);
    hello(5, 1, secret(), false);
    hello(6, 2);
    kv.take_notes();
    put(5, 1, "x", "from 1");
    for (int r = 0; r < 2; ++r) {
        feed(5, Message{r, Fence{}});
    }
    feed(6, Message{2, Fence{}});
    auto got = sink.take(5);
    ASSERT_EQ(got.size(), 1u) << "one FENCE_DONE per connection";
    EXPECT_EQ(got[0].rank, -1);
    // A frame for a rank the connection did not introduce drops it.
    feed(6, Message{0, Fence{}});
    EXPECT_TRUE(sink.closed.count(6));
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].kind, Kind::conn_lost);
    EXPECT_EQ(notes[0].rank, 2);
}

TEST_F(KvServerTest, fencing_twice_in_a_round_breaks_the_connection)
{
    hello(1, 0);
    kv.take_notes();
    feed(1, Message{0, Fence{}});
    feed(1, Message{0, Fence{}});
    EXPECT_TRUE(sink.closed.count(1));
    auto kinds = note_kinds();
    ASSERT_FALSE(kinds.empty());
    EXPECT_EQ(kinds[0], Kind::conn_lost);
}

TEST_F(KvServerTest, events_go_to_every_connection_with_ranks)
{
    hello(1, 0);
    hello(2, 1);
    kv.on_connect(3); // not introduced yet
    kv.broadcast(Event{EventKind::rank_failed, 2, 1, "died"});
    for (ConnId c : {1, 2}) {
        auto got = sink.take(c);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(std::get<Event>(got[0].body).rank, 2);
    }
    EXPECT_TRUE(sink.take(3).empty());
}

TEST_F(KvServerTest, garbage_from_a_trusted_connection_drops_it)
{
    hello(1, 0);
    kv.take_notes();
    Bytes junk(kHeaderBytes, std::byte{0xee});
    kv.on_data(1, junk.data(), junk.size());
    EXPECT_TRUE(sink.closed.count(1));
    EXPECT_EQ(note_kinds(), std::vector<Kind>{Kind::conn_lost});
    EXPECT_EQ(kv.refused_count(), 0u);
}

// Node 1 (rank 2) is served by a daemon; nodes 0 is not.
class KvDaemonTest : public KvServerTest {
protected:
    KvDaemonTest() { kv.expect_daemons({"", "h1"}); }
    void daemon_hello(ConnId c, int node, const std::string& host, Secret s = secret())
    {
        kv.on_connect(c);
        DaemonHello h;
        h.secret = s;
        h.node = node;
        h.pid = 4242;
        h.host = host;
        feed(c, Message{-1, h});
    }
};

TEST_F(KvDaemonTest, daemon_relays_its_ranks_and_reports_them)
{
    daemon_hello(7, 1, "h1");
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].kind, Kind::daemon_hello);
    EXPECT_EQ(notes[0].node, 1);
    EXPECT_EQ(notes[0].code, 4242);
    EXPECT_EQ(kv.daemon_conn(1), 7);
    auto got = hello(7, 2, secret(), false);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].rank, 2);
    EXPECT_TRUE(std::holds_alternative<Welcome>(got[0].body));
    note_kinds();
    // Reports of the daemon come as notes, in order.
    feed(7, Message{2, Spawned{99, 0, ""}});
    feed(7, Message{2, Exited{0}});
    notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 2u);
    EXPECT_EQ(notes[0].kind, Kind::daemon_msg);
    EXPECT_TRUE(std::holds_alternative<Spawned>(notes[0].msg.body));
    EXPECT_TRUE(std::holds_alternative<Exited>(notes[1].msg.body));
    // RANK_CLOSED ends that rank's part of the connection.
    feed(7, Message{2, RankClosed{}});
    EXPECT_EQ(note_kinds(), std::vector<Kind>{Kind::conn_lost});
    EXPECT_EQ(kv.conn_of(2), -1);
    kv.on_close(7);
    EXPECT_EQ(note_kinds(), std::vector<Kind>{Kind::daemon_lost});
    EXPECT_EQ(kv.daemon_conn(1), -1);
}

TEST_F(KvDaemonTest, relayed_hello_that_fails_refuses_the_rank_not_the_daemon)
{
    daemon_hello(7, 1, "h1");
    note_kinds();
    auto got = hello(7, 0, secret(), false); // rank 0 is not on h1
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].rank, 0);
    EXPECT_TRUE(std::holds_alternative<Refused>(got[0].body));
    EXPECT_FALSE(sink.closed.count(7));
    EXPECT_EQ(kv.refused_count(), 1u);
    // A rank of h1 may not bypass its daemon.
    got = hello(8, 2);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<Refused>(got[0].body));
    EXPECT_TRUE(sink.closed.count(8));
    // Reports for a rank of another host break the daemon's connection.
    feed(7, Message{0, Exited{0}});
    EXPECT_TRUE(sink.closed.count(7));
}

TEST_F(KvDaemonTest, a_rank_placed_on_another_host_says_hello_there)
{
    // A replica re-created by its substitute on h1 (node 1) for rank 0 of
    // node 0, and one re-created on mpirun's host (node 0) for rank 2 of h1.
    daemon_hello(7, 1, "h1");
    hello(1, 0);
    hello(7, 2, secret(), false);
    kv.take_notes();
    kv.rank_failed(0);
    kv.rank_respawned(0, 1);
    kv.rank_placed(0, 1);
    auto got = hello(8, 0); // not directly any more
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<Refused>(got[0].body));
    got = hello(7, 0, secret(), false);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<Welcome>(got[0].body));
    EXPECT_EQ(std::get<Welcome>(got[0].body).node_of_rank, (std::vector<std::int32_t>{0, 0, 1}))
        << "WELCOME gives the job map";
    // The daemon reports about it as about its own ranks.
    feed(7, Message{0, Adopted{0, ""}});
    feed(7, Message{0, Exited{0}});
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 3u);
    EXPECT_EQ(notes[0].kind, Kind::hello);
    EXPECT_TRUE(std::holds_alternative<Adopted>(notes[1].msg.body));
    EXPECT_EQ(notes[1].node, 1);
    EXPECT_FALSE(sink.closed.count(7));
    kv.rank_failed(2);
    kv.rank_respawned(2, 1);
    kv.rank_placed(2, 0);
    got = hello(7, 2, secret(), false); // not through h1 any more
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<Refused>(got[0].body));
    got = hello(9, 2);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<Welcome>(got[0].body));
    // The last words of its earlier process on h1 still come from there.
    feed(7, Message{2, Output{1, {}}});
    EXPECT_FALSE(sink.closed.count(7));
    EXPECT_EQ(kv.conn_of(2), 9);
    // A host it never ran on may not report about it.
    feed(7, Message{1, Exited{0}});
    EXPECT_TRUE(sink.closed.count(7));
}

TEST_F(KvDaemonTest, daemon_without_secret_or_not_expected_is_refused)
{
    Secret bad = secret();
    bad[3] ^= 1;
    daemon_hello(7, 1, "h1", bad);
    EXPECT_TRUE(sink.closed.count(7));
    daemon_hello(8, 0, ""); // node 0 has no daemon
    EXPECT_TRUE(sink.closed.count(8));
    daemon_hello(9, 1, "h2"); // wrong host name for node 1
    EXPECT_TRUE(sink.closed.count(9));
    EXPECT_EQ(kv.refused_count(), 3u);
    EXPECT_TRUE(kv.take_notes().empty());
    daemon_hello(10, 1, "h1");
    daemon_hello(11, 1, "h1"); // twice
    EXPECT_TRUE(sink.closed.count(11));
    EXPECT_FALSE(sink.closed.count(10));
}

TEST_F(KvServerTest, a_failed_rank_is_not_waited_for_in_fences)
{
    hello(1, 0);
    hello(2, 1);
    hello(3, 2);
    kv.take_notes();
    put(1, 0, "k", "v0");
    feed(1, Message{0, Fence{}});
    feed(2, Message{1, Fence{}});
    EXPECT_TRUE(sink.take(1).empty()) << "rank 2 has not fenced";
    kv.rank_failed(2);
    auto got = sink.take(1);
    ASSERT_EQ(got.size(), 1u) << "the fence completes without the failed rank";
    EXPECT_EQ(std::get<FenceDone>(got[0].body).entries.size(), 1u);
    EXPECT_TRUE(note_kinds().empty()) << "a failed rank never makes a fence stuck";
    // Later rounds too; a late FENCE from the failed rank does not count.
    feed(3, Message{2, Fence{}});
    feed(1, Message{0, Fence{}});
    EXPECT_TRUE(sink.take(1).empty());
    feed(2, Message{1, Fence{}});
    EXPECT_EQ(sink.take(1).size(), 1u);
    EXPECT_EQ(kv.fences_completed(), 2u);
}

TEST_F(KvServerTest, a_rank_failing_after_it_fenced_is_counted_once)
{
    hello(1, 0);
    hello(2, 1);
    hello(3, 2);
    kv.take_notes();
    feed(3, Message{2, Fence{}});
    kv.rank_failed(2); // fenced, then failed
    feed(1, Message{0, Fence{}});
    EXPECT_TRUE(sink.take(1).empty()) << "rank 1 has not fenced yet";
    feed(2, Message{1, Fence{}});
    EXPECT_EQ(sink.take(1).size(), 1u);
    // The next round needs only ranks 0 and 1.
    feed(1, Message{0, Fence{}});
    feed(2, Message{1, Fence{}});
    EXPECT_EQ(sink.take(1).size(), 1u);
}

TEST_F(KvServerTest, a_respawned_rank_is_waited_for_again_and_its_old_connection_is_forgotten)
{
    hello(1, 0);
    hello(2, 1);
    hello(3, 2);
    kv.take_notes();
    kv.rank_failed(2);
    // A survivor asks for it: a note with the rank and incarnation.
    feed(1, Message{0, Respawn{2, 1}});
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].kind, Kind::respawn);
    EXPECT_EQ(notes[0].rank, 2);
    EXPECT_EQ(notes[0].code, 1);
    EXPECT_EQ(kv.incarnation(2), 1);
    // The same request from another survivor: nothing more.
    feed(2, Message{1, Respawn{2, 1}});
    EXPECT_TRUE(note_kinds().empty());
    // The survivors fence (the FENCE right behind the RESPAWN on the same
    // connection): the new process is waited for.
    feed(1, Message{0, Fence{}});
    feed(2, Message{1, Fence{}});
    EXPECT_TRUE(sink.take(1).empty()) << "the fence did not wait for the new process";
    // The old process's connection closes late: not a loss of the new one.
    kv.on_close(3);
    EXPECT_TRUE(note_kinds().empty());
    // The new process says HELLO (accepted again), puts, fences.
    auto w = hello(4, 2);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<Welcome>(w[0].body));
    EXPECT_EQ(note_kinds(), std::vector<Kind>{Kind::hello});
    put(4, 2, "addr", "new");
    feed(4, Message{2, Fence{}});
    auto got = sink.take(1);
    ASSERT_EQ(got.size(), 1u);
    const auto& entries = std::get<FenceDone>(got[0].body).entries;
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].rank, 2);
    // Its own later loss is a note about incarnation 1.
    kv.on_close(4);
    notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].kind, Kind::conn_lost);
    EXPECT_EQ(notes[0].code, 1);
}

TEST_F(KvServerTest, a_rank_may_not_ask_to_respawn_itself)
{
    hello(1, 0);
    kv.take_notes();
    feed(1, Message{0, Respawn{0, 1}});
    EXPECT_TRUE(sink.closed.count(1)) << "a respawn of itself was accepted";
}

TEST_F(KvDaemonTest, events_reach_a_daemon_before_its_ranks_connect)
{
    daemon_hello(7, 1, "h1");
    kv.take_notes();
    kv.broadcast(Event{EventKind::rank_failed, 0, 0, "died"});
    auto got = sink.take(7);
    ASSERT_EQ(got.size(), 1u) << "the daemon marks its host's notice board";
    EXPECT_EQ(std::get<Event>(got[0].body).rank, 0);
}

// Spawn slots (MPI_Comm_spawn): ranks 2 of {0, 0, 1} is a slot.
TEST_F(KvServerTest, spawn_slots_are_not_waited_for_and_refuse_hello_until_spawned)
{
    kv.reserve_slots(2);
    hello(1, 0);
    hello(2, 1);
    kv.take_notes();
    feed(1, Message{0, Fence{}});
    feed(2, Message{1, Fence{}});
    EXPECT_EQ(sink.take(1).size(), 1u) << "the job's fence waited for a spawn slot";
    auto r = hello(3, 2);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<Refused>(r[0].body)) << "a free slot said HELLO";
}

TEST_F(KvServerTest, a_spawn_note_carries_the_frame)
{
    kv.reserve_slots(2);
    hello(1, 0);
    kv.take_notes();
    Spawn q;
    q.id = 3;
    q.pair = 2;
    q.parents = {0};
    q.apps.push_back(SpawnApp{{"prog"}, 1, "", ""});
    feed(1, Message{0, q});
    auto notes = kv.take_notes();
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].kind, Kind::spawn);
    EXPECT_EQ(notes[0].rank, 0);
    EXPECT_EQ(std::get<Spawn>(notes[0].msg.body).id, 3u);
}

TEST_F(KvServerTest, a_group_fence_waits_for_its_members_only_and_brings_their_values)
{
    kv.reserve_slots(2);
    hello(1, 0);
    hello(2, 1);
    kv.rank_spawned(2);
    hello(3, 2);
    kv.take_notes();
    const int g = kv.make_group({0, 2});
    EXPECT_GE(g, 1);
    put(3, 2, "addr", "child");
    feed(3, Message{2, GroupFence{g}});
    EXPECT_TRUE(sink.take(3).empty()) << "the group fence did not wait for rank 0";
    feed(1, Message{0, GroupFence{g}});
    for (ConnId c : {1, 3}) {
        auto got = sink.take(c);
        ASSERT_EQ(got.size(), 1u) << "connection " << c;
        const auto& entries = std::get<FenceDone>(got[0].body).entries;
        ASSERT_EQ(entries.size(), 1u);
        EXPECT_EQ(entries[0].rank, 2);
        EXPECT_EQ(entries[0].key, "addr");
    }
    EXPECT_TRUE(sink.take(2).empty()) << "rank 1 is no member but heard of the group";
    // A rank outside the group may not fence in it.
    feed(2, Message{1, GroupFence{g}});
    EXPECT_TRUE(sink.closed.count(2));
}

TEST_F(KvServerTest, a_group_fence_goes_on_without_a_member_that_is_gone)
{
    kv.reserve_slots(2);
    hello(1, 0);
    kv.rank_spawned(2);
    kv.take_notes();
    const int g = kv.make_group({0, 2});
    feed(1, Message{0, GroupFence{g}});
    EXPECT_TRUE(sink.take(1).empty());
    kv.rank_gone(2); // the spawned process died before it said HELLO
    EXPECT_EQ(sink.take(1).size(), 1u) << "the group fence waits for a dead member";
}

// A slot used again: the last process's group no longer waits for the
// slot (its new process never fences there), the new group does, and the
// last process's values are gone.
TEST_F(KvServerTest, a_slot_used_again_leaves_its_last_processs_groups)
{
    kv.reserve_slots(2);
    hello(1, 0);
    kv.rank_spawned(2);
    hello(3, 2);
    put(3, 2, "addr", "first");
    kv.take_notes();
    const int old_group = kv.make_group({0, 2});
    kv.rank_gone(2);       // the first process ended
    kv.rank_spawned(2, 1); // the slot's second process
    EXPECT_EQ(kv.incarnation(2), 1);
    feed(1, Message{0, GroupFence{old_group}});
    EXPECT_EQ(sink.take(1).size(), 1u) << "the old group waits for the slot's new process";
    const int g = kv.make_group({0, 2});
    hello(4, 2);
    kv.take_notes();
    feed(1, Message{0, GroupFence{g}});
    EXPECT_TRUE(sink.take(1).empty()) << "the new group did not wait for the new process";
    put(4, 2, "other", "second");
    feed(4, Message{2, GroupFence{g}});
    auto got = sink.take(4);
    ASSERT_EQ(got.size(), 1u);
    const auto& entries = std::get<FenceDone>(got[0].body).entries;
    ASSERT_EQ(entries.size(), 1u) << "the last process's values came along";
    EXPECT_EQ(entries[0].key, "other");
}

TEST_F(KvServerTest, the_jobs_fence_done_does_not_reach_a_spawned_rank)
{
    kv.reserve_slots(2);
    hello(1, 0);
    hello(2, 1);
    kv.rank_spawned(2);
    hello(3, 2);
    kv.take_notes();
    feed(1, Message{0, Fence{}});
    feed(2, Message{1, Fence{}});
    EXPECT_EQ(sink.take(1).size(), 1u);
    EXPECT_TRUE(sink.take(3).empty()) << "a spawned rank got the job's FENCE_DONE";
}
