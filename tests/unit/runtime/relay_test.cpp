#include "runtime/daemon/relay.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace ulmpi::rt;
using namespace ulmpi::rt::wire;
using ulmpi::rt::daemon::Relay;
using ulmpi::rt::mpirun::ConnId;

namespace {

std::vector<Message> parse(Bytes& b)
{
    std::vector<Message> out;
    FrameReader r;
    r.append(b.data(), b.size());
    b.clear();
    Message m;
    std::string why;
    while (r.next(m, why).ok()) {
        out.push_back(m);
    }
    return out;
}

class Fake final : public ulmpi::rt::mpirun::KvServer::Sink, public Relay::Uplink {
public:
    void send(ConnId conn, Bytes frame) override
    {
        down[conn].insert(down[conn].end(), frame.begin(), frame.end());
    }
    void close(ConnId conn) override { closed.insert(conn); }
    void up(Bytes frame) override { upstream.insert(upstream.end(), frame.begin(), frame.end()); }
    void drain_stdout(int rank) override
    {
        drained.push_back(rank);
        drained_at.push_back(upstream.size()); // before or after the frame went up
    }
    std::map<ConnId, Bytes> down;
    std::vector<int> drained;
    std::vector<std::size_t> drained_at;
    Bytes upstream;
    std::set<ConnId> closed;
};

Secret secret()
{
    Secret s{};
    s[1] = 7;
    return s;
}

class RelayTest : public ::testing::Test {
protected:
    RelayTest() : relay(secret(), {4, 5}, fake, fake) {}
    void feed(ConnId c, const Message& m)
    {
        Bytes f = encode(m);
        relay.on_data(c, f.data(), f.size());
    }
    void hello(ConnId c, int rank, Secret s = secret())
    {
        relay.on_connect(c);
        Hello h;
        h.secret = s;
        h.rank = rank;
        feed(c, Message{rank, h});
    }
    Fake fake;
    Relay relay;
};

} // namespace

TEST_F(RelayTest, frames_go_up_unchanged_and_answers_come_back_by_rank)
{
    hello(1, 4);
    hello(2, 5);
    auto up = parse(fake.upstream);
    ASSERT_EQ(up.size(), 2u);
    EXPECT_EQ(up[0].rank, 4);
    EXPECT_TRUE(std::holds_alternative<Hello>(up[1].body));
    relay.from_up(Message{5, Welcome{6, {0, 0, 0, 0, 1, 1}}});
    relay.from_up(Message{4, Welcome{6, {0, 0, 0, 0, 1, 1}}});
    EXPECT_EQ(parse(fake.down[1]).at(0).rank, 4);
    EXPECT_EQ(parse(fake.down[2]).at(0).rank, 5);
    feed(1, Message{4, Put{"k", {}}});
    feed(1, Message{4, Fence{}});
    up = parse(fake.upstream);
    ASSERT_EQ(up.size(), 2u);
    EXPECT_TRUE(std::holds_alternative<Fence>(up[1].body));
    // FENCE_DONE for everyone goes to each rank once.
    relay.from_up(Message{-1, FenceDone{}});
    EXPECT_EQ(parse(fake.down[1]).size(), 1u);
    EXPECT_EQ(parse(fake.down[2]).size(), 1u);
    // A closed rank connection is reported after its frames.
    feed(2, Message{5, Finalize{}});
    relay.on_close(2);
    up = parse(fake.upstream);
    ASSERT_EQ(up.size(), 2u);
    EXPECT_TRUE(std::holds_alternative<Finalize>(up[0].body));
    EXPECT_TRUE(std::holds_alternative<RankClosed>(up[1].body));
    EXPECT_EQ(up[1].rank, 5);
    EXPECT_EQ(relay.conn_of(5), -1);
}

TEST_F(RelayTest, wrong_secret_foreign_rank_and_impostors_stay_here)
{
    Secret bad = secret();
    bad[0] ^= 1;
    hello(1, 4, bad);
    hello(2, 3);  // not a rank of this host
    hello(3, 4);
    hello(6, 4);  // rank 4 again
    auto up = parse(fake.upstream);
    ASSERT_EQ(up.size(), 1u); // only conn 3's HELLO went up
    EXPECT_EQ(relay.refused_count(), 3u);
    EXPECT_TRUE(fake.closed.count(1) && fake.closed.count(2) && fake.closed.count(6));
    EXPECT_TRUE(std::holds_alternative<Refused>(parse(fake.down[1]).at(0).body));
    // A frame naming a rank the connection did not introduce drops it.
    relay.from_up(Message{4, Welcome{6, {}}});
    feed(3, Message{5, Fence{}});
    EXPECT_TRUE(fake.closed.count(3));
    up = parse(fake.upstream);
    ASSERT_EQ(up.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<RankClosed>(up[0].body));
}

TEST_F(RelayTest, mpirun_refusing_a_rank_closes_its_connection_without_rank_closed)
{
    hello(1, 4);
    parse(fake.upstream);
    relay.from_up(Message{4, Refused{"rank 4 has already connected"}});
    EXPECT_TRUE(fake.closed.count(1));
    EXPECT_TRUE(parse(fake.upstream).empty());
    EXPECT_EQ(relay.conn_of(4), -1);
}

TEST_F(RelayTest, a_replica_request_goes_up_after_the_substitutes_stdout)
{
    hello(1, 4);
    relay.from_up(Message{4, Welcome{6, {1, 1, 1, 1, 1, 1}}});
    parse(fake.upstream);
    parse(fake.down[1]);
    Replica q;
    q.op = ReplicaOp::fork;
    q.rank = 0;
    q.incarnation = 1;
    feed(1, Message{4, q});
    ASSERT_EQ(fake.drained, std::vector<int>{4});
    EXPECT_EQ(fake.drained_at[0], 0u) << "its stdout first, then the request";
    auto up = parse(fake.upstream);
    ASSERT_EQ(up.size(), 1u);
    EXPECT_EQ(std::get<Replica>(up[0].body).op, ReplicaOp::fork);
    // mpirun's answer comes down to the substitute.
    Replica a;
    a.op = ReplicaOp::granted;
    relay.from_up(Message{4, a});
    auto down = parse(fake.down[1]);
    ASSERT_EQ(down.size(), 1u);
    EXPECT_EQ(std::get<Replica>(down[0].body).op, ReplicaOp::granted);
    // Process 0 (another host's in the job map) is re-created here: once
    // added (ADOPT expect), its HELLO is taken and goes up.
    hello(7, 0);
    EXPECT_EQ(relay.refused_count(), 1u) << "not before mpirun said so";
    relay.add_rank(0);
    hello(8, 0);
    up = parse(fake.upstream);
    ASSERT_EQ(up.size(), 1u);
    EXPECT_EQ(up[0].rank, 0);
    EXPECT_TRUE(std::holds_alternative<Hello>(up[0].body));
    EXPECT_EQ(relay.conn_of(0), 8);
}
