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
#include "mpi/comm_make.h"

#include "mpi/comm_coll.h"
#include "mpi/comm_ctx.h"
#include "mpi/ftmpi.h"
#include "mpi/state.h"

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

int phase_failed(Comm* parent, int e, const char* fn)
{
    return raise(parent, e, fn, "the agreement among the members of %s failed",
                 parent->display_name().c_str());
}

// An attempt that found no pair because a member deferred (comm_ctx.h):
// every member sees the same AND, so all of them run the creation again.
constexpr int kRetry = -1;

// Runs `once(claim)` until it does not ask for a retry. A retry gives the
// other creations of this process a turn: their agreements progress while
// this one's next attempt waits.
template <class F> int with_claim(Comm* parent, int tag, bool member, F&& once)
{
    ContextClaim claim(parent->ctx_pair, tag, member);
    for (;;) {
        int e = once(claim);
        claim.end_attempt();
        if (e != kRetry) {
            return e;
        }
    }
}

// No pair in the AND: ask for a retry when someone deferred.
int no_pair(const ContextMask& agreed, Comm* parent, const char* fn)
{
    return ContextClaim::deferred(agreed) ? kRetry : no_context(parent, fn);
}

// The inter exchange (see the top): `mask` is this process's contribution
// and becomes the AND over both groups; `extra` goes to the remote group
// (only the leader's counts); `remote` (sized by the caller) receives the
// remote leader's extra.
int inter_exchange(Comm* c, ContextMask& mask, const Words& extra, Words& remote)
{
    const auto w = static_cast<std::size_t>(kContextWords);
    Words out(w + extra.size());
    std::memcpy(out.data(), mask.data(), w * 4);
    std::copy(extra.begin(), extra.end(), out.begin() + static_cast<std::ptrdiff_t>(w));
    Words in(w + remote.size());
    Members lm = local_members(c);
    Phase ph(c);
    ph.allreduce_band(lm, out.data(), kContextWords);
    ph.fence();
    if (c->rank == 0) {
        ph.swap(c->remote->world[0], out.data(), static_cast<int>(out.size()), in.data(),
                static_cast<int>(in.size()));
        ph.fence();
        ph.band(out.data(), in.data(), kContextWords);
        ph.fence();
    }
    ph.bcast(lm, 0, in.data(), static_cast<int>(in.size()));
    if (int e = ph.run()) {
        return e;
    }
    std::memcpy(mask.data(), in.data(), w * 4);
    std::copy(in.begin() + static_cast<std::ptrdiff_t>(w), in.end(), remote.begin());
    return MPI_SUCCESS;
}

int intra_agree(Comm* c, ContextMask& mask)
{
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

int make_dup(Comm* parent, Comm** out, const char* fn, ContextClaim& claim)
{
    *out = nullptr;
    ContextMask mask = claim.begin_attempt();
    if (parent->inter()) {
        Words none;
        if (int e = inter_exchange(parent, mask, none, none)) {
            return phase_failed(parent, e, fn);
        }
    } else if (int e = intra_agree(parent, mask)) {
        return phase_failed(parent, e, fn);
    }
    int pair = context_lowest(mask);
    if (pair < 0) {
        return no_pair(mask, parent, fn);
    }
    group_retain(parent->local);
    if (parent->remote != nullptr) {
        group_retain(parent->remote);
    }
    Comm* c = comm_new(parent->local, parent->remote, parent->rank, pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_intra(Comm* parent, Group* group, Comm** out, const char* fn, ContextClaim& claim)
{
    *out = nullptr;
    ContextMask mask = claim.begin_attempt();
    if (int e = intra_agree(parent, mask)) {
        if (group != nullptr) {
            group_release(group);
        }
        return phase_failed(parent, e, fn);
    }
    if (group == nullptr) {
        return ContextClaim::deferred(mask) ? kRetry : MPI_SUCCESS; // in step with the members
    }
    int pair = context_lowest(mask);
    if (pair < 0) {
        if (ContextClaim::deferred(mask)) {
            return kRetry; // the group is used again
        }
        group_release(group);
        return no_context(parent, fn);
    }
    Comm* c = comm_new(group, nullptr, group->rank_of(my_world()), pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_split(Comm* parent, int color, int key, Comm** out, const char* fn, ContextClaim& claim)
{
    *out = nullptr;
    const bool member = color != MPI_UNDEFINED;
    ContextMask mask = claim.begin_attempt();
    const std::uint32_t mine[2] = {static_cast<std::uint32_t>(color),
                                   static_cast<std::uint32_t>(key)};
    Words local(2 * static_cast<std::size_t>(parent->size()));
    Words remote;
    Members lm = local_members(parent);
    if (!parent->inter()) {
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
    if (!member) {
        return ContextClaim::deferred(mask) ? kRetry : MPI_SUCCESS; // in step with the members
    }
    std::vector<int> lw = colour_members(local, *parent->local, color);
    std::vector<int> rw;
    if (parent->inter()) {
        rw = colour_members(remote, *parent->remote, color);
        if (rw.empty()) {
            return MPI_SUCCESS; // no remote process of my colour
        }
    }
    int pair = context_lowest(mask);
    if (pair < 0) {
        return no_pair(mask, parent, fn);
    }
    Group* lg = group_new(std::move(lw));
    Group* rg = parent->inter() ? group_new(std::move(rw)) : nullptr;
    Comm* c = comm_new(lg, rg, lg->rank_of(my_world()), pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_inter_create(Comm* parent, Group* group, Comm** out, const char* fn, ContextClaim& claim)
{
    *out = nullptr;
    const int grank = group->rank_of(my_world());
    ContextMask mask = claim.begin_attempt();
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
    if (ContextClaim::deferred(mask) && context_lowest(mask) < 0) {
        return kRetry; // every member of both groups, in step
    }
    if (grank == MPI_UNDEFINED || rn == 0) {
        return MPI_SUCCESS;
    }
    int pair = context_lowest(mask);
    if (pair < 0) {
        return no_context(parent, fn);
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
               ContextClaim& claim)
{
    *out = nullptr;
    ContextMask mask = claim.begin_attempt();
    {
        Phase ph(parent, kCreateGroupTag | (tag & kUserTagBits));
        ph.allreduce_band(Members{group->world.data(), group->size(), grank}, mask.data(),
                          kContextWords);
        if (int e = ph.run()) {
            return phase_failed(parent, e, fn);
        }
    }
    int pair = context_lowest(mask);
    if (pair < 0) {
        return no_pair(mask, parent, fn);
    }
    group_retain(group);
    Comm* c = comm_new(group, nullptr, grank, pair, parent->errhandler);
    return publish(parent, c, out, fn);
}

int make_intercomm(Comm* local, int local_leader, Comm* peer, int remote_leader, int tag,
                   Comm** out, const char* fn, ContextClaim& claim)
{
    *out = nullptr;
    const auto w = static_cast<std::size_t>(kContextWords);
    Members lm = local_members(local);
    ContextMask mask = claim.begin_attempt();
    {
        Phase ph(local);
        ph.allreduce_band(lm, mask.data(), kContextWords);
        if (int e = ph.run()) {
            return phase_failed(local, e, fn);
        }
    }
    // [status, pair, remote size], then the remote group's world ranks.
    enum : std::uint32_t { ok = 0, overlap = 1, no_ctx = 2, failed = 3, retry = 4 };
    std::uint32_t head[3] = {ok, 0, 0};
    Words remote_world;
    int leader_error = MPI_SUCCESS;
    if (local->rank == local_leader) {
        Words out_buf(w + 1 + local->local->world.size());
        std::memcpy(out_buf.data(), mask.data(), w * 4);
        out_buf[w] = static_cast<std::uint32_t>(local->size());
        for (std::size_t i = 0; i < local->local->world.size(); ++i) {
            out_buf[w + 1 + i] = static_cast<std::uint32_t>(local->local->world[i]);
        }
        // Every process of the job is in some group: the job size bounds it.
        Words in_buf(w + 1 + static_cast<std::size_t>(state().engine.size()));
        {
            Phase ph(peer, kIntercommTag | (tag & kUserTagBits));
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
        int pair = context_lowest(mask);
        if (head[0] == ok && pair < 0) {
            head[0] = ContextClaim::deferred(mask) ? retry : no_ctx;
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
    if (head[0] == retry) {
        return kRetry; // the remote leader saw the same AND: both groups retry
    }
    if (head[0] == failed) {
        return raise(local, leader_error != MPI_SUCCESS ? leader_error : MPI_ERR_OTHER, fn,
                     "the exchange between the two leaders failed");
    }
    std::vector<int> rw(remote_world.begin(), remote_world.end());
    group_retain(local->local);
    Comm* c = comm_new(local->local, group_new(std::move(rw)), local->rank,
                       static_cast<int>(head[1]), local->errhandler);
    return publish(local, c, out, fn);
}

int make_merge(Comm* inter, bool high, Comm** out, const char* fn, ContextClaim& claim)
{
    *out = nullptr;
    ContextMask mask = claim.begin_attempt();
    Words extra{high ? 1u : 0u};
    Words remote(1);
    if (int e = inter_exchange(inter, mask, extra, remote)) {
        return phase_failed(inter, e, fn);
    }
    int pair = context_lowest(mask);
    if (pair < 0) {
        return no_pair(mask, inter, fn);
    }
    const bool remote_high = remote[0] != 0;
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
    return with_claim(parent, 0, true,
                      [&](ContextClaim& cl) { return make_dup(parent, out, fn, cl); });
}

int comm_make_intra(Comm* parent, Group* group, Comm** out, const char* fn)
{
    return with_claim(parent, 0, group != nullptr,
                      [&](ContextClaim& cl) { return make_intra(parent, group, out, fn, cl); });
}

int comm_make_split(Comm* parent, int color, int key, Comm** out, const char* fn)
{
    return with_claim(parent, 0, color != MPI_UNDEFINED, [&](ContextClaim& cl) {
        return make_split(parent, color, key, out, fn, cl);
    });
}

int comm_make_inter_create(Comm* parent, Group* group, Comm** out, const char* fn)
{
    const bool member = group->rank_of(my_world()) != MPI_UNDEFINED;
    return with_claim(parent, 0, member, [&](ContextClaim& cl) {
        return make_inter_create(parent, group, out, fn, cl);
    });
}

int comm_make_group(Comm* parent, Group* group, int grank, int tag, Comm** out, const char* fn)
{
    return with_claim(parent, tag, true, [&](ContextClaim& cl) {
        return make_group(parent, group, grank, tag, out, fn, cl);
    });
}

int comm_make_intercomm(Comm* local, int local_leader, Comm* peer, int remote_leader, int tag,
                        Comm** out, const char* fn)
{
    return with_claim(local, 0, true, [&](ContextClaim& cl) {
        return make_intercomm(local, local_leader, peer, remote_leader, tag, out, fn, cl);
    });
}

int comm_make_merge(Comm* inter, bool high, Comm** out, const char* fn)
{
    return with_claim(inter, 0, true,
                      [&](ContextClaim& cl) { return make_merge(inter, high, out, fn, cl); });
}

} // namespace ulmpi::mpi
