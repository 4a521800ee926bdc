#include "ft/intra/section.h"

#include "ft/intra/profile.h"
#include "ft/intra/stage.h"
#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/shared_region.h"

#include <cstdio>
#include <ctime>
#include <utility>

namespace ulmpi::intra {

namespace {

const rt::ChoiceParam profile_p{
    "intra_profile", "off",
    "print at MPI_Finalize where each replica's intra-parallel sections spent their time: off, "
    "wall (elapsed) or cpu (the thread's CPU time)",
    "off|wall|cpu"};

} // namespace

rt::Nanos profile_now()
{
    static const bool cpu = profile_p.get() == "cpu";
    if (!cpu) {
        return rt::now_ns();
    }
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<rt::Nanos>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Section::Section(ulm::Engine& eng, rep::Replicator* rep) : eng_(eng), rep_(rep)
{
    if (rep_ != nullptr && rep_->set().replicas() >= 2) {
        prepare_stage();
    }
}

void Section::report() const
{
    if (profile_p.get() == "off" || stats_.sections == 0) {
        return;
    }
    const double n = static_cast<double>(stats_.sections);
    auto us = [n](std::uint64_t ns) { return static_cast<double>(ns) / n / 1000.0; };
    std::fprintf(stderr,
                 "intra_profile: replica %d: %llu sections, per section (%s us): post %.1f tasks %.1f "
                 "send+progress %.1f wait %.1f rerun %.1f; updates complete before the wait "
                 "%llu of %llu; sent %llu bytes, %llu of them staged (%s); read %llu bytes from "
                 "a sibling's shared area\n",
                 rep_ != nullptr ? rep_->replica() : 0,
                 static_cast<unsigned long long>(stats_.sections), profile_p.get().c_str(), us(stats_.ns_post),
                 us(stats_.ns_tasks), us(stats_.ns_send), us(stats_.ns_wait), us(stats_.ns_rerun),
                 static_cast<unsigned long long>(stats_.rx_early),
                 static_cast<unsigned long long>(stats_.rx_total),
                 static_cast<unsigned long long>(stats_.update_bytes),
                 static_cast<unsigned long long>(process_stage().sent()),
                 process_stage().shared() ? "shared" : "private",
                 static_cast<unsigned long long>(rt::shared_read_bytes()));
}

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
        // A re-creation of a dead sibling held back while the section ran
        // happens now, at its end: the new process starts here, between
        // sections, with every update in (a program whose MPI calls outside
        // sections need no progress, one rank's, would otherwise never give
        // it a chance before MPI_Finalize).
        eng_.progress();
    }
    tasks_.clear();
    defs_.clear();
    return st;
}

} // namespace ulmpi::intra
