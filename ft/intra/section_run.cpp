// Section::run_replicated: a section's tasks shared by the live replicas of
// a rank (the outline is in section.h; docs/intra_parallelization.md).
#include "ft/intra/profile.h"
#include "ft/intra/schedule.h"
#include "ft/intra/section.h"
#include "ft/intra/stage.h"

#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/log.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace ulmpi::intra {

namespace {

const rt::TextParam kill_p{
    "intra_kill", "",
    "test only: \"R:N\": replica R of every rank dies (SIGKILL) right after posting its N-th "
    "intra-parallel update message; \"R:N:stage\": instead, halfway through writing that "
    "update into its staging area (right before posting it when it is not staged)"};

const rt::ChoiceParam stage_p{
    "intra_stage", "auto",
    "pack large intra-parallel updates into a staging area before sending them (a shared memfd a "
    "sibling on this host copies from with memcpy; else private memory on huge pages): auto "
    "(when a live sibling is on this host and the area can be shared, or transparent huge pages "
    "are in madvise mode), on, off",
    "auto|on|off"};
const rt::SizeParam stage_min_p{
    "intra_stage_min", 32768,
    "smallest intra-parallel update packed into the sender's staging area on huge pages before "
    "it is sent, when intra_stage allows (a sibling's direct read then pins few pages; 0: send "
    "every update from the program's memory)"};
const rt::BoolParam stage_shared_p{
    "intra_stage_shared", true,
    "make the staging area of intra-parallel updates a shared memfd that a sibling on this host "
    "maps and copies from with memcpy (0: private memory, read with process_vm_readv)"};
const rt::SizeParam stage_max_p{
    "intra_stage_max", std::uint64_t{64} << 20,
    "largest staging area of a replica's updates in one section (bytes; larger updates are sent "
    "from the program's memory)"};

const rt::SizeParam stage_init_p{
    "intra_stage_init", std::uint64_t{2} << 20,
    "staging area of intra-parallel updates made at MPI_Init in a replicated job whose sections "
    "would stage (bytes; it grows at a section that needs more; 0: made at the first such section)"};

bool written(Access a) { return a != Access::in; }

// intra_stage: whether large updates are staged (stage.h), given whether a
// live sibling is on this host (its shared-memory path reads the area).
bool staging_on(bool sibling_here)
{
    static const int mode = [] {
        const std::string& v = stage_p.get();
        return v == "on" ? 1 : v == "off" ? 0 : -1;
    }();
    static const bool thp = [] {
        char text[128] = {};
        if (std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
            const std::size_t got = std::fread(text, 1, sizeof text - 1, f);
            text[got] = '\0';
            std::fclose(f);
        }
        return thp_madvise_mode(text);
    }();
    if (mode >= 0) {
        return mode == 1;
    }
    return sibling_here && ((stage_shared_p.get() && Stage::can_share()) || thp);
}

// Whether a sibling of `live` (bit l: replica l) shares this host.
bool sibling_here(const rep::Replicator& rep, std::uint32_t live)
{
    for (int l = 0; l < rep.set().replicas(); ++l) {
        if (l != rep.replica() && (live & (1u << l)) && rep.sibling_on_my_host(l)) {
            return true;
        }
    }
    return false;
}

// intra_kill: which replica dies after which update message (0: never).
struct KillPoint {
    int replica = -1;
    std::uint64_t after = 0;
    bool in_stage = false; // "R:N:stage": while writing the N-th into the staging area
};

KillPoint kill_point()
{
    KillPoint k;
    const std::string& v = kill_p.get();
    unsigned long long after = 0;
    char how[16] = {};
    const int got = v.empty() ? 0 : std::sscanf(v.c_str(), "%d:%llu:%15s", &k.replica, &after, how);
    if (got == 2 || (got == 3 && std::string(how) == "stage")) {
        k.after = after;
        k.in_stage = got == 3;
    } else if (!v.empty()) {
        k.replica = -1;
        rt::log(rt::LogLevel::warn, "intra_kill=\"%s\" is not REPLICA:COUNT[:stage]; ignored",
                v.c_str());
    }
    return k;
}

[[noreturn]] void die_now()
{
    std::fflush(nullptr);
    std::raise(SIGKILL);
    std::abort();
}

// A posted receive of one parameter of a task's update.
struct Rx {
    ulm::RecvMsg* msg;
    int task;
    int arg;
    int slot; // who should send it, as this replica sees the live slots
};

bool whole(const ulm::RecvMsg& m)
{
    return !m.cancelled && m.error == rt::Errc::ok && m.received == m.capacity;
}

bool all_done(const std::vector<ulm::SendMsg*>& tx)
{
    for (const ulm::SendMsg* m : tx) {
        if (!m->complete) {
            return false;
        }
    }
    return true;
}

// Takes back every receive still outstanding (cancel() is false for one
// whose data flows: it completes).
void cancel_open(ulm::Engine& eng, const std::vector<ulm::RecvMsg*>& msgs)
{
    for (ulm::RecvMsg* m : msgs) {
        if (m != nullptr && !m->complete) {
            (void)eng.cancel(m);
        }
    }
}

bool all_done(const std::vector<ulm::RecvMsg*>& msgs)
{
    for (const ulm::RecvMsg* m : msgs) {
        if (m != nullptr && !m->complete) {
            return false;
        }
    }
    return true;
}

std::vector<ulm::RecvMsg*> msgs_of(const std::vector<Rx>& rx)
{
    std::vector<ulm::RecvMsg*> v;
    v.reserve(rx.size());
    for (const Rx& x : rx) {
        v.push_back(x.msg);
    }
    return v;
}

// The section failed before its tasks ran: give back what was posted.
void abandon(ulm::Engine& eng, const std::vector<ulm::RecvMsg*>& rx,
             const std::vector<ulm::SendMsg*>& tx)
{
    eng.wait([&] {
        cancel_open(eng, rx);
        return all_done(rx) && all_done(tx);
    });
}

// Without markers (two replicas): only a task's owner sends its update, so
// what is still outstanding when its owner dies never comes; a receive
// matched to an update its sender's death cut stays posted and is taken back.
void wait_updates(ulm::Engine& eng, rep::Replicator& rep, int r, int self,
                  const std::vector<Rx>& rx, const std::vector<ulm::SendMsg*>& tx)
{
    std::uint32_t dead = 0;
    auto reclaim = [&] {
        for (const Rx& x : rx) {
            if ((dead & (1u << x.slot)) && !x.msg->complete) {
                (void)eng.cancel(x.msg); // false: matched since; it completes
            }
        }
    };
    eng.wait([&] {
        for (int l = 0; l < r; ++l) {
            if (l != self && !(dead & (1u << l)) && !rep.sibling_alive(l)) {
                dead |= 1u << l;
            }
        }
        if (dead != 0) {
            reclaim(); // (again: a receive matched when first asked may be cut since)
        }
        for (const Rx& x : rx) {
            if (!x.msg->complete) {
                return false;
            }
        }
        return all_done(tx);
    });
}

// With markers (three or more replicas): waits for the marker of every live
// sibling (or its death). Every update a marker's sender sent here came
// before it, so then a receive still unmatched gets nothing more and is
// taken back, and the updates more than one sibling sent (two survivors
// that both ran a dead slot's task) are drained into scratch buffers.
void wait_markers(ulm::Engine& eng, rep::Replicator& rep, std::uint64_t section,
                  const std::vector<Rx>& rx, const std::vector<ulm::RecvMsg*>& mk,
                  const std::vector<TaskBits>& heard, int n,
                  std::vector<std::unique_ptr<std::byte[]>>& scratch,
                  std::vector<ulm::RecvMsg*>& drains)
{
    eng.wait([&] {
        bool all = true;
        for (std::size_t l = 0; l < mk.size(); ++l) {
            ulm::RecvMsg* m = mk[l];
            if (m == nullptr || m->complete) {
                continue;
            }
            if (!rep.sibling_alive(static_cast<int>(l))) {
                (void)eng.cancel(m);
            }
            all = all && bool(m->complete);
        }
        return all;
    });
    std::vector<int> senders(static_cast<std::size_t>(n), 0);
    for (std::size_t l = 0; l < mk.size(); ++l) {
        if (mk[l] == nullptr || !whole(*mk[l])) {
            continue;
        }
        for (int i = 0; i < n; ++i) {
            senders[static_cast<std::size_t>(i)] += heard[l].test(i) ? 1 : 0;
        }
    }
    cancel_open(eng, msgs_of(rx));
    for (const Rx& x : rx) {
        for (int k = 0; k < senders[static_cast<std::size_t>(x.task)]; ++k) {
            const std::uint64_t len = x.msg->capacity;
            scratch.push_back(std::make_unique<std::byte[]>(len > 0 ? len : 1));
            ulm::RecvMsg* d = nullptr;
            if (!rep.irecv_sibling(ulm::DataRef{scratch.back().get(), len, &ulm::bytes_layout()},
                                   update_tag(section, x.task, x.arg), &d)
                     .ok()) {
                break;
            }
            if (eng.cancel(d)) { // nothing queued for this tag
                eng.release(d);
                break;
            }
            drains.push_back(d);
        }
    }
}

// Then every receive and drain complete (or cut by a death and taken
// back), every send gone.
void wait_all(ulm::Engine& eng, rep::Replicator& rep, int r, const std::vector<Rx>& rx,
              const std::vector<ulm::RecvMsg*>& drains, const std::vector<ulm::SendMsg*>& tx)
{
    const std::vector<ulm::RecvMsg*> msgs = msgs_of(rx);
    eng.wait([&] {
        for (int l = 0; l < r; ++l) {
            if (!rep.sibling_alive(l)) {
                cancel_open(eng, msgs);
                cancel_open(eng, drains);
                break;
            }
        }
        return all_done(msgs) && all_done(drains) && all_done(tx);
    });
}

} // namespace

void Section::prepare_stage()
{
    std::uint32_t live = 0;
    for (int l = 0; l < rep_->set().replicas(); ++l) {
        live |= rep_->sibling_alive(l) ? 1u << l : 0u;
    }
    const std::uint64_t bytes = std::min(stage_init_p.get(), stage_max_p.get());
    if (bytes > 0 && stage_min_p.get() > 0 && staging_on(sibling_here(*rep_, live))) {
        (void)process_stage().reserve(bytes, stage_shared_p.get());
    }
}

rt::Status Section::run_replicated()
{
    const int n = static_cast<int>(tasks_.size());
    const int r = rep_->set().replicas();
    const int self = rep_->replica();
    static const KillPoint kill = kill_point();

    // The live slots as this replica knows them now, and the owner of every
    // task under them (schedule.h). Replicas that do not know the same
    // deaths yet disagree on owners; with three or more replicas, markers
    // (below) tell each what the others did send.
    std::uint32_t live = 0;
    for (int l = 0; l < r; ++l) {
        if (l == self || rep_->sibling_alive(l)) {
            live |= 1u << l;
        }
    }
    std::vector<int> owner(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        owner[static_cast<std::size_t>(i)] = live_owner(i, n, r, live);
    }
    const bool markers = r >= 3 && n > 0;

    rt::Nanos t0 = profile_now();
    auto lap = [&t0](std::uint64_t& into) {
        const rt::Nanos t = profile_now();
        into += static_cast<std::uint64_t>(t - t0);
        t0 = t;
    };

    // 1. A receive for every written parameter of every task another slot
    //    runs, and of every task of a dead slot (an update it sent before
    //    dying, when it was ahead, is used and never left behind), before
    //    any task runs; inout parameters copied first (the paper's
    //    Algorithm 1, line 38: the task's input, should it run here after a
    //    partial update).
    std::vector<Rx> rx;
    std::vector<ulm::SendMsg*> tx;
    rt::Status st = rt::Errc::ok;
    for (int i = 0; i < n && st.ok(); ++i) {
        const int o = owner[static_cast<std::size_t>(i)];
        if (o == self && owner_slot(i, n, r) == self) {
            continue;
        }
        Task& t = tasks_[static_cast<std::size_t>(i)];
        const TaskDef& d = defs_[static_cast<std::size_t>(t.def)];
        for (std::size_t a = 0; a < d.args.size(); ++a) {
            if (!written(d.args[a].access)) {
                continue;
            }
            if (d.args[a].access == Access::inout) {
                const ulm::DataRef ref = t.ref(d, a);
                t.copies[a].resize(ref.bytes());
                ulm::pack(ref, 0, t.copies[a].data(), ref.bytes());
                stats_.copied_bytes += ref.bytes();
            }
            ulm::RecvMsg* m = nullptr;
            st = rep_->irecv_sibling(t.ref(d, a), update_tag(section_, i, static_cast<int>(a)), &m);
            if (!st.ok()) {
                why_ = "cannot post the receive of a task's update";
                break;
            }
            rx.push_back(Rx{m, i, static_cast<int>(a), o});
        }
    }
    // The receives of a dead slot's tasks that I run are taken back before
    // they run (the task writes where they would).
    std::vector<char> have(static_cast<std::size_t>(n), 1); // my task's update is here whole
    for (Rx& x : rx) {
        if (owner[static_cast<std::size_t>(x.task)] != self) {
            continue;
        }
        // cancel() is false while the receive is matched and its data
        // flows; a transfer its sender's death cuts puts it back (then the
        // cancel holds).
        eng_.wait([&] {
            if (!x.msg->complete) {
                (void)eng_.cancel(x.msg);
            }
            return bool(x.msg->complete);
        });
        if (!whole(*x.msg)) {
            have[static_cast<std::size_t>(x.task)] = 0;
        }
    }

    // Markers: one from each live sibling, after all its updates of the
    // section (ULM keeps each pair's order), saying which it sent here.
    std::vector<TaskBits> sent_to;
    std::vector<TaskBits> heard;
    std::vector<ulm::RecvMsg*> mk(static_cast<std::size_t>(r), nullptr);
    if (markers) {
        sent_to.assign(static_cast<std::size_t>(r), TaskBits(n));
        heard.assign(static_cast<std::size_t>(r), TaskBits(n));
        for (int l = 0; l < r && st.ok(); ++l) {
            if (l == self || !(live & (1u << l))) {
                continue;
            }
            auto& b = heard[static_cast<std::size_t>(l)].bytes;
            st = rep_->irecv_sibling(ulm::DataRef{b.data(), b.size(), &ulm::bytes_layout()},
                                     marker_tag(section_, l), &mk[static_cast<std::size_t>(l)]);
            if (!st.ok()) {
                why_ = "cannot post the receive of a sibling's end-of-section marker";
            }
        }
    }
    // Staging (stage.h): the updates of my tasks, in the order they are
    // sent, that go out of the staging area rather than the program's memory.
    std::vector<std::uint64_t> sizes;
    for (int i = 0; i < n; ++i) {
        if (owner[static_cast<std::size_t>(i)] != self) {
            continue;
        }
        const Task& t = tasks_[static_cast<std::size_t>(i)];
        const TaskDef& d = defs_[static_cast<std::size_t>(t.def)];
        for (std::size_t a = 0; a < d.args.size(); ++a) {
            if (written(d.args[a].access)) {
                sizes.push_back(t.ref(d, a).bytes());
            }
        }
    }
    StagePlan plan = plan_stage(sizes, staging_on(sibling_here(*rep_, live)) ? stage_min_p.get() : 0,
                                stage_max_p.get());
    Stage& stage = process_stage();
    if (plan.bytes > 0 && !stage.reserve(plan.bytes, stage_shared_p.get())) {
        plan.offset.assign(plan.offset.size(), kDirect);
    }
    std::size_t next_update = 0; // index into plan.offset
    std::vector<ulm::DataRef> from; // per parameter of a task: what it is sent from
    std::vector<char> staged;       // per parameter: 1 staged, 2 packed already
    lap(stats_.ns_post);
    stats_.rx_total += rx.size();

    // 2. My tasks (a dead slot's whose update is here whole need not run),
    //    each update sent to every live sibling as soon as it is ready.
    for (int i = 0; i < n && st.ok(); ++i) {
        if (owner[static_cast<std::size_t>(i)] != self) {
            continue;
        }
        Task& t = tasks_[static_cast<std::size_t>(i)];
        const TaskDef& d = defs_[static_cast<std::size_t>(t.def)];
        if (owner_slot(i, n, r) == self || !have[static_cast<std::size_t>(i)]) {
            if (owner_slot(i, n, r) != self) {
                restore(t);
            }
            call(t);
            ++stats_.tasks_run;
        } else {
            ++stats_.tasks_received;
        }
        lap(stats_.ns_tasks);
        // What each written parameter is sent from: the program's memory,
        // or its packed bytes in the staging area (packed once, for every
        // sibling, when the first one needs it).
        from.assign(d.args.size(), ulm::DataRef{});
        staged.assign(d.args.size(), 0);
        for (std::size_t a = 0; a < d.args.size(); ++a) {
            if (!written(d.args[a].access)) {
                continue;
            }
            from[a] = t.ref(d, a);
            const std::uint64_t off = plan.offset[next_update++];
            if (off != kDirect) {
                from[a] = ulm::DataRef{stage.data() + off, from[a].bytes(), &ulm::bytes_layout()};
                staged[a] = 1;
            }
        }
        for (int l = 0; l < r && st.ok(); ++l) {
            if (l == self || !rep_->sibling_alive(l)) {
                continue;
            }
            bool any = false;
            for (std::size_t a = 0; a < d.args.size(); ++a) {
                if (!written(d.args[a].access)) {
                    continue;
                }
                if (kill.in_stage && self == kill.replica && sent_ + 1 == kill.after) {
                    if (staged[a] == 1) { // (intra_kill=R:N:stage: half of it written)
                        ulm::pack(t.ref(d, a), 0, from[a].base, from[a].count / 2);
                    }
                    die_now();
                }
                if (staged[a] == 1) {
                    // Every byte is written before the message that names
                    // them is posted: a sibling reads the area only once that
                    // message came (after a FIFO's release), so a writer's
                    // death leaves nothing half written it would take.
                    ulm::pack(t.ref(d, a), 0, from[a].base, from[a].count);
                    staged[a] = 2;
                }
                ulm::SendMsg* m = nullptr;
                const ulm::DataRef ref = from[a];
                st = rep_->isend_sibling(l, ref, update_tag(section_, i, static_cast<int>(a)), &m);
                if (!st.ok()) {
                    why_ = "cannot send a task's update";
                    break;
                }
                any = true;
                tx.push_back(m);
                stats_.update_bytes += ref.bytes();
                if (staged[a] != 0) {
                    stage.count_sent(ref.bytes());
                }
                if (++sent_ == kill.after && self == kill.replica && !kill.in_stage) {
                    eng_.progress(); // (intra_kill: part of the update may have left)
                    die_now();
                }
            }
            if (markers && any) {
                sent_to[static_cast<std::size_t>(l)].set(i);
            }
        }
        eng_.progress();
        lap(stats_.ns_send);
    }
    for (int l = 0; markers && l < r && st.ok(); ++l) {
        if (l == self || !rep_->sibling_alive(l)) {
            continue;
        }
        auto& b = sent_to[static_cast<std::size_t>(l)].bytes;
        ulm::SendMsg* m = nullptr;
        st = rep_->isend_sibling(l, ulm::DataRef{b.data(), b.size(), &ulm::bytes_layout()},
                                 marker_tag(section_, self), &m);
        if (!st.ok()) {
            why_ = "cannot send the end-of-section marker";
            break;
        }
        tx.push_back(m);
    }
    for (const Rx& x : rx) {
        stats_.rx_early += x.msg->complete ? 1 : 0;
    }

    // 3. Every update in, every send gone.
    std::vector<std::unique_ptr<std::byte[]>> scratch;
    std::vector<ulm::RecvMsg*> drains;
    if (!st.ok()) {
        std::vector<ulm::RecvMsg*> all = msgs_of(rx);
        all.insert(all.end(), mk.begin(), mk.end());
        abandon(eng_, all, tx);
    } else if (markers) {
        wait_markers(eng_, *rep_, section_, rx, mk, heard, n, scratch, drains);
        wait_all(eng_, *rep_, r, rx, drains, tx);
    } else {
        wait_updates(eng_, *rep_, r, self, rx, tx);
    }
    lap(stats_.ns_wait);

    // 4. Tasks of other slots whose update did not come whole run here, from
    //    the copies of step 1 (nobody expects their update from me).
    std::vector<char> got(static_cast<std::size_t>(n), 1);
    for (const Rx& x : rx) {
        const ulm::RecvMsg& m = *x.msg;
        if (!whole(m)) {
            got[static_cast<std::size_t>(x.task)] = 0;
            if (!m.cancelled && m.error != rt::Errc::peer_failed && st.ok() &&
                rep_->sibling_alive(x.slot) && owner[static_cast<std::size_t>(x.task)] != self) {
                st = rt::Errc::truncated;
                why_ = "task " + std::to_string(x.task) + "'s update from replica " +
                       std::to_string(x.slot) + " has " + std::to_string(m.received) +
                       " bytes where " + std::to_string(m.capacity) +
                       " were expected (the replicas launched different tasks)";
            }
        }
        eng_.release(x.msg);
    }
    for (ulm::RecvMsg* m : drains) {
        eng_.release(m);
    }
    for (ulm::RecvMsg* m : mk) {
        if (m != nullptr) {
            eng_.release(m);
        }
    }
    for (ulm::SendMsg* m : tx) {
        eng_.release(m);
    }
    if (!st.ok()) {
        return st;
    }
    for (int i = 0; i < n; ++i) {
        if (owner[static_cast<std::size_t>(i)] == self) {
            continue;
        }
        if (got[static_cast<std::size_t>(i)]) {
            // (a task that writes nothing has no update and nothing to redo)
            ++stats_.tasks_received;
            continue;
        }
        restore(tasks_[static_cast<std::size_t>(i)]);
        call(tasks_[static_cast<std::size_t>(i)]);
        ++stats_.tasks_rerun;
        ULMPI_DEBUG("intra: section %llu: task %d (slot %d's) run here",
                    static_cast<unsigned long long>(section_), i,
                    owner[static_cast<std::size_t>(i)]);
    }
    lap(stats_.ns_rerun);
    return rt::Errc::ok;
}

} // namespace ulmpi::intra
