// Intra-parallel tasks (Ropars, Lefray, Kim and Schiper, IPDPS 2015): what a
// task type and a launched task hold, and the static split of a section's
// tasks over the replica slots of a rank (docs/intra_parallelization.md).
#pragma once

#include "ulm/packer.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ulmpi::intra {

// How a task uses a parameter: read, written, or both. Written parameters
// (out, inout) are the task's update, sent to the other replicas.
enum class Access : std::uint8_t { in = 1, out = 2, inout = 3 };

// A task's code: args[i] is the i-th launch pointer, counts[i] its count.
using TaskFn = void (*)(void** args, const int* counts);

struct ArgDef {
    Access access = Access::in;
    const ulm::Layout* layout = nullptr; // one element of the parameter's datatype
    int count = 0;                       // elements, unless a launch gives its own
};

struct TaskDef {
    TaskFn fn = nullptr;
    std::vector<ArgDef> args;
};

// A launched task. `copies` holds, for every inout parameter of a task
// another replica runs, its packed bytes before any update came: a replica
// that runs the task itself after a partial update (its executor died while
// sending it) starts from them.
struct Task {
    int def = 0;
    std::vector<void*> ptrs;
    std::vector<int> counts;
    std::vector<std::vector<std::byte>> copies; // one per parameter; empty unless inout

    ulm::DataRef ref(const TaskDef& d, std::size_t a) const
    {
        return ulm::DataRef{ptrs[a], static_cast<std::uint64_t>(counts[a]), d.args[a].layout};
    }
};

// The paper's static split: of `n` tasks, the first n/r go to replica slot
// 0, the next to slot 1, ... (slot k runs tasks [k*n/r, (k+1)*n/r)).
inline int owner_slot(int task, int n, int r)
{
    for (int k = 0; k + 1 < r; ++k) {
        const long long end = static_cast<long long>(k + 1) * n / r;
        if (task < end) {
            return k;
        }
    }
    return r - 1;
}

// The tag of the update message of parameter `arg` of task `task` in the
// section numbered `section`: 7 bits of section, 16 of task, 8 of parameter.
inline constexpr int kMaxTasks = 1 << 16;
inline constexpr int kMaxArgs = 1 << 8;
inline int update_tag(std::uint64_t section, int task, int arg)
{
    return static_cast<int>(((section & 0x7f) << 24) | (static_cast<std::uint64_t>(task) << 8) |
                            static_cast<std::uint64_t>(arg));
}

} // namespace ulmpi::intra
