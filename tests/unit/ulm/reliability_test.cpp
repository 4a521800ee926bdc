// ULM reliability over the in-memory test path with chosen faults and a
// manual clock: ACKs and LIDS free kept fragments, the timer backs off and
// gives up, fast retransmission and corrupt ACKs repair losses at once,
// duplicates are dropped and acknowledged again.
#include "reliability_harness.h"

#include <atomic>

namespace ulmpi::test {

TEST(Reliability, lids_frees_every_kept_fragment_although_their_acks_were_lost)
{
    ScopedIntParam at_once("ulm_ack_delay_us", 0); // an ACK after every pass that delivered
    rt::ManualClock clock; // never advanced: no timer can fire
    int acks_to_drop = 5;
    Cluster c(reliable([&](int src, int, std::vector<std::byte>& b) {
        if (src == 1 && type_of(b) == ulm::FragType::ack && acks_to_drop > 0) {
            --acks_to_drop;
            return 0;
        }
        return 1;
    }));
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.e(0).reliable(&c.path(0)));
    std::vector<std::vector<std::byte>> out, in;
    std::vector<RecvMsg*> rs;
    for (int i = 0; i < 6; ++i) {
        out.push_back(pattern(50, static_cast<std::uint32_t>(i)));
        in.emplace_back(50);
    }
    for (int i = 0; i < 6; ++i) {
        rs.push_back(recv_bytes(c.e(1), in[static_cast<std::size_t>(i)], 0));
    }
    // One message per progress pass so that every one gets its own ACK.
    for (int i = 0; i < 5; ++i) {
        c.e(0).release(send_bytes(c.e(0), out[static_cast<std::size_t>(i)], 1));
        c.settle(3);
    }
    EXPECT_EQ(acks_to_drop, 0);
    EXPECT_EQ(c.e(0).unacked_frags(), 5u) << "the five ACKs were lost: the fragments are still kept";
    c.e(0).release(send_bytes(c.e(0), out[5], 1));
    c.settle(5);
    EXPECT_EQ(c.e(0).unacked_frags(), 0u) << "the sixth ACK's LIDS covers all six";
    EXPECT_EQ(c.e(0).counters(1).retransmits, 0u);
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(rs[static_cast<std::size_t>(i)]->complete);
        EXPECT_TRUE(same_bytes(in[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(i)]));
        c.e(1).release(rs[static_cast<std::size_t>(i)]);
    }
}

TEST(Reliability, timer_probes_a_silent_peer_backs_off_and_gives_up)
{
    ScopedIntParam initial("ulm_retry_timeout_us", 1000);
    ScopedIntParam cap("ulm_retry_max_timeout_us", 8000);
    ScopedIntParam retries("ulm_max_retries", 7);
    rt::ManualClock clock;
    Cluster c(reliable());
    ASSERT_TRUE(c.ok());
    Hooks hooks;
    c.e(0).set_failure_hooks(&hooks);
    c.path(1).set_paused(true); // rank 1 never hears anything: it stays silent
    auto a = pattern(40, 1);
    auto b = pattern(40, 2);
    SendMsg* s1 = send_bytes(c.e(0), a, 1);
    SendMsg* s2 = send_bytes(c.e(0), b, 1);
    const std::size_t first = logged_messages(c.fabric, 0, 1);
    ASSERT_EQ(first, 2u);
    // Advance in 100 us steps and note when each resend leaves.
    std::vector<rt::Nanos> resends;
    rt::Nanos start = clock.now();
    for (int step = 0; step < 2000 && hooks.unreachable < 0; ++step) {
        clock.advance(100000);
        for (std::uint32_t k = 0; k < Engine::kTickPasses; ++k) { // the timer is checked in one pass of these
            c.e(0).progress();
        }
        std::size_t n = logged_messages(c.fabric, 0, 1);
        while (first + resends.size() < n) {
            resends.push_back(clock.now() - start);
        }
    }
    // Only the oldest fragment is probed: a silent peer is not flooded.
    for (const FragRecord& r : c.fabric.log) {
        if (r.src == 0 && starts_message(type_of(r.bytes))) {
            EXPECT_TRUE(seq_of(r.bytes) == 1 || &r == &c.fabric.log[1] || seq_of(r.bytes) == 2)
                << "unexpected fragment " << seq_of(r.bytes);
        }
    }
    std::size_t second_resent = 0;
    for (std::size_t i = 2; i < c.fabric.log.size(); ++i) {
        const FragRecord& r = c.fabric.log[i];
        second_resent += r.src == 0 && starts_message(type_of(r.bytes)) && seq_of(r.bytes) == 2 ? 1 : 0;
    }
    EXPECT_EQ(second_resent, 0u) << "the second fragment waits while the peer is silent";
    // Waits before each resend: 1, 1, 1 ms (the base), then 2, 4, 8, 8 ms
    // (doubling from the third silent resend on, capped at 8 ms); the peer
    // is given up when the seventh resend's timer expires.
    ASSERT_EQ(resends.size(), 7u);
    const rt::Nanos want[] = {1, 2, 3, 5, 9, 17, 25};
    for (std::size_t i = 0; i < resends.size(); ++i) {
        EXPECT_NEAR(static_cast<double>(resends[i]), static_cast<double>(want[i] * 1000000), 250000.0)
            << "resend " << i;
    }
    EXPECT_EQ(hooks.unreachable, 1);
    EXPECT_NE(hooks.path_name.find("paths: mem (silent)"), std::string::npos) << hooks.path_name;
    EXPECT_TRUE(c.e(0).peer_failed(1));
    c.e(0).release(s1);
    c.e(0).release(s2);
}

TEST(Reliability, later_fragment_delivered_resends_the_lost_one_at_once)
{
    rt::ManualClock clock; // no timer: only ACKs can repair the loss
    bool dropped = false;
    Cluster c(reliable([&](int src, int, std::vector<std::byte>& b) {
        if (src == 0 && starts_message(type_of(b)) && seq_of(b) == 1 && !dropped) {
            dropped = true;
            return 0;
        }
        return 1;
    }));
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> in1(64), in2(64);
    auto m1 = pattern(64, 1), m2 = pattern(64, 2);
    RecvMsg* r1 = recv_bytes(c.e(1), in1, 0);
    RecvMsg* r2 = recv_bytes(c.e(1), in2, 0);
    c.e(0).release(send_bytes(c.e(0), m1, 1));
    c.e(0).release(send_bytes(c.e(0), m2, 1));
    ASSERT_TRUE(c.run_until([&] { return r1->complete && r2->complete; }, 1000));
    EXPECT_TRUE(dropped);
    EXPECT_TRUE(same_bytes(in1, m1));
    EXPECT_TRUE(same_bytes(in2, m2));
    EXPECT_EQ(c.e(0).counters(1).retransmits, 1u);
    EXPECT_EQ(c.e(1).counters(0).out_of_order, 1u) << "message 2 waited for message 1";
    c.settle(5);
    EXPECT_EQ(c.e(0).unacked_frags(), 0u);
    c.e(1).release(r1);
    c.e(1).release(r2);
}

// Two messages whose fragments arrive newest first, one per progress call,
// so the second is acknowledged before the first arrives.
std::uint64_t resent_when_overtaken(std::optional<path::PathInfo::Order> claim)
{
    rt::ManualClock clock; // no timer: only an ACK could trigger a resend
    ClusterOptions o = reliable();
    o.mem.order = Order::newest_first;
    o.mem.max_per_progress = 1;
    o.mem.claim_order = claim;
    Cluster c(o);
    EXPECT_TRUE(c.ok());
    std::vector<std::byte> in1(64), in2(64);
    auto m1 = pattern(64, 1), m2 = pattern(64, 2);
    RecvMsg* r1 = recv_bytes(c.e(1), in1, 0);
    RecvMsg* r2 = recv_bytes(c.e(1), in2, 0);
    c.e(0).release(send_bytes(c.e(0), m1, 1));
    c.e(0).release(send_bytes(c.e(0), m2, 1));
    EXPECT_TRUE(c.run_until([&] { return r1->complete && r2->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in1, m1));
    EXPECT_TRUE(same_bytes(in2, m2));
    c.settle(5);
    EXPECT_EQ(c.e(0).unacked_frags(), 0u);
    c.e(1).release(r1);
    c.e(1).release(r2);
    return c.e(0).counters(1).retransmits;
}

TEST(Reliability, path_without_order_gets_no_early_resend_when_fragments_overtake)
{
    EXPECT_EQ(resent_when_overtaken(std::nullopt), 0u) << "the path says it keeps no order";
    EXPECT_EQ(resent_when_overtaken(path::PathInfo::Order::total), 1u)
        << "a path that claims order: the overtaken fragment counts as lost";
}

TEST(Reliability, damaged_payload_is_answered_corrupt_and_resent_at_once)
{
    rt::ManualClock clock;
    bool damaged = false;
    Cluster c(reliable([&](int src, int, std::vector<std::byte>& b) {
        if (src == 0 && starts_message(type_of(b)) && !damaged) {
            damaged = true;
            b[ulm::header_size(type_of(b)) + 3] ^= std::byte{0x10}; // payload, not header
        }
        return 1;
    }));
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.e(0).checksummed(&c.path(0)));
    std::vector<std::byte> in(80);
    auto m = pattern(80, 5);
    RecvMsg* r = recv_bytes(c.e(1), in, 0);
    c.e(0).release(send_bytes(c.e(0), m, 1));
    ASSERT_TRUE(c.run_until([&] { return r->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in, m)) << "the damaged bytes never reached the user buffer";
    EXPECT_EQ(c.e(1).counters(0).crc_payload_fail, 1u);
    EXPECT_EQ(c.e(0).counters(1).corrupt_acks_received, 1u);
    EXPECT_EQ(c.e(0).counters(1).retransmits, 1u);
    c.e(1).release(r);
}

TEST(Reliability, damaged_header_is_dropped_silently_and_repaired_by_the_timer)
{
    rt::ManualClock clock;
    bool damaged = false;
    Cluster c(reliable([&](int src, int, std::vector<std::byte>& b) {
        if (src == 0 && starts_message(type_of(b)) && !damaged) {
            damaged = true;
            b[offsetof(ulm::BaseHeader, frag_seq)] ^= std::byte{0x04}; // the sequence itself
        }
        return 1;
    }));
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> in(30);
    auto m = pattern(30, 6);
    RecvMsg* r = recv_bytes(c.e(1), in, 0);
    c.e(0).release(send_bytes(c.e(0), m, 1));
    c.settle(static_cast<int>(Engine::kTickPasses)); // a tick arms the timer
    EXPECT_FALSE(r->complete);
    EXPECT_EQ(c.e(1).counters(0).crc_header_fail, 1u);
    EXPECT_EQ(c.e(0).counters(1).corrupt_acks_received, 0u) << "a damaged header gets no answer";
    clock.advance(50 * 1000000);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in, m));
    EXPECT_EQ(c.e(0).counters(1).retransmits, 1u);
    c.e(1).release(r);
}

TEST(Reliability, duplicate_is_dropped_and_acknowledged_again)
{
    ScopedIntParam at_once("ulm_ack_delay_us", 0); // the original gets its own ACK
    rt::ManualClock clock;
    bool doubled = false;
    ClusterOptions o = reliable([&](int src, int, std::vector<std::byte>& b) {
        if (src == 0 && starts_message(type_of(b)) && !doubled) {
            doubled = true;
            return 2;
        }
        return 1;
    });
    o.mem.max_per_progress = 1; // the copy comes in a pass of its own
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> in1(20), in2(20);
    auto m = pattern(20, 7);
    RecvMsg* r1 = recv_bytes(c.e(1), in1, 0);
    RecvMsg* r2 = recv_bytes(c.e(1), in2, 0); // must not be filled by the duplicate
    c.e(0).release(send_bytes(c.e(0), m, 1));
    c.settle(20);
    EXPECT_TRUE(r1->complete);
    EXPECT_FALSE(r2->complete) << "the duplicate was delivered as a second message";
    EXPECT_EQ(c.e(1).counters(0).duplicates, 1u);
    EXPECT_GE(c.e(1).counters(0).acks_sent, 2u) << "the duplicate is acknowledged again";
    EXPECT_EQ(c.e(0).unacked_frags(), 0u);
    EXPECT_TRUE(c.e(1).cancel(r2));
    c.e(1).release(r1);
    c.e(1).release(r2);
}

// A window that an ACK emptied leaves the link on the list of those that
// keep fragments (LinkSet::apply_ack, until tick() finds it empty): the
// next fragment, lost, must wait a whole timeout from the tick after it
// left, not the deadline the timer had for the fragments before it.
TEST(Reliability, emptied_window_arms_a_fresh_timer_for_the_next_lost_fragment)
{
    ScopedIntParam at_once("ulm_ack_delay_us", 0); // the first message is acknowledged at once
    rt::ManualClock clock;
    int seen = 0;
    Cluster c(reliable([&](int src, int, std::vector<std::byte>& b) {
        if (src == 0 && starts_message(type_of(b)) && ++seen == 2) {
            return 0; // the second message's first transmission
        }
        return 1;
    }));
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> in1(40), in2(40);
    auto m1 = pattern(40, 11), m2 = pattern(40, 12);
    RecvMsg* r1 = recv_bytes(c.e(1), in1, 0);
    RecvMsg* r2 = recv_bytes(c.e(1), in2, 0);
    c.e(0).release(send_bytes(c.e(0), m1, 1));
    // Rank 1 silent long enough for a tick of rank 0 to arm the timer
    // (1 ms: no round trip measured yet).
    for (std::uint32_t k = 0; k < Engine::kTickPasses; ++k) {
        c.e(0).progress();
    }
    ASSERT_TRUE(c.run_until([&] { return r1->complete && c.e(0).unacked_frags() == 0; }, 1000));
    clock.advance(10 * 1000000); // well past the first message's deadline
    c.e(0).release(send_bytes(c.e(0), m2, 1));
    c.settle(static_cast<int>(4 * Engine::kTickPasses));
    EXPECT_FALSE(r2->complete);
    EXPECT_EQ(c.e(0).counters(1).retransmits, 0u) << "resent on the emptied window's old deadline";
    clock.advance(50 * 1000000);
    ASSERT_TRUE(c.run_until([&] { return r2->complete; }, 1000));
    EXPECT_TRUE(same_bytes(in1, m1));
    EXPECT_TRUE(same_bytes(in2, m2));
    EXPECT_EQ(c.e(0).counters(1).retransmits, 1u);
    c.e(1).release(r1);
    c.e(1).release(r2);
}

} // namespace ulmpi::test
