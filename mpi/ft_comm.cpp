#include "mpi/ft_comm.h"

#include "mpi/comm_ctx.h"
#include "mpi/errors.h"
#include "mpi/ftmpi.h"
#include "mpi/state.h"
#include "runtime/clock.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace ulmpi::mpi {

constinit std::atomic<bool> g_ft_on{false};

namespace {

// How long a freed communicator's context stays out of use when it ran
// agreements (see FtState::quarantine).
constexpr std::int64_t kQuarantineNs = 5'000'000'000;

FtState& storage()
{
    static FtState s;
    return s;
}

bool member(const Comm* c, int world)
{
    return c->local->rank_of(world) != MPI_UNDEFINED ||
           (c->remote != nullptr && c->remote->rank_of(world) != MPI_UNDEFINED);
}

// Constructors among a group now running (threads: several at once).
std::mutex g_group_mu;
std::vector<const GroupPhase*>& group_phases()
{
    static std::vector<const GroupPhase*> g;
    return g;
}

bool in_group(const GroupPhase& g, int world)
{
    return std::find(g.world, g.world + g.size, world) != g.world + g.size;
}

// A member failed: record it and stop the collectives that wait on it (not
// a constructor among a group of c that does not hold it).
void member_failed(Comm* c, int world)
{
    if (std::find(c->ft_failed.begin(), c->ft_failed.end(), world) != c->ft_failed.end()) {
        return;
    }
    c->ft_failed.push_back(world);
    ulm::Engine& eng = state().engine;
    std::vector<const GroupPhase*> spared;
    {
        std::lock_guard<std::mutex> lk(g_group_mu);
        for (const GroupPhase* g : group_phases()) {
            if (g->parent == c && !in_group(*g, world)) {
                spared.push_back(g);
            }
        }
    }
    auto spare = [&spared](int tag) {
        return std::any_of(spared.begin(), spared.end(), [tag](const GroupPhase* g) { return g->tag == tag; });
    };
    if (spared.empty()) {
        eng.interrupt_context(c->coll_ctx, rt::Errc::peer_failed);
    } else {
        eng.interrupt_context(c->coll_ctx, rt::Errc::peer_failed, spare);
    }
}

void on_failure(int world)
{
    for (Comm* c : storage().comms) {
        if (member(c, world)) {
            member_failed(c, world);
        }
    }
}

void on_revoked(Comm* c)
{
    c->revoked = true;
    ulm::Engine& eng = state().engine;
    eng.interrupt_context(c->ctx, rt::Errc::revoked);
    eng.interrupt_context(c->coll_ctx, rt::Errc::revoked);
}

} // namespace

FtState& ft_state() { return storage(); }

FtState& ft_machinery()
{
    FtState& f = storage();
    if (f.channel == nullptr) {
        State& s = state();
        const int me = s.engine.rank();
        // Without fault tolerance only a revoke or an MPIX_ call's agreement
        // comes here: the channel is a slow hook (every 256th progress
        // call), at no cost to the other calls. With it, agreements must be
        // quick even with ranks that sleep while they wait (a slow hook
        // made an 8-rank agreement take 100 ms instead of 0.3 ms on 2
        // cores): polled on every call, it costs a 0-byte round trip about
        // 10 ns (docs/fault_tolerance.md, figures).
        f.channel = std::make_unique<ft::Channel>(s.engine, !s.detector->tolerant());
        f.revoker = std::make_unique<ft::Revoker>(*f.channel, *s.detector, me);
        f.agreements = std::make_unique<ft::Agreements>(*f.channel, *s.detector, me);
        for (Comm* c : f.comms) {
            f.revoker->attach(c->ctx.value(), ft_members(c), [c] { on_revoked(c); });
        }
    }
    return f;
}

void ft_init()
{
    State& s = state();
    ft_attach(s.world);
    ft_attach(s.self);
    // The machinery (its control channel's receive) exists from the start
    // even without fault tolerance: a process that never calls an MPIX_
    // function must still hear another's revoke, or its pending and later
    // operations on the communicator would wait forever (MPICH's
    // ft/revoke_nofail). Without fault tolerance its channel is a slow
    // hook (ulm::Engine::add_slow_progress_hook): no cost to the fast path.
    ft_machinery();
    if (!s.detector->tolerant()) {
        return;
    }
    s.detector->add_listener(&on_failure);
    s.engine.watch_events(true);
    g_ft_on.store(true, std::memory_order_relaxed);
}

void ft_finalize()
{
    FtState& f = storage();
    f.agreements.reset();
    f.revoker.reset();
    f.channel.reset();
    f.comms.clear();
    g_ft_on.store(false, std::memory_order_relaxed);
}

std::vector<int> ft_members(const Comm* c)
{
    std::vector<int> m = c->local->world;
    if (c->remote != nullptr) {
        const std::vector<int>& r = c->remote->world;
        const bool remote_first = !r.empty() && !m.empty() && r.front() < m.front();
        m.insert(remote_first ? m.begin() : m.end(), r.begin(), r.end());
    }
    return m;
}

void ft_attach(Comm* c)
{
    FtState& f = storage();
    if (c == nullptr || std::find(f.comms.begin(), f.comms.end(), c) != f.comms.end()) {
        return;
    }
    f.comms.push_back(c);
    if (ft_enabled()) {
        // Members that failed before the communicator existed (a shrink
        // that raced a new failure): recorded at once. Not those replaced
        // by a new process since (FT-MPI REBUILD).
        for (int w : state().detector->failed_ranks()) {
            if (member(c, w) && state().detector->failed(w)) {
                member_failed(c, w);
            }
        }
    }
    if (f.revoker != nullptr) {
        f.revoker->attach(c->ctx.value(), ft_members(c), [c] { on_revoked(c); });
    }
}

bool ft_detach(Comm* c)
{
    FtState& f = storage();
    f.comms.erase(std::remove(f.comms.begin(), f.comms.end(), c), f.comms.end());
    if (f.revoker == nullptr || c == nullptr) {
        return false;
    }
    f.revoker->detach(c->ctx.value());
    // FT-MPI's ATOMIC collectives agree on the collective context. A revoked
    // communicator's context is kept too: other members may still forward
    // the revoke, and a late notice would revoke the next communicator on
    // the context if it has the same members (the notice's identity).
    if (!c->revoked && !f.agreements->has(c->ctx.value()) &&
        !f.agreements->has(c->coll_ctx.value())) {
        return false;
    }
    f.agreements->retire(c->ctx.value());
    f.agreements->retire(c->coll_ctx.value());
    f.quarantine.emplace_back(c->ctx_pair, rt::now_ns() + kQuarantineNs);
    return true;
}

void ft_release_quarantined()
{
    FtState& f = storage();
    if (f.quarantine.empty()) {
        return;
    }
    const std::int64_t now = rt::now_ns();
    for (std::size_t i = 0; i < f.quarantine.size();) {
        if (f.quarantine[i].second > now) {
            ++i;
            continue;
        }
        const int pair = f.quarantine[i].first;
        f.agreements->drop(context_p2p(pair).value());
        f.agreements->drop(context_coll(pair).value());
        f.revoker->forget(context_p2p(pair).value());
        context_release(pair);
        f.quarantine[i] = f.quarantine.back();
        f.quarantine.pop_back();
    }
}

std::string ft_failed_text(const Comm* c)
{
    std::string out;
    for (int w : c->ft_failed) {
        int r = c->local->rank_of(w);
        const char* side = "";
        if (r == MPI_UNDEFINED && c->remote != nullptr) {
            r = c->remote->rank_of(w);
            side = "remote ";
        }
        out += (out.empty() ? "" : ", ") + std::string(side) + "rank " + std::to_string(r);
        const std::string& d = state().detector->detail(w);
        if (!d.empty()) {
            out += " (" + d + ")";
        }
    }
    return out;
}

std::string ft_failure_note(std::size_t room)
{
    if (!ft_enabled()) {
        return {};
    }
    const std::vector<int>& failed = state().detector->failed_ranks();
    if (failed.empty()) {
        return {};
    }
    std::string out = failed.size() == 1 ? "; failed: " : "; failed so far: ";
    for (std::size_t i = 0; i < failed.size(); ++i) {
        std::string one = (i > 0 ? ", rank " : "rank ") + std::to_string(failed[i]) +
                          (i == 0 ? " of MPI_COMM_WORLD" : "");
        const std::string& d = state().detector->detail(failed[i]);
        if (!d.empty()) {
            one += " (" + d + ")";
        }
        const std::string more = " and " + std::to_string(failed.size() - i) + " more";
        if (out.size() + one.size() + more.size() > room) {
            return out + more;
        }
        out += one;
    }
    return out;
}

int ft_check_p2p(Comm* c, const char* fn)
{
    if (c->ft_gate) {
        if (int e = ftmpi_check(c, fn, false)) { // FT-MPI (mpi/ftmpi.h)
            return e;
        }
    }
    if (c->revoked) {
        return raise(c, kErrRevoked, fn, "the communicator was revoked");
    }
    return MPI_SUCCESS;
}

int ft_check_coll(Comm* c, const char* fn)
{
    if (ftmpi_on()) {
        return ftmpi_check(c, fn, true); // FT-MPI's rules replace ULFM's (mpi/ftmpi.h)
    }
    if (c->revoked) {
        return raise(c, kErrRevoked, fn, "the communicator was revoked");
    }
    if (!c->ft_failed.empty()) {
        return raise(c, kErrProcFailed, fn, "a member failed: %s; shrink the communicator to go on",
                     ft_failed_text(c).c_str());
    }
    return MPI_SUCCESS;
}

void ft_group_phase_begin(const GroupPhase* g)
{
    std::lock_guard<std::mutex> lk(g_group_mu);
    group_phases().push_back(g);
}

void ft_group_phase_end(const GroupPhase* g)
{
    std::lock_guard<std::mutex> lk(g_group_mu);
    auto& v = group_phases();
    v.erase(std::remove(v.begin(), v.end(), g), v.end());
}

int ft_group_interrupted(const GroupPhase& g)
{
    if (g.parent->revoked) {
        return MPIX_ERR_REVOKED;
    }
    if (!ft_enabled()) {
        return MPI_SUCCESS;
    }
    for (int w : g.parent->ft_failed) {
        if (in_group(g, w) && !(ftmpi_on() && ftmpi_is_hole(w))) {
            return MPIX_ERR_PROC_FAILED;
        }
    }
    return MPI_SUCCESS;
}

bool ft_coll_doomed(const Comm* c)
{
    if (!ft_enabled() || c->ft_failed.empty()) {
        return false;
    }
    if (!ftmpi_on()) {
        return true;
    }
    return std::any_of(c->ft_failed.begin(), c->ft_failed.end(),
                       [](int w) { return !ftmpi_is_hole(w); });
}

bool ft_request_blocked(const Request* r)
{
    return r->kind == Request::Kind::recv && !r->recv->complete && r->recv->src == ulm::kAnySource &&
           r->comm != nullptr && r->comm->has_unacked_failure();
}

} // namespace ulmpi::mpi
