// Matcher (ulm/match.h): posting order, arrival order, wildcards, probe and
// take, cancel, context isolation, dense and sparse context ids, and a
// randomized comparison against a plain reference model.
#include "ulm/match.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

namespace ulmpi::ulm {
namespace {

// Owns the descriptors a test hands to the matcher.
class Objects {
public:
    RecvMsg* recv(std::uint32_t ctx, int src, int tag)
    {
        recvs_.push_back(std::make_unique<RecvMsg>());
        RecvMsg* r = recvs_.back().get();
        r->ctx = ContextId(ctx);
        r->src = src;
        r->tag = tag;
        return r;
    }
    Unexpected* msg(std::uint32_t ctx, int src, int tag, std::uint64_t seq = 0)
    {
        msgs_.push_back(std::make_unique<Unexpected>());
        Unexpected* u = msgs_.back().get();
        u->hdr = MatchHeader{};
        u->hdr.context = ctx;
        u->hdr.tag = tag;
        u->hdr.msg_seq = seq;
        u->peer = src;
        u->src = src;
        return u;
    }

private:
    std::vector<std::unique_ptr<RecvMsg>> recvs_;
    std::vector<std::unique_ptr<Unexpected>> msgs_;
};

// Empties the matcher before the objects it links die.
void drain(Matcher& m, std::vector<RecvMsg*> posted = {})
{
    for (RecvMsg* r : posted) {
        (void)m.cancel(r);
    }
    m.drain_unexpected([](Unexpected*) {});
}

TEST(Matcher, posts_receive_when_nothing_matches)
{
    Matcher m;
    Objects o;
    RecvMsg* r = o.recv(0, 1, 5);
    EXPECT_EQ(m.post(r), nullptr);
    EXPECT_TRUE(r->posted);
    EXPECT_EQ(m.posted_count(), 1u);
    EXPECT_EQ(m.arrive(ContextId(0), 1, 6), nullptr);
    EXPECT_EQ(m.arrive(ContextId(0), 2, 5), nullptr);
    EXPECT_EQ(m.arrive(ContextId(0), 1, 5), r);
    EXPECT_FALSE(r->posted);
    EXPECT_EQ(m.posted_count(), 0u);
}

TEST(Matcher, arrival_takes_first_matching_receive_in_posting_order)
{
    Matcher m;
    Objects o;
    RecvMsg* a = o.recv(0, 1, 7);
    RecvMsg* b = o.recv(0, 1, 7);
    RecvMsg* c = o.recv(0, 2, 7);
    ASSERT_EQ(m.post(a), nullptr);
    ASSERT_EQ(m.post(b), nullptr);
    ASSERT_EQ(m.post(c), nullptr);
    EXPECT_EQ(m.arrive(ContextId(0), 2, 7), c);
    EXPECT_EQ(m.arrive(ContextId(0), 1, 7), a);
    EXPECT_EQ(m.arrive(ContextId(0), 1, 7), b);
    EXPECT_EQ(m.arrive(ContextId(0), 1, 7), nullptr);
}

TEST(Matcher, receive_takes_first_matching_message_in_arrival_order)
{
    Matcher m;
    Objects o;
    Unexpected* u1 = o.msg(0, 3, 1, 1);
    Unexpected* u2 = o.msg(0, 3, 2, 2);
    Unexpected* u3 = o.msg(0, 3, 1, 3);
    m.add_unexpected(u1);
    m.add_unexpected(u2);
    m.add_unexpected(u3);
    EXPECT_EQ(m.unexpected_count(), 3u);
    EXPECT_EQ(m.post(o.recv(0, 3, 2)), u2);
    EXPECT_EQ(m.post(o.recv(0, 3, 1)), u1);
    EXPECT_EQ(m.post(o.recv(0, 3, 1)), u3);
    EXPECT_EQ(m.unexpected_count(), 0u);
}

TEST(Matcher, wildcard_receive_posted_first_wins_over_later_specific_one)
{
    Matcher m;
    Objects o;
    RecvMsg* any = o.recv(0, kAnySource, kAnyTag);
    RecvMsg* exact = o.recv(0, 4, 9);
    ASSERT_EQ(m.post(any), nullptr);
    ASSERT_EQ(m.post(exact), nullptr);
    EXPECT_EQ(m.arrive(ContextId(0), 4, 9), any);
    EXPECT_EQ(m.arrive(ContextId(0), 4, 9), exact);
}

TEST(Matcher, any_source_receive_takes_earliest_arrival_across_senders)
{
    Matcher m;
    Objects o;
    Unexpected* from2 = o.msg(0, 2, 5);
    Unexpected* from1 = o.msg(0, 1, 5);
    Unexpected* from2b = o.msg(0, 2, 5);
    m.add_unexpected(from2);
    m.add_unexpected(from1);
    m.add_unexpected(from2b);
    EXPECT_EQ(m.post(o.recv(0, kAnySource, 5)), from2);
    EXPECT_EQ(m.post(o.recv(0, kAnySource, 5)), from1);
    EXPECT_EQ(m.post(o.recv(0, kAnySource, 5)), from2b);
}

TEST(Matcher, any_tag_never_lets_later_message_of_sender_overtake)
{
    Matcher m;
    Objects o;
    // Sender 1 sent tag 10 then tag 20 (in sequence); sender 2 sent tag 20.
    Unexpected* m1 = o.msg(0, 1, 10, 1);
    Unexpected* other = o.msg(0, 2, 20, 1);
    Unexpected* m2 = o.msg(0, 1, 20, 2);
    m.add_unexpected(m1);
    m.add_unexpected(other);
    m.add_unexpected(m2);
    EXPECT_EQ(m.post(o.recv(0, 1, kAnyTag)), m1);
    EXPECT_EQ(m.post(o.recv(0, 1, kAnyTag)), m2);
    EXPECT_EQ(m.post(o.recv(0, kAnySource, kAnyTag)), other);
}

TEST(Matcher, both_wildcards_receive_messages_in_arrival_order)
{
    Matcher m;
    Objects o;
    std::vector<Unexpected*> arrived;
    for (int i = 0; i < 12; ++i) {
        arrived.push_back(o.msg(0, i % 3, 100 + i % 5, static_cast<std::uint64_t>(i / 3 + 1)));
        m.add_unexpected(arrived.back());
    }
    for (int i = 0; i < 12; ++i) {
        EXPECT_EQ(m.post(o.recv(0, kAnySource, kAnyTag)), arrived[static_cast<std::size_t>(i)]);
    }
}

TEST(Matcher, wildcard_posted_receives_fill_in_posting_order_on_arrival)
{
    Matcher m;
    Objects o;
    RecvMsg* w1 = o.recv(0, kAnySource, 3);
    RecvMsg* s1 = o.recv(0, 1, kAnyTag);
    RecvMsg* w2 = o.recv(0, kAnySource, kAnyTag);
    for (RecvMsg* r : {w1, s1, w2}) {
        ASSERT_EQ(m.post(r), nullptr);
    }
    EXPECT_EQ(m.arrive(ContextId(0), 1, 4), s1); // w1 wants tag 3
    EXPECT_EQ(m.arrive(ContextId(0), 1, 3), w1);
    EXPECT_EQ(m.arrive(ContextId(0), 5, 8), w2);
    EXPECT_EQ(m.arrive(ContextId(0), 5, 8), nullptr);
}

TEST(Matcher, probe_leaves_message_and_take_removes_it)
{
    Matcher m;
    Objects o;
    Unexpected* a = o.msg(0, 1, 5);
    Unexpected* b = o.msg(0, 2, 6);
    m.add_unexpected(a);
    m.add_unexpected(b);
    EXPECT_EQ(m.probe(ContextId(0), kAnySource, kAnyTag), a);
    EXPECT_EQ(m.probe(ContextId(0), kAnySource, kAnyTag), a);
    EXPECT_EQ(m.probe(ContextId(0), 2, kAnyTag), b);
    EXPECT_EQ(m.probe(ContextId(0), kAnySource, 6), b);
    EXPECT_EQ(m.probe(ContextId(0), 3, kAnyTag), nullptr);
    EXPECT_EQ(m.probe(ContextId(1), kAnySource, kAnyTag), nullptr);
    EXPECT_EQ(m.unexpected_count(), 2u);
    m.take(a);
    EXPECT_EQ(m.unexpected_count(), 1u);
    EXPECT_EQ(m.probe(ContextId(0), kAnySource, kAnyTag), b);
    EXPECT_EQ(m.post(o.recv(0, 1, 5)), nullptr) << "a taken message must not match again";
    drain(m);
}

TEST(Matcher, cancel_unposts_receive_once)
{
    Matcher m;
    Objects o;
    RecvMsg* a = o.recv(0, 1, 1);
    RecvMsg* b = o.recv(0, 1, 1);
    ASSERT_EQ(m.post(a), nullptr);
    ASSERT_EQ(m.post(b), nullptr);
    EXPECT_TRUE(m.cancel(a));
    EXPECT_FALSE(a->posted);
    EXPECT_FALSE(m.cancel(a));
    EXPECT_EQ(m.arrive(ContextId(0), 1, 1), b);
    EXPECT_FALSE(m.cancel(b)) << "a matched receive can no longer be cancelled";
    EXPECT_EQ(m.posted_count(), 0u);
}

TEST(Matcher, contexts_are_isolated)
{
    Matcher m;
    Objects o;
    RecvMsg* r1 = o.recv(1, kAnySource, kAnyTag);
    RecvMsg* r2 = o.recv(2, kAnySource, kAnyTag);
    ASSERT_EQ(m.post(r1), nullptr);
    ASSERT_EQ(m.post(r2), nullptr);
    EXPECT_EQ(m.arrive(ContextId(2), 0, 0), r2);
    EXPECT_EQ(m.arrive(ContextId(3), 0, 0), nullptr);
    Unexpected* u = o.msg(3, 0, 0);
    m.add_unexpected(u);
    EXPECT_EQ(m.post(o.recv(1, 0, 0)), nullptr) << "ctx 1 must not see ctx 3's message";
    EXPECT_EQ(m.arrive(ContextId(1), 0, 0), r1);
    EXPECT_NE(m.arrive(ContextId(1), 0, 0), nullptr); // the receive posted just above
    EXPECT_EQ(m.post(o.recv(3, 0, 0)), u);
}

TEST(Matcher, handles_many_dense_and_sparse_context_ids)
{
    Matcher m;
    Objects o;
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < 5000; i += 7) {
        ids.push_back(i); // crosses the dense/sparse boundary
    }
    for (std::uint32_t v :
         {4095u, 4096u, 4097u, 65536u, 1u << 24, 0x7fffffffu, 0xfffffffeu, 0xffffffffu}) {
        ids.push_back(v);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::map<std::uint32_t, RecvMsg*> posted;
    std::map<std::uint32_t, Unexpected*> stored;
    for (std::uint32_t id : ids) {
        RecvMsg* r = o.recv(id, 1, static_cast<int>(id % 1000));
        ASSERT_EQ(m.post(r), nullptr);
        posted[id] = r;
        Unexpected* u = o.msg(id, 2, 7);
        m.add_unexpected(u);
        stored[id] = u;
    }
    EXPECT_EQ(m.posted_count(), ids.size());
    EXPECT_EQ(m.unexpected_count(), ids.size());
    // Visit in reverse so no context is helped by the order of creation.
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
        std::uint32_t id = *it;
        EXPECT_EQ(m.probe(ContextId(id), 2, 7), stored[id]) << id;
        EXPECT_EQ(m.arrive(ContextId(id), 1, static_cast<int>(id % 1000)), posted[id]) << id;
    }
    EXPECT_EQ(m.posted_count(), 0u);
    std::size_t drained = 0;
    m.drain_unexpected([&](Unexpected* u) {
        EXPECT_EQ(stored[u->hdr.context], u);
        ++drained;
    });
    EXPECT_EQ(drained, ids.size());
    EXPECT_EQ(m.unexpected_count(), 0u);
}

// The matching rule written out again, independent of envelope_matches.
bool ref_matches(int want_src, int want_tag, int src, int tag)
{
    bool src_ok = want_src == kAnySource ? true : want_src == src;
    bool tag_ok = want_tag == kAnyTag ? true : want_tag == tag;
    return src_ok && tag_ok;
}

TEST(Matcher, envelope_matches_only_equal_or_wildcard_fields)
{
    for (int want_src : {kAnySource, 0, 1, 5}) {
        for (int want_tag : {kAnyTag, 0, 1, 7}) {
            for (int src : {0, 1, 5}) {
                for (int tag : {0, 1, 7}) {
                    EXPECT_EQ(envelope_matches(want_src, want_tag, src, tag),
                              ref_matches(want_src, want_tag, src, tag))
                        << want_src << " " << want_tag << " " << src << " " << tag;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Randomized differential test: the matcher against a model made of plain
// vectors, with a direct check of MPI's non-overtaking rule on every match.

struct Model {
    struct Ctx {
        std::vector<RecvMsg*> posted;
        std::vector<Unexpected*> unexpected;
    };
    std::map<std::uint32_t, Ctx> ctx;

    Unexpected* post(RecvMsg* r)
    {
        Ctx& c = ctx[r->ctx.value()];
        for (auto it = c.unexpected.begin(); it != c.unexpected.end(); ++it) {
            if (ref_matches(r->src, r->tag, (*it)->peer, (*it)->hdr.tag)) {
                Unexpected* u = *it;
                c.unexpected.erase(it);
                return u;
            }
        }
        c.posted.push_back(r);
        return nullptr;
    }
    RecvMsg* arrive(std::uint32_t id, int src, int tag)
    {
        Ctx& c = ctx[id];
        for (auto it = c.posted.begin(); it != c.posted.end(); ++it) {
            if (ref_matches((*it)->src, (*it)->tag, src, tag)) {
                RecvMsg* r = *it;
                c.posted.erase(it);
                return r;
            }
        }
        return nullptr;
    }
    Unexpected* probe(std::uint32_t id, int src, int tag)
    {
        for (Unexpected* u : ctx[id].unexpected) {
            if (ref_matches(src, tag, u->peer, u->hdr.tag)) {
                return u;
            }
        }
        return nullptr;
    }
    void take(Unexpected* u)
    {
        auto& v = ctx[u->hdr.context].unexpected;
        v.erase(std::find(v.begin(), v.end(), u));
    }
    bool cancel(RecvMsg* r)
    {
        auto& v = ctx[r->ctx.value()].posted;
        auto it = std::find(v.begin(), v.end(), r);
        if (it == v.end()) {
            return false;
        }
        v.erase(it);
        return true;
    }
};

TEST(Matcher, agrees_with_reference_model_on_random_operations)
{
    for (unsigned seed = 1; seed <= 20; ++seed) {
        SCOPED_TRACE(seed);
        std::mt19937 rng(seed);
        Matcher m;
        Model model;
        Objects o;
        const std::uint32_t ctx_ids[] = {0, 1, 2, 4095, 4096, 123456789};
        std::vector<RecvMsg*> live_recvs;
        std::map<std::pair<std::uint32_t, int>, std::uint64_t> next_seq; // (ctx, src) -> next
        std::set<Unexpected*> delivered;
        auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
        auto deliver = [&](Unexpected* u) { EXPECT_TRUE(delivered.insert(u).second); };
        for (int step = 0; step < 4000; ++step) {
            std::uint32_t ctx = ctx_ids[pick(6)];
            int src = pick(4);
            int tag = pick(3);
            int op = pick(10);
            if (op < 4) { // post
                int wsrc = pick(3) == 0 ? kAnySource : src;
                int wtag = pick(3) == 0 ? kAnyTag : tag;
                RecvMsg* r = o.recv(ctx, wsrc, wtag);
                Unexpected* got = m.post(r);
                Unexpected* want = model.post(r);
                ASSERT_EQ(got, want) << "post step " << step;
                if (got != nullptr) {
                    // No earlier message of the same sender that this receive
                    // matches may remain behind it.
                    for (Unexpected* u : model.ctx[ctx].unexpected) {
                        if (u->peer == got->peer &&
                            ref_matches(r->src, r->tag, u->peer, u->hdr.tag)) {
                            EXPECT_GT(u->hdr.msg_seq, got->hdr.msg_seq) << "overtaken at " << step;
                        }
                    }
                    deliver(got);
                } else {
                    live_recvs.push_back(r);
                }
            } else if (op < 8) { // arrive
                std::uint64_t seq = ++next_seq[{ctx, src}];
                RecvMsg* got = m.arrive(ContextId(ctx), src, tag);
                RecvMsg* want = model.arrive(ctx, src, tag);
                ASSERT_EQ(got, want) << "arrive step " << step;
                if (got == nullptr) {
                    Unexpected* u = o.msg(ctx, src, tag, seq);
                    m.add_unexpected(u);
                    model.ctx[ctx].unexpected.push_back(u);
                } else {
                    live_recvs.erase(std::find(live_recvs.begin(), live_recvs.end(), got));
                }
            } else if (op == 8) { // probe, sometimes matched probe
                int wsrc = pick(3) == 0 ? kAnySource : src;
                int wtag = pick(3) == 0 ? kAnyTag : tag;
                Unexpected* got = m.probe(ContextId(ctx), wsrc, wtag);
                ASSERT_EQ(got, model.probe(ctx, wsrc, wtag)) << "probe step " << step;
                if (got != nullptr && pick(2) == 0) {
                    m.take(got);
                    model.take(got);
                    deliver(got);
                }
            } else if (!live_recvs.empty()) { // cancel
                RecvMsg* r =
                    live_recvs[static_cast<std::size_t>(pick(static_cast<int>(live_recvs.size())))];
                bool got = m.cancel(r);
                ASSERT_EQ(got, model.cancel(r));
                live_recvs.erase(std::find(live_recvs.begin(), live_recvs.end(), r));
            }
            std::size_t posted = 0;
            std::size_t unexpected = 0;
            for (auto& [id, c] : model.ctx) {
                posted += c.posted.size();
                unexpected += c.unexpected.size();
            }
            ASSERT_EQ(m.posted_count(), posted);
            ASSERT_EQ(m.unexpected_count(), unexpected);
        }
        drain(m, live_recvs);
    }
}

} // namespace
} // namespace ulmpi::ulm
