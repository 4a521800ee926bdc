// The fault-tolerant agreement and the revoke broadcast (ft/agree.h,
// ft/revoke.h) over in-process engines: processes "die" by no longer
// progressing, and the survivors hear of it at different moments, as from
// the launcher. Seeded random failures at random points check the
// agreement's promise: every survivor gets the same outcome.
#include "../ulm/engine_harness.h"

#include "ft/agree.h"
#include "ft/channel.h"
#include "ft/detector.h"
#include "ft/revoke.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>

namespace ulmpi::test {
namespace {

using ft::AgreeOutcome;
using ft::AgreeValue;

struct Node {
    Node(rt::Bootstrap& boot, ulm::Engine& e, int rank)
        : det(boot, e, ft::Mode::ulfm), chan(e), rev(chan, det, rank), agr(chan, det, rank)
    {
    }
    ft::Detector det;
    ft::Channel chan;
    ft::Revoker rev;
    ft::Agreements agr;
};

class FtCluster {
public:
    explicit FtCluster(int n, bool reorder = false, std::uint32_t seed = 1,
                       std::function<void(int, MemPathOptions&)> tweak = {})
        : n_(n), dead_(static_cast<std::size_t>(n), false)
    {
        ClusterOptions o;
        o.n = n;
        // Reordering across senders (and within one: ULM restores that
        // order), as a network does: a notice may then meet a new root's
        // messages before a dead root's last ones.
        o.mem.order = reorder ? Order::random : Order::fifo;
        o.mem.seed = seed;
        o.tweak = std::move(tweak);
        o.mem.eager_limit = 4096;
        o.mem.max_frag = 8192;
        c_ = std::make_unique<Cluster>(o);
        for (int r = 0; r < n; ++r) {
            nodes_.push_back(std::make_unique<Node>(c_->boot(r), c_->e(r), r));
        }
    }
    bool ok() const { return c_->ok(); }
    int size() const { return n_; }
    Node& node(int r) { return *nodes_[static_cast<std::size_t>(r)]; }
    bool dead(int r) const { return dead_[static_cast<std::size_t>(r)]; }
    void progress()
    {
        for (int r = 0; r < n_; ++r) {
            if (!dead(r)) {
                c_->e(r).progress();
            }
        }
    }
    void kill(int r) { dead_[static_cast<std::size_t>(r)] = true; }
    // Rank r receives nothing while paused (messages wait: a slow network).
    void pause(int r, bool on) { c_->path(r).set_paused(on); }
    // Rank `to` hears that `who` failed.
    void notify(int to, int who)
    {
        if (!dead(to)) {
            node(to).det.on_peer_failed(who, "killed by the test");
        }
    }
    std::vector<int> members() const
    {
        std::vector<int> m(static_cast<std::size_t>(n_));
        for (int i = 0; i < n_; ++i) {
            m[static_cast<std::size_t>(i)] = i;
        }
        return m;
    }

private:
    int n_;
    std::vector<bool> dead_;
    std::unique_ptr<Cluster> c_;
    std::vector<std::unique_ptr<Node>> nodes_;
};

std::string text(const AgreeOutcome& o)
{
    std::string s = "flag=" + std::to_string(o.value.flag) + " failed={";
    for (int i : o.failed) {
        s += std::to_string(i) + " ";
    }
    return s + "} unacked=" + std::to_string(o.unacked_failure);
}

TEST(Agree, without_failures_every_member_gets_the_and_of_the_flags)
{
    for (int n : {1, 2, 3, 8, 13}) {
        FtCluster c(n);
        ASSERT_TRUE(c.ok());
        std::vector<int> h(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r) {
            AgreeValue v;
            v.flag = r == 1 ? 0x0fu : 0xffu;
            v.mask = {0xffffffffu, r == 2 ? 0xf0u : 0xffu};
            h[static_cast<std::size_t>(r)] =
                c.node(r).agr.start(7, 0, c.members(), v, std::vector<bool>(static_cast<std::size_t>(n)));
        }
        for (int round = 0; round < 10000; ++round) {
            bool all = true;
            for (int r = 0; r < n; ++r) {
                all = all && c.node(r).agr.done(h[static_cast<std::size_t>(r)]);
            }
            if (all) {
                break;
            }
            c.progress();
        }
        for (int r = 0; r < n; ++r) {
            ASSERT_TRUE(c.node(r).agr.done(h[static_cast<std::size_t>(r)])) << "n=" << n << " rank " << r;
            const AgreeOutcome& o = c.node(r).agr.outcome(h[static_cast<std::size_t>(r)]);
            EXPECT_EQ(o.value.flag, n > 1 ? 0x0fu : 0xffu);
            ASSERT_EQ(o.value.mask.size(), 2u);
            EXPECT_EQ(o.value.mask[1], n > 2 ? 0xf0u : 0xffu);
            EXPECT_TRUE(o.failed.empty());
            EXPECT_FALSE(o.unacked_failure);
        }
        // Logarithmic: a tree each way, no more than 2 (n - 1) messages.
        std::uint64_t sent = 0;
        for (int r = 0; r < n; ++r) {
            sent += c.node(r).agr.messages_sent();
        }
        EXPECT_LE(sent, static_cast<std::uint64_t>(2 * (n - 1))) << "n=" << n;
    }
}

// Members that call different operations under one sequence number (agree
// at some, shrink at others: a program error) all see every kind in the
// outcome, with and without a failed member (tree and flat gathers), so
// each caller can report it instead of waiting.
TEST(Agree, the_outcome_carries_the_kinds_of_every_contribution)
{
    for (bool with_failure : {false, true}) {
        const int n = 5;
        FtCluster c(n);
        ASSERT_TRUE(c.ok());
        if (with_failure) {
            c.kill(2);
            for (int r = 0; r < n; ++r) {
                c.notify(r, 2);
            }
        }
        std::vector<int> h(static_cast<std::size_t>(n), 0);
        for (int r = 0; r < n; ++r) {
            if (c.dead(r)) {
                continue;
            }
            AgreeValue v;
            v.kinds = r == 3 ? 2u : 1u;
            h[static_cast<std::size_t>(r)] = c.node(r).agr.start(
                4, 0, c.members(), v, std::vector<bool>(static_cast<std::size_t>(n)));
        }
        auto all_done = [&] {
            for (int r = 0; r < n; ++r) {
                if (!c.dead(r) && !c.node(r).agr.done(h[static_cast<std::size_t>(r)])) {
                    return false;
                }
            }
            return true;
        };
        for (int round = 0; round < 10000 && !all_done(); ++round) {
            c.progress();
        }
        for (int r = 0; r < n; ++r) {
            if (c.dead(r)) {
                continue;
            }
            ASSERT_TRUE(c.node(r).agr.done(h[static_cast<std::size_t>(r)])) << "rank " << r;
            EXPECT_EQ(c.node(r).agr.outcome(h[static_cast<std::size_t>(r)]).value.kinds, 3u)
                << "rank " << r << (with_failure ? " (flat)" : " (tree)");
        }
    }
}

// One randomized run: every member starts at its own moment; `kills`
// members die at random moments (before, during or after they start), and
// each survivor hears of each death at its own later moment. Every
// survivor must finish with the same outcome; no survivor is listed failed;
// a member listed failed is dead.
void random_run(std::uint32_t seed, int n, int kills)
{
    std::mt19937 rng(seed);
    FtCluster c(n, true, seed);
    ASSERT_TRUE(c.ok());
    std::vector<int> start_at(static_cast<std::size_t>(n)), kill_at(static_cast<std::size_t>(n), -1);
    for (int r = 0; r < n; ++r) {
        start_at[static_cast<std::size_t>(r)] = static_cast<int>(rng() % 40);
    }
    std::set<int> victims;
    while (static_cast<int>(victims.size()) < kills) {
        // The low ranks (the roots) are killed more often.
        victims.insert(static_cast<int>(rng() % 2 == 0 ? rng() % 2 : rng() % static_cast<unsigned>(n)));
    }
    std::map<std::pair<int, int>, int> hear_at; // (survivor, victim) -> round
    for (int v : victims) {
        kill_at[static_cast<std::size_t>(v)] = static_cast<int>(rng() % 60);
        for (int r = 0; r < n; ++r) {
            hear_at[{r, v}] = kill_at[static_cast<std::size_t>(v)] + 1 + static_cast<int>(rng() % 30);
        }
    }
    std::vector<int> h(static_cast<std::size_t>(n), 0);
    std::vector<std::uint32_t> flag(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        flag[static_cast<std::size_t>(r)] = ~(1u << (r % 32));
    }
    for (int round = 0; round < 20000; ++round) {
        for (int r = 0; r < n; ++r) {
            if (kill_at[static_cast<std::size_t>(r)] == round) {
                c.kill(r);
            }
            if (!c.dead(r) && h[static_cast<std::size_t>(r)] == 0 && start_at[static_cast<std::size_t>(r)] <= round) {
                AgreeValue v;
                v.flag = flag[static_cast<std::size_t>(r)];
                h[static_cast<std::size_t>(r)] =
                    c.node(r).agr.start(3, 5, c.members(), v, std::vector<bool>(static_cast<std::size_t>(n)));
            }
        }
        for (auto& [key, at] : hear_at) {
            if (at == round) {
                c.notify(key.first, key.second);
            }
        }
        // Messages are slow now and then: notices may overtake them.
        for (int r = 0; r < n; ++r) {
            c.pause(r, round < 2000 && rng() % 100 < 40);
        }
        c.progress();
        bool all = round > 100;
        for (int r = 0; r < n && all; ++r) {
            all = c.dead(r) || (h[static_cast<std::size_t>(r)] != 0 && c.node(r).agr.done(h[static_cast<std::size_t>(r)]));
        }
        if (all) {
            break;
        }
    }
    const AgreeOutcome* first = nullptr;
    for (int r = 0; r < n; ++r) {
        c.pause(r, false);
    }
    for (int r = 0; r < n; ++r) {
        if (c.dead(r)) {
            continue;
        }
        ASSERT_NE(h[static_cast<std::size_t>(r)], 0) << "seed " << seed << ": rank " << r << " never started";
        ASSERT_TRUE(c.node(r).agr.done(h[static_cast<std::size_t>(r)]))
            << "seed " << seed << " n=" << n << ": survivor " << r << " never finished";
        const AgreeOutcome& o = c.node(r).agr.outcome(h[static_cast<std::size_t>(r)]);
        if (first == nullptr) {
            first = &o;
        }
        EXPECT_EQ(text(o), text(*first)) << "seed " << seed << " n=" << n << ": rank " << r << " disagrees";
        for (int f : o.failed) {
            EXPECT_TRUE(c.dead(f)) << "seed " << seed << ": live rank " << f << " listed as failed";
        }
        // Every survivor contributed: its bit is cleared in the flag.
        EXPECT_EQ(o.value.flag & (1u << (r % 32)), 0u) << "seed " << seed << ": rank " << r << "'s flag is missing";
    }
}

TEST(Agree, random_failures_during_it_leave_every_survivor_with_the_same_outcome)
{
    for (std::uint32_t seed = 1; seed <= 600; ++seed) {
        const int n = 3 + static_cast<int>(seed % 7);
        random_run(seed, n, 1 + static_cast<int>(seed % 3));
        if (::testing::Test::HasFailure()) {
            return; // the first seed that fails is the one to look at
        }
    }
}

TEST(Agree, a_dead_roots_late_commit_loses_to_the_next_roots_decision)
{
    // Root 0 commits, then dies before 1 and 2 receive its commit. Both
    // hear of the death first; rank 1 (the next root) gets rank 2's state
    // before rank 0's late commit (it reads its newest messages first) and
    // decides without rank 0's contribution. Rank 2 then has both commits
    // waiting, rank 0's first: it must end with rank 1's, or the two
    // disagree. (Two guards: a failed peer's link refuses its late
    // fragments, and a commit below the ballot rank 2 promised is ignored.)
    FtCluster c(3, false, 1, [](int r, MemPathOptions& m) {
        if (r == 1) {
            m.order = Order::newest_first;
        }
    });
    ASSERT_TRUE(c.ok());
    c.pause(1, true);
    c.pause(2, true);
    std::vector<int> h(3);
    for (int r = 0; r < 3; ++r) {
        AgreeValue v;
        v.flag = ~(1u << r);
        h[static_cast<std::size_t>(r)] = c.node(r).agr.start(11, 0, c.members(), v, std::vector<bool>(3));
    }
    for (int round = 0; round < 100 && !c.node(0).agr.done(h[0]); ++round) {
        c.progress();
    }
    ASSERT_TRUE(c.node(0).agr.done(h[0]));
    c.kill(0);
    c.notify(1, 0);
    c.notify(2, 0);
    c.pause(1, false);
    c.progress(); // rank 1: 2's state first, decides, commits; then 0's commit (ignored)
    c.pause(2, false);
    for (int round = 0; round < 100; ++round) {
        c.progress();
    }
    ASSERT_TRUE(c.node(1).agr.done(h[1]));
    ASSERT_TRUE(c.node(2).agr.done(h[2]));
    EXPECT_EQ(text(c.node(1).agr.outcome(h[1])), text(c.node(2).agr.outcome(h[2])));
}

TEST(Agree, a_failure_acknowledged_by_every_contributor_raises_nothing)
{
    const int n = 5;
    for (bool all_acked : {true, false}) {
        FtCluster c(n);
        ASSERT_TRUE(c.ok());
        c.kill(3);
        for (int r = 0; r < n; ++r) {
            c.notify(r, 3);
        }
        std::vector<int> h(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r) {
            if (r == 3) {
                continue;
            }
            std::vector<bool> acked(static_cast<std::size_t>(n), false);
            acked[3] = all_acked || r != 1; // rank 1 did not acknowledge in the second run
            h[static_cast<std::size_t>(r)] = c.node(r).agr.start(9, 0, c.members(), AgreeValue{}, acked);
        }
        for (int round = 0; round < 5000; ++round) {
            c.progress();
        }
        for (int r = 0; r < n; ++r) {
            if (r == 3) {
                continue;
            }
            ASSERT_TRUE(c.node(r).agr.done(h[static_cast<std::size_t>(r)]));
            const AgreeOutcome& o = c.node(r).agr.outcome(h[static_cast<std::size_t>(r)]);
            EXPECT_EQ(o.failed, std::vector<int>{3});
            EXPECT_EQ(o.unacked_failure, !all_acked) << "rank " << r;
        }
    }
}

TEST(Agree, a_member_that_did_not_contribute_is_learned_as_failed)
{
    const int n = 4;
    FtCluster c(n);
    ASSERT_TRUE(c.ok());
    c.kill(2);
    c.notify(0, 2); // only the root knows yet
    std::vector<int> h(static_cast<std::size_t>(n));
    for (int r : {0, 1, 3}) {
        h[static_cast<std::size_t>(r)] = c.node(r).agr.start(1, 0, c.members(), AgreeValue{},
                                                             std::vector<bool>(static_cast<std::size_t>(n)));
    }
    for (int round = 0; round < 5000; ++round) {
        c.progress();
        if (round == 50) {
            c.notify(1, 2);
            c.notify(3, 2);
        }
    }
    for (int r : {0, 1, 3}) {
        ASSERT_TRUE(c.node(r).agr.done(h[static_cast<std::size_t>(r)]));
        EXPECT_TRUE(c.node(r).det.failed(2));
    }
}

TEST(Agree, a_late_outcome_does_not_fail_a_member_revived_since)
{
    // Rank 2 dies and every survivor knows it; the agreement decides
    // without it. Rank 3 gets the commit only after rank 2 was replaced by
    // a new process (FT-MPI REBUILD revives it): the outcome names the old
    // process, so rank 3 must not take the new one for failed.
    const int n = 4;
    FtCluster c(n);
    ASSERT_TRUE(c.ok());
    c.kill(2);
    for (int r : {0, 1, 3}) {
        c.notify(r, 2);
    }
    c.pause(3, true);
    std::vector<int> h(static_cast<std::size_t>(n));
    for (int r : {0, 1, 3}) {
        h[static_cast<std::size_t>(r)] = c.node(r).agr.start(
            4, 0, c.members(), AgreeValue{}, std::vector<bool>(static_cast<std::size_t>(n)));
    }
    for (int round = 0; round < 200; ++round) {
        c.progress();
    }
    ASSERT_TRUE(c.node(0).agr.done(h[0]));
    ASSERT_FALSE(c.node(3).agr.done(h[3]));
    c.node(3).det.revive(2);
    c.pause(3, false);
    for (int round = 0; round < 200; ++round) {
        c.progress();
    }
    ASSERT_TRUE(c.node(3).agr.done(h[3]));
    EXPECT_EQ(c.node(3).agr.outcome(h[3]).failed, std::vector<int>{2});
    EXPECT_FALSE(c.node(3).det.failed(2));
}

TEST(Revoke, reaches_every_live_member_even_when_forwarders_die)
{
    const int n = 12;
    FtCluster c(n);
    ASSERT_TRUE(c.ok());
    std::vector<int> hits(static_cast<std::size_t>(n), 0);
    for (int r = 0; r < n; ++r) {
        c.node(r).rev.attach(40, c.members(), [&hits, r] { ++hits[static_cast<std::size_t>(r)]; });
    }
    // Ranks 1 and 2 (rank 0's first forwarders) are dead and known so.
    for (int v : {1, 2}) {
        c.kill(v);
        for (int r = 0; r < n; ++r) {
            c.notify(r, v);
        }
    }
    c.node(0).rev.revoke(40);
    for (int round = 0; round < 2000; ++round) {
        c.progress();
    }
    for (int r = 0; r < n; ++r) {
        if (!c.dead(r)) {
            EXPECT_EQ(hits[static_cast<std::size_t>(r)], 1) << "rank " << r;
            EXPECT_TRUE(c.node(r).rev.revoked(40)) << "rank " << r;
        }
    }
    std::uint64_t sent = 0;
    for (int r = 0; r < n; ++r) {
        sent += c.node(r).rev.notices_sent();
    }
    EXPECT_LE(sent, static_cast<std::uint64_t>(n * 8)) << "about 2 log2(n) per member";
}

TEST(Revoke, a_late_notice_for_a_freed_communicator_spares_the_next_one)
{
    FtCluster c(3);
    ASSERT_TRUE(c.ok());
    int hits = 0;
    c.node(1).rev.attach(50, {0, 1}, [&] { ++hits; }); // different members than rank 0's
    c.node(0).rev.attach(50, {0, 1, 2}, [] {});
    c.node(2).rev.attach(50, {0, 1, 2}, [] {});
    c.node(0).rev.revoke(50);
    for (int round = 0; round < 500; ++round) {
        c.progress();
    }
    EXPECT_EQ(hits, 0);
    EXPECT_FALSE(c.node(1).rev.revoked(50));
    EXPECT_TRUE(c.node(2).rev.revoked(50));
}

} // namespace
} // namespace ulmpi::test
