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
    std::map<ConnId, Bytes> down;
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
