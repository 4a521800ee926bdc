// Intra-parallel sections: the replicas of a rank share a section's tasks
// instead of each running all of them (Ropars, Lefray, Kim and Schiper,
// "On the use of intra-parallelization in replication", IPDPS 2015;
// docs/intra_parallelization.md).
//
// The program opens a section, registers task types (a function and, per
// parameter, in / out / inout with a datatype and count), launches tasks,
// and closes the section. Launching only records the task; the work is
// done at end(), when the number of tasks n is known:
//
//  * Static split over the R replica slots of the rank: slot k runs tasks
//    [k*n/R, (k+1)*n/R) (the paper's). Every replica computes the same
//    split from n and R alone, so no message is needed to agree on it.
//  * Before running its own tasks a replica copies the inout parameters of
//    every task of the other slots (the task's input, should it have to
//    run here after a partial update: the paper's Algorithm 1 copies them
//    in receive_task_update; the program leaves launched memory untouched
//    until the end of the section, so these are the values at launch), and
//    posts a receive for every written parameter (out, inout) of every
//    task of the other slots, on the replica channel
//    (rep::Replicator::irecv_sibling; tag = section, task, parameter).
//    After each of its own tasks it sends that task's written parameters to
//    every live sibling at once, so that the transfers overlap the next
//    tasks. Then it waits for every update and for its own sends to leave.
//  * Deaths (the replication layer's failure notices,
//    Replicator::sibling_alive). At end() a replica takes the slots it
//    knows alive; the share of a slot it knows dead is split in turn over
//    them (schedule.h: live_owner), so the survivors share it without a
//    message when they know the same deaths. Receives are posted for a dead
//    slot's tasks too, so that an update it sent before dying (it may have
//    been ahead) is used, never left behind. A task whose update did not
//    arrive whole (its sender died before or while sending it) runs here,
//    its inout parameters first restored from those copies, and is sent to
//    nobody.
//  * Survivors that do not know the same deaths yet disagree on owners: a
//    task may be sent by two of them, or by none. With three or more
//    replicas each replica therefore ends its part with a marker to every
//    live sibling: which tasks' updates it sent there (ULM keeps each
//    pair's order, so they all came before it). With every live sibling's
//    marker in, a receive still unmatched gets nothing more (it is taken
//    back and its task runs here) and duplicates are drained. With two
//    replicas a death leaves a lone survivor: nothing to agree on.
//  * Without replication (rep == nullptr or R = 1) end() runs every task.
//
// While the survivors agree, a task's update comes from one process only
// (its owner), and ULM keeps each pair's order, so a receive always matches
// the update of its own section even when a sibling is sections ahead.
#pragma once

#include "ft/intra/task.h"
#include "ft/rep/replicator.h"
#include "runtime/status.h"
#include "ulm/engine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ulmpi::intra {

struct Stats {
    std::uint64_t sections = 0;
    std::uint64_t tasks_run = 0;      // run here as their slot's replica (or without replication)
    std::uint64_t tasks_received = 0; // updates received whole
    std::uint64_t tasks_rerun = 0;    // run here for a dead replica
    std::uint64_t update_bytes = 0;   // sent
    std::uint64_t copied_bytes = 0;   // inout parameters copied for a possible re-run
    // Where the time of end() went (replicated sections; intra_profile prints them)
    std::uint64_t ns_post = 0;   // copies of inout parameters, receives posted
    std::uint64_t ns_tasks = 0;  // own tasks
    std::uint64_t ns_send = 0;   // updates posted and progress between own tasks
    std::uint64_t ns_wait = 0;   // waiting for the last updates and sends
    std::uint64_t ns_rerun = 0;  // tasks run for a dead replica
    std::uint64_t rx_early = 0;  // updates complete before the final wait
    std::uint64_t rx_total = 0;  // update receives posted
};

class Section {
public:
    // `rep`: the replicator of a replicated job, else nullptr.
    Section(ulm::Engine& eng, rep::Replicator* rep);

    // Errors (invalid_arg, with `why_` set): begin() inside a section,
    // add_type/launch/end() outside one, a bad task type or launch.
    rt::Status begin();
    rt::Status add_type(TaskDef def, int* id);
    // `counts` (nullable) overrides the registered counts for this task.
    rt::Status launch(int id, void* const* ptrs, const int* counts);
    rt::Status end();

    bool open() const { return open_; }
    bool in_task() const { return in_task_; }
    int arg_count(int id) const;
    const Stats& stats() const { return stats_; }
    // intra_profile: one line on stderr with where the sections' time went.
    void report() const;
    // Why the last call failed, in one line for the user.
    const std::string& why() const { return why_; }

private:
    // Replicated: makes the staging area (intra_stage_init bytes) now,
    // when sections would stage (section_run.cpp), so that the first one
    // does not pay for making and populating it.
    void prepare_stage();
    rt::Status run_replicated();
    void call(Task& t);
    void restore(Task& t);
    rt::Status fail(rt::Errc code, std::string why);

    ulm::Engine& eng_;
    rep::Replicator* rep_;
    std::vector<TaskDef> defs_;
    std::vector<Task> tasks_;
    std::uint64_t section_ = 0;
    std::uint64_t sent_ = 0; // update messages posted (intra_kill)
    bool open_ = false;
    bool in_task_ = false;
    Stats stats_;
    std::string why_;
};

} // namespace ulmpi::intra
