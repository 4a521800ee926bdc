// FT-MPI recovery: the gate, the recovery agreement, applying its outcome
// to MPI_COMM_WORLD, MPI_COMM_SELF and the other communicators. The design
// is in mpi/ftmpi.h.
#include "mpi/ftmpi.h"

#include "mpi/coll/coll.h"
#include "mpi/comm_coll.h"
#include "mpi/comm_ctx.h"
#include "mpi/errors.h"
#include "mpi/ft_comm.h"
#include "mpi/ftmpi_rebuild.h"
#include "mpi/state.h"
#include "runtime/clock.h"
#include "runtime/log.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace ulmpi::mpi {

namespace coll {
const Table& blank_table(); // mpi/ftmpi_blank_coll.cpp
}

namespace {

// Agreement keys of the recovery epochs: kRecoveryCtx + epoch (never a
// communicator's context: those stay below kMaxGeneration << 16).
constexpr std::uint32_t kRecoveryCtx = 0xffe0'0000u;
constexpr std::uint32_t kMaxGeneration = 0xffdfu;
// How long an ATOMIC collective that failed elsewhere waits to hear of
// the failure that made it fail.
constexpr std::int64_t kFailureNoticeWaitNs = 5'000'000'000;
// The agreement of MPI_Finalize.
constexpr std::uint32_t kFinalCtx = 0xffef'ffffu;

class Ftmpi final : public ulm::ProgressHook {
public:
    bool on = false;
    ft::FtmpiModes modes;
    int epoch = 0;                 // recoveries applied
    std::vector<int> members;      // MPI_COMM_WORLD's world ranks (BLANK: holes included)
    std::vector<char> hole;        // per world rank: removed by a recovery
    std::vector<int> live;         // members that are not holes
    int live_rank = 0;
    std::size_t notified = 0;      // detector failures the program was told of
    bool recognized = false;       // told of a failure that is not recovered (manual)
    bool callbacks_due = false;    // the delete callbacks of a recovery have not run
    int handle = 0;                // the running recovery agreement
    std::vector<int> last_ranks;   // ranks in MPI_COMM_WORLD (before) the last recovery removed
    int error_code = 0;            // FTMPI_ERROR_FAILURE
    std::vector<Group*> graveyard; // world groups replaced (schedules may still point in)
    bool in_callbacks = false;
    std::vector<int> atomic_pending; // ATOMIC agreements joined by a refused collective
    bool join = false;               // another process began this epoch's recovery
    bool restarted = false;          // this process replaces a failed one (REBUILD)
    bool applying = false;           // inside apply() (REBUILD progresses in its fences)

    int poll() override;
    void start();
    void apply();
};

Ftmpi& F()
{
    static Ftmpi f;
    return f;
}

// Every failure known here is recovered: a hole (BLANK, SHRINK) or
// replaced by a new process (REBUILD: the detector has revived it).
bool covered()
{
    const Ftmpi& f = F();
    const ft::Detector& d = *state().detector;
    for (int w : d.failed_ranks()) {
        if (d.failed(w) && !f.hole[static_cast<std::size_t>(w)]) {
            return false;
        }
    }
    return true;
}

void open_gates()
{
    for (Comm* c : ft_state().comms) {
        c->ft_gate = true;
    }
}

void close_gates()
{
    for (Comm* c : ft_state().comms) {
        c->ft_gate = false;
    }
}

void on_failure(int) { open_gates(); }

// The epoch's key as a pseudo-communicator of the live members, so that
// a revoke of it (Ftmpi::start) reaches them all.
void attach_epoch()
{
    const std::uint32_t key = kRecoveryCtx + static_cast<std::uint32_t>(F().epoch);
    ft_state().revoker->attach(key, F().live, [] { F().join = true; });
}

void recompute_live()
{
    Ftmpi& f = F();
    f.live.clear();
    const int me = state().engine.rank();
    for (int w : f.members) {
        if (!f.hole[static_cast<std::size_t>(w)]) {
            if (w == me) {
                f.live_rank = static_cast<int>(f.live.size());
            }
            f.live.push_back(w);
        }
    }
}

std::string rank_list(const std::vector<int>& ranks)
{
    std::string s;
    for (int r : ranks) {
        s += (s.empty() ? "" : ", ") + std::to_string(r);
    }
    return s.empty() ? "none" : s;
}

// Re-registers a predefined communicator whose contexts changed.
void reattach(Comm* c, ulm::ContextId old_ctx)
{
    FtState& fs = ft_state();
    fs.comms.erase(std::remove(fs.comms.begin(), fs.comms.end(), c), fs.comms.end());
    fs.revoker->detach(old_ctx.value());
    ft_attach(c);
    // Holes (BLANK) and replaced ranks (REBUILD) are not failures of the
    // communicator any more.
    std::erase_if(c->ft_failed, [](int w) {
        return F().hole[static_cast<std::size_t>(w)] != 0 || !state().detector->failed(w);
    });
    c->ft_acked = 0;
}

// The delete callbacks of MPI_COMM_WORLD's attributes, in the order set.
void run_callbacks()
{
    Ftmpi& f = F();
    if (!f.callbacks_due || f.in_callbacks) {
        return;
    }
    f.callbacks_due = false;
    f.in_callbacks = true;
    Comm* w = state().world;
    std::vector<Keyval*> keys;
    if (w->attrs != nullptr) {
        for (const Attr& a : w->attrs->items) {
            keys.push_back(a.keyval);
        }
    }
    for (Keyval* k : keys) {
        ++k->refs; // the callback may free the key
        if (int e = attr_delete(w->attrs, AttrKind::comm, MPI_COMM_WORLD, k)) {
            ULMPI_WARN("FT-MPI recovery: the delete callback of keyval 0x%x returned %d",
                       static_cast<unsigned>(k->id), e);
        }
        keyval_release(k);
    }
    f.in_callbacks = false;
}

// MPI_Error_string of FTMPI_ERROR_FAILURE names the ranks the last
// recovery removed, in MPI_COMM_WORLD's numbering before it.
void set_error_text()
{
    Ftmpi& f = F();
    if (f.error_code == 0) {
        f.error_code = add_error_code(MPI_ERR_OTHER);
    }
    const std::string text = "FT-MPI recovery " + std::to_string(f.epoch) +
                             ": failed ranks of MPI_COMM_WORLD: " + rank_list(f.last_ranks);
    (void)set_error_string(f.error_code, text.c_str());
}

} // namespace

int Ftmpi::poll()
{
    if (!on || applying) {
        return 0;
    }
    ft::Agreements& a = *ft_state().agreements;
    for (std::size_t i = 0; i < atomic_pending.size();) {
        if (a.done(atomic_pending[i])) {
            a.finish(atomic_pending[i]);
            atomic_pending[i] = atomic_pending.back();
            atomic_pending.pop_back();
        } else {
            ++i;
        }
    }
    if (handle == 0 && (join || a.has(kRecoveryCtx + static_cast<std::uint32_t>(epoch)))) {
        start(); // another process began this epoch's recovery: join it
    }
    if (handle != 0 && a.done(handle)) {
        apply();
        return 1;
    }
    return 0;
}

void Ftmpi::start()
{
    if (handle != 0) {
        return;
    }
    const ft::Detector& d = *state().detector;
    const int n = state().engine.size();
    ft::AgreeValue v;
    v.mask.assign(static_cast<std::size_t>((n + 31) / 32), 0);
    for (int w = 0; w < n; ++w) {
        if (!d.failed(w)) {
            v.mask[static_cast<std::size_t>(w / 32)] |= 1u << (w % 32);
        }
    }
    std::vector<bool> acked(live.size(), true);
    const std::uint32_t key = kRecoveryCtx + static_cast<std::uint32_t>(epoch);
    handle = ft_state().agreements->start(key, 0, live, v, acked);
    ULMPI_DEBUG("FT-MPI recovery %d: %s its agreement (%zu live members)", epoch + 1,
                join ? "joined" : "started", live.size());
    // Tell every survivor, whatever it is doing: the agreement alone would
    // not reach a member that does not take part (its gather goes up to the
    // root). A revoke of the epoch's key is a reliable broadcast.
    if (!ft_state().revoker->revoked(key)) {
        ft_state().revoker->revoke(key);
    }
}

void Ftmpi::apply()
{
    State& s = state();
    FtState& fs = ft_state();
    const ft::AgreeOutcome o = fs.agreements->outcome(handle);
    fs.agreements->finish(handle);
    handle = 0;
    const int me = s.engine.rank();

    // The processes this recovery removes, the same everywhere.
    std::vector<char> gone(live.size(), 0);
    for (int i : o.failed) {
        gone[static_cast<std::size_t>(i)] = 1;
    }
    for (std::size_t i = 0; i < live.size(); ++i) {
        const int w = live[i];
        const std::size_t word = static_cast<std::size_t>(w / 32);
        if (word < o.value.mask.size() && (o.value.mask[word] & (1u << (w % 32))) == 0) {
            gone[i] = 1;
        }
    }
    std::vector<int> removed;
    last_ranks.clear();
    for (std::size_t i = 0; i < live.size(); ++i) {
        if (gone[i]) {
            const int w = live[i];
            if (w == me) {
                ULMPI_ERROR("FT-MPI recovery %d counted this process as failed; exiting", epoch);
                _exit(1);
            }
            removed.push_back(w);
            const auto at = std::find(members.begin(), members.end(), w) - members.begin();
            last_ranks.push_back(static_cast<int>(at));
        }
    }
    const bool rebuild = modes.comm == ft::CommMode::rebuild;
    for (int w : removed) {
        hole[static_cast<std::size_t>(w)] = rebuild ? 0 : 1;
        if (!s.detector->failed(w)) {
            s.detector->learned(w, "the FT-MPI recovery agreed it failed");
        }
    }
    ft_state().revoker->detach(kRecoveryCtx + static_cast<std::uint32_t>(epoch));
    join = false;
    ++epoch;
    const bool reset = modes.msg == ft::MsgMode::reset;
    if (context_generation_coll() >= kMaxGeneration) {
        s.boot->abort(1, "rank " + std::to_string(me) + ": too many FT-MPI recoveries");
    }
    set_context_generations(reset ? context_generation_p2p() + 1 : context_generation_p2p(),
                            context_generation_coll() + 1);

    // Every communicator but the predefined ones is invalid from now on,
    // and every group (the predefined communicators' are renewed below).
    group_end_era();
    const std::vector<Comm*> comms = fs.comms;
    for (Comm* c : comms) {
        if (c == s.world || c == s.self) {
            continue;
        }
        c->ft_stale = true;
        c->ft_gate = true;
        if (reset) {
            s.engine.interrupt_context(c->ctx, rt::Errc::peer_failed);
        }
        s.engine.interrupt_context(c->coll_ctx, rt::Errc::peer_failed);
        fs.revoker->detach(c->ctx.value());
        for (ulm::ContextId x : {c->ctx, c->coll_ctx}) {
            if (rebuild) {
                fs.agreements->abandon(x.value()); // the new processes never join them
            }
            fs.agreements->retire(x.value());
            fs.agreements->drop(x.value());
        }
        fs.comms.erase(std::remove(fs.comms.begin(), fs.comms.end(), c), fs.comms.end());
    }
    // Context ids as after MPI_Init: communicators re-created in the same
    // order get the same ids everywhere.
    fs.quarantine.clear();
    context_reset_predefined();
    if (rebuild && !removed.empty()) {
        // New processes for the removed ranks, wired up before the
        // communicators are re-created (the state they take is this one).
        FtmpiSnapshot snap;
        snap.epoch = epoch;
        snap.gen_p2p = context_generation_p2p();
        snap.gen_coll = context_generation_coll();
        snap.modes = modes;
        snap.last_ranks = last_ranks;
        applying = true;
        const std::vector<int> joined = ftmpi_rebuild_replace(removed, snap);
        applying = false;
        ULMPI_DEBUG("FT-MPI recovery %d: %zu of %zu new process(es) joined", epoch,
                    joined.size(), removed.size());
    }

    for (Comm* c : {s.world, s.self}) {
        const ulm::ContextId old_ctx = c->ctx;
        if (reset) {
            s.engine.interrupt_context(c->ctx, rt::Errc::peer_failed);
        }
        s.engine.interrupt_context(c->coll_ctx, rt::Errc::peer_failed);
        if (rebuild) {
            fs.agreements->abandon(c->ctx.value());
            fs.agreements->abandon(c->coll_ctx.value());
        }
        fs.agreements->retire(c->ctx.value()); // MPIX_Comm_agree's sequence starts again
        fs.agreements->drop(c->ctx.value());
        c->ctx = context_p2p(c->ctx_pair);
        c->coll_ctx = context_coll(c->ctx_pair);
        if (c->coll) {
            // Collective tags start again; BLANK's table is chosen anew. (Not
            // reset(): a collective interrupted by this recovery still runs.)
            c->coll->seq = 0;
            c->coll->table = &coll::flat_table();
        }
        c->ft_agree_seq = 0;
        c->ftmpi_atomic_seq = 0;
        if (c == s.world && modes.comm == ft::CommMode::shrink) {
            std::vector<int> survivors;
            int my_rank = 0;
            for (int w : members) {
                if (!hole[static_cast<std::size_t>(w)]) {
                    if (w == me) {
                        my_rank = static_cast<int>(survivors.size());
                    }
                    survivors.push_back(w);
                }
            }
            graveyard.push_back(c->local);
            c->local = group_new(survivors);
            c->rank = my_rank;
            members = std::move(survivors);
        }
        if (Group* fresh = group_renew(c->local); fresh != c->local) {
            graveyard.push_back(c->local); // a handle to it is out: it stays stale
            c->local = fresh;
        }
        reattach(c, old_ctx);
    }
    recompute_live();
    attach_epoch();
    set_error_text();
    callbacks_due = true;
    open_gates();
    ULMPI_DEBUG("FT-MPI recovery %d: removed world rank(s) %s; MPI_COMM_WORLD has %d ranks (%s)",
                epoch, rank_list(removed).c_str(), s.world->size(), ft::mode_name(modes.comm));
}

namespace {

// Recovers until every failure this process knows of is recovered.
void recover_wait()
{
    Ftmpi& f = F();
    while (!covered()) {
        f.start();
        const int e = f.epoch;
        state().engine.wait([&f, e] { return f.epoch != e; });
    }
}

// A blocking collective refused by the gate in ATOMIC mode still takes
// part in its outcome agreement (as a failure), so that the members that
// ran it learn it failed here and nobody waits for this process.
void atomic_refuse(Comm* c)
{
    Ftmpi& f = F();
    FtState& fs = ft_state();
    ft::AgreeValue v;
    v.flag = 0;
    const std::vector<int> members = ft_members(c);
    f.atomic_pending.push_back(fs.agreements->start(c->coll_ctx.value(), c->ftmpi_atomic_seq++,
                                                    members, v,
                                                    std::vector<bool>(members.size(), true)));
}

// The gate without raising: the notification, the recovery, the
// "failure recognized" state. Returns an error class and its text.
int gate(Comm* c, std::string& why, bool atomic_coll = false)
{
    Ftmpi& f = F();
    State& s = state();
    if (c->ft_stale) {
        why = c->display_name() + " is invalid: FT-MPI recovery " + std::to_string(f.epoch) +
              " re-created MPI_COMM_WORLD; free it and build it again";
        return MPI_ERR_COMM;
    }
    f.poll();
    const std::vector<int>& failed = s.detector->failed_ranks();
    const bool refuse = f.notified < failed.size() || (f.recognized && c != s.self);
    // Only while this process is still in the epoch of the failure: once
    // its recovery was applied (in the background), the collective it
    // refuses is not the one the others ran, and they stop waiting anyway.
    if (refuse && atomic_coll && f.modes.coll == ft::CollMode::atomic && !covered()) {
        atomic_refuse(c);
    }
    if (f.notified < failed.size()) {
        // This call meets the failure: it reports it.
        std::vector<int> fresh(failed.begin() + static_cast<std::ptrdiff_t>(f.notified),
                               failed.end());
        f.notified = failed.size();
        f.recognized = true;
        const bool automatic = f.modes.recovery == ft::RecoveryMode::automatic;
        if (automatic) {
            recover_wait();
            f.recognized = false;
            run_callbacks();
        }
        why = "process failure: world rank(s) " + rank_list(fresh) + " failed; " +
              (automatic ? "MPI_COMM_WORLD was recovered (FT-MPI recovery " +
                               std::to_string(f.epoch) + ", " + ft::mode_name(f.modes.comm) + ")"
                         : std::string("recover (MPIX_Ftmpi_recover or "
                                       "MPI_Comm_dup(MPI_COMM_WORLD)) before communicating"));
        return MPI_ERR_OTHER;
    }
    if (f.recognized && c != s.self) {
        // Manual recovery: until the program recovers (even when another
        // process's recovery already re-created MPI_COMM_WORLD here).
        why = "a process failure was recognized and this process did not recover yet: call "
              "MPIX_Ftmpi_recover or MPI_Comm_dup(MPI_COMM_WORLD)";
        return MPI_ERR_OTHER;
    }
    run_callbacks();
    if (!f.recognized && !f.callbacks_due && f.handle == 0 && covered()) {
        close_gates();
    }
    return MPI_SUCCESS;
}

bool has_hole(const Comm* c)
{
    const Ftmpi& f = F();
    for (int w : c->local->world) {
        if (f.hole[static_cast<std::size_t>(w)]) {
            return true;
        }
    }
    return false;
}

} // namespace

bool ftmpi_on() { return F().on; }

bool ftmpi_restarted() { return F().restarted; }

ft::FtmpiModes& ftmpi_modes() { return F().modes; }

void ftmpi_init()
{
    Ftmpi& f = F();
    State& s = state();
    f.modes = ft::ftmpi_modes_from_params();
    if (!f.modes.on()) {
        return;
    }
    if (f.modes.comm == ft::CommMode::rebuild && !s.boot->job().respawnable) {
        s.boot->abort(1, "rank " + std::to_string(s.engine.rank()) +
                             ": ft_mode=rebuild needs a launcher that can start processes "
                             "into the job: mpirun --ft-mode rebuild (not " +
                             s.boot->name() + " with ULMPI_FT_MODE alone)");
    }
    if (!ft_enabled()) {
        s.boot->abort(1, "rank " + std::to_string(s.engine.rank()) +
                             ": FT-MPI modes need a fault-tolerant job (mpirun --with-ft ulfm)");
    }
    f.on = true;
    const int n = s.engine.size();
    f.members.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        f.members[static_cast<std::size_t>(i)] = i;
    }
    f.hole.assign(static_cast<std::size_t>(n), 0);
    FtmpiSnapshot snap;
    if (ftmpi_rebuild_join(snap)) {
        // A new process: the survivors' recovery count, contexts, modes.
        f.restarted = true;
        f.modes = snap.modes;
        f.epoch = snap.epoch;
        f.last_ranks = snap.last_ranks;
        set_context_generations(snap.gen_p2p, snap.gen_coll);
        for (Comm* c : {s.world, s.self}) {
            const ulm::ContextId old_ctx = c->ctx;
            c->ctx = context_p2p(c->ctx_pair);
            c->coll_ctx = context_coll(c->ctx_pair);
            reattach(c, old_ctx);
        }
        set_error_text();
    }
    recompute_live();
    attach_epoch();
    s.detector->add_listener(&on_failure);
    s.engine.add_progress_hook(&f);
}

void ftmpi_finalize()
{
    Ftmpi& f = F();
    if (!f.on) {
        return;
    }
    // Survivors leave together: one agreement over every world rank (the
    // failed ones do not contribute). While it waits, this process keeps
    // joining the recoveries of those still working.
    State& s = state();
    FtState& fs = ft_state();
    std::vector<int> all(static_cast<std::size_t>(s.engine.size()));
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i] = static_cast<int>(i);
    }
    const int h = fs.agreements->start(kFinalCtx, 0, all, ft::AgreeValue{},
                                       std::vector<bool>(all.size(), true));
    s.engine.wait([&] { return fs.agreements->done(h); });
    fs.agreements->finish(h);
    while (f.handle != 0) {
        s.engine.progress(); // a recovery joined on the way: let it end
    }
    state().engine.remove_progress_hook(&f);
    fs.revoker->detach(kRecoveryCtx + static_cast<std::uint32_t>(f.epoch));
    f.on = false;
    for (Group* g : f.graveyard) {
        group_release(g);
    }
    f.graveyard.clear();
}

int ftmpi_check(Comm* c, const char* fn, bool coll)
{
    Ftmpi& f = F();
    if (c->ft_gate || c->ft_stale) {
        std::string why;
        // Nonblocking collectives (MPI_I...) have no outcome agreement.
        const bool atomic_coll =
            coll && !(std::strncmp(fn, "MPI_I", 5) == 0 && std::strncmp(fn, "MPI_Inter", 9) != 0);
        if (int e = gate(c, why, atomic_coll)) {
            return raise(c, e, fn, "%s", why.c_str());
        }
    }
    if (coll && f.modes.comm == ft::CommMode::blank && f.epoch > 0 && !c->inter()) {
        coll::CommColl& cc = coll::comm_coll(c);
        if (cc.table != &coll::blank_table() && has_hole(c)) {
            cc.table = &coll::blank_table();
        }
    }
    if (coll) {
        // ULFM's rule (a member failed) is replaced by the gate above; a
        // revoked communicator is still refused.
        if (c->revoked) {
            return raise(c, kErrRevoked, fn, "the communicator was revoked");
        }
    }
    return MPI_SUCCESS;
}

void ftmpi_before_raise()
{
    Ftmpi& f = F();
    if (!f.on || f.in_callbacks) {
        return;
    }
    // An error that a failure caused (an operation with the failed process,
    // an interrupted collective) is the call that meets it.
    const std::size_t known = state().detector->failed_ranks().size();
    if (f.notified < known) {
        f.notified = known;
        f.recognized = true;
        if (f.modes.recovery == ft::RecoveryMode::automatic) {
            recover_wait();
            f.recognized = false;
            run_callbacks();
        }
    }
}

int ftmpi_phase_error(Comm* c)
{
    if (!c->ft_gate && !c->ft_stale) {
        return c->revoked ? kErrRevoked : MPI_SUCCESS;
    }
    std::string why;
    int e = gate(c, why);
    if (e != MPI_SUCCESS) {
        ULMPI_DEBUG("%s", why.c_str());
    }
    return e;
}

int ftmpi_recover(const char* fn)
{
    Ftmpi& f = F();
    if (!f.on) {
        return MPI_SUCCESS;
    }
    (void)fn;
    recover_wait();
    f.notified = state().detector->failed_ranks().size();
    f.recognized = false;
    run_callbacks();
    return MPI_SUCCESS;
}

int ftmpi_dup_trigger(Comm* c, const char* fn)
{
    Ftmpi& f = F();
    if (!f.on || c != state().world) {
        return MPI_SUCCESS;
    }
    f.poll();
    if (f.recognized || f.notified < state().detector->failed_ranks().size() || !covered()) {
        return ftmpi_recover(fn);
    }
    return MPI_SUCCESS;
}

int ftmpi_coll_outcome(Comm* c, int err)
{
    Ftmpi& f = F();
    if (!f.on || f.modes.coll != ft::CollMode::atomic || c->ft_stale) {
        return err;
    }
    // Every member learns whether the collective succeeded everywhere: a
    // fault-tolerant agreement on the AND of the outcomes. It stops waiting
    // when a recovery begins (a member that left for it will not take part).
    FtState& fs = ft_state();
    ft::AgreeValue v;
    v.flag = err == MPI_SUCCESS ? 1u : 0u;
    const std::vector<int> members = ft_members(c);
    std::vector<bool> acked(members.size(), true);
    const int h = fs.agreements->start(c->coll_ctx.value(), c->ftmpi_atomic_seq++, members, v,
                                       acked);
    const int e = f.epoch;
    // Every live member contributes (having run it, or refused it at the
    // gate); only a recovery applied meanwhile ends the wait early: then no
    // decision can have been made without this process's peers that left.
    state().engine.wait([&] { return fs.agreements->done(h) || f.epoch != e; });
    if (!fs.agreements->done(h)) {
        f.atomic_pending.push_back(h);
        return err != MPI_SUCCESS ? err : MPI_ERR_OTHER;
    }
    const ft::AgreeOutcome o = fs.agreements->outcome(h);
    fs.agreements->finish(h);
    if (o.value.flag == 0 && err == MPI_SUCCESS) {
        // It failed elsewhere: here too (ATOMIC). When a failure made it
        // fail, this process hears of it soon: wait for that (bounded: it
        // may have failed for another reason), so that this call is the one
        // that reports it (and recovers, in automatic mode).
        const std::int64_t until = rt::now_ns() + kFailureNoticeWaitNs;
        state().engine.wait([&] {
            return state().detector->failed_ranks().size() > f.notified || rt::now_ns() > until;
        });
        return MPI_ERR_OTHER;
    }
    return err;
}

const Members* ftmpi_live_members(const Comm* c)
{
    const Ftmpi& f = F();
    if (f.modes.comm != ft::CommMode::blank || f.epoch == 0 || c->inter() || !has_hole(c)) {
        return nullptr;
    }
    static std::vector<int> live;
    static Members m;
    live.clear();
    m.rank = 0;
    for (int r = 0; r < c->local->size(); ++r) {
        const int w = c->local->world[static_cast<std::size_t>(r)];
        if (!f.hole[static_cast<std::size_t>(w)]) {
            if (r == c->rank) {
                m.rank = static_cast<int>(live.size());
            }
            live.push_back(w);
        }
    }
    m.world = live.data();
    m.size = static_cast<int>(live.size());
    return &m;
}

void ftmpi_spread(const Comm* c, std::uint32_t* words, int per)
{
    const Ftmpi& f = F();
    if (ftmpi_live_members(c) == nullptr) {
        return;
    }
    int i = 0;
    for (int r = 0; r < c->local->size(); ++r) {
        i += f.hole[static_cast<std::size_t>(c->local->world[static_cast<std::size_t>(r)])] ? 0 : 1;
    }
    // Backwards: a live member's place is at or after its index among the live.
    for (int r = c->local->size() - 1; r >= 0; --r) {
        std::uint32_t* dst = words + static_cast<std::ptrdiff_t>(r) * per;
        if (f.hole[static_cast<std::size_t>(c->local->world[static_cast<std::size_t>(r)])]) {
            dst[0] = static_cast<std::uint32_t>(MPI_UNDEFINED);
            for (int k = 1; k < per; ++k) {
                dst[k] = 0;
            }
            continue;
        }
        --i;
        if (i != r) {
            std::copy(words + static_cast<std::ptrdiff_t>(i) * per,
                      words + static_cast<std::ptrdiff_t>(i + 1) * per, dst);
        }
    }
}

bool ftmpi_is_hole(int world_rank)
{
    const Ftmpi& f = F();
    return f.on && world_rank >= 0 && static_cast<std::size_t>(world_rank) < f.hole.size() &&
           f.hole[static_cast<std::size_t>(world_rank)] != 0;
}

const std::vector<int>& ftmpi_live() { return F().live; }
int ftmpi_live_rank() { return F().live_rank; }
int ftmpi_failed_count() { return static_cast<int>(F().last_ranks.size()); }
int ftmpi_epoch() { return F().epoch; }

int ftmpi_error_code()
{
    Ftmpi& f = F();
    if (f.error_code == 0 && f.on) {
        set_error_text();
    }
    return f.error_code != 0 ? f.error_code : MPI_SUCCESS;
}

} // namespace ulmpi::mpi
