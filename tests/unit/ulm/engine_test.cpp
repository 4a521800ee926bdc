// The ULM engine end to end inside one process: engines wired by MemPath
// (tests/unit/ulm/mem_path.h). Eager and rendezvous (copy after cts, single
// copy through get()), Ssend, truncation, zero bytes, cancel, flow control,
// out-of-order match fragments, sequence numbers, stale descriptor ids and
// malformed fragments.
#include "engine_harness.h"

#include <sched.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace ulmpi::test {
namespace {

using rt::Errc;
using ulm::BaseHeader;
using ulm::CtsHeader;
using ulm::DataHeader;
using ulm::Envelope;
using ulm::FinHeader;
using ulm::MatchHeader;

constexpr int kTag = 7;

// A receive buffer with guard bytes after the capacity the receive is given.
struct Guarded {
    static constexpr std::size_t kGuard = 32;
    std::vector<std::byte> mem;
    std::size_t cap;
    explicit Guarded(std::size_t capacity) : mem(capacity + kGuard, std::byte{0x5a}), cap(capacity)
    {
    }
    DataRef ref() { return bytes_ref(mem.data(), cap); }
    bool guard_intact() const
    {
        return std::all_of(mem.begin() + static_cast<std::ptrdiff_t>(cap), mem.end(),
                           [](std::byte b) { return b == std::byte{0x5a}; });
    }
    bool prefix_equals(const std::vector<std::byte>& src, std::size_t n) const
    {
        return std::equal(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(n), mem.begin());
    }
};

RecvMsg* post_guarded(Engine& e, Guarded& g, int src, int tag, std::uint32_t ctx = 0)
{
    RecvMsg* r = nullptr;
    EXPECT_TRUE(e.irecv(g.ref(), src, tag, ContextId(ctx), &r).ok());
    return r;
}

std::uint64_t data_bytes_logged(const MemFabric& fab, int src, int dst)
{
    std::uint64_t n = 0;
    for (const FragRecord* f : frags(fab, FragType::data, src, dst)) {
        n += base_of(*f).payload_len;
    }
    return n;
}

// Rank 1 asked rank 0 once to stream the whole message (a read that did not
// happen or did not check), `bytes` streamed, no fin.
void expect_streamed_whole(const MemFabric& fab, std::uint64_t bytes)
{
    auto cts = frags(fab, FragType::cts, 1, 0);
    ASSERT_EQ(cts.size(), 1u);
    EXPECT_EQ(header_of<CtsHeader>(*cts[0]).offset, 0u) << "stream from byte 0";
    EXPECT_EQ(data_bytes_logged(fab, 0, 1), bytes);
    EXPECT_EQ(frags(fab, FragType::fin, 1, 0).size(), 0u);
}

// ---------------------------------------------------------------------------
// Eager

TEST(Engine, eager_message_fills_receive_posted_before_it)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(100, 1);
    std::vector<std::byte> in(100);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag, 3);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag, 3);
    EXPECT_TRUE(s->complete) << "an eager standard send completes once its fragment left";
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    EXPECT_EQ(r->error, Errc::ok);
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(r->env.source, 0);
    EXPECT_EQ(r->env.tag, kTag);
    EXPECT_EQ(r->env.msg_len, 100u);
    c.e(0).release(s);
    c.e(1).release(r);
    EXPECT_EQ(c.e(0).live_sends(), 0u);
    EXPECT_EQ(c.e(1).counters(0).unexpected, 0u);
    EXPECT_EQ(c.path(0).contract_violations(), 0u);
}

// A rank bound to one CPU still owns it: it spins while it waits unless the
// host's ranks outnumber the CPUs the launcher placed them on.
TEST(Engine, bound_rank_spins_when_the_ranks_fit_the_launchers_cpus)
{
    auto spin = dynamic_cast<rt::IntParam*>(rt::find_param("ulm_spin_polls"));
    auto crowded_spin = dynamic_cast<rt::IntParam*>(rt::find_param("ulm_spin_polls_oversubscribed"));
    ASSERT_NE(spin, nullptr);
    ASSERT_NE(crowded_spin, nullptr);
    ASSERT_NE(spin->get(), crowded_spin->get());
    cpu_set_t saved;
    ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &saved)) {
            CPU_SET(cpu, &one);
            break;
        }
    }
    // The engines start in threads of this one, bound as mpirun binds a rank.
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    {
        ClusterOptions fit;
        fit.local_cpus = 2; // two ranks, two CPUs: one each
        Cluster a(fit);
        ASSERT_TRUE(a.ok());
        EXPECT_EQ(a.e(0).backoff_policy().spin_polls, static_cast<std::uint32_t>(spin->get()));
        ClusterOptions crowded;
        crowded.local_cpus = 1; // two ranks on one CPU
        Cluster b(crowded);
        ASSERT_TRUE(b.ok());
        EXPECT_EQ(b.e(0).backoff_policy().spin_polls, static_cast<std::uint32_t>(crowded_spin->get()));
    }
    ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
}

TEST(Engine, small_message_takes_the_short_eager_header_and_ssend_the_full_match)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> empty, in0, in1(8);
    auto eight = pattern(8, 2);
    RecvMsg* r0 = post_recv(c.e(1), in0, 0, kTag);
    RecvMsg* r1 = post_recv(c.e(1), in1, 0, kTag + 1);
    SendMsg* s0 = post_send(c.e(0), empty, 1, kTag);
    SendMsg* s1 = post_send(c.e(0), eight, 1, kTag + 1, 0, SendMode::synchronous);
    ASSERT_TRUE(c.run_until([&] { return r0->complete && r1->complete && s1->complete; }));
    auto m = message_frags(c.fabric, 0, 1);
    ASSERT_EQ(m.size(), 2u);
    // 48 bytes: with an 8-byte shared-memory slot header, one cache line.
    EXPECT_EQ(base_of(*m[0]).type, FragType::eager);
    EXPECT_EQ(m[0]->bytes.size(), sizeof(ulm::EagerHeader));
    EXPECT_EQ(sizeof(ulm::EagerHeader), 48u);
    EXPECT_EQ(base_of(*m[1]).type, FragType::match) << "Ssend: the receiver must name the send";
    EXPECT_EQ(msg_seq_of(*m[0]), 1u);
    EXPECT_EQ(msg_seq_of(*m[1]), 2u);
    EXPECT_EQ(r0->env.msg_len, 0u);
    EXPECT_EQ(r1->env.msg_len, 8u);
    EXPECT_EQ(r1->env.tag, kTag + 1);
    EXPECT_TRUE(same_bytes(in1, eight));
    c.e(0).release(s0);
    c.e(0).release(s1);
    c.e(1).release(r0);
    c.e(1).release(r1);
}

TEST(Engine, eager_message_waits_unexpected_until_receive_is_posted)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(300, 2); // above Unexpected's inline payload
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    c.settle();
    EXPECT_EQ(c.e(1).unexpected_count(), 1u);
    EXPECT_EQ(c.e(1).counters(0).unexpected, 1u);
    std::vector<std::byte> in(300);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    EXPECT_TRUE(r->complete) << "a receive matching an unexpected eager message completes at once";
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(c.e(1).unexpected_count(), 0u);
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, eager_message_of_noncontiguous_type_arrives_packed_and_unpacked)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    // Send 3 bytes of every 5; receive into 2 + 2 of every 6 (same 300 bytes).
    const ulm::Run srun[] = {{1, 3}};
    const std::uint64_t sprefix[] = {0, 3};
    const Layout slay{3, 5, 1, srun, sprefix, false};
    const ulm::Run rrun[] = {{0, 2}, {4, 2}};
    const std::uint64_t rprefix[] = {0, 2, 4};
    const Layout rlay{4, 6, 2, rrun, rprefix, false};
    auto src = pattern(500, 3);
    std::vector<std::byte> dst(450, std::byte{0});
    RecvMsg* r = nullptr;
    ASSERT_TRUE(c.e(1).irecv(DataRef{dst.data(), 75, &rlay}, 0, kTag, ContextId(0), &r).ok());
    SendMsg* s = nullptr;
    ASSERT_TRUE(
        c.e(0)
            .isend(DataRef{src.data(), 100, &slay}, 1, kTag, ContextId(0), SendMode::standard, &s)
            .ok());
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    std::vector<std::byte> packed(300);
    ulm::pack(DataRef{src.data(), 100, &slay}, 0, packed.data(), 300);
    std::vector<std::byte> got(300);
    ulm::pack(DataRef{dst.data(), 75, &rlay}, 0, got.data(), 300);
    EXPECT_TRUE(same_bytes(got, packed));
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, eager_limit_above_fragment_room_still_delivers)
{
    // A path whose eager limit leaves no room for the match header in its
    // largest fragment: the engine must not ask for more than max_frag.
    ClusterOptions o;
    o.mem.eager_limit = 4096;
    o.mem.max_frag = 4096;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(4090, 4);
    std::vector<std::byte> in(4090);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    EXPECT_TRUE(c.run_until([&] { return r->complete; }, 2000));
    EXPECT_EQ(c.path(0).contract_violations(), 0u)
        << "acquire() asked for more than PathInfo::max_frag";
    EXPECT_TRUE(same_bytes(in, msg));
    c.e(0).release(s);
    c.e(1).release(r);
}

// ---------------------------------------------------------------------------
// Rendezvous

TEST(Engine, rendezvous_streams_rest_after_cts)
{
    Cluster c; // eager 1024, max_frag 4096
    ASSERT_TRUE(c.ok());
    auto msg = pattern(20000, 5);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    c.settle();
    EXPECT_FALSE(s->complete) << "a rendezvous send waits for the receiver";
    EXPECT_EQ(s->state, SendMsg::State::await_cts);
    auto matches = frags(c.fabric, FragType::match, 0, 1);
    ASSERT_EQ(matches.size(), 1u);
    EXPECT_EQ(base_of(*matches[0]).payload_len, 1024u)
        << "the match fragment carries the first bytes";
    EXPECT_EQ(frags(c.fabric, FragType::data, 0, 1).size(), 0u);

    std::vector<std::byte> in(20000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(r->error, Errc::ok);
    EXPECT_EQ(s->error, Errc::ok);
    auto cts = frags(c.fabric, FragType::cts, 1, 0);
    ASSERT_EQ(cts.size(), 1u);
    auto ch = header_of<CtsHeader>(*cts[0]);
    EXPECT_EQ(ch.offset, 1024u);
    EXPECT_EQ(ch.length, 20000u);
    // Data fragments cover [1024, 20000) without gaps, each within max_frag.
    std::uint64_t expect_off = 1024;
    for (const FragRecord* f : frags(c.fabric, FragType::data, 0, 1)) {
        auto dh = header_of<DataHeader>(*f);
        EXPECT_EQ(dh.offset, expect_off);
        EXPECT_LE(f->bytes.size(), 4096u);
        EXPECT_EQ(f->bytes.size(), sizeof(DataHeader) + dh.base.payload_len);
        expect_off += dh.base.payload_len;
    }
    EXPECT_EQ(expect_off, 20000u);
    EXPECT_EQ(frags(c.fabric, FragType::fin, 1, 0).size(), 0u);
    c.e(0).release(s);
    c.e(1).release(r);
    EXPECT_EQ(c.e(0).live_sends(), 0u);
    EXPECT_EQ(c.path(0).contract_violations(), 0u);
}

TEST(Engine, rendezvous_unexpected_message_streams_when_receive_comes)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(9000, 6);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    c.settle();
    EXPECT_EQ(c.e(1).unexpected_count(), 1u);
    std::vector<std::byte> in(9000);
    RecvMsg* r = post_recv(c.e(1), in, ulm::kAnySource, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_TRUE(same_bytes(in, msg));
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, rendezvous_reads_sender_memory_with_get_then_answers_fin)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(50000, 7);
    std::vector<std::byte> in(50000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    c.path(0).set_paused(true); // hold the fin at the sender's side
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_GT(c.path(1).gets(), 0u);
    EXPECT_FALSE(s->complete) << "the sender's buffer is in use until the fin comes";
    EXPECT_EQ(s->state, SendMsg::State::await_fin);
    c.path(0).set_paused(false);
    ASSERT_TRUE(c.run_until([&] { return s->complete; }));
    EXPECT_EQ(frags(c.fabric, FragType::data, 0, 1).size(), 0u);
    EXPECT_EQ(frags(c.fabric, FragType::cts, 1, 0).size(), 0u);
    EXPECT_EQ(frags(c.fabric, FragType::fin, 1, 0).size(), 1u);
    c.e(0).release(s);
    c.e(1).release(r);
    EXPECT_EQ(c.e(0).live_sends(), 0u);
}

TEST(Engine, rendezvous_above_the_paths_get_maximum_streams_data_fragments)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    o.mem.get_max = 30000;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto small = pattern(30000, 1), big = pattern(30001, 2);
    std::vector<std::byte> in1(30000), in2(30001);
    RecvMsg* r1 = post_recv(c.e(1), in1, 0, kTag);
    RecvMsg* r2 = post_recv(c.e(1), in2, 0, kTag);
    SendMsg* s1 = post_send(c.e(0), small, 1, kTag);
    SendMsg* s2 = post_send(c.e(0), big, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r1->complete && r2->complete && s1->complete && s2->complete; }));
    EXPECT_TRUE(same_bytes(in1, small));
    EXPECT_TRUE(same_bytes(in2, big));
    EXPECT_EQ(frags(c.fabric, FragType::fin, 1, 0).size(), 1u) << "30000 bytes: read in place";
    EXPECT_EQ(frags(c.fabric, FragType::cts, 1, 0).size(), 1u) << "30001 bytes: streamed";
    EXPECT_GT(frags(c.fabric, FragType::data, 0, 1).size(), 0u);
    c.e(0).release(s1);
    c.e(0).release(s2);
    c.e(1).release(r1);
    c.e(1).release(r2);
}

TEST(Engine, rendezvous_below_single_copy_minimum_uses_copy)
{
    ScopedSizeParam min("ulm_single_copy_min", 1u << 20);
    ClusterOptions o;
    o.mem.has_get = true;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(20000, 8);
    std::vector<std::byte> in(20000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(c.path(1).gets(), 0u);
    EXPECT_GT(frags(c.fabric, FragType::data, 0, 1).size(), 0u);
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, rendezvous_falls_back_to_copy_when_get_fails)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    c.path(1).set_fail_get(true);
    auto msg = pattern(30000, 9);
    std::vector<std::byte> in(30000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(r->error, Errc::ok);
    expect_streamed_whole(c.fabric, 30000);
    c.e(0).release(s);
    c.e(1).release(r);
}

// A path that starts reads without waiting (start_get, depth 2): the reads
// of several messages are under way at once, each message is answered with
// one fin once its last slice has ended, and nothing streams.
TEST(Engine, async_reads_of_several_messages_are_in_flight_at_once)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    o.mem.get_depth = 2;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    constexpr int kMsgs = 6;
    std::vector<std::vector<std::byte>> out, in;
    std::vector<RecvMsg*> r;
    std::vector<SendMsg*> s;
    for (int i = 0; i < kMsgs; ++i) {
        out.push_back(pattern(20000 + 1000 * static_cast<std::size_t>(i), 20 + i));
        in.emplace_back(out.back().size());
    }
    for (int i = 0; i < kMsgs; ++i) {
        r.push_back(post_recv(c.e(1), in[static_cast<std::size_t>(i)], 0, kTag));
    }
    for (int i = 0; i < kMsgs; ++i) {
        s.push_back(post_send(c.e(0), out[static_cast<std::size_t>(i)], 1, kTag));
    }
    ASSERT_TRUE(c.run_until([&] {
        return std::all_of(r.begin(), r.end(), [](RecvMsg* x) { return bool(x->complete); }) &&
               std::all_of(s.begin(), s.end(), [](SendMsg* x) { return bool(x->complete); });
    }));
    for (int i = 0; i < kMsgs; ++i) {
        const auto k = static_cast<std::size_t>(i);
        EXPECT_TRUE(same_bytes(in[k], out[k])) << "message " << i;
        EXPECT_EQ(r[k]->error, Errc::ok);
        EXPECT_FALSE(r[k]->reading);
    }
    EXPECT_EQ(c.path(1).max_gets_queued(), 2u) << "the reads fill the path's depth";
    EXPECT_EQ(c.path(1).gets(), static_cast<std::size_t>(kMsgs));
    EXPECT_EQ(frags(c.fabric, FragType::fin, 1, 0).size(), static_cast<std::size_t>(kMsgs));
    EXPECT_EQ(frags(c.fabric, FragType::cts, 1, 0).size(), 0u);
    EXPECT_EQ(frags(c.fabric, FragType::data, 0, 1).size(), 0u);
    for (int i = 0; i < kMsgs; ++i) {
        c.e(0).release(s[static_cast<std::size_t>(i)]);
        c.e(1).release(r[static_cast<std::size_t>(i)]);
    }
    EXPECT_EQ(c.e(0).live_sends(), 0u);
}

// The path fails in the middle of a read (its first slices landed, a
// later one ends with an error, others are still in flight): once every
// slice has ended the receiver asks for a stream from byte 0, and the
// message arrives whole, without a fin.
TEST(Engine, an_async_read_failing_mid_way_streams_the_message_instead)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    o.mem.get_depth = 3;
    o.mem.fail_get_after = 2;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    // Receiver: 2 x 256 bytes every 600 (196 segments: four slices).
    const ulm::Run rrun[] = {{0, 256}, {300, 256}};
    const std::uint64_t rprefix[] = {0, 256, 512};
    const Layout rlay{512, 600, 2, rrun, rprefix, false};
    auto msg = pattern(50000, 31);
    std::vector<std::byte> dst(98 * 600, std::byte{0});
    RecvMsg* r = nullptr;
    ASSERT_TRUE(c.e(1).irecv(DataRef{dst.data(), 98, &rlay}, 0, kTag, ContextId(0), &r).ok());
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_EQ(r->error, Errc::ok);
    EXPECT_EQ(c.path(1).gets(), 2u);
    EXPECT_GT(c.path(1).gets_failed(), 0u);
    std::vector<std::byte> got(50000);
    ulm::pack(DataRef{dst.data(), 98, &rlay}, 0, got.data(), 50000);
    EXPECT_TRUE(same_bytes(got, msg));
    expect_streamed_whole(c.fabric, 50000);
    c.e(0).release(s);
    c.e(1).release(r);
}

// Over a checksummed rail, a read whose bytes landed damaged (a byte
// flipped after the path's own checks: memory, bus) fails the message's
// CRC32C at the receiver, which asks for a stream instead: the message
// arrives whole, counted as a payload CRC failure, without a fin. Both
// reads that wait (get) and reads that do not (start_get).
class EngineCheckedRead : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(EngineCheckedRead, a_read_that_lands_damaged_is_caught_and_the_message_streamed)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    o.mem.get_depth = GetParam();
    o.mem.reliable = true; // checksummed
    o.mem.corrupt_gets = 1;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(30000, 41);
    std::vector<std::byte> in(msg.size());
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_EQ(r->error, Errc::ok);
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(c.path(1).gets_corrupted(), 1u);
    EXPECT_EQ(c.e(1).counters(0).crc_payload_fail, 1u);
    expect_streamed_whole(c.fabric, 30000);
    c.e(0).release(s);
    c.e(1).release(r);
}

INSTANTIATE_TEST_SUITE_P(Depth, EngineCheckedRead, ::testing::Values(0u, 3u),
                         [](const auto& info) {
                             return info.param == 0 ? std::string("get") : std::string("start_get");
                         });

// The sender's CRC32C of a buffer is taken again for another send of the
// same bytes to the same peer only while the send it was computed for is
// under way (MPI forbids changing the buffer until then): two windows of
// sends of one buffer, the buffer changed between them, every read checks
// (a CRC kept past its send's end would fail the second window's).
TEST(Engine, a_send_buffer_checksum_is_reused_only_while_its_send_is_under_way)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    o.mem.get_depth = 4;
    o.mem.reliable = true; // checksummed
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto buf = pattern(25000, 51);
    for (int w = 0; w < 2; ++w) {
        constexpr int kWindow = 3;
        std::vector<std::vector<std::byte>> in(kWindow, std::vector<std::byte>(buf.size()));
        std::vector<RecvMsg*> r;
        std::vector<SendMsg*> s;
        for (int i = 0; i < kWindow; ++i) {
            r.push_back(post_recv(c.e(1), in[static_cast<std::size_t>(i)], 0, kTag));
        }
        for (int i = 0; i < kWindow; ++i) {
            s.push_back(post_send(c.e(0), buf, 1, kTag));
        }
        ASSERT_TRUE(c.run_until([&] {
            return std::all_of(r.begin(), r.end(), [](RecvMsg* x) { return bool(x->complete); }) &&
                   std::all_of(s.begin(), s.end(), [](SendMsg* x) { return bool(x->complete); });
        }));
        for (int i = 0; i < kWindow; ++i) {
            const auto k = static_cast<std::size_t>(i);
            EXPECT_TRUE(same_bytes(in[k], buf)) << "window " << w << ", message " << i;
            c.e(0).release(s[k]);
            c.e(1).release(r[k]);
        }
        EXPECT_EQ(c.e(1).counters(0).crc_payload_fail, 0u) << "window " << w;
        EXPECT_EQ(c.e(0).counters(1).get_crc_reused, static_cast<std::uint64_t>((kWindow - 1) * (w + 1)))
            << "the window's later sends take the first one's CRC";
        EXPECT_EQ(c.path(1).gets(), static_cast<std::size_t>(kWindow * (w + 1)));
        EXPECT_EQ(frags(c.fabric, FragType::cts, 1, 0).size(), 0u) << "nothing streamed";
        for (std::byte& b : buf) {
            b = ~b; // the sends are complete: the buffer may change
        }
    }
}

TEST(Engine, single_copy_handles_noncontiguous_send_and_receive_layouts)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    // Sender: 10 blocks of 2000 bytes, 2100 apart (10 segments: fits a key).
    const ulm::Run srun[] = {{0, 2000}};
    const std::uint64_t sprefix[] = {0, 2000};
    const Layout slay{2000, 2100, 1, srun, sprefix, false};
    // Receiver: 2 x 256 bytes every 600 (79 segments: read in two slices).
    const ulm::Run rrun[] = {{0, 256}, {300, 256}};
    const std::uint64_t rprefix[] = {0, 256, 512};
    const Layout rlay{512, 600, 2, rrun, rprefix, false};
    auto src = pattern(21000, 10);
    std::vector<std::byte> dst(40 * 600, std::byte{0});
    RecvMsg* r = nullptr;
    ASSERT_TRUE(c.e(1).irecv(DataRef{dst.data(), 40, &rlay}, 0, kTag, ContextId(0), &r).ok());
    SendMsg* s = nullptr;
    ASSERT_TRUE(
        c.e(0)
            .isend(DataRef{src.data(), 10, &slay}, 1, kTag, ContextId(0), SendMode::standard, &s)
            .ok());
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_GT(c.path(1).gets(), 1u) << "79 segments need two get() calls of 64";
    EXPECT_EQ(frags(c.fabric, FragType::fin, 1, 0).size(), 1u);
    std::vector<std::byte> want(20000);
    ulm::pack(DataRef{src.data(), 10, &slay}, 0, want.data(), 20000);
    std::vector<std::byte> got(20000);
    ulm::pack(DataRef{dst.data(), 40, &rlay}, 0, got.data(), 20000);
    EXPECT_TRUE(same_bytes(got, want));
    c.e(0).release(s);
    c.e(1).release(r);
}

// A receive buffer in short pieces (2 x 50 bytes every 150: below
// kMinReadRun on average) is not read into, a path call per 64 pieces; the
// receiver asks the sender to stream the message from byte 0 and unpacks
// the fragments (MPICH's pt2pt/pingping into runs of one int: 191 s read,
// 18 s streamed).
TEST(Engine, a_receive_buffer_in_short_pieces_is_streamed_into_not_read)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    const ulm::Run rrun[] = {{0, 50}, {75, 50}};
    const std::uint64_t rprefix[] = {0, 50, 100};
    const Layout rlay{100, 150, 2, rrun, rprefix, false};
    auto msg = pattern(20000, 12);
    std::vector<std::byte> dst(200 * 150, std::byte{0});
    RecvMsg* r = nullptr;
    ASSERT_TRUE(c.e(1).irecv(DataRef{dst.data(), 200, &rlay}, 0, kTag, ContextId(0), &r).ok());
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_EQ(r->error, Errc::ok);
    EXPECT_EQ(c.path(1).gets(), 0u);
    expect_streamed_whole(c.fabric, 20000);
    std::vector<std::byte> got(20000);
    ulm::pack(DataRef{dst.data(), 200, &rlay}, 0, got.data(), 20000);
    EXPECT_TRUE(same_bytes(got, msg));
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, noncontiguous_rendezvous_copy_with_unaddressable_data_fragments)
{
    ClusterOptions o;
    o.mem.unaddressable = Unaddressable::data; // payload pulled through read_payload
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    const ulm::Run rrun[] = {{0, 3}, {5, 1}};
    const std::uint64_t rprefix[] = {0, 3, 4};
    const Layout rlay{4, 8, 2, rrun, rprefix, false};
    auto msg = pattern(16000, 11);
    std::vector<std::byte> dst(4000 * 8, std::byte{0});
    RecvMsg* r = nullptr;
    ASSERT_TRUE(c.e(1).irecv(DataRef{dst.data(), 4000, &rlay}, 0, kTag, ContextId(0), &r).ok());
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    std::vector<std::byte> got(16000);
    ulm::pack(DataRef{dst.data(), 4000, &rlay}, 0, got.data(), 16000);
    EXPECT_TRUE(same_bytes(got, msg));
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, match_fragment_payload_is_read_through_read_payload_when_not_addressable)
{
    // path.h lets a path deliver any fragment with a payload that is only
    // reachable through RxFrag::read_payload (the udp design scatters eager
    // payloads straight into the user buffer). Eager data, the first bytes
    // of a rendezvous and unexpected messages must all arrive intact.
    ClusterOptions o;
    o.mem.unaddressable = Unaddressable::all;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto eager = pattern(200, 31);
    auto large = pattern(6000, 32);
    auto late = pattern(100, 33);
    std::vector<std::byte> in_eager(200);
    std::vector<std::byte> in_large(6000);
    std::vector<std::byte> in_late(100);
    RecvMsg* r1 = post_recv(c.e(1), in_eager, 0, 1);
    RecvMsg* r2 = post_recv(c.e(1), in_large, 0, 2);
    SendMsg* s1 = post_send(c.e(0), eager, 1, 1);
    SendMsg* s2 = post_send(c.e(0), large, 1, 2);
    SendMsg* s3 = post_send(c.e(0), late, 1, 3);
    ASSERT_TRUE(c.run_until([&] { return r1->complete && r2->complete && s2->complete; }));
    c.settle();
    RecvMsg* r3 = post_recv(c.e(1), in_late, 0, 3);
    ASSERT_TRUE(c.run_until([&] { return r3->complete; }));
    EXPECT_TRUE(same_bytes(in_eager, eager)) << "eager payload";
    EXPECT_TRUE(same_bytes(in_large, large)) << "rendezvous first bytes";
    EXPECT_TRUE(same_bytes(in_late, late)) << "unexpected eager payload";
    for (SendMsg* s : {s1, s2, s3}) {
        c.e(0).release(s);
    }
    for (RecvMsg* r : {r1, r2, r3}) {
        c.e(1).release(r);
    }
}

// ---------------------------------------------------------------------------
// Synchronous sends

TEST(Engine, eager_ssend_completes_only_after_match)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(64, 12);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag, 0, SendMode::synchronous);
    c.settle(200);
    EXPECT_FALSE(s->complete) << "an Ssend must not complete before a receive matched it";
    EXPECT_EQ(s->state, SendMsg::State::await_sync);
    std::vector<std::byte> in(64);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    EXPECT_TRUE(r->complete);
    ASSERT_TRUE(c.run_until([&] { return s->complete; }));
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(s->error, Errc::ok);
    c.e(0).release(s);
    c.e(1).release(r);
    EXPECT_EQ(c.e(0).live_sends(), 0u);
}

TEST(Engine, zero_byte_ssend_completes_only_after_match)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> none;
    SendMsg* s = post_send(c.e(0), none, 1, kTag, 0, SendMode::synchronous);
    c.settle(200);
    EXPECT_FALSE(s->complete);
    RecvMsg* r = post_recv(c.e(1), none, 0, kTag);
    ASSERT_TRUE(c.run_until([&] { return s->complete && r->complete; }));
    EXPECT_EQ(r->env.msg_len, 0u);
    c.e(0).release(s);
    c.e(1).release(r);
}

class EngineRendezvousSsend : public ::testing::TestWithParam<bool> {};

TEST_P(EngineRendezvousSsend, completes_only_after_match)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = GetParam();
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(10000, 13);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag, 0, SendMode::synchronous);
    c.settle(200);
    EXPECT_FALSE(s->complete);
    std::vector<std::byte> in(10000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    ASSERT_TRUE(c.run_until([&] { return s->complete && r->complete; }));
    EXPECT_TRUE(same_bytes(in, msg));
    c.e(0).release(s);
    c.e(1).release(r);
}

INSTANTIATE_TEST_SUITE_P(CopyAndGet, EngineRendezvousSsend, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "get" : "copy"; });

// ---------------------------------------------------------------------------
// Truncation and zero bytes

TEST(Engine, eager_truncation_fills_capacity_and_reports_truncated)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(100, 14);
    Guarded g(40);
    RecvMsg* r = post_guarded(c.e(1), g, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    EXPECT_EQ(r->error, Errc::truncated);
    EXPECT_EQ(r->env.msg_len, 100u);
    EXPECT_TRUE(g.prefix_equals(msg, 40));
    EXPECT_TRUE(g.guard_intact()) << "wrote past the receive buffer";
    EXPECT_EQ(s->error, Errc::ok);
    c.e(0).release(s);
    c.e(1).release(r);
}

struct TruncCase {
    bool get;
    std::size_t capacity;
};

class EngineRendezvousTruncation : public ::testing::TestWithParam<TruncCase> {};

TEST_P(EngineRendezvousTruncation, fills_capacity_and_completes_both_sides)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = GetParam().get;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(20000, 15);
    Guarded g(GetParam().capacity);
    RecvMsg* r = post_guarded(c.e(1), g, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_EQ(r->error, Errc::truncated);
    EXPECT_EQ(r->env.msg_len, 20000u);
    EXPECT_EQ(s->error, Errc::ok);
    EXPECT_TRUE(g.prefix_equals(msg, GetParam().capacity));
    EXPECT_TRUE(g.guard_intact()) << "wrote past the receive buffer";
    if (!GetParam().get) {
        std::uint64_t first = std::min<std::uint64_t>(1024, GetParam().capacity);
        EXPECT_EQ(data_bytes_logged(c.fabric, 0, 1), GetParam().capacity - first)
            << "the sender streams only what the receiver accepts";
    }
    c.e(0).release(s);
    c.e(1).release(r);
    c.settle();
    EXPECT_EQ(c.e(0).live_sends(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, EngineRendezvousTruncation,
                         ::testing::Values(TruncCase{false, 0}, TruncCase{false, 500},
                                           TruncCase{false, 1024}, TruncCase{false, 5000},
                                           TruncCase{true, 0}, TruncCase{true, 500},
                                           TruncCase{true, 5000}),
                         [](const auto& info) {
                             return std::string(info.param.get ? "get_" : "copy_") +
                                    std::to_string(info.param.capacity);
                         });

TEST(Engine, zero_byte_message_matches_and_completes)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> none;
    std::vector<std::byte> in(16, std::byte{0x33});
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    SendMsg* s = post_send(c.e(0), none, 1, kTag);
    EXPECT_TRUE(s->complete);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    EXPECT_EQ(r->error, Errc::ok);
    EXPECT_EQ(r->env.msg_len, 0u);
    EXPECT_TRUE(
        std::all_of(in.begin(), in.end(), [](std::byte b) { return b == std::byte{0x33}; }));
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, zero_capacity_receive_truncates_nonempty_message)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(10, 16);
    Guarded g(0);
    RecvMsg* r = post_guarded(c.e(1), g, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    EXPECT_EQ(r->error, Errc::truncated);
    EXPECT_TRUE(g.guard_intact());
    c.e(0).release(s);
    c.e(1).release(r);
}

// ---------------------------------------------------------------------------
// Cancel

TEST(Engine, cancelled_receive_completes_and_never_matches)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> in(8, std::byte{0});
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    EXPECT_TRUE(c.e(1).cancel(r));
    EXPECT_TRUE(r->complete);
    EXPECT_TRUE(r->cancelled);
    EXPECT_FALSE(c.e(1).cancel(r)) << "cancelling twice";
    auto msg = pattern(8, 17);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    c.settle();
    EXPECT_EQ(c.e(1).unexpected_count(), 1u) << "the message must not go to the cancelled receive";
    EXPECT_TRUE(std::all_of(in.begin(), in.end(), [](std::byte b) { return b == std::byte{0}; }));
    std::vector<std::byte> in2(8);
    RecvMsg* r2 = post_recv(c.e(1), in2, 0, kTag);
    EXPECT_TRUE(r2->complete);
    EXPECT_TRUE(same_bytes(in2, msg));
    c.e(1).release(r);
    c.e(1).release(r2);
    c.e(0).release(s);
}

TEST(Engine, matched_receive_cannot_be_cancelled)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(12000, 18);
    std::vector<std::byte> in(12000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    c.path(0).set_paused(true); // the cts waits: the receive is matched, not complete
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->matched; }));
    EXPECT_FALSE(r->complete);
    EXPECT_FALSE(c.e(1).cancel(r));
    c.path(0).set_paused(false);
    ASSERT_TRUE(c.run_until([&] { return r->complete && s->complete; }));
    EXPECT_FALSE(r->cancelled);
    EXPECT_TRUE(same_bytes(in, msg));
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, queued_send_can_be_cancelled_without_leaving_a_sequence_gap)
{
    ClusterOptions o;
    o.mem.capacity = 1;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    c.path(1).set_paused(true); // nothing is delivered, so no credit returns
    auto a = pattern(10, 19);
    auto b = pattern(10, 20);
    auto d = pattern(10, 21);
    SendMsg* sa = post_send(c.e(0), a, 1, 1);
    SendMsg* sb = post_send(c.e(0), b, 1, 2);
    SendMsg* sd = post_send(c.e(0), d, 1, 3);
    EXPECT_TRUE(sa->complete);
    EXPECT_FALSE(sb->complete);
    EXPECT_EQ(sb->state, SendMsg::State::queued);
    EXPECT_FALSE(c.e(0).cancel(sa)) << "its fragment already left";
    EXPECT_TRUE(c.e(0).cancel(sb));
    EXPECT_TRUE(sb->complete);
    EXPECT_TRUE(sb->cancelled);
    c.e(0).release(sb);
    c.path(1).set_paused(false);
    std::vector<std::byte> in1(10);
    std::vector<std::byte> in2(10);
    RecvMsg* r1 = post_recv(c.e(1), in1, 0, ulm::kAnyTag);
    RecvMsg* r2 = post_recv(c.e(1), in2, 0, ulm::kAnyTag);
    ASSERT_TRUE(c.run_until([&] { return r1->complete && r2->complete; }, 2000))
        << "a message after the cancelled one is stuck (sequence gap?)";
    EXPECT_EQ(r1->env.tag, 1);
    EXPECT_EQ(r2->env.tag, 3);
    EXPECT_TRUE(same_bytes(in1, a));
    EXPECT_TRUE(same_bytes(in2, d));
    auto matches = message_frags(c.fabric, 0, 1);
    ASSERT_EQ(matches.size(), 2u);
    EXPECT_EQ(msg_seq_of(*matches[1]), 2u);
    c.e(0).release(sa);
    c.e(0).release(sd);
    c.e(1).release(r1);
    c.e(1).release(r2);
    EXPECT_EQ(c.e(0).live_sends(), 0u);
}

TEST(Engine, unmatched_rendezvous_send_is_withdrawn_from_the_receiver)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto big = pattern(12000, 22); // rendezvous: the sender waits for a cts
    SendMsg* s = post_send(c.e(0), big, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return c.e(1).unexpected_count() == 1; }));
    EXPECT_FALSE(c.e(0).cancel(s)) << "the answer comes from the receiver";
    ASSERT_TRUE(c.run_until([&] { return s->complete; }));
    EXPECT_TRUE(s->cancelled);
    EXPECT_EQ(c.e(1).unexpected_count(), 0u) << "the message left the receiver";
    // The next message is received normally: no gap in the message sequence.
    auto small = pattern(10, 23);
    std::vector<std::byte> in(10);
    SendMsg* s2 = post_send(c.e(0), small, 1, kTag);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    EXPECT_TRUE(same_bytes(in, small));
    c.e(0).release(s);
    c.e(0).release(s2);
    c.e(1).release(r);
}

TEST(Engine, rendezvous_send_taken_by_a_receive_is_not_cancelled)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto big = pattern(12000, 24);
    std::vector<std::byte> in(12000);
    SendMsg* s = post_send(c.e(0), big, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return c.e(1).unexpected_count() == 1; }));
    c.path(0).set_paused(true); // what the receiver sends waits: its cts, its answer
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag); // matched
    EXPECT_FALSE(c.e(0).cancel(s));
    c.settle();
    c.path(0).set_paused(false);
    ASSERT_TRUE(c.run_until([&] { return s->complete && r->complete; }));
    EXPECT_FALSE(s->cancelled);
    EXPECT_TRUE(same_bytes(in, big));
    c.e(0).release(s);
    c.e(1).release(r);
}

// An interrupted operation (a revoke, FT-MPI's reset) completes with an
// error, but a single-copy send must not hand its buffer back while the
// receiver may still read it: the program would reuse or free memory the
// receiver then takes for the message (kill_anywhere seed 1033: a 512 KiB
// message arrived with other bytes). It asks the receiver, whose fin or
// cancel answer completes it.
TEST(Engine, interrupted_single_copy_send_keeps_its_buffer_until_the_receiver_answers)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(50000, 31);
    std::vector<std::byte> in(50000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    c.path(0).set_paused(true); // the receiver's fin waits
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    ASSERT_EQ(s->state, SendMsg::State::await_fin);
    c.e(0).interrupt_context(ContextId(0), Errc::revoked);
    EXPECT_FALSE(s->complete) << "the receiver may still be reading the buffer";
    c.path(0).set_paused(false);
    ASSERT_TRUE(c.run_until([&] { return s->complete; }));
    EXPECT_EQ(s->error, Errc::revoked);
    EXPECT_TRUE(same_bytes(in, msg));
    c.e(0).release(s);
    c.e(1).release(r);
}

TEST(Engine, interrupted_single_copy_send_withdraws_a_message_nobody_took)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.mem.has_get = true;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(50000, 32);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return c.e(1).unexpected_count() == 1; }));
    c.e(0).interrupt_context(ContextId(0), Errc::revoked);
    EXPECT_FALSE(s->complete) << "a receive posted now would read the buffer";
    ASSERT_TRUE(c.run_until([&] { return s->complete; }));
    EXPECT_EQ(s->error, Errc::revoked);
    EXPECT_FALSE(s->cancelled) << "interrupted, not cancelled by the program";
    EXPECT_EQ(c.e(1).unexpected_count(), 0u) << "the message left the receiver";
    c.e(0).release(s);
}

// ---------------------------------------------------------------------------
// Flow control and ordering

TEST(Engine, sends_queued_on_full_path_arrive_complete_and_in_order)
{
    ClusterOptions o;
    o.mem.capacity = 2;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    constexpr int kMsgs = 120;
    std::vector<std::vector<std::byte>> out;
    std::vector<std::vector<std::byte>> in;
    std::vector<SendMsg*> sends;
    std::vector<RecvMsg*> recvs;
    const std::size_t sizes[] = {0, 1, 60, 1024, 1025, 3000, 9000};
    for (int i = 0; i < kMsgs; ++i) {
        std::size_t n = sizes[static_cast<std::size_t>(i) % 7];
        out.push_back(pattern(n, static_cast<std::uint32_t>(100 + i)));
        in.emplace_back(n);
    }
    // Half the receives before the sends, half after.
    for (int i = 0; i < kMsgs / 2; ++i) {
        recvs.push_back(post_recv(c.e(1), in[static_cast<std::size_t>(i)], 0, ulm::kAnyTag));
    }
    for (int i = 0; i < kMsgs; ++i) {
        sends.push_back(post_send(c.e(0), out[static_cast<std::size_t>(i)], 1, i));
    }
    EXPECT_GT(c.path(0).counters().send_again, 0u) << "the path never filled up";
    c.settle(50);
    for (int i = kMsgs / 2; i < kMsgs; ++i) {
        recvs.push_back(post_recv(c.e(1), in[static_cast<std::size_t>(i)], 0, ulm::kAnyTag));
    }
    ASSERT_TRUE(c.run_until([&] {
        return std::all_of(recvs.begin(), recvs.end(), [](RecvMsg* r) { return r->complete; }) &&
               std::all_of(sends.begin(), sends.end(), [](SendMsg* s) { return s->complete; });
    }));
    for (int i = 0; i < kMsgs; ++i) {
        auto k = static_cast<std::size_t>(i);
        EXPECT_EQ(recvs[k]->env.tag, i) << "message overtaken";
        EXPECT_TRUE(same_bytes(in[k], out[k])) << i;
        EXPECT_EQ(recvs[k]->error, Errc::ok);
        c.e(0).release(sends[k]);
        c.e(1).release(recvs[k]);
    }
    c.settle();
    EXPECT_EQ(c.e(0).live_sends(), 0u);
    EXPECT_EQ(c.path(0).contract_violations(), 0u);
    EXPECT_EQ(c.path(1).contract_violations(), 0u);
}

TEST(Engine, control_fragments_queue_when_path_is_full)
{
    // The receiver's path towards the sender holds one fragment at a time,
    // and the sender is paused: cts fragments must queue, not vanish.
    ClusterOptions o;
    o.mem.capacity = 1;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    constexpr int kMsgs = 6;
    std::vector<std::vector<std::byte>> out;
    std::vector<std::vector<std::byte>> in;
    std::vector<SendMsg*> sends;
    std::vector<RecvMsg*> recvs;
    for (int i = 0; i < kMsgs; ++i) {
        out.push_back(pattern(64, static_cast<std::uint32_t>(200 + i)));
        in.emplace_back(64);
        sends.push_back(post_send(c.e(0), out.back(), 1, i, 0, SendMode::synchronous));
    }
    c.path(0).set_paused(true);
    for (int i = 0; i < kMsgs; ++i) {
        recvs.push_back(post_recv(c.e(1), in[static_cast<std::size_t>(i)], 0, i));
    }
    ASSERT_TRUE(c.run_until([&] {
        return std::all_of(recvs.begin(), recvs.end(), [](RecvMsg* r) { return r->complete; });
    }));
    EXPECT_TRUE(std::none_of(sends.begin(), sends.end(), [](SendMsg* s) { return s->complete; }));
    c.path(0).set_paused(false);
    ASSERT_TRUE(c.run_until([&] {
        return std::all_of(sends.begin(), sends.end(), [](SendMsg* s) { return s->complete; });
    }));
    for (int i = 0; i < kMsgs; ++i) {
        EXPECT_TRUE(same_bytes(in[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(i)]));
        c.e(0).release(sends[static_cast<std::size_t>(i)]);
        c.e(1).release(recvs[static_cast<std::size_t>(i)]);
    }
}

TEST(Engine, match_fragments_arriving_out_of_order_are_held_until_their_turn)
{
    ClusterOptions o;
    o.mem.order = Order::newest_first;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    constexpr int kMsgs = 8;
    std::vector<std::vector<std::byte>> out;
    std::vector<std::vector<std::byte>> in;
    std::vector<SendMsg*> sends;
    std::vector<RecvMsg*> recvs;
    for (int i = 0; i < kMsgs; ++i) {
        in.emplace_back(40);
        recvs.push_back(post_recv(c.e(1), in.back(), 0, ulm::kAnyTag));
    }
    c.path(1).set_paused(true);
    for (int i = 0; i < kMsgs; ++i) {
        out.push_back(pattern(40, static_cast<std::uint32_t>(300 + i)));
        sends.push_back(post_send(c.e(0), out.back(), 1, i));
    }
    EXPECT_EQ(c.path(1).inbox_size(), static_cast<std::size_t>(kMsgs));
    c.path(1).set_paused(false);
    ASSERT_TRUE(c.run_until([&] {
        return std::all_of(recvs.begin(), recvs.end(), [](RecvMsg* r) { return r->complete; });
    }));
    EXPECT_EQ(c.e(1).counters(0).out_of_order, static_cast<std::uint64_t>(kMsgs - 1));
    for (int i = 0; i < kMsgs; ++i) {
        EXPECT_EQ(recvs[static_cast<std::size_t>(i)]->env.tag, i);
        EXPECT_TRUE(same_bytes(in[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(i)]));
        c.e(0).release(sends[static_cast<std::size_t>(i)]);
        c.e(1).release(recvs[static_cast<std::size_t>(i)]);
    }
}

TEST(Engine, any_source_receives_keep_each_senders_order)
{
    ClusterOptions o;
    o.n = 3;
    o.mem.order = Order::random;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    constexpr int kPer = 30;
    std::vector<std::vector<std::byte>> bufs;
    std::vector<std::pair<int, SendMsg*>> sends;
    std::vector<RecvMsg*> recvs;
    std::vector<std::vector<std::byte>> in(2 * kPer, std::vector<std::byte>(8));
    for (int i = 0; i < 2 * kPer; ++i) {
        recvs.push_back(
            post_recv(c.e(0), in[static_cast<std::size_t>(i)], ulm::kAnySource, ulm::kAnyTag));
    }
    for (int i = 0; i < kPer; ++i) {
        for (int src = 1; src <= 2; ++src) {
            bufs.push_back(std::vector<std::byte>(8, static_cast<std::byte>(i)));
            sends.emplace_back(src, post_send(c.e(src), bufs.back(), 0, 100 * src + i));
        }
    }
    ASSERT_TRUE(c.run_until([&] {
        return std::all_of(recvs.begin(), recvs.end(), [](RecvMsg* r) { return r->complete; });
    }));
    int next[3] = {0, 0, 0};
    for (int i = 0; i < 2 * kPer; ++i) {
        RecvMsg* r = recvs[static_cast<std::size_t>(i)];
        int src = r->env.source;
        ASSERT_TRUE(src == 1 || src == 2);
        EXPECT_EQ(r->env.tag, 100 * src + next[src])
            << "a later message of rank " << src << " overtook";
        EXPECT_EQ(in[static_cast<std::size_t>(i)][0], static_cast<std::byte>(next[src]));
        ++next[src];
    }
    for (auto& [rank, s] : sends) {
        c.e(rank).release(s);
    }
    for (RecvMsg* r : recvs) {
        c.e(0).release(r);
    }
}

TEST(Engine, sequence_numbers_increase_by_one_per_peer_and_direction)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    ClusterOptions o;
    o.n = 3;
    o.mem.capacity = 2;
    o.mem.order = Order::random;
    o.tweak = [](int r, MemPathOptions& m) { m.has_get = r == 2; };
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    std::vector<std::vector<std::byte>> out;
    std::vector<std::vector<std::byte>> in;
    out.reserve(200);
    in.reserve(200);
    std::vector<std::pair<int, SendMsg*>> sends;
    std::vector<std::pair<int, RecvMsg*>> recvs;
    const std::size_t sizes[] = {0, 100, 2000, 7000};
    for (int i = 0; i < 150; ++i) {
        int src = i % 3;
        int dst = (i / 3) % 3;
        std::size_t n = sizes[static_cast<std::size_t>(i) % 4];
        out.push_back(pattern(n, static_cast<std::uint32_t>(i)));
        in.emplace_back(n);
        SendMode mode = i % 5 == 0 ? SendMode::synchronous : SendMode::standard;
        sends.emplace_back(src, post_send(c.e(src), out.back(), dst, i, 0, mode));
        recvs.emplace_back(dst, post_recv(c.e(dst), in.back(), src, i));
        c.progress_all();
    }
    ASSERT_TRUE(c.run_until([&] {
        return std::all_of(recvs.begin(), recvs.end(),
                           [](auto& p) { return p.second->complete; }) &&
               std::all_of(sends.begin(), sends.end(), [](auto& p) { return p.second->complete; });
    }));
    for (std::size_t i = 0; i < out.size(); ++i) {
        EXPECT_TRUE(same_bytes(in[i], out[i])) << i;
    }
    // In commit order: fragment sequence 1, 2, 3 ... per (sender, receiver),
    // message sequence 1, 2, 3 ... over the match fragments.
    std::map<std::pair<int, int>, std::uint64_t> frag_seq;
    std::map<std::pair<int, int>, std::uint64_t> msg_seq;
    for (const FragRecord& f : c.fabric.log) {
        BaseHeader b = base_of(f);
        auto key = std::make_pair(f.src, f.dst);
        EXPECT_EQ(b.frag_seq, ++frag_seq[key])
            << f.src << "->" << f.dst << " type " << static_cast<int>(b.type);
        EXPECT_EQ(b.src, static_cast<std::uint32_t>(f.src));
        EXPECT_EQ(b.version, ulm::kWireVersion);
        if (starts_message(b.type)) {
            EXPECT_EQ(msg_seq_of(f), ++msg_seq[key]);
        }
    }
    EXPECT_EQ(msg_seq.size(), 9u) << "every ordered pair (self included) carried messages";
    for (auto& [r, s] : sends) {
        c.e(r).release(s);
    }
    for (auto& [r, rv] : recvs) {
        c.e(r).release(rv);
    }
}

// ---------------------------------------------------------------------------
// Probes

TEST(Engine, iprobe_leaves_message_and_improbe_takes_it_for_imrecv)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    Envelope env;
    EXPECT_FALSE(c.e(1).iprobe(ulm::kAnySource, ulm::kAnyTag, ContextId(0), &env));
    auto small = pattern(50, 22);
    auto large = pattern(15000, 23);
    SendMsg* s1 = post_send(c.e(0), small, 1, 4);
    SendMsg* s2 = post_send(c.e(0), large, 1, 5);
    c.settle();
    ASSERT_TRUE(c.e(1).iprobe(ulm::kAnySource, ulm::kAnyTag, ContextId(0), &env));
    EXPECT_EQ(env.source, 0);
    EXPECT_EQ(env.tag, 4);
    EXPECT_EQ(env.msg_len, 50u);
    EXPECT_FALSE(c.e(1).iprobe(0, 4, ContextId(1), &env)) << "other context";
    ASSERT_TRUE(c.e(1).iprobe(0, 5, ContextId(0), &env));
    EXPECT_EQ(env.msg_len, 15000u);

    ulm::Unexpected* m = c.e(1).improbe(0, 5, ContextId(0), &env);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(env.tag, 5);
    EXPECT_FALSE(c.e(1).iprobe(0, 5, ContextId(0), &env)) << "a matched probe removes the message";
    std::vector<std::byte> in_large(15000);
    RecvMsg* r2 = nullptr;
    ASSERT_TRUE(c.e(1).imrecv(m, bytes_ref(in_large.data(), in_large.size()), &r2).ok());
    ASSERT_TRUE(c.run_until([&] { return r2->complete && s2->complete; }));
    EXPECT_TRUE(same_bytes(in_large, large));

    std::vector<std::byte> in_small(50);
    RecvMsg* r1 = post_recv(c.e(1), in_small, 0, 4);
    EXPECT_TRUE(r1->complete);
    EXPECT_TRUE(same_bytes(in_small, small));
    for (SendMsg* s : {s1, s2}) {
        c.e(0).release(s);
    }
    c.e(1).release(r1);
    c.e(1).release(r2);
}

// ---------------------------------------------------------------------------
// Self, several paths, descriptors

TEST(Engine, sends_to_itself_eager_and_rendezvous)
{
    ScopedSizeParam min("ulm_single_copy_min", 0);
    for (bool self_path : {false, true}) {
        SCOPED_TRACE(self_path ? "SelfPath" : "MemPath to itself");
        ClusterOptions o;
        o.self_path = self_path;
        Cluster c(o);
        ASSERT_TRUE(c.ok());
        EXPECT_STREQ(c.e(0).primary_path(0)->info().name, self_path ? "self" : "mem");
        EXPECT_STREQ(c.e(0).primary_path(1)->info().name, "mem");
        auto a = pattern(10, 24);
        auto b = pattern(200000, 25);
        std::vector<std::byte> ia(10);
        std::vector<std::byte> ib(200000);
        SendMsg* sa = post_send(c.e(0), a, 0, 1);
        SendMsg* sb = post_send(c.e(0), b, 0, 2);
        RecvMsg* rb = post_recv(c.e(0), ib, 0, 2);
        RecvMsg* ra = post_recv(c.e(0), ia, 0, 1);
        ASSERT_TRUE(c.run_until(
            [&] { return ra->complete && rb->complete && sa->complete && sb->complete; }));
        EXPECT_TRUE(same_bytes(ia, a));
        EXPECT_TRUE(same_bytes(ib, b));
        for (SendMsg* s : {sa, sb}) {
            c.e(0).release(s);
        }
        c.e(0).release(ra);
        c.e(0).release(rb);
        EXPECT_EQ(c.e(0).live_sends(), 0u);
    }
}

TEST(Engine, released_descriptors_are_freed_once_the_protocol_is_done)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(30000, 26);
    std::vector<std::byte> in(30000);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    c.e(0).release(s); // like MPI_Request_free on an active send
    c.e(1).release(r);
    EXPECT_EQ(c.e(0).live_sends(), 1u);
    c.settle(500);
    EXPECT_EQ(c.e(0).live_sends(), 0u);
    EXPECT_TRUE(same_bytes(in, msg)) << "a released receive still fills its buffer";
}

TEST(Engine, many_rendezvous_in_flight_reuse_descriptor_slots_safely)
{
    ClusterOptions o;
    o.mem.order = Order::random;
    o.mem.capacity = 3;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    for (int round = 0; round < 5; ++round) {
        std::vector<std::vector<std::byte>> out;
        std::vector<std::vector<std::byte>> in;
        std::vector<SendMsg*> sends;
        std::vector<RecvMsg*> recvs;
        for (int i = 0; i < 20; ++i) {
            out.push_back(pattern(5000 + static_cast<std::size_t>(i) * 37,
                                  static_cast<std::uint32_t>(round * 100 + i)));
            in.emplace_back(out.back().size());
        }
        for (int i = 0; i < 20; ++i) {
            sends.push_back(post_send(c.e(0), out[static_cast<std::size_t>(i)], 1, i));
            recvs.push_back(post_recv(c.e(1), in[static_cast<std::size_t>(i)], 0, i));
        }
        ASSERT_TRUE(c.run_until([&] {
            return std::all_of(recvs.begin(), recvs.end(),
                               [](RecvMsg* r) { return r->complete; }) &&
                   std::all_of(sends.begin(), sends.end(), [](SendMsg* s) { return s->complete; });
        }));
        for (int i = 0; i < 20; ++i) {
            EXPECT_TRUE(
                same_bytes(in[static_cast<std::size_t>(i)], out[static_cast<std::size_t>(i)]));
            c.e(0).release(sends[static_cast<std::size_t>(i)]);
            c.e(1).release(recvs[static_cast<std::size_t>(i)]);
        }
    }
    EXPECT_EQ(c.e(0).live_sends(), 0u);
}

// ---------------------------------------------------------------------------
// Fragments that must be ignored

BaseHeader make_base(FragType type, std::uint16_t flags, int src, int dst, std::uint32_t plen)
{
    BaseHeader b{};
    b.version = ulm::kWireVersion;
    b.type = type;
    b.flags = flags;
    b.src = static_cast<std::uint32_t>(src);
    b.dst = static_cast<std::uint32_t>(dst);
    b.payload_len = plen;
    return b;
}

std::vector<std::byte> to_bytes(const void* p, std::size_t n)
{
    std::vector<std::byte> v(n);
    std::memcpy(v.data(), p, n);
    return v;
}

TEST(Engine, stale_descriptor_ids_in_control_and_data_fragments_are_ignored)
{
    ClusterOptions o;
    o.mem.has_get = false;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    // A first rendezvous; keep copies of its cts and one data fragment.
    auto m1 = pattern(10000, 27);
    std::vector<std::byte> i1(10000);
    RecvMsg* r1 = post_recv(c.e(1), i1, 0, 1);
    SendMsg* s1 = post_send(c.e(0), m1, 1, 1);
    ASSERT_TRUE(c.run_until([&] { return r1->complete && s1->complete; }));
    auto old_cts = frags(c.fabric, FragType::cts, 1, 0).at(0)->bytes;
    auto old_data = frags(c.fabric, FragType::data, 0, 1).at(0)->bytes;
    c.e(0).release(s1);
    c.e(1).release(r1);

    // A second rendezvous reuses the descriptor slots; hold its cts so it is
    // in flight on both sides.
    auto m2 = pattern(10000, 28);
    std::vector<std::byte> i2(10000, std::byte{0});
    RecvMsg* r2 = post_recv(c.e(1), i2, 0, 2);
    c.path(0).set_paused(true);
    SendMsg* s2 = post_send(c.e(0), m2, 1, 2);
    ASSERT_TRUE(c.run_until([&] { return r2->matched; }));
    const std::size_t logged = c.fabric.log.size();
    const std::uint64_t received = r2->received;

    // Replays: old data into the receiver, old cts into the sender, and a
    // fin and cts with made-up ids.
    c.path(1).inject(0, old_data.data(), old_data.size());
    c.settle(20);
    EXPECT_EQ(r2->received, received) << "a stale data fragment was counted for a new receive";
    EXPECT_TRUE(
        std::equal(i2.begin() + 1024, i2.end(), std::vector<std::byte>(10000 - 1024).begin()))
        << "a stale data fragment wrote into a new receive buffer";
    EXPECT_FALSE(r2->complete);

    c.path(0).inject(1, old_cts.data(), old_cts.size());
    FinHeader fin{};
    fin.base = make_base(FragType::fin, 0, 1, 0, 0);
    fin.send_id = 0x123456789ULL;
    auto fin_bytes = to_bytes(&fin, sizeof fin);
    c.path(0).inject(1, fin_bytes.data(), fin_bytes.size());
    // A fin naming the live send, which is not reading in place: ignored too.
    fin.send_id = header_of<MatchHeader>(*frags(c.fabric, FragType::match, 0, 1).back()).send_id;
    auto live_fin = to_bytes(&fin, sizeof fin);
    c.path(0).inject(1, live_fin.data(), live_fin.size());
    // Drain only the injected fragments: the held cts is queued first, so
    // deliver newest first and stop after the injected three.
    c.path(0).options().order = Order::newest_first;
    c.path(0).options().max_per_progress = 3;
    c.path(0).set_paused(false);
    (void)c.e(0).progress();
    c.path(0).set_paused(true);
    EXPECT_EQ(c.fabric.log.size(), logged) << "a stale cts made the sender send";
    EXPECT_FALSE(s2->complete) << "a stale fragment completed a send";
    EXPECT_EQ(s2->state, SendMsg::State::await_cts);

    c.path(0).options().order = Order::fifo;
    c.path(0).options().max_per_progress = 0;
    c.path(0).set_paused(false);
    ASSERT_TRUE(c.run_until([&] { return r2->complete && s2->complete; }));
    EXPECT_TRUE(same_bytes(i2, m2));
    c.e(0).release(s2);
    c.e(1).release(r2);
}

MatchHeader eager_match(int src, std::uint32_t ctx, int tag, std::uint64_t seq, std::uint32_t plen)
{
    MatchHeader h{};
    h.base = make_base(FragType::match, ulm::flag::eager, src, 1, plen);
    h.context = ctx;
    h.tag = tag;
    h.msg_seq = seq;
    h.msg_len = plen;
    return h;
}

std::vector<std::byte> frag_bytes(const MatchHeader& h, std::byte fill)
{
    std::vector<std::byte> v(sizeof h + h.base.payload_len, fill);
    std::memcpy(v.data(), &h, sizeof h);
    return v;
}

TEST(Engine, match_fragments_ahead_of_sequence_are_held_once_each)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    // Rank 0 "sends" seq 3, 3 again (duplicate), 2, then 1.
    for (std::uint64_t seq : {3, 3, 2, 1}) {
        auto f = frag_bytes(eager_match(0, 0, static_cast<int>(seq), seq, 4),
                            static_cast<std::byte>(seq));
        c.path(1).inject(0, f.data(), f.size());
        c.settle(2);
        if (seq != 1) {
            EXPECT_EQ(c.e(1).unexpected_count(), 0u) << "seq " << seq << " must wait for seq 1";
        }
    }
    EXPECT_EQ(c.e(1).unexpected_count(), 3u);
    EXPECT_EQ(c.e(1).counters(0).out_of_order, 2u) << "held: 3 and 2 (the copy of 3 is dropped)";
    for (int want = 1; want <= 3; ++want) {
        std::vector<std::byte> in(4);
        RecvMsg* r = post_recv(c.e(1), in, 0, ulm::kAnyTag);
        ASSERT_TRUE(r->complete);
        EXPECT_EQ(r->env.tag, want);
        EXPECT_EQ(in[0], static_cast<std::byte>(want));
        c.e(1).release(r);
    }
    EXPECT_EQ(c.e(1).unexpected_count(), 0u) << "the duplicate of seq 3 was delivered too";
}

TEST(Engine, duplicate_of_delivered_match_fragment_is_dropped)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto msg = pattern(30, 29);
    std::vector<std::byte> in(30);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    ASSERT_TRUE(c.run_until([&] { return r->complete; }));
    auto dup = message_frags(c.fabric, 0, 1).at(0)->bytes;
    c.path(1).inject(0, dup.data(), dup.size());
    c.settle(10);
    EXPECT_EQ(c.e(1).unexpected_count(), 0u);
    EXPECT_EQ(c.e(1).counters(0).out_of_order, 0u) << "an old duplicate is not held for later";
    std::vector<std::byte> in2(30);
    RecvMsg* r2 = post_recv(c.e(1), in2, 0, kTag);
    c.settle(10);
    EXPECT_FALSE(r2->complete) << "a duplicate became a second message";
    EXPECT_TRUE(c.e(1).cancel(r2));
    c.e(1).release(r2);
    c.e(1).release(r);
    c.e(0).release(s);
}

TEST(Engine, malformed_fragments_are_counted_and_dropped)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    auto good = eager_match(0, 0, 1, 1, 8);
    std::vector<std::vector<std::byte>> bad;
    bad.push_back(std::vector<std::byte>(10)); // shorter than any header: dropped uncounted
    {
        auto h = good;
        h.base.version = 99;
        bad.push_back(frag_bytes(h, std::byte{1}));
    }
    {
        auto h = good;
        h.base.src = 1; // claims another sender than the path says
        bad.push_back(frag_bytes(h, std::byte{1}));
    }
    {
        auto h = good;
        h.base.dst = 0; // meant for another rank
        bad.push_back(frag_bytes(h, std::byte{1}));
    }
    {
        auto v = frag_bytes(good, std::byte{1});
        v.resize(v.size() - 3); // payload_len says more than arrived
        bad.push_back(v);
    }
    {
        auto h = good;
        h.base.type = static_cast<FragType>(99);
        bad.push_back(frag_bytes(h, std::byte{1}));
    }
    {
        auto v = frag_bytes(good, std::byte{1});
        v.resize(sizeof(BaseHeader) + 4); // a match fragment cut inside its header
        bad.push_back(v);
    }
    for (auto& v : bad) {
        c.path(1).inject(0, v.data(), v.size());
    }
    c.settle(5);
    EXPECT_EQ(c.e(1).counters(0).bad_frags, 6u);
    EXPECT_EQ(c.e(1).unexpected_count(), 0u);
    // The engine still works, and sequence 1 is still expected.
    auto ok = frag_bytes(good, std::byte{0x42});
    c.path(1).inject(0, ok.data(), ok.size());
    c.settle(2);
    EXPECT_EQ(c.e(1).unexpected_count(), 1u);
}

// ---------------------------------------------------------------------------
// Errors and failures

struct RecordingHooks final : ulm::FailureHooks {
    std::vector<int> failed;
    std::vector<int> unreachable;
    int ending = 0;
    void on_peer_failed(int peer, const char*) override { failed.push_back(peer); }
    void on_peer_unreachable(int peer, const char*) override { unreachable.push_back(peer); }
    void on_job_ending(const char*) override { ++ending; }
};

TEST(Engine, isend_rejects_rank_outside_the_job)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    std::vector<std::byte> b(4);
    SendMsg* s = nullptr;
    EXPECT_EQ(c.e(0).isend(bytes_ref(b.data(), 4), 2, 0, ContextId(0), SendMode::standard, &s),
              Errc::invalid_arg);
    EXPECT_EQ(c.e(0).isend(bytes_ref(b.data(), 4), -1, 0, ContextId(0), SendMode::standard, &s),
              Errc::invalid_arg);
    EXPECT_EQ(c.e(0).live_sends(), 0u);
}

TEST(Engine, failed_peer_fails_new_sends_and_receives)
{
    Cluster c;
    ASSERT_TRUE(c.ok());
    RecordingHooks hooks;
    c.e(0).set_failure_hooks(&hooks);
    rt::FailureEvent ev;
    ev.kind = rt::FailureEvent::Kind::rank_failed;
    ev.rank = 1;
    ev.detail = "killed by the test";
    c.boot(0).push_event(ev);
    ulm::Backoff::Policy spin{1u << 30, 0, 1};
    ulm::Backoff backoff(spin);
    for (int i = 0; i < 1024 && !c.e(0).peer_failed(1); ++i) {
        c.e(0).idle(backoff);
    }
    EXPECT_TRUE(c.e(0).peer_failed(1)) << "failure events are polled while idle";
    EXPECT_EQ(hooks.failed, std::vector<int>{1});
    std::vector<std::byte> b(4);
    SendMsg* s = nullptr;
    EXPECT_EQ(c.e(0).isend(bytes_ref(b.data(), 4), 1, 0, ContextId(0), SendMode::standard, &s),
              Errc::peer_failed);
    RecvMsg* r = post_recv(c.e(0), b, 1, 0);
    EXPECT_TRUE(r->complete);
    EXPECT_EQ(r->error, Errc::peer_failed);
    c.e(0).release(r);
    c.e(0).set_failure_hooks(nullptr);
}

TEST(Engine, last_path_reported_down_is_probed_and_kept_not_given_up)
{
    // A peer is unreachable only when every path is down and the peer stays
    // silent past the retries: one report of the only path does not end it.
    Cluster c;
    ASSERT_TRUE(c.ok());
    RecordingHooks hooks;
    c.e(0).set_failure_hooks(&hooks);
    c.e(0).on_path_down(c.path(0), 1);
    EXPECT_TRUE(hooks.unreachable.empty());
    EXPECT_FALSE(c.e(0).peer_failed(1));
    EXPECT_EQ(c.e(0).link(1).up_rails(), 0);
    EXPECT_EQ(c.e(0).primary_path(1), &c.path(0)) << "the last path still carries traffic";
    // The probe is answered: the path is up again.
    for (int i = 0; i < 200 && c.e(0).link(1).up_rails() == 0; ++i) {
        c.settle(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(c.e(0).link(1).up_rails(), 1);
    EXPECT_EQ(c.e(0).link(1).rails[0].counters.ups, 1u);
    c.e(0).set_failure_hooks(nullptr);
}

TEST(Engine, init_fails_with_reason_when_no_path_reaches_a_peer)
{
    ClusterOptions o;
    o.mem.reach_self = false; // and no SelfPath
    LocalJob job(1);
    LocalBootstrap boot(job, 0);
    MemFabric fab;
    std::vector<std::unique_ptr<path::Path>> paths;
    paths.push_back(std::make_unique<MemPath>(fab, 0, o.mem));
    Engine e;
    std::string why;
    EXPECT_EQ(e.init(boot, std::move(paths), why), Errc::unreachable);
    EXPECT_NE(why.find("rank 0"), std::string::npos) << why;
    EXPECT_NE(why.find("mem"), std::string::npos) << why;
}

TEST(Engine, finalize_fences_after_outstanding_sends_finish)
{
    ClusterOptions o;
    o.mem.capacity = 1;
    Cluster c(o);
    ASSERT_TRUE(c.ok());
    auto msg = pattern(20000, 30);
    std::vector<std::byte> in(20000);
    RecvMsg* r = post_recv(c.e(1), in, 0, kTag);
    SendMsg* s = post_send(c.e(0), msg, 1, kTag);
    c.e(0).release(s);
    // Rank 1 waits for its receive, then both finalize on their own threads.
    const int fences_before = c.job().fences;
    std::vector<rt::Status> st(2);
    std::thread t0([&] { st[0] = c.e(0).finalize(); });
    std::thread t1([&] {
        c.e(1).wait([&] { return r->complete; });
        st[1] = c.e(1).finalize();
    });
    t0.join();
    t1.join();
    EXPECT_TRUE(st[0].ok());
    EXPECT_TRUE(st[1].ok());
    EXPECT_EQ(c.job().fences, fences_before + 1);
    EXPECT_TRUE(same_bytes(in, msg));
    EXPECT_EQ(c.e(0).live_sends(), 0u);
    c.e(1).release(r);
}

} // namespace
} // namespace ulmpi::test
