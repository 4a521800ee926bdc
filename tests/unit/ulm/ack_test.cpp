// Delayed and piggy-backed ACKs over the in-memory test path with a manual
// clock: a two-way exchange sends no ACK fragments, an owed ACK goes out
// after the delay or after ack_every fragments or before the rank yields the
// CPU, a sender that waits for its ACK is answered at once, and a damaged
// piggy-backed ACK is never believed.
#include "reliability_harness.h"

namespace ulmpi::test {
namespace {

// Sends one eager message from `from` to `to` and progresses until it
// arrived.
void one_message(Cluster& c, int from, int to, std::uint32_t seed)
{
    std::vector<std::byte> in(24);
    auto out = pattern(24, seed);
    RecvMsg* r = recv_bytes(c.e(to), in, from);
    c.e(from).release(send_bytes(c.e(from), out, to));
    ASSERT_TRUE(c.run_until([&] { return r->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in, out));
    c.e(to).release(r);
}

} // namespace

TEST(Ack, two_way_exchange_sends_no_ack_fragments)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    rt::ManualClock clock;
    Cluster c(reliable());
    ASSERT_TRUE(c.ok());
    constexpr int kRounds = 20;
    for (int i = 0; i < kRounds; ++i) {
        one_message(c, 0, 1, static_cast<std::uint32_t>(2 * i));
        one_message(c, 1, 0, static_cast<std::uint32_t>(2 * i + 1));
    }
    c.settle(50);
    EXPECT_EQ(logged(c.fabric, 0, 1, ulm::FragType::ack) + logged(c.fabric, 1, 0, ulm::FragType::ack), 0u)
        << "every ACK rode on the reply";
    EXPECT_EQ(c.e(1).counters(0).piggy_acks_sent, static_cast<std::uint64_t>(kRounds));
    EXPECT_EQ(c.e(0).counters(1).piggy_acks_received, static_cast<std::uint64_t>(kRounds));
    EXPECT_EQ(c.e(0).counters(1).piggy_acks_sent, static_cast<std::uint64_t>(kRounds - 1));
    EXPECT_EQ(c.e(0).unacked_frags(), 0u) << "rank 1's replies acknowledged all of rank 0's messages";
    EXPECT_EQ(c.e(1).unacked_frags(), 1u) << "rank 1's last reply waits for a fragment to ride on";

    // Nothing goes back to rank 1: after the delay, the owed ACK goes alone.
    clock.advance(19 * 1000);
    c.settle(5);
    EXPECT_EQ(logged(c.fabric, 0, 1, ulm::FragType::ack), 0u) << "sent before the delay was over";
    clock.advance(2 * 1000);
    c.settle(5);
    EXPECT_EQ(logged(c.fabric, 0, 1, ulm::FragType::ack), 1u);
    EXPECT_EQ(c.e(1).unacked_frags(), 0u);
    EXPECT_EQ(c.e(0).counters(1).retransmits + c.e(1).counters(0).retransmits, 0u);
}

TEST(Ack, one_delayed_ack_covers_at_most_ack_every_fragments)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    ScopedIntParam every("ulm_ack_every", 4);
    rt::ManualClock clock; // never advanced: only the count sends an ACK
    ClusterOptions o = reliable();
    o.mem.max_per_progress = 1; // one fragment delivered per pass
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    std::vector<std::vector<std::byte>> out, in(10, std::vector<std::byte>(16));
    std::vector<RecvMsg*> rs;
    for (int i = 0; i < 10; ++i) {
        out.push_back(pattern(16, static_cast<std::uint32_t>(i)));
        rs.push_back(recv_bytes(c.e(1), in[static_cast<std::size_t>(i)], 0));
    }
    for (int i = 0; i < 10; ++i) {
        c.e(0).release(send_bytes(c.e(0), out[static_cast<std::size_t>(i)], 1));
    }
    c.settle(40);
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(rs[static_cast<std::size_t>(i)]->complete);
        EXPECT_TRUE(same_bytes(in[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(i)]));
        c.e(1).release(rs[static_cast<std::size_t>(i)]);
    }
    EXPECT_EQ(logged(c.fabric, 1, 0, ulm::FragType::ack), 2u) << "after the 4th and the 8th";
    EXPECT_EQ(c.e(0).unacked_frags(), 2u) << "the 9th and 10th wait for the delay";
}

TEST(Ack, sender_that_waits_for_its_ack_is_answered_at_once)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    rt::ManualClock clock; // never advanced: a delayed ACK would never leave
    Cluster c(reliable());
    ASSERT_TRUE(c.ok());
    // Rendezvous: the data fragments are re-read from the user buffer, so
    // the send completes only when they are acknowledged.
    std::vector<std::byte> in(20000);
    auto out = pattern(20000, 3);
    RecvMsg* r = recv_bytes(c.e(1), in, 0);
    SendMsg* s = send_bytes(c.e(0), out, 1);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }, 1000))
        << "the send still waits for ACKs";
    EXPECT_TRUE(same_bytes(in, out));
    EXPECT_GE(logged(c.fabric, 1, 0, ulm::FragType::ack), 1u);
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Ack, rank_about_to_yield_first_sends_what_it_owes)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    ScopedIntParam spin("ulm_spin_polls", 0); // the first fruitless poll yields
    rt::ManualClock clock;                    // never advanced: the delay never ends
    Cluster c(reliable());
    ASSERT_TRUE(c.ok());
    one_message(c, 0, 1, 1);
    c.settle(5);
    EXPECT_EQ(logged(c.fabric, 1, 0, ulm::FragType::ack), 0u) << "the ACK waits for a reply to ride on";
    for (int i = 0; i < 3; ++i) {
        c.e(1).poll(); // nothing to do: a polling rank yields the CPU
    }
    EXPECT_EQ(logged(c.fabric, 1, 0, ulm::FragType::ack), 1u) << "owed ACKs leave before the rank yields";
    c.settle(3);
    EXPECT_EQ(c.e(0).unacked_frags(), 0u);
}

TEST(Ack, damaged_piggy_backed_ack_is_never_believed)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    rt::ManualClock clock;
    bool damaged = false;
    Cluster c(reliable([&](int src, int, std::vector<std::byte>& b) {
        ulm::BaseHeader h;
        std::memcpy(&h, b.data(), sizeof h);
        if (src == 1 && (h.flags & ulm::flag::ack_ext) && !damaged) {
            damaged = true;
            // A LIDS far ahead would free fragments the peer never got.
            b[ulm::header_size(h.type) + 5] ^= std::byte{0x40};
        }
        return 1;
    }));
    ASSERT_TRUE(c.ok());
    one_message(c, 0, 1, 1);
    std::vector<std::byte> in(24);
    auto out = pattern(24, 2);
    RecvMsg* r = recv_bytes(c.e(0), in, 1);
    c.e(1).release(send_bytes(c.e(1), out, 0));
    c.settle(20);
    EXPECT_TRUE(damaged);
    EXPECT_FALSE(r->complete) << "the reply with the damaged ACK was dropped";
    EXPECT_EQ(c.e(0).counters(1).crc_header_fail, 1u);
    EXPECT_EQ(c.e(0).counters(1).piggy_acks_received, 0u);
    EXPECT_EQ(c.e(0).unacked_frags(), 1u) << "rank 0's message is still kept";
    clock.advance(50 * 1000000); // the reply's timer expires: it is resent
    ASSERT_TRUE(c.run_until([&] { return r->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in, out));
    c.settle(5);
    EXPECT_EQ(c.e(0).unacked_frags(), 0u) << "the resent reply carries the ACK again";
    c.e(0).release(r);
}

} // namespace ulmpi::test
