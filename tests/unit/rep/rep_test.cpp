// Replication (rep/): the replica bookkeeping, the sender's acknowledgement
// table, and the SDR protocol over in-process engines (tests/unit/ulm's
// harness): a send completes only with the other replicas' acknowledgements,
// matching is on logical ranks, and when a replica dies its substitute
// sends the orphaned replica what it misses, also a rendezvous message
// whose data the dead one had not finished sending.
#include "../ulm/engine_harness.h"

#include "ft/rep/ack_table.h"
#include "ft/rep/replica_set.h"
#include "ft/rep/replicator.h"
#include "runtime/log.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ulmpi::test {
namespace {

using rep::AckTable;
using rep::ReplicaSet;

TEST(ReplicaSet, numbers_replica_major_and_elects_the_lowest_live_substitute)
{
    ReplicaSet s(4, 3);
    EXPECT_EQ(s.phys(2, 1), 9);
    EXPECT_EQ(s.logical_of(9), 1);
    EXPECT_EQ(s.replica_of(9), 2);
    EXPECT_EQ(s.server(1, 2), 9);
    EXPECT_EQ(s.live_mask(1, 0), 0b110u);
    EXPECT_TRUE(s.mark_dead(9));
    EXPECT_FALSE(s.mark_dead(9));
    EXPECT_EQ(s.server(1, 2), 1);   // replica 0 sends for replica 2
    EXPECT_EQ(s.live_mask(1, 0), 0b010u);
    EXPECT_TRUE(s.mark_dead(1));
    EXPECT_EQ(s.server(1, 2), 5);   // then replica 1
    EXPECT_EQ(s.server(1, 0), 5);
    EXPECT_FALSE(s.all_dead(1));
    EXPECT_TRUE(s.mark_dead(5));
    EXPECT_TRUE(s.all_dead(1));
    EXPECT_EQ(s.server(1, 0), -1);
}

TEST(AckTable, send_waits_for_every_replica_and_keeps_early_acks)
{
    AckTable t(2);
    ulm::SendMsg a, b;
    EXPECT_EQ(t.ack(1, 2, 2), nullptr); // message 2 acknowledged before it is posted
    EXPECT_EQ(t.post(1, 1, &a, 0b110u), 0b110u);
    EXPECT_EQ(t.post(1, 2, &b, 0b110u), 0b010u);
    EXPECT_EQ(t.waiting(), 2u);
    EXPECT_TRUE(t.any_waiting());
    EXPECT_EQ(t.ack(1, 1, 1), &a);
    EXPECT_EQ(t.ack(1, 1, 1), nullptr); // twice: once only
    EXPECT_EQ(t.ack(1, 2, 1), &a);
    EXPECT_EQ(t.held(1).count(1), 0u);
    EXPECT_EQ(t.held(1).count(2), 1u);
    auto dropped = t.drop_replica(1, 1);
    ASSERT_EQ(dropped.size(), 1u);
    EXPECT_EQ(dropped[0], &b);
    EXPECT_EQ(t.waiting(), 0u);
    EXPECT_FALSE(t.any_waiting());
}

// Parked (a replica of the destination is being re-created): an entry that
// every live replica acknowledged is kept, as a copy, but waits for nobody
// (MPI_Finalize waits for waiting() only, docs/replication.md "Recovery").
TEST(AckTable, a_parked_entry_is_kept_but_waits_for_nobody)
{
    AckTable t(2);
    t.park(1, [](const ulm::SendMsg&) { return std::make_shared<rep::HeldCopy>(); });
    EXPECT_EQ(t.post(1, 1, nullptr, 0b01u, std::make_shared<rep::HeldCopy>()), 0b01u);
    EXPECT_EQ(t.waiting(), 1u);
    EXPECT_EQ(t.ack(1, 0, 1), nullptr); // a copy: no send to release
    EXPECT_EQ(t.held(1).count(1), 1u);
    EXPECT_EQ(t.waiting(), 0u);
    EXPECT_FALSE(t.any_waiting()); // held, but waits for nobody
    t.unpark(1);
    EXPECT_EQ(t.held(1).count(1), 0u);
}

TEST(AckTable, a_dead_replica_releases_each_send_once)
{
    AckTable t(1);
    ulm::SendMsg a;
    t.post(0, 1, &a, 0b1u);
    EXPECT_EQ(t.drop_replica(0, 0).size(), 1u);
    EXPECT_TRUE(t.drop_replica(0, 0).empty());
    EXPECT_EQ(t.ack(0, 0, 1), nullptr);
}

using ScopedBoolParam = ScopedParam<rt::BoolParam, bool>;

// N logical ranks x R replicas of in-process engines with a Replicator each.
class RepCluster {
public:
    // copy_limit: rep_copy_limit (0: every send waits for the acknowledgements);
    // recover: rep_recover (the harness cannot fork: a re-creation is given up).
    RepCluster(int n, int r, std::uint64_t copy_limit = 0, bool recover = true)
        : n_(n), r_(r), dead_(static_cast<std::size_t>(n * r), false),
          limit_("rep_copy_limit", copy_limit), recover_("rep_recover", recover)
    {
        ClusterOptions o;
        o.n = n * r;
        o.mem.eager_limit = 1024;
        o.mem.max_frag = 4096;
        c_ = std::make_unique<Cluster>(o);
        for (int p = 0; p < n * r; ++p) {
            std::string why;
            reps_.push_back(rep::Replicator::start(c_->e(p), c_->boot(p), r, nullptr, why));
            EXPECT_NE(reps_.back(), nullptr) << why;
        }
    }
    ~RepCluster() { reps_.clear(); }
    int phys(int k, int i) const { return k * n_ + i; }
    ulm::Engine& e(int p) { return c_->e(p); }
    MemFabric& fabric() { return c_->fabric; }
    rep::Replicator& rep(int p) { return *reps_[static_cast<std::size_t>(p)]; }
    void progress()
    {
        for (int p = 0; p < n_ * r_; ++p) {
            if (!dead_[static_cast<std::size_t>(p)]) {
                c_->e(p).progress();
            }
        }
    }
    template <class Pred> bool run_until(Pred&& done, int rounds = 20000)
    {
        for (int i = 0; i < rounds; ++i) {
            if (done()) {
                return true;
            }
            progress();
        }
        return done();
    }
    // Process p stops; every other process hears of it. engine_first: as
    // from the launcher's notice (Engine::check_events), the engine fails
    // its link first and then tells the replicator; else only the
    // replicator is told (as when a request names the death first).
    void kill(int p, bool engine_first = false)
    {
        dead_[static_cast<std::size_t>(p)] = true;
        for (int q = 0; q < n_ * r_; ++q) {
            if (!dead_[static_cast<std::size_t>(q)]) {
                if (engine_first) {
                    e(q).mark_peer_failed(p);
                }
                rep(q).on_peer_failed(p, "killed by the test");
            }
        }
    }
    bool dead(int p) const { return dead_[static_cast<std::size_t>(p)]; }

private:
    int n_, r_;
    std::vector<bool> dead_;
    ScopedSizeParam limit_;
    ScopedBoolParam recover_;
    std::unique_ptr<Cluster> c_;
    std::vector<std::unique_ptr<rep::Replicator>> reps_;
};

ulm::DataRef ref(std::vector<std::byte>& v) { return ulm::DataRef{v.data(), v.size(), &ulm::bytes_layout()}; }

TEST(Replication, engines_show_the_logical_rank)
{
    RepCluster c(3, 2);
    EXPECT_EQ(c.e(4).rank(), 1);
    EXPECT_EQ(c.e(4).size(), 3);
    EXPECT_EQ(c.e(4).phys_rank(), 4);
    EXPECT_EQ(c.rep(4).replica(), 1);
}

TEST(Replication, a_send_completes_only_with_the_other_replicas_acknowledgement)
{
    RepCluster c(2, 2, 0, false); // without recovery: the paper's Algorithm 1
    const ulm::ContextId ctx{1};
    std::vector<std::vector<std::byte>> out, in;
    std::vector<ulm::SendMsg*> s(2);
    std::vector<ulm::RecvMsg*> r(2, nullptr);
    for (int k = 0; k < 2; ++k) {
        out.push_back(pattern(100, 7));
        in.emplace_back(100);
        ASSERT_TRUE(c.e(c.phys(k, 0)).isend(ref(out[static_cast<std::size_t>(k)]), 1, 5, ctx,
                                            ulm::SendMode::standard, &s[static_cast<std::size_t>(k)]).ok());
    }
    // Only replica 0 of rank 1 receives: replica 0 of rank 0 still waits for
    // replica 1's acknowledgement; replica 1 of rank 0 for replica 0's.
    ASSERT_TRUE(c.e(c.phys(0, 1)).irecv(ref(in[0]), 0, 5, ctx, &r[0]).ok());
    c.run_until([&] { return r[0]->complete; });
    for (int i = 0; i < 200; ++i) {
        c.progress();
    }
    EXPECT_TRUE(r[0]->complete);
    EXPECT_EQ(r[0]->env.source, 0); // the logical rank
    EXPECT_FALSE(s[0]->complete);
    EXPECT_TRUE(s[1]->complete);    // replica 0 of rank 1 acknowledged to it
    ASSERT_TRUE(c.e(c.phys(1, 1)).irecv(ref(in[1]), ulm::kAnySource, 5, ctx, &r[1]).ok());
    EXPECT_TRUE(c.run_until([&] { return r[1]->complete && s[0]->complete; }));
    EXPECT_EQ(r[1]->env.source, 0);
    EXPECT_EQ(in[0], out[0]);
    EXPECT_EQ(in[1], out[1]);
    for (int k = 0; k < 2; ++k) {
        c.e(c.phys(k, 0)).release(s[static_cast<std::size_t>(k)]);
        c.e(c.phys(k, 1)).release(r[static_cast<std::size_t>(k)]);
    }
}

// With recovery, replica k of the destination acknowledges to replica k of
// the sender too, and the sender keeps the message until it did: a process
// forked from replica k (re-creating replica l) lacks what replica k had not
// received at the fork, and asks the sender for it when the sender's own
// sibling is dead. Here replica 1 of rank 1 acknowledges first (as a replica
// that then dies would), replica 0 of rank 1 has the message only stored.
TEST(Replication, with_recovery_a_send_waits_for_its_own_receiver_too)
{
    for (std::size_t bytes : {std::size_t{100}, std::size_t{20000}}) {
        SCOPED_TRACE("bytes " + std::to_string(bytes));
        RepCluster c(2, 2, 0, true);
        const ulm::ContextId ctx{1};
        std::vector<std::byte> out0 = pattern(bytes, 9), out1 = pattern(bytes, 9), in0(bytes),
                               in1(bytes);
        ulm::SendMsg* s0 = nullptr;
        ulm::SendMsg* s1 = nullptr;
        ASSERT_TRUE(c.e(c.phys(0, 0)).isend(ref(out0), 1, 5, ctx, ulm::SendMode::standard, &s0).ok());
        ASSERT_TRUE(c.e(c.phys(1, 0)).isend(ref(out1), 1, 5, ctx, ulm::SendMode::standard, &s1).ok());
        ulm::RecvMsg* r1 = nullptr;
        ASSERT_TRUE(c.e(c.phys(1, 1)).irecv(ref(in1), 0, 5, ctx, &r1).ok());
        EXPECT_TRUE(c.run_until([&] { return r1->complete; }));
        for (int i = 0; i < 200; ++i) {
            c.progress();
        }
        EXPECT_FALSE(s0->complete) << "replica 0 of rank 1 has not received it yet";
        EXPECT_FALSE(s1->complete);
        ulm::RecvMsg* r0 = nullptr;
        ASSERT_TRUE(c.e(c.phys(0, 1)).irecv(ref(in0), 0, 5, ctx, &r0).ok());
        EXPECT_TRUE(c.run_until([&] { return r0->complete && s0->complete && s1->complete; }));
        EXPECT_EQ(in0, out0);
        EXPECT_EQ(in1, out1);
        c.e(c.phys(0, 0)).release(s0);
        c.e(c.phys(1, 0)).release(s1);
        c.e(c.phys(0, 1)).release(r0);
        c.e(c.phys(1, 1)).release(r1);
    }
}

TEST(Replication, a_small_send_completes_at_once_and_its_copy_waits_for_the_acknowledgement)
{
    RepCluster c(2, 2, 65536);
    const ulm::ContextId ctx{1};
    std::vector<std::byte> out = pattern(100, 3), in0(100), in1(100);
    ulm::SendMsg* s = nullptr;
    ASSERT_TRUE(c.e(c.phys(0, 0)).isend(ref(out), 1, 5, ctx, ulm::SendMode::standard, &s).ok());
    c.run_until([&] { return s->complete; });
    EXPECT_TRUE(s->complete); // nobody has received it yet
    c.e(c.phys(0, 0)).release(s);
    std::fill(out.begin(), out.end(), std::byte{0}); // the buffer is the program's again
    // Replica 1 of rank 0 dies before it sent anything: replica 1 of rank 1
    // gets the message from replica 0's copy (the substitute).
    c.kill(c.phys(1, 0));
    ulm::RecvMsg* r0 = nullptr;
    ulm::RecvMsg* r1 = nullptr;
    ASSERT_TRUE(c.e(c.phys(0, 1)).irecv(ref(in0), 0, 5, ctx, &r0).ok());
    ASSERT_TRUE(c.e(c.phys(1, 1)).irecv(ref(in1), 0, 5, ctx, &r1).ok());
    EXPECT_TRUE(c.run_until([&] { return r0->complete && r1->complete; }));
    EXPECT_EQ(in0, pattern(100, 3));
    EXPECT_EQ(in1, pattern(100, 3));
    c.e(c.phys(0, 1)).release(r0);
    c.e(c.phys(1, 1)).release(r1);
}

// One round of a 1-byte ping-pong between ranks 0 and 1 on the live
// replicas (`skip`: a dead process, which neither sends nor receives);
// checks the data. Rank 1 answers once it received.
void ping_pong_round(RepCluster& c, int round, int skip = -1)
{
    const ulm::ContextId ctx{1};
    for (int dir = 0; dir < 2; ++dir) {
        const int from = dir, to = 1 - dir;
        std::vector<std::vector<std::byte>> out, in;
        out.reserve(2);
        in.reserve(2);
        std::vector<ulm::SendMsg*> s;
        std::vector<ulm::RecvMsg*> r;
        std::vector<int> senders, receivers;
        for (int k = 0; k < 2; ++k) {
            const int src = c.phys(k, from), dst = c.phys(k, to);
            out.push_back(pattern(1, static_cast<std::uint32_t>(round * 2 + dir + 1)));
            in.emplace_back(1);
            if (src != skip) {
                ulm::SendMsg* m = nullptr;
                ASSERT_TRUE(c.e(src).isend(ref(out.back()), to, round, ctx, ulm::SendMode::standard, &m).ok());
                s.push_back(m);
                senders.push_back(src);
            }
            if (dst != skip) {
                ulm::RecvMsg* m = nullptr;
                ASSERT_TRUE(c.e(dst).irecv(ref(in.back()), from, round, ctx, &m).ok());
                r.push_back(m);
                receivers.push_back(dst);
            }
        }
        ASSERT_TRUE(c.run_until([&] {
            for (ulm::RecvMsg* m : r) {
                if (!m->complete) {
                    return false;
                }
            }
            for (ulm::SendMsg* m : s) {
                if (!m->complete) {
                    return false;
                }
            }
            return true;
        })) << "round " << round << " direction " << dir;
        for (std::size_t i = 0; i < r.size(); ++i) {
            EXPECT_EQ(r[i]->error, rt::Errc::ok);
            c.e(receivers[i]).release(r[i]);
        }
        for (std::size_t i = 0; i < s.size(); ++i) {
            c.e(senders[i]).release(s[i]);
        }
        for (int k = 0; k < 2; ++k) {
            if (c.phys(k, to) != skip) {
                EXPECT_EQ(in[static_cast<std::size_t>(k)], out[static_cast<std::size_t>(k)]);
            }
        }
    }
}

// With recovery, replica k of the destination acknowledges to replica k of
// the sender, which it sends its own messages to: a small message's
// acknowledgement waits (rep_ack_delay_us) for the reply to carry it. Those
// to the other replica of the sender wait too, and leave together once 64
// wait (kMaxDeferred; the delay, 10 s here, is never over).
TEST(Replication, acknowledgements_ride_on_the_replies_of_a_ping_pong)
{
    ScopedIntParam delay("rep_ack_delay_us", 10'000'000); // only a reply carries them
    RepCluster c(2, 2, 65536, true);
    constexpr int kRounds = 70;
    constexpr std::uint64_t kBatch = 64;
    for (int i = 0; i < kRounds; ++i) {
        ping_pong_round(c, i);
    }
    for (int i = 0; i < 200; ++i) {
        c.progress();
    }
    for (int k = 0; k < 2; ++k) {
        SCOPED_TRACE("replica " + std::to_string(k));
        // Rank 0's messages: acknowledged by rank 1's replies (piggy-backed)
        // and by the other replica of rank 1 (one control message for the
        // first 64; the last 6 wait).
        EXPECT_EQ(c.rep(c.phys(k, 1)).piggy_acks(), static_cast<std::uint64_t>(kRounds));
        EXPECT_EQ(c.rep(c.phys(k, 1)).standalone_acks(), kBatch);
        EXPECT_EQ(c.rep(c.phys(k, 0)).unacknowledged(), kRounds - kBatch);
        // Rank 1's: every reply but the last is acknowledged on rank 0's
        // next message; the other replica's acknowledgements as above.
        EXPECT_EQ(c.rep(c.phys(k, 0)).piggy_acks(), static_cast<std::uint64_t>(kRounds - 1));
        EXPECT_EQ(c.rep(c.phys(k, 0)).standalone_acks(), kBatch);
        EXPECT_EQ(c.rep(c.phys(k, 1)).unacknowledged(), kRounds - kBatch);
    }
}

// The acknowledgement a reply carries (RepExt) takes the checksum words of
// a fragment without checksums, so a 1-byte replicated eager message is no
// longer than an unreplicated one (one 64-byte line over shm, wire.h), and
// follows the header of a checksummed one; either way each reaches its
// sender, which releases exactly the copies acknowledged.
TEST(Replication, a_piggy_backed_acknowledgement_costs_no_byte_without_checksums)
{
    for (const char* sum : {"none", "crc32c"}) {
        SCOPED_TRACE(sum);
        ScopedParam<rt::ChoiceParam, std::string> checksum("ulm_checksum", sum);
        // Replies carry them; those to the other replica leave after 1 s.
        ScopedIntParam delay("rep_ack_delay_us", 1'000'000);
        RepCluster c(2, 2, 65536, true);
        constexpr int kRounds = 12;
        for (int i = 0; i < kRounds; ++i) {
            ping_pong_round(c, i);
        }
        const bool crc = std::string(sum) == "crc32c";
        std::set<std::uint64_t> carried;
        for (const FragRecord& f : c.fabric().log) {
            const auto b = ulm::read_header<ulm::BaseHeader>(f.bytes.data());
            if (b.type != ulm::FragType::eager || f.src != c.phys(0, 1) || f.dst != c.phys(0, 0)) {
                continue; // rank 1's replies, replica 0's
            }
            if (!(b.flags & ulm::flag::rep_ext)) {
                continue;
            }
            EXPECT_EQ(f.bytes.size(), sizeof(ulm::EagerHeader) + (crc ? 8u : 0u) + 1u);
            EXPECT_EQ((b.flags & ulm::flag::crc) != 0, crc);
            ulm::RepExt x;
            std::memcpy(&x, f.bytes.data() + ulm::rep_ext_at(b.type, b.flags), sizeof x);
            carried.insert(x.m);
        }
        // Reply i carries the acknowledgement of rank 0's message i.
        std::set<std::uint64_t> want;
        for (std::uint64_t m = 1; m <= kRounds; ++m) {
            want.insert(m);
        }
        EXPECT_EQ(carried, want);
        for (int k = 0; k < 2; ++k) {
            EXPECT_EQ(c.rep(c.phys(k, 1)).piggy_acks(), static_cast<std::uint64_t>(kRounds));
            EXPECT_TRUE(c.run_until([&] { return c.rep(c.phys(k, 0)).unacknowledged() == 0; },
                                    100'000'000));
            EXPECT_EQ(c.rep(c.phys(k, 1)).standalone_acks(), static_cast<std::uint64_t>(kRounds));
        }
    }
}

// A process that only receives still acknowledges: once the delay is over,
// the deferred acknowledgement goes as a control message.
TEST(Replication, a_deferred_acknowledgement_leaves_alone_after_the_delay)
{
    ScopedIntParam delay("rep_ack_delay_us", 2000);
    RepCluster c(2, 2, 65536, true);
    const ulm::ContextId ctx{1};
    std::vector<std::byte> out = pattern(1, 4), in0(1), in1(1);
    ulm::SendMsg* s[2] = {};
    ulm::RecvMsg* r[2] = {};
    for (int k = 0; k < 2; ++k) {
        ASSERT_TRUE(c.e(c.phys(k, 0)).isend(ref(out), 1, 5, ctx, ulm::SendMode::standard, &s[k]).ok());
    }
    ASSERT_TRUE(c.e(c.phys(0, 1)).irecv(ref(in0), 0, 5, ctx, &r[0]).ok());
    ASSERT_TRUE(c.e(c.phys(1, 1)).irecv(ref(in1), 0, 5, ctx, &r[1]).ok());
    ASSERT_TRUE(c.run_until([&] { return r[0]->complete && r[1]->complete; }));
    EXPECT_TRUE(c.run_until([&] {
        return c.rep(c.phys(0, 0)).unacknowledged() == 0 && c.rep(c.phys(1, 0)).unacknowledged() == 0;
    }, 10'000'000)) << "a deferred acknowledgement never left";
    for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(c.rep(c.phys(k, 1)).piggy_acks(), 0u);
        EXPECT_EQ(c.rep(c.phys(k, 1)).standalone_acks(), 2u);
        c.e(c.phys(k, 0)).release(s[k]);
        c.e(c.phys(k, 1)).release(r[k]);
    }
}

// A send that waits for the acknowledgements (Algorithm 1: rep_copy_limit=0)
// is never acknowledged late: only copied messages' acknowledgements wait.
TEST(Replication, a_send_that_waits_is_acknowledged_at_once)
{
    ScopedIntParam delay("rep_ack_delay_us", 10'000'000);
    RepCluster c(2, 2, 0, true);
    const ulm::ContextId ctx{1};
    std::vector<std::byte> out = pattern(1, 4), in0(1), in1(1);
    ulm::SendMsg* s[2] = {};
    ulm::RecvMsg* r[2] = {};
    for (int k = 0; k < 2; ++k) {
        ASSERT_TRUE(c.e(c.phys(k, 0)).isend(ref(out), 1, 5, ctx, ulm::SendMode::standard, &s[k]).ok());
    }
    ASSERT_TRUE(c.e(c.phys(0, 1)).irecv(ref(in0), 0, 5, ctx, &r[0]).ok());
    ASSERT_TRUE(c.e(c.phys(1, 1)).irecv(ref(in1), 0, 5, ctx, &r[1]).ok());
    EXPECT_TRUE(c.run_until([&] { return s[0]->complete && s[1]->complete; }));
    for (int k = 0; k < 2; ++k) {
        c.e(c.phys(k, 0)).release(s[k]);
        c.e(c.phys(k, 1)).release(r[k]);
    }
}

// Acknowledgements ride on replies, and then the process such a reply goes
// to dies (replica 0 of rank 0): its substitute serves replica 0 of rank 1,
// whose acknowledgements of what the substitute sends go as control
// messages, and rank 1's replies wait for the live replica of rank 0 only.
// Every message arrives, every kept copy is released.
TEST(Replication, the_receiver_of_piggy_backed_acknowledgements_dies)
{
    rt::set_log_level(rt::LogLevel::error);
    // Long enough that the acknowledgement still waits when the reply
    // leaves (the rest of a progress round of four engines came between
    // them: 200 us ran out under ASan at load 10); the final wait covers it.
    ScopedIntParam delay("rep_ack_delay_us", 20'000);
    RepCluster c(2, 2, 65536, true);
    for (int i = 0; i < 5; ++i) {
        ping_pong_round(c, i);
    }
    const int dead = c.phys(0, 0);
    // A message of rank 0 and rank 1's reply, which carries replica 0 of
    // rank 1's acknowledgement to the process that then dies before it
    // takes it in.
    {
        const ulm::ContextId ctx{1};
        std::vector<std::byte> out = pattern(1, 99), in(1);
        ulm::SendMsg* s = nullptr;
        ulm::RecvMsg* r = nullptr;
        ASSERT_TRUE(c.e(dead).isend(ref(out), 1, 50, ctx, ulm::SendMode::standard, &s).ok());
        ASSERT_TRUE(c.e(c.phys(0, 1)).irecv(ref(in), 0, 50, ctx, &r).ok());
        ASSERT_TRUE(c.run_until([&] { return r->complete; }));
        c.e(c.phys(0, 1)).release(r);
        c.e(dead).release(s);
        ulm::SendMsg* reply = nullptr;
        ASSERT_TRUE(c.e(c.phys(0, 1)).isend(ref(in), 0, 51, ctx, ulm::SendMode::standard, &reply).ok());
        EXPECT_EQ(c.rep(c.phys(0, 1)).piggy_acks(), 6u); // it left carrying one
        c.e(c.phys(0, 1)).release(reply);
        c.kill(dead);
        // Replica 1 of both ranks do the same exchange.
        ulm::SendMsg* s1 = nullptr;
        ulm::RecvMsg* r1 = nullptr;
        ASSERT_TRUE(c.e(c.phys(1, 0)).isend(ref(out), 1, 50, ctx, ulm::SendMode::standard, &s1).ok());
        ASSERT_TRUE(c.e(c.phys(1, 1)).irecv(ref(in), 0, 50, ctx, &r1).ok());
        ASSERT_TRUE(c.run_until([&] { return r1->complete; }));
        c.e(c.phys(1, 1)).release(r1);
        c.e(c.phys(1, 0)).release(s1);
        ulm::SendMsg* reply1 = nullptr;
        ulm::RecvMsg* got = nullptr;
        std::vector<std::byte> back(1);
        ASSERT_TRUE(c.e(c.phys(1, 1)).isend(ref(in), 0, 51, ctx, ulm::SendMode::standard, &reply1).ok());
        ASSERT_TRUE(c.e(c.phys(1, 0)).irecv(ref(back), 1, 51, ctx, &got).ok());
        ASSERT_TRUE(c.run_until([&] { return got->complete; }));
        EXPECT_EQ(back, out);
        c.e(c.phys(1, 1)).release(reply1);
        c.e(c.phys(1, 0)).release(got);
    }
    for (int i = 6; i < 12; ++i) {
        ping_pong_round(c, i, dead);
    }
    EXPECT_TRUE(c.run_until([&] {
        return c.rep(c.phys(1, 0)).unacknowledged() == 0 && c.rep(c.phys(0, 1)).unacknowledged() == 0 &&
               c.rep(c.phys(1, 1)).unacknowledged() == 0;
    }, 10'000'000)) << "a message stays unacknowledged";
}

// Replica 1 of rank 0 dies after sending `sent_before` of `total` messages
// to rank 1 (replica 0 of rank 0 sent them all); both replicas of rank 1
// must receive all of them, in order, and every send must complete.
std::uint64_t substitute_run(int total, int sent_before, std::size_t bytes, std::uint64_t copy_limit,
                            bool engine_first = false)
{
    rt::set_log_level(rt::LogLevel::warn);
    SCOPED_TRACE("total " + std::to_string(total) + ", before " + std::to_string(sent_before) +
                 ", bytes " + std::to_string(bytes) + ", copy limit " + std::to_string(copy_limit) +
                 (engine_first ? ", the engine hears first" : ""));
    RepCluster c(2, 2, copy_limit);
    const ulm::ContextId ctx{1};
    auto msg = [&](int m) { return pattern(bytes, static_cast<std::uint32_t>(m + 1)); };
    std::vector<std::vector<std::byte>> out0, out1;
    std::vector<std::vector<std::vector<std::byte>>> in(2);
    std::vector<ulm::SendMsg*> s0, s1;
    std::vector<std::vector<ulm::RecvMsg*>> r(2);
    out0.reserve(static_cast<std::size_t>(total));
    out1.reserve(static_cast<std::size_t>(total));
    for (int k = 0; k < 2; ++k) {
        in[static_cast<std::size_t>(k)].reserve(static_cast<std::size_t>(total));
        for (int m = 0; m < total; ++m) {
            in[static_cast<std::size_t>(k)].emplace_back(bytes);
            ulm::RecvMsg* rm = nullptr;
            EXPECT_TRUE(c.e(c.phys(k, 1)).irecv(ref(in[static_cast<std::size_t>(k)].back()), 0,
                                                ulm::kAnyTag, ctx, &rm).ok());
            r[static_cast<std::size_t>(k)].push_back(rm);
        }
    }
    for (int m = 0; m < total; ++m) {
        out0.push_back(msg(m));
        ulm::SendMsg* s = nullptr;
        EXPECT_TRUE(c.e(c.phys(0, 0)).isend(ref(out0.back()), 1, m, ctx, ulm::SendMode::standard, &s).ok());
        s0.push_back(s);
    }
    for (int m = 0; m < sent_before; ++m) {
        out1.push_back(msg(m));
        ulm::SendMsg* s = nullptr;
        EXPECT_TRUE(c.e(c.phys(1, 0)).isend(ref(out1.back()), 1, m, ctx, ulm::SendMode::standard, &s).ok());
        s1.push_back(s);
    }
    // The dying sender's match fragments leave and its receiver matches
    // them: a rendezvous is then cut in the middle (its data never comes).
    c.e(c.phys(1, 0)).progress();
    c.e(c.phys(1, 1)).progress();
    c.kill(c.phys(1, 0), engine_first);
    EXPECT_TRUE(c.run_until([&] {
        for (auto& v : r) {
            for (ulm::RecvMsg* rm : v) {
                if (!rm->complete) {
                    return false;
                }
            }
        }
        for (ulm::SendMsg* s : s0) {
            if (!s->complete) {
                return false;
            }
        }
        return true;
    }));
    for (int k = 0; k < 2; ++k) {
        for (int m = 0; m < total; ++m) {
            ulm::RecvMsg* rm = r[static_cast<std::size_t>(k)][static_cast<std::size_t>(m)];
            EXPECT_EQ(rm->error, rt::Errc::ok) << "replica " << k << " message " << m;
            EXPECT_EQ(rm->env.tag, m) << "replica " << k << " message " << m;
            EXPECT_TRUE(in[static_cast<std::size_t>(k)][static_cast<std::size_t>(m)] == msg(m))
                << "replica " << k << " message " << m;
        }
    }
    EXPECT_GE(c.rep(c.phys(1, 1)).takeovers(), 1u);
    return c.rep(c.phys(1, 1)).holes();
}

TEST(Replication, the_substitute_sends_what_the_dead_replica_had_not)
{
    for (std::uint64_t limit : {0, 65536}) {
        EXPECT_EQ(substitute_run(6, 0, 64, limit), 0u);
        EXPECT_EQ(substitute_run(6, 3, 64, limit), 0u);
        EXPECT_EQ(substitute_run(6, 6, 64, limit), 0u);
    }
}

TEST(Replication, a_rendezvous_cut_by_the_death_is_sent_again)
{
    std::uint64_t holes = 0;
    for (std::uint64_t limit : {0, 65536}) {
        holes += substitute_run(4, 2, 20000, limit);
        holes += substitute_run(4, 4, 20000, limit);
        holes += substitute_run(3, 1, 20000, limit);
    }
    EXPECT_GT(holes, 0u) << "no rendezvous was cut: the test no longer tests it";
}

// As a launcher's notice arrives (Engine::check_events): the engine fails
// the link first (the cut receives and the dead sender's stored rendezvous
// messages reach the replicator then), and the replicator hears of the
// death after; what the engine handed over must still be asked for again.
TEST(Replication, a_rendezvous_cut_by_the_death_is_sent_again_when_the_engine_hears_first)
{
    std::uint64_t holes = 0;
    for (std::uint64_t limit : {0, 65536}) {
        holes += substitute_run(4, 2, 20000, limit, true);
        holes += substitute_run(4, 4, 20000, limit, true);
        holes += substitute_run(3, 1, 20000, limit, true);
        EXPECT_EQ(substitute_run(6, 3, 64, limit, true), 0u);
    }
    EXPECT_GT(holes, 0u) << "no rendezvous was cut: the test no longer tests it";
}

// The replica channel (intra/'s updates): messages between the replicas of
// one rank are neither numbered nor acknowledged, and one whose sender dies
// in the middle of its data stays posted until its receiver cancels it.
TEST(ReplicaChannel, carries_unnumbered_messages_and_a_cut_one_can_be_cancelled)
{
    RepCluster c(2, 2);
    const int s0 = c.phys(0, 0), s1 = c.phys(1, 0);
    std::vector<std::byte> big_out(20000, std::byte{7}), small_out(64, std::byte{9});
    std::vector<std::byte> big_in(20000), small_in(64);
    ulm::RecvMsg* big = nullptr;
    ulm::RecvMsg* small = nullptr;
    ASSERT_TRUE(c.rep(s1).irecv_sibling(ref(big_in), 5, &big).ok());
    ASSERT_TRUE(c.rep(s1).irecv_sibling(ref(small_in), 6, &small).ok());
    ulm::SendMsg* sb = nullptr;
    ulm::SendMsg* ss = nullptr;
    EXPECT_FALSE(c.rep(s0).isend_sibling(0, ref(small_out), 6, &ss).ok()); // not to itself
    ASSERT_TRUE(c.rep(s0).isend_sibling(1, ref(small_out), 6, &ss).ok());
    ASSERT_TRUE(c.rep(s0).isend_sibling(1, ref(big_out), 5, &sb).ok());
    c.e(s0).progress();
    c.e(s1).progress();
    c.kill(s0);
    EXPECT_TRUE(c.run_until([&] { return small->complete; }));
    EXPECT_EQ(small->error, rt::Errc::ok);
    EXPECT_TRUE(small_in == small_out);
    EXPECT_EQ(small->rep_seq, 0u);
    ASSERT_FALSE(big->complete) << "the rendezvous was not cut: the test no longer tests it";
    c.progress();
    EXPECT_FALSE(big->complete); // nobody else sends it: it waits, posted
    EXPECT_TRUE(c.e(s1).cancel(big));
    EXPECT_TRUE(big->complete);
    EXPECT_TRUE(big->cancelled);
    c.e(s1).release(big);
    c.e(s1).release(small);
    // The program's numbering is untouched: rank 1's first message to rank 0
    // is number 1 at replica 1 of rank 0.
    std::vector<std::byte> m_out(32, std::byte{1}), m_in(32);
    ulm::RecvMsg* rm = nullptr;
    ulm::SendMsg* sm = nullptr;
    ASSERT_TRUE(c.e(s1).irecv(ref(m_in), 1, 3, ulm::ContextId{77}, &rm).ok());
    ASSERT_TRUE(c.e(c.phys(1, 1))
                    .isend(ref(m_out), 0, 3, ulm::ContextId{77}, ulm::SendMode::standard, &sm)
                    .ok());
    EXPECT_TRUE(c.run_until([&] { return rm->complete; }));
    EXPECT_EQ(rm->rep_seq, 1u);
}

} // namespace
} // namespace ulmpi::test
