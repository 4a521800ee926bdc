// Delayed and piggy-backed ACKs over the in-memory test path with a manual
// clock: a two-way exchange sends no ACK fragments, an owed ACK goes out
// after the delay or after ack_every fragments or before the rank yields the
// CPU, a sender that waits for its ACK is answered at once, a damaged
// piggy-backed ACK is never believed, and an ACK that would cost a small
// fragment another cache line waits for a later one (also under seeded
// faults).
#include "reliability_harness.h"

#include <random>

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

// A path whose small fragments are written into 64-byte lines behind an
// 8-byte slot header, as shm's FIFO slots are: 56 bytes take one line.
ClusterOptions lined()
{
    ClusterOptions o = reliable();
    o.mem.inline_max = 120;
    o.mem.line_bytes = 64;
    o.mem.line_skew = 8;
    return o;
}

// Sends `n` bytes from `from` to `to` and progresses until they arrived.
void message_of(Cluster& c, int from, int to, std::size_t n, std::uint32_t seed)
{
    std::vector<std::byte> in(n);
    auto out = pattern(n, seed);
    RecvMsg* r = recv_bytes(c.e(to), in, from);
    c.e(from).release(send_bytes(c.e(from), out, to));
    ASSERT_TRUE(c.run_until([&] { return r->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in, out));
    c.e(to).release(r);
}

} // namespace

TEST(Ack, ack_that_would_cost_a_line_rides_on_a_later_fragment)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    ScopedIntParam every("ulm_ack_every", 8);
    rt::ManualClock clock; // never advanced: only the count bounds the wait
    Cluster c(lined());
    ASSERT_TRUE(c.ok());
    // 8 bytes behind a 48-byte eager header fill the first line: an AckExt
    // would take a second one. It rides when the ACK covers ack_every - 1
    // fragments: one message in 7 carries it, and no ACK goes alone.
    constexpr int kRounds = 21;
    for (int i = 0; i < kRounds; ++i) {
        message_of(c, 0, 1, 8, static_cast<std::uint32_t>(2 * i));
        message_of(c, 1, 0, 8, static_cast<std::uint32_t>(2 * i + 1));
    }
    c.settle(5);
    EXPECT_EQ(logged(c.fabric, 0, 1, ulm::FragType::ack) + logged(c.fabric, 1, 0, ulm::FragType::ack), 0u);
    EXPECT_EQ(c.e(1).counters(0).piggy_acks_sent, 3u) << "at the 7th, 14th and 21st reply";
    EXPECT_EQ(c.e(1).counters(0).piggy_acks_held, static_cast<std::uint64_t>(kRounds - 3));
    EXPECT_EQ(c.e(0).counters(1).piggy_acks_received, 3u);
    std::size_t one_line = 0;
    for (const FragRecord& f : c.fabric.log) {
        one_line += f.bytes.size() + 8 <= 64 ? 1 : 0;
    }
    EXPECT_EQ(one_line, static_cast<std::size_t>(2 * kRounds - 5)) << "all but the five that carry an ACK";
    EXPECT_EQ(c.e(0).unacked_frags(), 0u) << "the 21st reply acknowledged all of rank 0's messages";

    // Larger messages take their second line anyway: the ACK rides at once.
    message_of(c, 0, 1, 8, 100);
    message_of(c, 1, 0, 40, 101);
    c.settle(5);
    EXPECT_EQ(c.e(1).counters(0).piggy_acks_sent, 4u);
    EXPECT_EQ(c.e(0).unacked_frags(), 0u);
    // 72 bytes fill the inline room (48 + 72 = 120): an AckExt waits again.
    message_of(c, 0, 1, 72, 102);
    EXPECT_EQ(c.e(1).counters(0).piggy_acks_held, static_cast<std::uint64_t>(kRounds - 3));
    message_of(c, 1, 0, 72, 103);
    EXPECT_EQ(c.e(1).counters(0).piggy_acks_held, static_cast<std::uint64_t>(kRounds - 2));
    EXPECT_EQ(c.e(0).unacked_frags(), 1u);

    // Nothing more goes back: the held ACK leaves alone after the delay
    // (counted from the first quiet pass that reads the clock, one in
    // kAckClockPasses).
    c.settle(static_cast<int>(ulm::kAckClockPasses));
    EXPECT_EQ(logged(c.fabric, 1, 0, ulm::FragType::ack), 0u) << "sent before the delay was over";
    clock.advance(21 * 1000);
    c.settle(static_cast<int>(ulm::kAckClockPasses));
    EXPECT_EQ(logged(c.fabric, 1, 0, ulm::FragType::ack), 1u);
    EXPECT_EQ(c.e(0).unacked_frags(), 0u);
    EXPECT_EQ(c.e(0).counters(1).retransmits + c.e(1).counters(0).retransmits, 0u);
}

TEST(Ack, held_acks_survive_seeded_loss_duplicates_and_corruption)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    rt::ManualClock clock;
    for (std::uint32_t seed = 1; seed <= 4; ++seed) {
        ClusterOptions o = lined();
        o.mem.seed = seed;
        o.mem.drop = 0.05;
        o.mem.duplicate = 0.05;
        o.mem.corrupt = 0.05;
        o.mem.order = seed % 2 == 0 ? Order::random : Order::fifo;
        Cluster c(o);
        ASSERT_TRUE(c.ok());
        // Ping-pong and bursts of one-line messages (0 and 8 bytes) and of
        // messages that fill the inline room (72), so that held ACKs meet
        // losses, duplicates, damaged headers and reordering.
        std::mt19937 rng(seed);
        const std::size_t sizes[] = {0, 8, 8, 72, 40};
        for (int i = 0; i < 300; ++i) {
            const int from = static_cast<int>(rng() % 2);
            const int burst = 1 + static_cast<int>(rng() % 3);
            std::vector<std::vector<std::byte>> in, out;
            std::vector<RecvMsg*> rs;
            for (int k = 0; k < burst; ++k) {
                const std::size_t n = sizes[rng() % 5];
                out.push_back(pattern(n, static_cast<std::uint32_t>(i * 8 + k)));
                in.emplace_back(n);
            }
            for (int k = 0; k < burst; ++k) {
                rs.push_back(recv_bytes(c.e(1 - from), in[static_cast<std::size_t>(k)], from));
            }
            for (int k = 0; k < burst; ++k) {
                c.e(from).release(send_bytes(c.e(from), out[static_cast<std::size_t>(k)], 1 - from));
            }
            ASSERT_TRUE(c.run_until([&] {
                bool all = true;
                for (RecvMsg* r : rs) {
                    all = all && r->complete;
                }
                if (!all) {
                    clock.advance(100 * 1000); // timers expire, delayed ACKs leave
                }
                return all;
            }, 100000)) << "seed " << seed << ", round " << i;
            for (int k = 0; k < burst; ++k) {
                EXPECT_TRUE(same_bytes(in[static_cast<std::size_t>(k)], out[static_cast<std::size_t>(k)]));
                c.e(1 - from).release(rs[static_cast<std::size_t>(k)]);
            }
        }
        ASSERT_TRUE(c.run_until([&] {
            clock.advance(100 * 1000);
            return c.e(0).unacked_frags() + c.e(1).unacked_frags() == 0;
        }, 100000)) << "seed " << seed << ": fragments never acknowledged";
        const auto& a = c.e(0).counters(1);
        const auto& b = c.e(1).counters(0);
        EXPECT_GT(a.piggy_acks_held + b.piggy_acks_held, 0u) << "seed " << seed;
        EXPECT_GT(a.piggy_acks_sent + b.piggy_acks_sent, 0u) << "seed " << seed;
        EXPECT_GT(a.retransmits + b.retransmits, 0u) << "seed " << seed;
        EXPECT_GT(a.duplicates + b.duplicates, 0u) << "seed " << seed;
        EXPECT_GT(a.crc_header_fail + b.crc_header_fail + a.crc_payload_fail + b.crc_payload_fail, 0u)
            << "seed " << seed;
    }
}

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
    c.settle(static_cast<int>(ulm::kAckClockPasses));
    EXPECT_EQ(logged(c.fabric, 0, 1, ulm::FragType::ack), 0u) << "sent before the delay was over";
    clock.advance(2 * 1000);
    c.settle(static_cast<int>(ulm::kAckClockPasses));
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

TEST(Ack, only_the_last_data_fragment_of_a_message_is_answered_at_once)
{
    ScopedIntParam delay("ulm_ack_delay_us", 20);
    rt::ManualClock clock; // never advanced: only urgency or the count sends an ACK
    ClusterOptions o = reliable();
    o.mem.max_per_progress = 1; // one fragment per pass: each could have had its own ACK
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    // 20000 bytes over 4 KiB fragments: a match fragment, then five data
    // fragments. The send completes when all are acknowledged; the last
    // fragment's ACK covers the data (LIDS).
    std::vector<std::byte> in(20000);
    auto out = pattern(20000, 5);
    RecvMsg* r = recv_bytes(c.e(1), in, 0);
    SendMsg* s = send_bytes(c.e(0), out, 1);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in, out));
    EXPECT_GE(logged(c.fabric, 0, 1, ulm::FragType::data), 5u);
    // Only the last data fragment's: the match fragment's rode on the CTS,
    // and no data fragment before the last asked for one (6 before).
    EXPECT_EQ(logged(c.fabric, 1, 0, ulm::FragType::ack), 1u);
    EXPECT_EQ(c.e(1).counters(0).piggy_acks_sent, 1u) << "on the CTS";
    EXPECT_EQ(c.e(0).unacked_frags(), 0u);
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
    c.settle(static_cast<int>(Engine::kTickPasses)); // a tick arms the timer
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
