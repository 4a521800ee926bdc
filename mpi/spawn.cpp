// Dynamic processes (MPI-4.0 chapter 11.8): MPI_Comm_spawn,
// MPI_Comm_spawn_multiple, MPI_Comm_get_parent. docs/dynamic_processes.md
// has the user's view; runtime/mpirun/spawn.cpp the launcher's part.
//
// The parents (every process of the spawning communicator):
//   1. AND their free context pairs (comm_ctx.h) over the communicator;
//      the root takes the lowest pair free everywhere. The children are new
//      processes: every pair but their MPI_COMM_WORLD's and MPI_COMM_SELF's
//      is free there, so the pair is free on both sides.
//   2. The root checks its arguments (commands, argv, maxprocs, info keys)
//      and asks the launcher (Bootstrap::spawn) to start the processes in
//      spawn slots of the job: new world ranks, after the job's own.
//   3. The root broadcasts the outcome: the pair, the fence group and the
//      world rank (or errno) of every process asked for.
//   4. Everyone enters the two rounds of the group's fence that match the
//      children's wire-up in MPI_Init (Engine::init): after it, the
//      children's addresses are known, and the children know ours.
//   5. The intercommunicator: the parents' group, the children's group (in
//      the order of the commands), the agreed pair.
// A failure is all or nothing: no process was started (the launcher checks
// every command, directory and host first); the error class is
// MPI_ERR_SPAWN at every parent, through the communicator's error handler,
// and every entry of array_of_errcodes is MPI_ERR_SPAWN.
//
// A child (spawn_init_parent, in MPI_Init): its MPI_COMM_WORLD is the
// processes started by the same call; the intercommunicator to its parents
// uses the pair and parent list the launcher put in its environment.
// MPI_Comm_get_parent returns it until the program frees or disconnects it.
#include "mpi/spawn.h"

#include "mpi/checks.h"
#include "mpi/comm.h"
#include "mpi/comm_coll.h"
#include "mpi/comm_ctx.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/group.h"
#include "mpi/info.h"
#include "mpi/state.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ulmpi::mpi;

namespace {

using Words = std::vector<std::uint32_t>;

// The intercommunicator to the parents, and the handle it was given (gone
// when the program freed it).
Comm* g_parent = nullptr;
MPI_Comm g_parent_handle = MPI_COMM_NULL;

// A bootstrap fence of the spawn's group that keeps this process's
// progress going: peers may need its answers meanwhile.
ulmpi::rt::Status group_fence(int group)
{
    State& s = state();
    s.boot->set_fence_group(group);
    ulmpi::rt::Status st = s.boot->fence_begin();
    if (st.ok()) {
        s.engine.wait([&] {
            st = s.boot->fence_test();
            return st.code() != ulmpi::rt::Errc::again;
        });
    }
    // Back to this process's own fences: its MPI_COMM_WORLD's group in a
    // spawned process (which may spawn too), the job's otherwise.
    const ulmpi::rt::JobInfo& job = s.boot->job();
    s.boot->set_fence_group(job.spawned ? job.world_group : -1);
    return st;
}

// The root's view of one MPI_Comm_spawn[_multiple] call.
struct RootArgs {
    int count = 0;
    char** commands = nullptr;
    char*** argvs = nullptr; // nullptr: MPI_ARGVS_NULL
    char** argv = nullptr;   // MPI_Comm_spawn's argv (single command)
    bool single = false;
    const int* maxprocs = nullptr;
    const MPI_Info* infos = nullptr;
};

// Builds the launcher's request at the root; "" or what is wrong.
std::string make_request(const RootArgs& a, ulmpi::rt::SpawnRequest& req, int& total)
{
    total = 0;
    if (a.count <= 0) {
        return "count is " + std::to_string(a.count) + " (at least one command is needed)";
    }
    if (a.commands == nullptr || a.maxprocs == nullptr || (!a.single && a.infos == nullptr)) {
        return "a NULL array of commands, maxprocs or info";
    }
    for (int i = 0; i < a.count; ++i) {
        ulmpi::rt::SpawnCommand c;
        if (a.commands[i] == nullptr || a.commands[i][0] == '\0') {
            return "command " + std::to_string(i) + " is empty";
        }
        c.argv.emplace_back(a.commands[i]);
        char** argv = a.single ? a.argv : (a.argvs == nullptr ? nullptr : a.argvs[i]);
        for (int k = 0; argv != nullptr && argv[k] != nullptr; ++k) {
            c.argv.emplace_back(argv[k]);
        }
        if (a.maxprocs[i] < 0 || a.maxprocs[i] > 65536) {
            return "maxprocs " + std::to_string(a.maxprocs[i]) + " of command " +
                   std::to_string(i) + " is out of range";
        }
        c.maxprocs = a.maxprocs[i];
        total += c.maxprocs;
        const MPI_Info h = a.infos[i];
        if (h != MPI_INFO_NULL) {
            const Info* info = info_get(h);
            if (info == nullptr) {
                return "info " + std::to_string(i) + " is not a valid info object";
            }
            if (const std::string* v = info_pairs_find(info->pairs, "host")) {
                c.host = *v;
            }
            if (const std::string* v = info_pairs_find(info->pairs, "wdir")) {
                c.wdir = *v;
            }
            // "path": directories to look for the command in (here, at the
            // root: the job's hosts share their file systems).
            if (const std::string* v = info_pairs_find(info->pairs, "path");
                v != nullptr && c.argv[0].find('/') == std::string::npos) {
                std::size_t pos = 0;
                while (pos <= v->size()) {
                    std::size_t end = v->find(':', pos);
                    end = end == std::string::npos ? v->size() : end;
                    const std::string file = v->substr(pos, end - pos) + "/" + c.argv[0];
                    if (end > pos && ::access(file.c_str(), X_OK) == 0) {
                        c.argv[0] = file;
                        break;
                    }
                    pos = end + 1;
                }
            }
        }
        req.commands.push_back(std::move(c));
    }
    if (total == 0) {
        return "maxprocs is 0 for every command: no process to start";
    }
    return "";
}

int spawn(Comm* c, int root, const RootArgs* args, MPI_Comm* intercomm, int* errcodes,
          const char* fn)
{
    State& s = state();
    const bool is_root = c->rank == root;
    // 1. A context pair free at every parent.
    Members lm = local_members(c);
    ContextMask mask = context_contribution(true);
    {
        Phase ph(c);
        ph.allreduce_band(lm, mask.data(), kContextWords);
        if (int e = ph.run()) {
            return raise(c, e, fn, "the agreement among the parents failed");
        }
    }
    // 2. The root asks the launcher.
    enum : std::uint32_t { ok = 0, bad_arg = 1, refused = 2, no_ctx = 3 };
    Words head = {ok, 0, 0, 0}; // status, pair, group, number of processes
    Words procs; // world rank (or ~0u) per process, then errno, then incarnation per process
    std::string why;
    int total = 0;
    if (is_root) {
        ulmpi::rt::SpawnRequest req;
        why = make_request(*args, req, total);
        const int pair = context_lowest(mask);
        if (!why.empty()) {
            head[0] = bad_arg;
        } else if (pair < 0) {
            head[0] = no_ctx;
        } else {
            req.pair = pair;
            req.root = root;
            req.parents = c->local->world;
            ulmpi::rt::SpawnReply reply;
            ulmpi::rt::Status st = s.boot->spawn(req, reply);
            if (st.code() == ulmpi::rt::Errc::not_supported) {
                head[0] = refused;
                why = std::string("this launcher (") + s.boot->name() +
                      ") cannot start processes into a running job; use mpirun --spawn-slots N";
            } else if (!st.ok()) {
                head[0] = refused;
                why = std::string("the launcher did not answer (") +
                      ulmpi::rt::errc_name(st.code()) + ")";
            } else {
                head[0] = reply.group >= 0 ? ok : refused;
                why = reply.reason;
                head[1] = static_cast<std::uint32_t>(pair);
                head[2] = static_cast<std::uint32_t>(reply.group);
                head[3] = static_cast<std::uint32_t>(reply.ranks.size());
                for (int r : reply.ranks) {
                    procs.push_back(static_cast<std::uint32_t>(r));
                }
                for (int e : reply.errs) {
                    procs.push_back(static_cast<std::uint32_t>(e));
                }
                for (int k : reply.incarnations) {
                    procs.push_back(static_cast<std::uint32_t>(k));
                }
            }
        }
        if (head[0] != ok && head[3] == 0) {
            head[3] = static_cast<std::uint32_t>(total > 0 ? total : 0);
            procs.assign(3 * static_cast<std::size_t>(head[3]), static_cast<std::uint32_t>(-1));
        }
    }
    // 3. Everyone learns the outcome.
    {
        Phase ph(c);
        ph.bcast(lm, root, head.data(), 4);
        if (int e = ph.run()) {
            return raise(c, e, fn, "the root could not tell the outcome to the parents");
        }
    }
    procs.resize(3 * static_cast<std::size_t>(head[3]));
    if (head[3] > 0) {
        Phase ph(c);
        ph.bcast(lm, root, procs.data(), static_cast<int>(procs.size()));
        if (int e = ph.run()) {
            return raise(c, e, fn, "the root could not tell the outcome to the parents");
        }
    }
    const std::size_t n = head[3];
    if (head[0] != ok) {
        if (errcodes != MPI_ERRCODES_IGNORE && is_root) {
            for (int i = 0; i < total; ++i) {
                errcodes[i] = MPI_ERR_SPAWN;
            }
        } else if (errcodes != MPI_ERRCODES_IGNORE) {
            // Only the root knows how many processes were asked for; the
            // launcher's answer (refused) carries one entry per process.
            for (std::size_t i = 0; i < n; ++i) {
                errcodes[i] = MPI_ERR_SPAWN;
            }
        }
        *intercomm = MPI_COMM_NULL;
        const int cls = head[0] == bad_arg ? MPI_ERR_ARG
                        : head[0] == no_ctx ? MPI_ERR_OTHER
                                            : MPI_ERR_SPAWN;
        if (!is_root) {
            return raise(c, cls, fn, "the root (rank %d) could not start the processes", root);
        }
        if (head[0] == no_ctx) {
            return raise(c, cls, fn, "no context id is free on every parent");
        }
        return raise(c, cls, fn, "%s", why.c_str());
    }
    // 4. The children's wire-up, both rounds.
    const int pair = static_cast<int>(head[1]);
    const int group = static_cast<int>(head[2]);
    int unreached = -1; // a child no path reaches (it died before it published)
    // A child in a slot that held another process (incarnation k > 0): my
    // link to the slot starts again in k, and the paths that reached the
    // old process forget it before the children read from them (their
    // first fence), then connect to the new one (round 0 done).
    std::vector<bool> replaced(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        const int w = static_cast<int>(procs[i]);
        const int k = static_cast<int>(procs[2 * n + i]);
        if (k == s.engine.link(w).peer_incarnation) {
            continue;
        }
        if (s.engine.link(w).nrails == 0) {
            s.engine.reset_peer(w, k); // no path reached the slot yet
        } else if (s.engine.replace_peer(w, k).ok()) {
            replaced[i] = true;
        } else {
            unreached = w;
        }
    }
    for (int round = 0; round < 2; ++round) {
        if (ulmpi::rt::Status st = group_fence(group); !st.ok()) {
            *intercomm = MPI_COMM_NULL;
            return raise(c, MPI_ERR_SPAWN, fn,
                         "the wire-up with the new processes failed (bootstrap: %s)",
                         ulmpi::rt::errc_name(st.code()));
        }
        if (round == 0) {
            // Their addresses are known now: children on other hosts get
            // links (on this host shared memory reached their slots already).
            // Round 2 is entered whatever happens: the others wait for it.
            for (std::size_t i = 0; i < n; ++i) {
                const int w = static_cast<int>(procs[i]);
                if (!(replaced[i] ? s.engine.connect_replaced(w) : s.engine.connect_spawned(w))
                         .ok()) {
                    unreached = w;
                }
            }
        }
    }
    if (unreached >= 0 && !s.detector->tolerant()) {
        *intercomm = MPI_COMM_NULL;
        return raise(c, MPI_ERR_SPAWN, fn, "no path reaches the new process %d", unreached);
    }
    // 5. The intercommunicator.
    std::vector<int> children(n);
    for (std::size_t i = 0; i < n; ++i) {
        children[i] = static_cast<int>(procs[i]);
        if (errcodes != MPI_ERRCODES_IGNORE) {
            errcodes[i] = MPI_SUCCESS;
        }
    }
    group_retain(c->local);
    Comm* inter = comm_new(c->local, group_new(std::move(children)), c->rank, pair, c->errhandler);
    if (comm_publish(inter) == MPI_COMM_NULL) {
        *intercomm = MPI_COMM_NULL;
        return raise(c, MPI_ERR_INTERN, fn, "too many communicators");
    }
    *intercomm = inter->handle;
    return MPI_SUCCESS;
}

int check_root(MPI_Comm comm, int root, MPI_Comm* intercomm, const char* fn, Comm** out)
{
    return check_intra_root(comm, root, intercomm, "intercomm", fn, out);
}

} // namespace

namespace ulmpi::mpi {

void spawn_init_parent()
{
    State& s = state();
    const rt::JobInfo& job = s.boot->job();
    if (!job.spawned) {
        return;
    }
    // From now on this process fences with its own MPI_COMM_WORLD only.
    s.boot->set_fence_group(job.world_group);
    int my = 0;
    for (std::size_t i = 0; i < job.world.size(); ++i) {
        if (job.world[i] == job.rank) {
            my = static_cast<int>(i);
        }
    }
    Group* local = group_new(job.world);
    Group* remote = group_new(job.parents);
    g_parent = comm_new(local, remote, my, job.parent_pair, s.world->errhandler);
    comm_retain(g_parent); // kept here, so that a freed handle is told apart
    if (comm_publish(g_parent) != MPI_COMM_NULL) {
        g_parent_handle = g_parent->handle;
        g_parent->name = "MPI_COMM_PARENT";
    }
}

} // namespace ulmpi::mpi

int PMPI_Comm_spawn(const char* command, char* argv[], int maxprocs, MPI_Info info, int root,
                    MPI_Comm comm, MPI_Comm* intercomm, int array_of_errcodes[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_spawn";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_root(comm, root, intercomm, fn, &c)) {
        return e;
    }
    char* cmd = const_cast<char*>(command);
    RootArgs a;
    a.count = 1;
    a.commands = &cmd;
    a.argv = argv;
    a.single = true;
    a.maxprocs = &maxprocs;
    a.infos = &info;
    return spawn(c, root, &a, intercomm, array_of_errcodes, fn);
} catch (...) {
    return api_exception("MPI_Comm_spawn");
}
ULMPI_ALIAS(MPI_Comm_spawn)

int PMPI_Comm_spawn_multiple(int count, char* array_of_commands[], char** array_of_argv[],
                             const int array_of_maxprocs[], const MPI_Info array_of_info[],
                             int root, MPI_Comm comm, MPI_Comm* intercomm,
                             int array_of_errcodes[]) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_spawn_multiple";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_root(comm, root, intercomm, fn, &c)) {
        return e;
    }
    RootArgs a;
    a.count = count;
    a.commands = array_of_commands;
    a.argvs = array_of_argv;
    a.maxprocs = array_of_maxprocs;
    a.infos = array_of_info;
    return spawn(c, root, &a, intercomm, array_of_errcodes, fn);
} catch (...) {
    return api_exception("MPI_Comm_spawn_multiple");
}
ULMPI_ALIAS(MPI_Comm_spawn_multiple)

int PMPI_Comm_get_parent(MPI_Comm* parent) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_get_parent";
    require_init(fn);
    if (parent == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "parent is NULL");
    }
    // MPI_COMM_NULL once the program freed or disconnected it.
    *parent = g_parent != nullptr && g_parent_handle != MPI_COMM_NULL &&
                      comm_get(g_parent_handle) == g_parent
                  ? g_parent_handle
                  : MPI_COMM_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_get_parent");
}
ULMPI_ALIAS(MPI_Comm_get_parent)

int PMPI_Comm_disconnect(MPI_Comm* comm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_disconnect";
    require_init(fn);
    if (comm == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "comm is NULL");
    }
    Comm* c = nullptr;
    if (int e = check_comm(*comm, fn, &c)) {
        return e;
    }
    if (c->predefined) {
        return raise(c, MPI_ERR_COMM, fn, "%s cannot be disconnected", c->display_name().c_str());
    }
    // Every process of both groups has finished its communication on it
    // once each has entered the barrier (its sends completed or matched).
    if (int e = PMPI_Barrier(*comm)) {
        return e;
    }
    return PMPI_Comm_free(comm);
} catch (...) {
    return api_exception("MPI_Comm_disconnect");
}
ULMPI_ALIAS(MPI_Comm_disconnect)
