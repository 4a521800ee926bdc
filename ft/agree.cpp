#include "ft/agree.h"

#include "runtime/log.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace ulmpi::ft {
namespace {

constexpr std::uint8_t kState = 1;
constexpr std::uint8_t kCommit = 2;
constexpr std::size_t kLogPerContext = 64;

class Writer {
public:
    template <class T> void put(T v)
    {
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        out.insert(out.end(), p, p + sizeof v);
    }
    void bits(const std::vector<bool>& b)
    {
        std::vector<std::byte> packed((b.size() + 7) / 8, std::byte{0});
        for (std::size_t i = 0; i < b.size(); ++i) {
            if (b[i]) {
                packed[i / 8] |= static_cast<std::byte>(1u << (i % 8));
            }
        }
        out.insert(out.end(), packed.begin(), packed.end());
    }
    void value(const AgreeValue& v)
    {
        put(v.flag);
        put(v.kinds);
        put(static_cast<std::uint32_t>(v.mask.size()));
        for (std::uint32_t w : v.mask) {
            put(w);
        }
    }
    std::vector<std::byte> out;
};

class Reader {
public:
    Reader(const std::byte* p, std::size_t n) : p_(p), n_(n) {}
    template <class T> bool get(T& v)
    {
        if (n_ < sizeof v) {
            return ok_ = false;
        }
        std::memcpy(&v, p_, sizeof v);
        p_ += sizeof v;
        n_ -= sizeof v;
        return true;
    }
    bool bits(std::vector<bool>& b, std::size_t count)
    {
        const std::size_t bytes = (count + 7) / 8;
        if (n_ < bytes) {
            return ok_ = false;
        }
        b.assign(count, false);
        for (std::size_t i = 0; i < count; ++i) {
            b[i] = (static_cast<unsigned>(p_[i / 8]) >> (i % 8)) & 1u;
        }
        p_ += bytes;
        n_ -= bytes;
        return true;
    }
    bool value(AgreeValue& v)
    {
        std::uint32_t len = 0;
        if (!get(v.flag) || !get(v.kinds) || !get(len) || len > Channel::kMaxPayload / 4) {
            return ok_ = false;
        }
        v.mask.resize(len);
        for (std::uint32_t& w : v.mask) {
            get(w);
        }
        return ok_;
    }
    bool ok() const { return ok_; }

private:
    const std::byte* p_;
    std::size_t n_;
    bool ok_ = true;
};

void write_outcome(Writer& w, const AgreeOutcome& o, std::size_t n)
{
    w.value(o.value);
    std::vector<bool> f(n, false);
    for (int i : o.failed) {
        f[static_cast<std::size_t>(i)] = true;
    }
    w.bits(f);
    w.put(static_cast<std::uint8_t>(o.unacked_failure ? 1 : 0));
}

bool read_outcome(Reader& r, AgreeOutcome& o, std::size_t n)
{
    std::vector<bool> f;
    std::uint8_t un = 0;
    if (!r.value(o.value) || !r.bits(f, n) || !r.get(un)) {
        return false;
    }
    o.failed.clear();
    for (std::size_t i = 0; i < n; ++i) {
        if (f[i]) {
            o.failed.push_back(static_cast<int>(i));
        }
    }
    o.unacked_failure = un != 0;
    return true;
}

void and_into(AgreeValue& into, const AgreeValue& v)
{
    into.flag &= v.flag;
    into.kinds |= v.kinds;
    if (into.mask.size() < v.mask.size()) {
        into.mask.resize(v.mask.size(), ~0u);
    }
    for (std::size_t i = 0; i < v.mask.size(); ++i) {
        into.mask[i] &= v.mask[i];
    }
}

std::size_t lowbit(std::size_t i, std::size_t n)
{
    return i == 0 ? n : (i & (~i + 1));
}

} // namespace

struct Agreements::Inst {
    Key key;
    std::vector<int> members;
    std::size_t n = 0;
    std::size_t me = 0;
    bool started = false;
    std::vector<bool> failed;    // my view
    std::vector<std::uint32_t> revivals; // each member's revivals at start (Detector::revivals)
    AgreeValue value;            // aggregate of the contributions merged here
    std::vector<bool> contrib;   // who is in the aggregate
    std::vector<bool> acked_all; // acknowledged by every contributor so far
    std::vector<bool> heard;     // flat states received (as the root)
    bool sent_up = false;        // tree: the subtree's aggregate went to the parent
    std::uint64_t promised = 0;  // the highest ballot I sent my state to
    bool committed = false;
    std::uint64_t ballot = 0;
    AgreeOutcome result;
    bool finished = false;       // the caller took the outcome
    bool retired = false;        // its communicator is gone (see Agreements::retire)
    std::vector<std::tuple<int, Header, std::vector<std::byte>>> pending; // before start

    bool flat() const { return std::find(failed.begin(), failed.end(), true) != failed.end(); }
    std::size_t root() const
    {
        for (std::size_t i = 0; i < n; ++i) {
            if (!failed[i]) {
                return i;
            }
        }
        return me;
    }
    std::uint64_t view_ballot() const
    {
        const auto f = static_cast<std::uint64_t>(std::count(failed.begin(), failed.end(), true));
        return f << 32 | root();
    }
    int index_of(int world) const
    {
        auto it = std::find(members.begin(), members.end(), world);
        return it == members.end() ? -1 : static_cast<int>(it - members.begin());
    }
    bool subtree_complete() const
    {
        const std::size_t end = std::min(n, me + lowbit(me, n));
        for (std::size_t i = me; i < end; ++i) {
            if (!contrib[i]) {
                return false;
            }
        }
        return true;
    }
};

Agreements::Agreements(Channel& channel, Detector& detector, int my_world_rank)
    : channel_(channel), detector_(detector), me_(my_world_rank)
{
    channel_.on(MsgKind::agree, [this](int from, const Header& h, const std::byte* p, std::size_t n) {
        on_message(from, h, p, n);
    });
    detector_.add_listener([this](int world) { on_failure(world); });
}

Agreements::~Agreements() = default;

Agreements::Inst& Agreements::instance(std::uint32_t ctx, std::uint64_t seq)
{
    auto& slot = insts_[Key{ctx, seq}];
    if (!slot) {
        slot = std::make_unique<Inst>();
        slot->key = Key{ctx, seq};
    }
    return *slot;
}

int Agreements::start(std::uint32_t ctx, std::uint64_t seq, const std::vector<int>& members,
                      const AgreeValue& mine, const std::vector<bool>& acked)
{
    Inst& in = instance(ctx, seq);
    const int h = next_handle_++;
    handles_[h] = &in;
    if (in.started) {
        ULMPI_ERROR("fault tolerance: agreement %llu on context %u started twice",
                    static_cast<unsigned long long>(seq), ctx);
        return h;
    }
    in.members = members;
    in.n = members.size();
    in.me = static_cast<std::size_t>(std::max(0, in.index_of(me_)));
    in.started = true;
    in.failed.assign(in.n, false);
    in.revivals.assign(in.n, 0);
    for (std::size_t i = 0; i < in.n; ++i) {
        in.failed[i] = detector_.failed(members[i]);
        in.revivals[i] = detector_.revivals(members[i]);
    }
    in.value = mine;
    in.contrib.assign(in.n, false);
    in.contrib[in.me] = true;
    in.acked_all = acked;
    in.acked_all.resize(in.n, false);
    in.heard.assign(in.n, false);
    in.heard[in.me] = true;
    if (!in.committed && in.flat() && in.root() != in.me) {
        send_state(in, static_cast<int>(in.root()), true);
    }
    std::vector<std::tuple<int, Header, std::vector<std::byte>>> early;
    early.swap(in.pending);
    for (auto& [from, hdr, bytes] : early) {
        on_message(from, hdr, bytes.data(), bytes.size());
    }
    step(in);
    return h;
}

bool Agreements::done(int handle) const
{
    auto it = handles_.find(handle);
    return it != handles_.end() && it->second->committed;
}

const AgreeOutcome& Agreements::outcome(int handle) const
{
    return handles_.at(handle)->result;
}

void Agreements::finish(int handle)
{
    auto it = handles_.find(handle);
    if (it == handles_.end()) {
        return;
    }
    it->second->finished = true;
    const std::uint32_t ctx = it->second->key.first;
    handles_.erase(it);
    evict(ctx);
}

void Agreements::retire(std::uint32_t ctx)
{
    for (auto& [k, in] : insts_) {
        if (k.first == ctx && (in->finished || !in->started)) {
            in->retired = true;
        }
    }
}

bool Agreements::has(std::uint32_t ctx) const
{
    auto it = insts_.lower_bound(Key{ctx, 0});
    return it != insts_.end() && it->first.first == ctx;
}

void Agreements::drop(std::uint32_t ctx)
{
    for (auto it = insts_.lower_bound(Key{ctx, 0}); it != insts_.end() && it->first.first == ctx;) {
        if (it->second->retired) {
            it = insts_.erase(it);
        } else {
            ++it;
        }
    }
}

void Agreements::abandon(std::uint32_t ctx)
{
    for (auto it = insts_.lower_bound(Key{ctx, 0}); it != insts_.end() && it->first.first == ctx;
         ++it) {
        Inst& in = *it->second;
        if (in.committed) {
            continue;
        }
        in.committed = true;
        in.result = AgreeOutcome{};
        in.result.value = in.value;
        in.result.value.flag = 0;
        in.pending.clear();
    }
}

void Agreements::evict(std::uint32_t ctx)
{
    // Keep the newest kLogPerContext finished instances of the context.
    std::vector<Key> done;
    for (auto& [k, in] : insts_) {
        if (k.first == ctx && in->finished) {
            done.push_back(k);
        }
    }
    if (done.size() <= kLogPerContext) {
        return;
    }
    std::sort(done.begin(), done.end());
    for (std::size_t i = 0; i + kLogPerContext < done.size(); ++i) {
        insts_.erase(done[i]);
    }
}

void Agreements::send_state(Inst& in, int to, bool flat)
{
    if (to < 0 || static_cast<std::size_t>(to) == in.me) {
        return;
    }
    const std::uint64_t b = in.view_ballot();
    if (flat) {
        in.promised = std::max(in.promised, b);
    }
    Writer w;
    w.put(static_cast<std::uint8_t>(flat ? 1 : 0));
    w.put(static_cast<std::uint8_t>(in.committed ? 1 : 0));
    w.put(static_cast<std::uint16_t>(0));
    w.put(static_cast<std::uint32_t>(in.n));
    w.put(b);
    w.value(in.value);
    w.bits(in.contrib);
    w.bits(in.acked_all);
    if (in.committed) {
        w.put(in.ballot);
        write_outcome(w, in.result, in.n);
    }
    Header h{MsgKind::agree, kState, 0, in.key.first, in.key.second};
    channel_.send(in.members[static_cast<std::size_t>(to)], h, w.out.data(), w.out.size());
    ++sent_;
}

void Agreements::send_commit(Inst& in, int to, std::uint64_t ballot, bool tree)
{
    if (to < 0 || static_cast<std::size_t>(to) == in.me) {
        return;
    }
    Writer w;
    w.put(static_cast<std::uint8_t>(tree ? 1 : 0));
    w.put(static_cast<std::uint8_t>(0));
    w.put(static_cast<std::uint16_t>(0));
    w.put(static_cast<std::uint32_t>(in.n));
    w.put(ballot);
    write_outcome(w, in.result, in.n);
    Header h{MsgKind::agree, kCommit, 0, in.key.first, in.key.second};
    channel_.send(in.members[static_cast<std::size_t>(to)], h, w.out.data(), w.out.size());
    ++sent_;
}

void Agreements::step(Inst& in)
{
    if (!in.started || in.committed) {
        return;
    }
    if (in.flat()) {
        if (in.root() != in.me) {
            return; // my state went to the root when the view changed (or at start)
        }
        for (std::size_t i = 0; i < in.n; ++i) {
            if (!in.failed[i] && !in.heard[i]) {
                return;
            }
        }
        decide(in);
        return;
    }
    if (!in.subtree_complete()) {
        return;
    }
    if (in.me == 0) {
        decide(in);
    } else if (!in.sent_up) {
        in.sent_up = true;
        send_state(in, static_cast<int>(in.me & (in.me - 1)), false);
    }
}

void Agreements::decide(Inst& in)
{
    AgreeOutcome o;
    o.value = in.value;
    for (std::size_t i = 0; i < in.n; ++i) {
        if (!in.contrib[i]) {
            o.failed.push_back(static_cast<int>(i));
            if (!in.acked_all[i]) {
                o.unacked_failure = true;
            }
        }
    }
    commit(in, in.view_ballot(), o, !in.flat());
}

void Agreements::commit(Inst& in, std::uint64_t ballot, const AgreeOutcome& o, bool forward_tree)
{
    in.committed = true;
    in.ballot = ballot;
    in.result = o;
    if (forward_tree) {
        const std::size_t span = lowbit(in.me, in.n);
        for (std::size_t b = 1; b < span && in.me + b < in.n; b <<= 1) {
            send_commit(in, static_cast<int>(in.me + b), ballot, true);
        }
    } else if (in.flat() && in.root() == in.me) {
        for (std::size_t i = 0; i < in.n; ++i) {
            if (!in.failed[i]) {
                send_commit(in, static_cast<int>(i), ballot, false);
            }
        }
    }
    // Members that did not contribute failed: tell the detector (it may
    // not have heard yet; the notice is on its way). Not about a member
    // revived since this agreement started (FT-MPI REBUILD): the process
    // that did not contribute is its old one, the new one is alive.
    std::vector<int> learned;
    for (int i : o.failed) {
        const int w = in.members[static_cast<std::size_t>(i)];
        const bool revived = in.started && !in.revivals.empty() &&
                             detector_.revivals(w) != in.revivals[static_cast<std::size_t>(i)];
        if (!detector_.failed(w) && w != me_ && !revived) {
            learned.push_back(w);
        }
    }
    for (int w : learned) {
        detector_.learned(w, "did not contribute to an agreement");
    }
}

void Agreements::on_message(int from_world, const Header& h, const std::byte* p, std::size_t n)
{
    Inst& in = instance(h.ctx, h.seq);
    if (in.retired && !in.committed) {
        return; // a freed communicator's, never finished here: nothing to tell
    }
    if (!in.started) {
        in.pending.emplace_back(from_world, h, std::vector<std::byte>(p, p + n));
        return;
    }
    const int from = in.index_of(from_world);
    if (from < 0) {
        return;
    }
    Reader r(p, n);
    std::uint8_t mode = 0, has_commit = 0;
    std::uint16_t pad = 0;
    std::uint32_t count = 0;
    std::uint64_t ballot = 0;
    if (!r.get(mode) || !r.get(has_commit) || !r.get(pad) || !r.get(count) || !r.get(ballot) ||
        count != in.n) {
        ULMPI_DEBUG("fault tolerance: malformed agreement message from rank %d", from_world);
        return;
    }
    if (h.sub == kCommit) {
        AgreeOutcome o;
        if (!read_outcome(r, o, in.n) || in.committed || ballot < in.promised) {
            return; // already decided, or a stale root's (a newer one has my state)
        }
        commit(in, ballot, o, mode != 0 && !in.flat());
        return;
    }
    if (h.sub != kState) {
        return;
    }
    AgreeValue v;
    std::vector<bool> contrib, acked;
    if (!r.value(v) || !r.bits(contrib, in.n) || !r.bits(acked, in.n)) {
        return;
    }
    if (in.committed) {
        // It asks late: answer from the log with its own ballot (this
        // process is alive, so no later root can have decided otherwise).
        send_commit(in, from, std::max(ballot, in.ballot), false);
        return;
    }
    if (has_commit != 0) {
        std::uint64_t cb = 0;
        AgreeOutcome o;
        if (r.get(cb) && read_outcome(r, o, in.n)) {
            // Decided already: adopt it (and, as the root, tell everyone).
            commit(in, std::max(cb, in.view_ballot()), o, false);
        }
        return;
    }
    and_into(in.value, v);
    for (std::size_t i = 0; i < in.n; ++i) {
        if (contrib[i]) {
            in.contrib[i] = true;
        }
        in.acked_all[i] = in.acked_all[i] && acked[i];
    }
    if (mode != 0) {
        in.heard[static_cast<std::size_t>(from)] = true;
    }
    step(in);
}

void Agreements::on_failure(int world)
{
    // Instances may be added while we walk (a commit tells the detector).
    std::vector<Inst*> touched;
    for (auto& [k, in] : insts_) {
        if (!in->started) {
            continue;
        }
        const int i = in->index_of(world);
        if (i >= 0 && !in->failed[static_cast<std::size_t>(i)]) {
            in->failed[static_cast<std::size_t>(i)] = true;
            touched.push_back(in.get());
        }
    }
    for (Inst* in : touched) {
        view_changed(*in);
    }
}

void Agreements::view_changed(Inst& in)
{
    const std::size_t r = in.root();
    if (in.committed) {
        // Complete a commit the failed root may have left half done.
        if (r == in.me) {
            for (std::size_t i = 0; i < in.n; ++i) {
                if (!in.failed[i]) {
                    send_commit(in, static_cast<int>(i), std::max(in.ballot, in.view_ballot()), false);
                }
            }
        } else {
            send_state(in, static_cast<int>(r), true);
        }
        return;
    }
    if (r != in.me) {
        send_state(in, static_cast<int>(r), true);
        return;
    }
    in.heard[in.me] = true;
    step(in);
}

} // namespace ulmpi::ft
