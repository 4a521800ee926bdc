#include "ft/intra/section.h"

#include "runtime/config.h"
#include "runtime/log.h"

#include <csignal>
#include <cstdio>
#include <utility>

namespace ulmpi::intra {

namespace {

const rt::TextParam kill_p{
    "intra_kill", "",
    "test only: \"R:N\": replica R of every rank dies (SIGKILL) right after posting its N-th "
    "intra-parallel update message"};

bool written(Access a) { return a != Access::in; }

// intra_kill: which replica dies after which update message (0: never).
struct KillPoint {
    int replica = -1;
    std::uint64_t after = 0;
};

KillPoint kill_point()
{
    KillPoint k;
    const std::string& v = kill_p.get();
    unsigned long long after = 0;
    if (!v.empty() && std::sscanf(v.c_str(), "%d:%llu", &k.replica, &after) == 2) {
        k.after = after;
    } else if (!v.empty()) {
        rt::log(rt::LogLevel::warn, "intra_kill=\"%s\" is not REPLICA:COUNT; ignored", v.c_str());
    }
    return k;
}

} // namespace

Section::Section(ulm::Engine& eng, rep::Replicator* rep) : eng_(eng), rep_(rep) {}

rt::Status Section::fail(rt::Errc code, std::string why)
{
    why_ = std::move(why);
    return code;
}

rt::Status Section::begin()
{
    if (in_task_) {
        return fail(rt::Errc::invalid_arg, "called inside a task (sections do not nest)");
    }
    if (open_) {
        return fail(rt::Errc::invalid_arg,
                    "a section is open already (sections do not nest: end it first)");
    }
    open_ = true;
    if (rep_ != nullptr) {
        rep_->hold_forks(true);
    }
    defs_.clear();
    tasks_.clear();
    ++section_;
    ++stats_.sections;
    return rt::Errc::ok;
}

rt::Status Section::add_type(TaskDef def, int* id)
{
    if (!open_ || in_task_) {
        return fail(rt::Errc::invalid_arg, in_task_ ? "called inside a task"
                                                    : "no section is open (begin one first)");
    }
    if (def.fn == nullptr) {
        return fail(rt::Errc::invalid_arg, "the task function is NULL");
    }
    if (def.args.size() >= static_cast<std::size_t>(kMaxArgs)) {
        return fail(rt::Errc::invalid_arg, "a task has at most " + std::to_string(kMaxArgs - 1) +
                                               " parameters");
    }
    for (std::size_t a = 0; a < def.args.size(); ++a) {
        if (def.args[a].layout == nullptr || def.args[a].count < 0) {
            return fail(rt::Errc::invalid_arg,
                        "parameter " + std::to_string(a) + " has no datatype or a negative count");
        }
    }
    *id = static_cast<int>(defs_.size());
    defs_.push_back(std::move(def));
    return rt::Errc::ok;
}

int Section::arg_count(int id) const
{
    return id >= 0 && static_cast<std::size_t>(id) < defs_.size()
               ? static_cast<int>(defs_[static_cast<std::size_t>(id)].args.size())
               : -1;
}

rt::Status Section::launch(int id, void* const* ptrs, const int* counts)
{
    if (!open_ || in_task_) {
        return fail(rt::Errc::invalid_arg, in_task_ ? "called inside a task"
                                                    : "no section is open (begin one first)");
    }
    if (arg_count(id) < 0) {
        return fail(rt::Errc::invalid_arg, "task type " + std::to_string(id) +
                                               " is not registered in this section");
    }
    if (tasks_.size() >= static_cast<std::size_t>(kMaxTasks)) {
        return fail(rt::Errc::invalid_arg,
                    "a section holds at most " + std::to_string(kMaxTasks) + " tasks");
    }
    const TaskDef& d = defs_[static_cast<std::size_t>(id)];
    const std::size_t na = d.args.size();
    Task t;
    t.def = id;
    t.ptrs.assign(ptrs, ptrs + na);
    t.counts.resize(na);
    t.copies.resize(na);
    for (std::size_t a = 0; a < na; ++a) {
        const int c = counts != nullptr ? counts[a] : d.args[a].count;
        if (c < 0) {
            return fail(rt::Errc::invalid_arg, "count " + std::to_string(c) + " of parameter " +
                                                   std::to_string(a) + " is negative");
        }
        t.counts[a] = c;
    }
    tasks_.push_back(std::move(t));
    return rt::Errc::ok;
}

void Section::call(Task& t)
{
    in_task_ = true;
    defs_[static_cast<std::size_t>(t.def)].fn(t.ptrs.data(), t.counts.data());
    in_task_ = false;
}

void Section::restore(Task& t)
{
    const TaskDef& d = defs_[static_cast<std::size_t>(t.def)];
    for (std::size_t a = 0; a < d.args.size(); ++a) {
        if (d.args[a].access == Access::inout) {
            ulm::unpack(t.ref(d, a), 0, t.copies[a].data(), t.copies[a].size());
        }
    }
}

rt::Status Section::end()
{
    if (!open_ || in_task_) {
        return fail(rt::Errc::invalid_arg, in_task_ ? "called inside a task"
                                                    : "no section is open (begin one first)");
    }
    rt::Status st = rt::Errc::ok;
    if (rep_ == nullptr || rep_->set().replicas() < 2) {
        for (Task& t : tasks_) {
            call(t);
        }
        stats_.tasks_run += tasks_.size();
    } else {
        st = run_replicated();
    }
    open_ = false;
    if (rep_ != nullptr) {
        rep_->hold_forks(false);
    }
    tasks_.clear();
    defs_.clear();
    return st;
}

rt::Status Section::run_replicated()
{
    const int n = static_cast<int>(tasks_.size());
    const int r = rep_->set().replicas();
    const int self = rep_->replica();
    static const KillPoint kill = kill_point();

    // 1. A receive for every written parameter of every other slot's task
    //    (dead slots too: see section.h), before any task runs.
    struct Rx {
        ulm::RecvMsg* msg;
        int task;
        int slot;
    };
    std::vector<Rx> rx;
    std::vector<ulm::SendMsg*> tx;
    rt::Status st = rt::Errc::ok;
    for (int i = 0; i < n && st.ok(); ++i) {
        const int o = owner_slot(i, n, r);
        if (o == self) {
            continue;
        }
        Task& t = tasks_[static_cast<std::size_t>(i)];
        const TaskDef& d = defs_[static_cast<std::size_t>(t.def)];
        for (std::size_t a = 0; a < d.args.size(); ++a) {
            if (!written(d.args[a].access)) {
                continue;
            }
            if (d.args[a].access == Access::inout) {
                // The task's input, should it have to run here after a
                // partial update (the paper's Algorithm 1, line 38).
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
            rx.push_back(Rx{m, i, o});
        }
    }

    // 2. My tasks, each update sent to every live sibling as soon as it is ready.
    for (int i = 0; i < n && st.ok(); ++i) {
        if (owner_slot(i, n, r) != self) {
            continue;
        }
        Task& t = tasks_[static_cast<std::size_t>(i)];
        call(t);
        ++stats_.tasks_run;
        const TaskDef& d = defs_[static_cast<std::size_t>(t.def)];
        for (int l = 0; l < r && st.ok(); ++l) {
            if (l == self || !rep_->sibling_alive(l)) {
                continue;
            }
            for (std::size_t a = 0; a < d.args.size(); ++a) {
                if (!written(d.args[a].access)) {
                    continue;
                }
                ulm::SendMsg* m = nullptr;
                const ulm::DataRef ref = t.ref(d, a);
                st = rep_->isend_sibling(l, ref, update_tag(section_, i, static_cast<int>(a)), &m);
                if (!st.ok()) {
                    why_ = "cannot send a task's update";
                    break;
                }
                tx.push_back(m);
                stats_.update_bytes += ref.bytes();
                if (++sent_ == kill.after && self == kill.replica) {
                    eng_.progress(); // (intra_kill: part of the update may have left)
                    std::fflush(nullptr);
                    std::raise(SIGKILL);
                }
            }
        }
        eng_.progress();
    }

    // 3. Every update in, every send gone. A dead slot's receives that are
    //    still outstanding are taken back (nothing more comes from it).
    std::size_t rx_done = 0;
    std::size_t tx_done = 0;
    std::uint32_t dead = 0;
    auto reclaim = [&] {
        for (std::size_t j = rx_done; j < rx.size(); ++j) {
            if ((dead & (1u << rx[j].slot)) && !rx[j].msg->complete) {
                (void)eng_.cancel(rx[j].msg); // false: matched since; it completes
            }
        }
    };
    auto finished = [&] {
        for (int l = 0; l < r; ++l) {
            if (l != self && !(dead & (1u << l)) && !rep_->sibling_alive(l)) {
                dead |= 1u << l;
                reclaim();
            }
        }
        while (rx_done < rx.size() && rx[rx_done].msg->complete) {
            ++rx_done;
        }
        while (tx_done < tx.size() && tx[tx_done]->complete) {
            ++tx_done;
        }
        if (rx_done < rx.size() && (dead & (1u << rx[rx_done].slot)) &&
            !rx[rx_done].msg->complete) {
            reclaim(); // a receive that was matched when first asked
        }
        return rx_done == rx.size() && tx_done == tx.size();
    };
    if (st.ok()) {
        eng_.wait(finished);
    } else {
        // Give back what was posted (the section failed; its tasks are not run).
        for (Rx& x : rx) {
            (void)eng_.cancel(x.msg);
        }
        eng_.wait([&] {
            for (Rx& x : rx) {
                if (!x.msg->complete) {
                    (void)eng_.cancel(x.msg);
                    return false;
                }
            }
            for (ulm::SendMsg* m : tx) {
                if (!m->complete) {
                    return false;
                }
            }
            return true;
        });
    }

    // 4. Tasks whose update did not come whole run here, from the copies of step 1.
    std::vector<char> whole(static_cast<std::size_t>(n), 1);
    for (const Rx& x : rx) {
        const ulm::RecvMsg& m = *x.msg;
        if (m.cancelled || m.error != rt::Errc::ok || m.received != m.capacity) {
            whole[static_cast<std::size_t>(x.task)] = 0;
            if (!m.cancelled && m.error != rt::Errc::peer_failed && st.ok() &&
                !(dead & (1u << x.slot))) {
                st = rt::Errc::truncated;
                why_ = "task " + std::to_string(x.task) + "'s update from replica " +
                       std::to_string(x.slot) + " has " + std::to_string(m.received) +
                       " bytes where " + std::to_string(m.capacity) +
                       " were expected (the replicas launched different tasks)";
            }
        }
        eng_.release(x.msg);
    }
    for (ulm::SendMsg* m : tx) {
        eng_.release(m);
    }
    if (!st.ok()) {
        return st;
    }
    for (int i = 0; i < n; ++i) {
        if (owner_slot(i, n, r) == self) {
            continue;
        }
        Task& t = tasks_[static_cast<std::size_t>(i)];
        if (whole[static_cast<std::size_t>(i)]) {
            // (a task that writes nothing has no update and nothing to redo)
            ++stats_.tasks_received;
            continue;
        }
        restore(t);
        call(t);
        ++stats_.tasks_rerun;
        ULMPI_DEBUG("intra: section %llu: task %d of dead replica %d run here",
                    static_cast<unsigned long long>(section_), i, owner_slot(i, n, r));
    }
    return rt::Errc::ok;
}

} // namespace ulmpi::intra
