// Communicator constructors (comm_make.h). Every flow below is a fixed
// sequence of Phases on the parent, the same on every member, so that the
// parent's collective tags stay in step:
//
//   intra dup / create / topology   1 phase: AND of the context bitmaps
//   intra split                     1 phase: allgather (colour, key) + AND
//   inter dup / create / merge      1 phase: AND in each group; the leaders
//                                   swap [AND, extra]; each leader ANDs and
//                                   broadcasts [AND, remote extra] locally
//   inter split                     2 phases: allgather (colour, key) in each
//                                   group, then the inter exchange with the
//                                   group's colours and keys as extra
//   Intercomm_create                3 phases on the local communicator (AND;
//                                   broadcast of [status, pair, remote size];
//                                   broadcast of the remote group) around one
//                                   swap between the leaders on the peer
//                                   communicator (kIntercommTag)
//   Comm_create_group               1 phase among the group (kCreateGroupTag)
//
// Under MPI_THREAD_MULTIPLE each flow is followed by a confirm round over
// the same processes (one word ANDed: "the candidate pair was still free
// here, and I reserved it"), and repeated when some member could not take
// the pair (comm_ctx.h). Below MULTIPLE there is none: the AND decides.
#include "mpi/comm_make.h"

#include "mpi/comm_coll.h"
#include "mpi/ft_comm.h"
#include "mpi/comm_ctx.h"
#include "mpi/ftmpi.h"
#include "mpi/state.h"
#include "ulm/thread_lock.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

namespace ulmpi::mpi {
namespace {

using Words = std::vector<std::uint32_t>;

int no_context(Comm* parent, const char* fn)
{
    return raise(parent, MPI_ERR_OTHER, fn,
                 "no context id is free on every member (%d communicators in use here, at most "
                 "%d)",
                 context_used_count(), kContextPairs);
}

// `why`: what went wrong, when more is known than the error class.
int phase_failed(Comm* parent, int e, const char* fn, const char* why = nullptr)
{
    return raise(parent, e, fn, "the agreement among the members of %s failed%s%s",
                 parent->display_name().c_str(), why != nullptr ? ": " : "",
                 why != nullptr ? why : "");
}

// An attempt whose candidate some member could not reserve (comm_ctx.h):
// every member sees the same confirmation, so all of them run the
// creation again, with the next attempt's candidate.
constexpr int kRetry = -1;

// Runs `once(attempt)` until it does not ask for a retry. A retry gives the
// other creations of this process a turn: their agreements progress while
// this one's next round waits.
template <class F> int with_attempts(F&& once)
{
    for (int attempt = 0;; ++attempt) {
        int e = once(attempt);
        if (e != kRetry) {
            return e;
        }
    }
}

// The inter exchange (see the top): `mask` (n words) is this process's
// contribution and becomes the AND over both groups; `extra` goes to the
// remote group (only the leader's counts); `remote` (sized by the caller)
// receives the remote leader's extra.
int inter_exchange(Comm* c, std::uint32_t* mask, int n, const Words& extra, Words& remote)
{
    const auto w = static_cast<std::size_t>(n);
    Words out(w + extra.size());
    std::memcpy(out.data(), mask, w * 4);
    std::copy(extra.begin(), extra.end(), out.begin() + static_cast<std::ptrdiff_t>(w));
    Words in(w + remote.size());
    Members lm = local_members(c);
    Phase ph(c);
    ph.allreduce_band(lm, out.data(), n);
    ph.fence();
    if (c->rank == 0) {
        ph.swap(c->remote->world[0], out.data(), static_cast<int>(out.size()), in.data(),
                static_cast<int>(in.size()));
        ph.fence();
        ph.band(out.data(), in.data(), n);
        ph.fence();
    }
    ph.bcast(lm, 0, in.data(), static_cast<int>(in.size()));
    if (int e = ph.run()) {
        return e;
    }
    std::memcpy(mask, in.data(), w * 4);
    std::copy(in.begin() + static_cast<std::ptrdiff_t>(w), in.end(), remote.begin());
    return MPI_SUCCESS;
}

int inter_exchange(Comm* c, ContextMask& mask, const Words& extra, Words& remote)
{
    return inter_exchange(c, mask.data(), kContextWords, extra, remote);
}

// One word ANDed over every process of c (both groups of an intercommunicator).
// Under ULFM by the fault-tolerant agreement, so that the confirm round of
// MPI_THREAD_MULTIPLE (its only use) gives every member the same result even
// when one fails during it, as the agreement on the context before it did.
int and_over(Comm* c, std::uint32_t* word)
{
    if (ft_enabled() && !ftmpi_on()) {
        const char* why = nullptr;
        return ft_agree_words(c, word, 1, &why);
    }
    if (c->inter()) {
        Words none;
        return inter_exchange(c, word, 1, none, none);
    }
    Phase ph(c);
    ph.allreduce_band(local_members(c), word, 1);
    return ph.run();
}

// Under MULTIPLE, the reserve and confirm rounds (comm_ctx.h): a member
// reserves `pair` if it is still free here, and `and_one` ANDs "it was"
// over the processes that made the AND. kRetry when some member could not
// take it, MPI_SUCCESS when every one can, or the round's error class.
// The reservation lasts for the round only: the caller makes its
// communicator right after, holding the MPI lock with no progress in
// between, and comm_new reserves the pair for good. Below MULTIPLE
// nothing happens (one creation agrees at a time: the AND decides).
template <class And> int confirm(bool member, int pair, And&& and_one)
{
    if (!ulm::thread_lock().on()) {
        return MPI_SUCCESS;
    }
    const bool take = member && !context_in_use(pair);
    if (take) {
        context_reserve(pair);
    }
    std::uint32_t word = !member || take ? 1u : 0u;
    int e = and_one(&word);
    if (take) {
        context_release(pair);
    }
    if (e != MPI_SUCCESS) {
        return e;
    }
    return word == 1u ? MPI_SUCCESS : kRetry;
}

// A confirm that did not succeed: the retry, or the raised error.
int unconfirmed(int e, Comm* parent, const char* fn)
{
    return e == kRetry ? kRetry : phase_failed(parent, e, fn);
}

// The AND of the members' context masks. `why` is set when the error class
// alone does not say what happened.
int intra_agree(Comm* c, ContextMask& mask, const char** why)
{
    if (ft_enabled() && !ftmpi_on()) {
        // ULFM: a uniform result even when a member dies during it.
        return ft_agree_words(c, mask.data(), kContextWords, why);
    }
    Phase ph(c);
    ph.allreduce_band(local_members(c), mask.data(), kContextWords);
    return ph.run();
}

// Members of one colour, ordered by (key, rank): their world ranks.
std::vector<int> colour_members(const Words& ck, const Group& g, int color)
{
    std::vector<int> idx;
    for (int j = 0; j < g.size(); ++j) {
        if (static_cast<int>(ck[2 * static_cast<std::size_t>(j)]) == color) {
            idx.push_back(j);
        }
    }
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
        return static_cast<int>(ck[2 * static_cast<std::size_t>(a) + 1]) <
               static_cast<int>(ck[2 * static_cast<std::size_t>(b) + 1]);
    });
    std::vector<int> world;
    world.reserve(idx.size());
    for (int j : idx) {
        world.push_back(g.world[static_cast<std::size_t>(j)]);
    }
    return world;
}

// Makes and publishes the communicator; MPI_SUCCESS or a raised error.
int publish(Comm* parent, Comm* c, Comm** out, const char* fn)
{
    if (comm_publish(c) == MPI_COMM_NULL) {
        comm_release(c);
        return raise(parent, MPI_ERR_INTERN, fn, "the communicator handle table is full");
    }
    *out = c;
    return MPI_SUCCESS;
}

int my_world() { return state().engine.rank(); }

int make_dup(Comm* parent, Comm** out, const char* fn, int attempt)
{
    *out = nullptr;
    ContextMask mask = context_contribution(true);
    if (parent->inter()) {
        Words none;
        if (int e = inter_exchange(parent, mask, none, none)) {
            return phase_failed(parent, e, fn);
        }
    } else if (const char* why = nullptr; int e = intra_agree(parent, mask, &why)) {
        return phase_failed(parent, e, fn, why);
    }
    int pair = context_pick(mask, context_key(parent->ctx_pair, 0), attempt);
    if (pair < 0) {
        return no_context(parent, fn);
    }
    if (int e = confirm(true, pair, [&](std::uint32_t* w) { return and_over(parent, w); })) {
        return unconfirmed(e, parent, fn);
    }
    group_retain(parent->local);
    if (parent->remote != nullptr) {
        group_retain(parent->remote);
    }
    Comm* c = comm_new(parent->local, parent->remote, parent->rank, pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

// `group` (retained by the caller) is released on every end but a retry.
int make_intra(Comm* parent, Group* group, Comm** out, const char* fn, int attempt)
{
    *out = nullptr;
    const bool member = group != nullptr;
    auto drop = [&] {
        if (group != nullptr) {
            group_release(group);
        }
    };
    ContextMask mask = context_contribution(member);
    if (const char* why = nullptr; int e = intra_agree(parent, mask, &why)) {
        drop();
        return phase_failed(parent, e, fn, why);
    }
    int pair = context_pick(mask, context_key(parent->ctx_pair, 0), attempt);
    if (pair < 0) {
        drop();
        return member ? no_context(parent, fn) : MPI_SUCCESS; // every member alike
    }
    if (int e = confirm(member, pair, [&](std::uint32_t* w) { return and_over(parent, w); })) {
        if (e != kRetry) {
            drop();
        }
        return unconfirmed(e, parent, fn); // a retry uses the group again
    }
    if (!member) {
        return MPI_SUCCESS;
    }
    Comm* c = comm_new(group, nullptr, group->rank_of(my_world()), pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_split(Comm* parent, int color, int key, Comm** out, const char* fn, int attempt)
{
    *out = nullptr;
    const bool member = color != MPI_UNDEFINED;
    ContextMask mask = context_contribution(member);
    const std::uint32_t mine[2] = {static_cast<std::uint32_t>(color),
                                   static_cast<std::uint32_t>(key)};
    Words local(2 * static_cast<std::size_t>(parent->size()));
    Words remote;
    Members lm = local_members(parent);
    if (!parent->inter() && ft_enabled() && !ftmpi_on()) {
        // ULFM: the colours by an allgather, which a failure may cut at
        // some members only; then every member, whether its allgather
        // ended or not, takes part in the agreement on the context (what
        // it saw ANDed in), so that all succeed or all fail alike.
        int e = MPI_SUCCESS;
        {
            Phase ph(parent);
            ph.allgather(lm, mine, 2, local.data());
            e = ph.run();
        }
        const char* why = nullptr;
        if (int ea = ft_agree_words(parent, mask.data(), kContextWords, &why, e)) {
            return phase_failed(parent, ea, fn, why);
        }
    } else if (!parent->inter()) {
        Phase ph(parent);
        ph.allgather(lm, mine, 2, local.data());
        ph.fence();
        ph.allreduce_band(lm, mask.data(), kContextWords);
        if (int e = ph.run()) {
            return phase_failed(parent, e, fn);
        }
        if (ftmpi_on()) [[unlikely]] {
            ftmpi_spread(parent, local.data(), 2); // BLANK: holes join no colour
        }
    } else {
        {
            Phase ph(parent);
            ph.allgather(lm, mine, 2, local.data());
            if (int e = ph.run()) {
                return phase_failed(parent, e, fn);
            }
        }
        remote.resize(2 * static_cast<std::size_t>(parent->remote->size()));
        if (int e = inter_exchange(parent, mask, local, remote)) {
            return phase_failed(parent, e, fn);
        }
    }
    int pair = context_pick(mask, context_key(parent->ctx_pair, 0), attempt);
    if (pair < 0) {
        return member ? no_context(parent, fn) : MPI_SUCCESS; // every member alike
    }
    if (int e = confirm(member, pair, [&](std::uint32_t* w) { return and_over(parent, w); })) {
        return unconfirmed(e, parent, fn);
    }
    if (!member) {
        return MPI_SUCCESS;
    }
    std::vector<int> lw = colour_members(local, *parent->local, color);
    std::vector<int> rw;
    if (parent->inter()) {
        rw = colour_members(remote, *parent->remote, color);
        if (rw.empty()) {
            return MPI_SUCCESS; // no remote process of my colour
        }
    }
    Group* lg = group_new(std::move(lw));
    Group* rg = parent->inter() ? group_new(std::move(rw)) : nullptr;
    Comm* c = comm_new(lg, rg, lg->rank_of(my_world()), pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_inter_create(Comm* parent, Group* group, Comm** out, const char* fn, int attempt)
{
    *out = nullptr;
    const int grank = group->rank_of(my_world());
    const bool member = grank != MPI_UNDEFINED;
    ContextMask mask = context_contribution(member);
    Words extra;
    extra.reserve(1 + group->world.size());
    extra.push_back(static_cast<std::uint32_t>(group->size()));
    for (int w : group->world) {
        extra.push_back(static_cast<std::uint32_t>(w));
    }
    Words remote(1 + static_cast<std::size_t>(parent->remote->size()));
    if (int e = inter_exchange(parent, mask, extra, remote)) {
        return phase_failed(parent, e, fn);
    }
    const auto rn = static_cast<std::size_t>(remote[0]);
    int pair = context_pick(mask, context_key(parent->ctx_pair, 0), attempt);
    if (pair < 0) {
        return !member || rn == 0 ? MPI_SUCCESS : no_context(parent, fn); // all alike
    }
    if (int e = confirm(member, pair, [&](std::uint32_t* w) { return and_over(parent, w); })) {
        return unconfirmed(e, parent, fn);
    }
    if (!member || rn == 0) {
        return MPI_SUCCESS;
    }
    std::vector<int> rw(rn);
    for (std::size_t i = 0; i < rn; ++i) {
        rw[i] = static_cast<int>(remote[1 + i]);
    }
    group_retain(group);
    Comm* c = comm_new(group, group_new(std::move(rw)), grank, pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_group(Comm* parent, Group* group, int grank, int tag, Comm** out, const char* fn,
               int attempt)
{
    *out = nullptr;
    ContextMask mask = context_contribution(true);
    const Members gm{group->world.data(), group->size(), grank};
    const int phase_tag = kCreateGroupTag | (tag & kUserTagBits);
    {
        Phase ph(parent, phase_tag, gm);
        ph.allreduce_band(gm, mask.data(), kContextWords);
        if (int e = ph.run()) {
            return phase_failed(parent, e, fn);
        }
    }
    int pair = context_pick(mask, context_key(parent->ctx_pair, phase_tag), attempt);
    if (pair < 0) {
        return no_context(parent, fn);
    }
    auto and_group = [&](std::uint32_t* w) {
        Phase ph(parent, phase_tag, gm);
        ph.allreduce_band(gm, w, 1);
        return ph.run();
    };
    if (int e = confirm(true, pair, and_group)) {
        return unconfirmed(e, parent, fn);
    }
    group_retain(group);
    Comm* c = comm_new(group, nullptr, grank, pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_intercomm(Comm* local, int local_leader, Comm* peer, int remote_leader, int tag,
                   Comm** out, const char* fn, int attempt)
{
    *out = nullptr;
    const auto w = static_cast<std::size_t>(kContextWords);
    const int leaders_tag = kIntercommTag | (tag & kUserTagBits);
    Members lm = local_members(local);
    ContextMask mask = context_contribution(true);
    {
        Phase ph(local);
        ph.allreduce_band(lm, mask.data(), kContextWords);
        if (int e = ph.run()) {
            return phase_failed(local, e, fn);
        }
    }
    // [status, pair, remote size], then the remote group's world ranks.
    enum : std::uint32_t { ok = 0, overlap = 1, no_ctx = 2, failed = 3 };
    std::uint32_t head[3] = {ok, 0, 0};
    Words remote_world;
    int leader_error = MPI_SUCCESS;
    const bool leader = local->rank == local_leader;
    if (leader) {
        Words out_buf(w + 1 + local->local->world.size());
        std::memcpy(out_buf.data(), mask.data(), w * 4);
        out_buf[w] = static_cast<std::uint32_t>(local->size());
        for (std::size_t i = 0; i < local->local->world.size(); ++i) {
            out_buf[w + 1 + i] = static_cast<std::uint32_t>(local->local->world[i]);
        }
        // Every process of the job is in some group: the job size bounds it.
        Words in_buf(w + 1 + static_cast<std::size_t>(state().engine.size()));
        {
            Phase ph(peer, leaders_tag);
            ph.swap(peer->world_of(remote_leader), out_buf.data(), static_cast<int>(out_buf.size()),
                    in_buf.data(), static_cast<int>(in_buf.size()));
            leader_error = ph.run();
        }
        for (std::size_t i = 0; i < w; ++i) {
            mask[i] &= in_buf[i];
        }
        // The rest of the local group learns of a failure from the status.
        const std::uint32_t rn = leader_error != MPI_SUCCESS ? 0 : in_buf[w];
        remote_world.assign(in_buf.begin() + static_cast<std::ptrdiff_t>(w + 1),
                            in_buf.begin() + static_cast<std::ptrdiff_t>(w + 1 + rn));
        for (std::uint32_t r : remote_world) {
            if (local->local->rank_of(static_cast<int>(r)) != MPI_UNDEFINED) {
                head[0] = overlap;
                break;
            }
        }
        // Both leaders hold the same AND and the same peer communicator.
        int pair = context_pick(mask, context_key(peer->ctx_pair, leaders_tag), attempt);
        if (head[0] == ok && pair < 0) {
            head[0] = no_ctx;
        }
        if (leader_error != MPI_SUCCESS) {
            head[0] = failed;
        }
        head[1] = static_cast<std::uint32_t>(pair);
        head[2] = rn;
    }
    {
        Phase ph(local);
        ph.bcast(lm, local_leader, head, 3);
        if (int e = ph.run()) {
            return phase_failed(local, e, fn);
        }
    }
    remote_world.resize(head[2]);
    {
        Phase ph(local);
        ph.bcast(lm, local_leader, remote_world.data(), static_cast<int>(head[2]));
        if (int e = ph.run()) {
            return phase_failed(local, e, fn);
        }
    }
    if (head[0] == overlap) {
        return raise(local, MPI_ERR_COMM, fn,
                     "the local and remote groups overlap (an intercommunicator needs disjoint "
                     "groups)");
    }
    if (head[0] == no_ctx) {
        return no_context(local, fn);
    }
    if (head[0] == failed) {
        return raise(local, leader_error != MPI_SUCCESS ? leader_error : MPI_ERR_OTHER, fn,
                     "the exchange between the two leaders failed");
    }
    const int pair = static_cast<int>(head[1]);
    // Confirm over both groups: AND locally, the leaders swap, broadcast.
    auto and_both = [&](std::uint32_t* word) {
        {
            Phase ph(local);
            ph.allreduce_band(lm, word, 1);
            if (int e = ph.run()) {
                return e;
            }
        }
        if (leader) {
            std::uint32_t theirs = 0;
            Phase ph(peer, leaders_tag);
            ph.swap(peer->world_of(remote_leader), word, 1, &theirs, 1);
            if (int e = ph.run()) {
                return e;
            }
            *word &= theirs;
        }
        Phase ph(local);
        ph.bcast(lm, local_leader, word, 1);
        return ph.run();
    };
    if (int e = confirm(true, pair, and_both)) {
        return unconfirmed(e, local, fn);
    }
    std::vector<int> rw(remote_world.begin(), remote_world.end());
    group_retain(local->local);
    Comm* c = comm_new(local->local, group_new(std::move(rw)), local->rank, pair,
                       local->errhandler);
    return publish(local, c, out, fn);
}

// ULFM: one agreement over both groups (ft_members: the group whose first
// process has the lower world rank first) gives the context and each
// group's `high`, so that the merge succeeds at every member or fails at
// every one. The word after the context mask carries the highs: bit 0 the
// first group's, bit 1 the second's (each member clears only its own
// group's bit when it is low; the AND keeps the rest).
int merge_agree(Comm* inter, bool high, ContextMask& mask, bool& remote_high, const char* fn)
{
    const bool first = !(inter->remote->world.front() < inter->local->world.front());
    const std::uint32_t mine = first ? 1u : 2u;
    Words w(mask.begin(), mask.end());
    w.push_back(high ? ~0u : ~mine);
    const char* why = nullptr;
    if (int e = ft_agree_words(inter, w.data(), static_cast<int>(w.size()), &why)) {
        return phase_failed(inter, e, fn, why);
    }
    std::copy(w.begin(), w.begin() + kContextWords, mask.begin());
    remote_high = (w.back() & (first ? 2u : 1u)) != 0;
    return MPI_SUCCESS;
}

int make_merge(Comm* inter, bool high, Comm** out, const char* fn, int attempt)
{
    *out = nullptr;
    ContextMask mask = context_contribution(true);
    bool remote_high = false;
    if (ft_enabled() && !ftmpi_on()) {
        if (int e = merge_agree(inter, high, mask, remote_high, fn)) {
            return e;
        }
    } else {
        Words extra{high ? 1u : 0u};
        Words remote(1);
        if (int e = inter_exchange(inter, mask, extra, remote)) {
            return phase_failed(inter, e, fn);
        }
        remote_high = remote[0] != 0;
    }
    int pair = context_pick(mask, context_key(inter->ctx_pair, 0), attempt);
    if (pair < 0) {
        return no_context(inter, fn);
    }
    if (int e = confirm(true, pair, [&](std::uint32_t* w) { return and_over(inter, w); })) {
        return unconfirmed(e, inter, fn);
    }
    // The low group first; on a tie, the group whose leader has the lower
    // world rank (both sides decide alike).
    const bool local_first = high != remote_high ? !high
                                                 : inter->local->world[0] < inter->remote->world[0];
    const Group& a = local_first ? *inter->local : *inter->remote;
    const Group& b = local_first ? *inter->remote : *inter->local;
    std::vector<int> all(a.world);
    all.insert(all.end(), b.world.begin(), b.world.end());
    Group* g = group_new(std::move(all));
    Comm* c = comm_new(g, nullptr, g->rank_of(my_world()), pair, inter->errhandler);
    return publish(inter, c, out, fn);
}

} // namespace

int comm_make_dup(Comm* parent, Comm** out, const char* fn)
{
    return with_attempts([&](int a) { return make_dup(parent, out, fn, a); });
}

int comm_make_intra(Comm* parent, Group* group, Comm** out, const char* fn)
{
    return with_attempts([&](int a) { return make_intra(parent, group, out, fn, a); });
}

int comm_make_split(Comm* parent, int color, int key, Comm** out, const char* fn)
{
    return with_attempts([&](int a) { return make_split(parent, color, key, out, fn, a); });
}

int comm_make_inter_create(Comm* parent, Group* group, Comm** out, const char* fn)
{
    return with_attempts([&](int a) { return make_inter_create(parent, group, out, fn, a); });
}

int comm_make_group(Comm* parent, Group* group, int grank, int tag, Comm** out, const char* fn)
{
    return with_attempts(
        [&](int a) { return make_group(parent, group, grank, tag, out, fn, a); });
}

int comm_make_intercomm(Comm* local, int local_leader, Comm* peer, int remote_leader, int tag,
                        Comm** out, const char* fn)
{
    return with_attempts([&](int a) {
        return make_intercomm(local, local_leader, peer, remote_leader, tag, out, fn, a);
    });
}

int comm_make_merge(Comm* inter, bool high, Comm** out, const char* fn)
{
    return with_attempts([&](int a) { return make_merge(inter, high, out, fn, a); });
}

} // namespace ulmpi::mpi
