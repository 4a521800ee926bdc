// MPI_Comm_spawn in mpirun: starting new processes into the running job in
// its spawn slots (mpirun --spawn-slots; docs/dynamic_processes.md).
//
//   root      SPAWN(pair, parents, commands) ........ SPAWN_RESULT
//   parents   (told by the root) GROUP_FENCE(g) x 2, connecting between
//   children  HELLO PUT GROUP_FENCE(g) ... GROUP_FENCE(g) ... GROUP_FENCE(wg)
//
// All or nothing: every command, directory and host is checked before any
// process is forked, and a process that still fails to start (its exec
// fails after the check) takes the others of its spawn with it; the
// SPAWN_RESULT then names no process and gives every one an errno. The
// children know their MPI_COMM_WORLD, their parents and the context pair
// of the intercommunicator to them from the environment; group g (parents
// and children) carries their wire-up, group wg (the children) their own
// fences afterwards (MPI_Finalize).
//
// Slots: a slot holds one process at a time. One whose process has ended
// (well: a failed one stays failed) is given again, never-used ones first;
// its new process is the slot's next incarnation (SPAWN_RESULT and
// ULMPI_INCARNATION say which), so that the parents reset their links to
// it (mpi/spawn.cpp) and nothing of the last process reaches the new one.
// Placement: a command with the info key "host" takes slots
// of that host only (these commands are placed first); the others take
// slots of the root's host first, then of the other hosts in job-map order.
#include "runtime/log.h"
#include "runtime/mpirun/monitor.h"
#include "runtime/mpirun/monitor_timing.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace ulmpi::rt::mpirun {

namespace {

std::string join(const std::vector<int>& v)
{
    std::string out;
    for (int x : v) {
        out += (out.empty() ? "" : ",") + std::to_string(x);
    }
    return out;
}

// Where execvp would find `cmd` (0), or the errno it would fail with.
int check_command(const std::string& cmd, const std::string& path_env)
{
    auto runnable = [](const std::string& file) {
        struct stat st{};
        if (::stat(file.c_str(), &st) != 0) {
            return errno;
        }
        if (S_ISDIR(st.st_mode)) {
            return EACCES;
        }
        return ::access(file.c_str(), X_OK) == 0 ? 0 : errno;
    };
    if (cmd.empty()) {
        return ENOENT;
    }
    if (cmd.find('/') != std::string::npos) {
        return runnable(cmd);
    }
    int err = ENOENT;
    std::size_t pos = 0;
    while (pos <= path_env.size()) {
        std::size_t end = path_env.find(':', pos);
        if (end == std::string::npos) {
            end = path_env.size();
        }
        std::string dir = path_env.substr(pos, end - pos);
        const int e = runnable((dir.empty() ? "." : dir) + "/" + cmd);
        if (e == 0) {
            return 0;
        }
        if (e == EACCES) {
            err = EACCES; // found but not runnable, unless a later one is
        }
        pos = end + 1;
    }
    return err;
}

} // namespace

void Monitor::retry_spawns(Nanos now)
{
    std::vector<WaitingSpawn> waiting;
    waiting.swap(waiting_spawns_);
    for (WaitingSpawn& w : waiting) {
        // In order, so that an earlier request gets the slots first; one
        // whose time is up gets its answer (no slot) now.
        on_spawn(w.note, now < w.until ? w.until : 0);
    }
}

void Monitor::on_spawn(const KvServer::Note& n, Nanos wait_until)
{
    const auto& q = std::get<wire::Spawn>(n.msg.body);
    const int root = n.rank;
    wire::SpawnResult res;
    res.id = q.id;
    std::size_t total = 0;
    for (const wire::SpawnApp& a : q.apps) {
        total += static_cast<std::size_t>(a.maxprocs);
    }
    res.procs.assign(total, wire::SpawnedRank{-1, ECANCELED});
    // Every process gets ECANCELED but those of command `app`, which get `err`.
    auto refuse = [&](const std::string& why, int app, int err) {
        res.reason = why;
        std::size_t k = 0;
        for (int i = 0; i < static_cast<int>(q.apps.size()); ++i) {
            for (int j = 0; j < q.apps[static_cast<std::size_t>(i)].maxprocs; ++j, ++k) {
                res.procs[k] = wire::SpawnedRank{-1, i == app ? err : ECANCELED};
            }
        }
        ULMPI_DEBUG("spawn asked by rank %d refused: %s", root, why.c_str());
        kv_->send_to(root, std::move(res));
    };
    if (ending_ || finishing_) {
        refuse("the job is ending", -1, ECANCELED);
        return;
    }
    if (map_.total() == map_.size()) {
        refuse("this job has no spawn slots (start it with mpirun --spawn-slots N)", -1, EAGAIN);
        return;
    }
    if (total == 0) {
        refuse("no process to start (maxprocs is 0)", -1, EINVAL);
        return;
    }
    bool root_in = false;
    for (int p : q.parents) {
        if (p < 0 || p >= map_.total()) {
            refuse("rank " + std::to_string(p) + " is not in this job", -1, EINVAL);
            return;
        }
        root_in = root_in || p == root;
    }
    if (!root_in || q.pair < 2) {
        refuse("malformed SPAWN (the asking rank is not among the parents)", -1, EINVAL);
        return;
    }

    // Where: free slots by node, the root's host first.
    const int root_node = map_.rank(root).node;
    std::vector<int> order;
    order.push_back(root_node);
    for (int h = 0; h < map_.num_nodes(); ++h) {
        if (h != root_node) {
            order.push_back(h);
        }
    }
    std::vector<std::vector<int>> free(static_cast<std::size_t>(map_.num_nodes()));
    for (int h = 0; h < map_.num_nodes(); ++h) {
        const Daemon& d = daemons_[static_cast<std::size_t>(h)];
        if (!map_.host(h).local && (d.lost || d.conn < 0)) {
            continue; // its daemon is gone (or not there yet): nothing starts there
        }
        // Never used first, then those whose process has ended well.
        std::vector<int> again;
        for (int s : map_.host(h).spawn_slots) {
            const Rank& r = ranks_[static_cast<std::size_t>(s)];
            if (!r.spawned) {
                free[static_cast<std::size_t>(h)].push_back(s);
            } else if (r.reaped && !policy_.failed(s)) {
                again.push_back(s);
            }
        }
        free[static_cast<std::size_t>(h)].insert(free[static_cast<std::size_t>(h)].end(),
                                                 again.begin(), again.end());
    }
    std::string path_env;
    for (const std::string& e : base_env_) {
        if (e.rfind("PATH=", 0) == 0) {
            path_env = e.substr(5);
        }
    }
    struct Proc {
        int slot = -1;
        int app = 0;
    };
    std::vector<std::vector<Proc>> by_app(q.apps.size());
    std::vector<std::vector<std::string>> argvs(q.apps.size());
    // Commands with a host first: the others take what is left.
    std::vector<int> app_order;
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < static_cast<int>(q.apps.size()); ++i) {
            if (q.apps[static_cast<std::size_t>(i)].host.empty() == (pass == 1)) {
                app_order.push_back(i);
            }
        }
    }
    for (int i : app_order) {
        const wire::SpawnApp& a = q.apps[static_cast<std::size_t>(i)];
        std::vector<std::string>& argv = argvs[static_cast<std::size_t>(i)];
        argv = a.argv;
        // ./prog is found from mpirun's directory, whatever wdir says.
        if (!cwd_.empty() && argv[0].find('/') != std::string::npos && argv[0][0] != '/') {
            argv[0] = cwd_ + "/" + argv[0];
        }
        if (argv[0].find('/') == std::string::npos &&
            check_command(argv[0], path_env) == ENOENT) {
            // A bare name that is not in PATH: the program in the working
            // directory (the wdir key's, else mpirun's), as MPICH's and Open
            // MPI's launchers find it (MPI_Comm_spawn("worker", ...)).
            const std::string dir = !a.wdir.empty() ? a.wdir : cwd_;
            if (!dir.empty() && check_command(dir + "/" + argv[0], path_env) == 0) {
                argv[0] = dir + "/" + argv[0];
            }
        }
        if (int e = check_command(argv[0], path_env); e != 0) {
            refuse("cannot run '" + a.argv[0] + "': " +
                       (e == ENOENT && a.argv[0].find('/') == std::string::npos
                            ? std::string("not found in PATH")
                            : std::string(std::strerror(e))),
                   i, e);
            return;
        }
        if (!a.wdir.empty()) {
            struct stat st{};
            const int e = ::stat(a.wdir.c_str(), &st) != 0 ? errno
                          : S_ISDIR(st.st_mode)             ? 0
                                                            : ENOTDIR;
            if (e != 0) {
                refuse("wdir '" + a.wdir + "' is not a directory (" + std::strerror(e) + ")", i,
                       e);
                return;
            }
        }
        std::vector<int> nodes;
        if (!a.host.empty()) {
            for (int h = 0; h < map_.num_nodes(); ++h) {
                if (map_.host(h).name == a.host) {
                    nodes.push_back(h);
                }
            }
            if (nodes.empty()) {
                refuse("host '" + a.host + "' is not a host of this job", i, EHOSTUNREACH);
                return;
            }
        } else {
            nodes = order;
        }
        for (int k = 0; k < a.maxprocs; ++k) {
            int slot = -1;
            for (int h : nodes) {
                auto& f = free[static_cast<std::size_t>(h)];
                if (!f.empty()) {
                    slot = f.front();
                    f.erase(f.begin());
                    break;
                }
            }
            if (slot < 0 && wait_until != 0 && !ending_) {
                // Every slot it could take holds a spawned process: wait a
                // little for one to end (a manager that spawns the next
                // worker as the last one leaves MPI).
                bool busy = false;
                for (int h : nodes) {
                    for (int s : map_.host(h).spawn_slots) {
                        const Rank& o = ranks_[static_cast<std::size_t>(s)];
                        busy = busy || (o.spawned && !o.reaped && !policy_.failed(s));
                    }
                }
                if (busy) {
                    ULMPI_DEBUG("spawn asked by rank %d waits for a free slot", root);
                    waiting_spawns_.push_back(WaitingSpawn{n, wait_until});
                    return;
                }
            }
            if (slot < 0) {
                const std::string where =
                    a.host.empty() ? std::string("in the job") : "on host '" + a.host + "'";
                refuse("no free spawn slot " + where + " for " + std::to_string(total) +
                           " process(es): every slot holds a running process, and none ended "
                           "within " + std::to_string(kSpawnSlotWait / kSec) + " s (" +
                           (opts_.spawn_slots > 0
                                ? "mpirun --spawn-slots " + std::to_string(opts_.spawn_slots) +
                                      " per host"
                                : "by default as many per host as its slots, at least " +
                                      std::to_string(kAutoSpawnSlots) +
                                      "; give more with mpirun --spawn-slots N") +
                           ")",
                       i, EAGAIN);
                return;
            }
            by_app[static_cast<std::size_t>(i)].push_back(Proc{slot, i});
        }
    }
    std::vector<Proc> procs; // in command order: the children's world ranks
    for (const auto& list : by_app) {
        procs.insert(procs.end(), list.begin(), list.end());
    }

    // Start them.
    std::vector<int> world;
    for (const Proc& p : procs) {
        world.push_back(p.slot);
    }
    // A slot used before: its new process is the slot's next incarnation
    // (the peers' links to it start again). The key-value service takes
    // the slots now, before the new groups name them.
    for (const Proc& p : procs) {
        Rank& rank = ranks_[static_cast<std::size_t>(p.slot)];
        if (rank.spawned) {
            ++rank.incarnation;
            for (auto* s : {&rank.out, &rank.err}) {
                if (*s) {
                    retired_.push_back(std::move(*s)); // the last process's last words
                }
            }
            for (auto [lines, open] : {std::pair{rank.rout.get(), &rank.rout_open},
                                       std::pair{rank.rerr.get(), &rank.rerr_open}}) {
                if (lines != nullptr && *open) {
                    lines->finish();
                    *open = false;
                }
            }
            rank.discarded = false;
            rank.lost_deadline = 0;
        }
        kv_->rank_spawned(p.slot, rank.incarnation);
    }
    std::string peer_inc; // every slot's incarnation that is not 0
    for (int s = map_.size(); s < map_.total(); ++s) {
        if (const int k = ranks_[static_cast<std::size_t>(s)].incarnation; k > 0) {
            peer_inc += (peer_inc.empty() ? "" : ",") + std::to_string(s) + ":" + std::to_string(k);
        }
    }
    std::vector<int> members = q.parents;
    members.insert(members.end(), world.begin(), world.end());
    const int group = kv_->make_group(members);
    const int world_group = kv_->make_group(world);
    int root_index = 0;
    for (std::size_t i = 0; i < q.parents.size(); ++i) {
        if (q.parents[i] == root) {
            root_index = static_cast<int>(i);
        }
    }
    const std::string world_text = join(world);
    const std::string parent_text = std::to_string(q.pair) + ":" + std::to_string(root_index) +
                                    ":" + join(q.parents);
    std::string failure;
    int failed_app = -1;
    int failed_err = 0;
    std::vector<int> started;
    // Processes of other hosts: one LAUNCH per host and command, to the
    // host's daemon, once the local ones have started.
    std::vector<std::vector<Proc>> remote(static_cast<std::size_t>(map_.num_nodes()));
    for (const Proc& p : procs) {
        const wire::SpawnApp& a = q.apps[static_cast<std::size_t>(p.app)];
        const MapRank& mr = map_.rank(p.slot);
        const MapHost& host = map_.host(mr.node);
        Rank& rank = ranks_[static_cast<std::size_t>(p.slot)];
        rank.spawn_cmd = a.argv[0];
        rank.spawn_wdir = a.wdir.empty() ? opts_.wdir : a.wdir;
        if (!host.local) {
            remote[static_cast<std::size_t>(mr.node)].push_back(p);
            continue;
        }
        int local_size = static_cast<int>(host.ranks.size());
        for (int s : host.spawn_slots) {
            const Rank& o = ranks_[static_cast<std::size_t>(s)];
            local_size += s != p.slot && o.spawned && !o.reaped ? 1 : 0;
        }
        SpawnSpec spec;
        spec.argv = argvs[static_cast<std::size_t>(p.app)];
        spec.env = base_env_;
        append_rank_env(spec.env, rank_env(p.slot, p.app, local_size + 1));
        auto set = [&](const char* name, const std::string& value) {
            spec.env.push_back(std::string(name) + "=" + value);
        };
        set(wire::env::world_ranks, world_text);
        set(wire::env::spawn_groups, std::to_string(group) + ":" + std::to_string(world_group));
        set(wire::env::parent, parent_text);
        if (rank.incarnation > 0) {
            set(wire::env::incarnation, std::to_string(rank.incarnation));
        }
        if (!peer_inc.empty()) {
            set(wire::env::peer_incarnations, peer_inc);
        }
        spec.keep_fds = {board_.fd(), shm_.fd()};
        spec.wdir = a.wdir.empty() ? opts_.wdir : a.wdir;
        spec.stdin_pipe = false;
        spec.sigpipe_ignored = sigpipe_ignored_;

        rank.spawned = true;
        policy_.born(p.slot);
        Child child;
        SpawnFailure fail;
        Status st = spawn_rank(spec, child, fail);
        if (child.pid > 0) {
            rank.pid = child.pid;
            rank.reaped = false;
            rank_of_pid_[child.pid] = p.slot;
            rank.out = std::make_unique<OutputStream>(child.out_fd, out_sink(p.slot, STDOUT_FILENO));
            rank.err = std::make_unique<OutputStream>(child.err_fd, out_sink(p.slot, STDERR_FILENO));
            started.push_back(p.slot);
            ULMPI_DEBUG("spawned rank %d (%s): pid %d", p.slot, spec.argv[0].c_str(),
                        static_cast<int>(child.pid));
        }
        if (!st.ok()) {
            failure = std::string("cannot start '") + a.argv[0] + "' (" + fail.step +
                      "): " + std::strerror(fail.err);
            failed_app = p.app;
            failed_err = fail.err;
            break;
        }
    }
    if (failed_app >= 0) {
        // All or nothing: what started of this spawn goes, unjudged.
        for (int s : started) {
            Rank& r = ranks_[static_cast<std::size_t>(s)];
            r.discarded = true;
            signal_group(r.pid, SIGKILL);
        }
        for (const Proc& p : procs) {
            kv_->rank_gone(p.slot);
        }
        refuse(failure, failed_app, failed_err);
        return;
    }
    for (int h = 0; h < map_.num_nodes(); ++h) {
        const auto& list = remote[static_cast<std::size_t>(h)];
        if (list.empty()) {
            continue;
        }
        const Daemon& d = daemons_[static_cast<std::size_t>(h)];
        for (int i = 0; i < static_cast<int>(q.apps.size()); ++i) {
            wire::Launch l;
            l.jobid = jobid_;
            l.host = host_name(h);
            l.node = h;
            l.size = static_cast<std::uint32_t>(map_.total());
            l.num_nodes = static_cast<std::uint32_t>(map_.num_nodes());
            l.universe_size = static_cast<std::uint32_t>(map_.universe_size());
            l.bind = static_cast<std::uint8_t>(BindMode::none);
            l.cwd = cwd_;
            l.wdir = q.apps[static_cast<std::size_t>(i)].wdir.empty()
                         ? opts_.wdir
                         : q.apps[static_cast<std::size_t>(i)].wdir;
            l.apps = argvs; // the command's index is the processes' MPI_APPNUM
            std::vector<std::string> warnings;
            l.env = base_environment(opts_, warnings);
            l.env.push_back(std::string(wire::env::first_slot) + "=" +
                            std::to_string(map_.size()));
            l.env.push_back(std::string(wire::env::world_ranks) + "=" + world_text);
            l.env.push_back(std::string(wire::env::spawn_groups) + "=" + std::to_string(group) +
                            ":" + std::to_string(world_group));
            l.env.push_back(std::string(wire::env::parent) + "=" + parent_text);
            if (!peer_inc.empty()) {
                l.env.push_back(std::string(wire::env::peer_incarnations) + "=" + peer_inc);
            }
            for (const Proc& p : list) {
                if (p.app != i) {
                    continue;
                }
                wire::LaunchRank lr;
                lr.rank = p.slot;
                lr.local_rank = map_.rank(p.slot).local_rank;
                lr.app = i;
                Rank& rank = ranks_[static_cast<std::size_t>(p.slot)];
                lr.incarnation = rank.incarnation;
                l.ranks.push_back(lr);
                rank.spawned = true;
                rank.remote = true;
                rank.reaped = false; // until its daemon says how it ended
                rank.rout = std::make_unique<OutputSink>(out_sink(p.slot, STDOUT_FILENO));
                rank.rerr = std::make_unique<OutputSink>(out_sink(p.slot, STDERR_FILENO));
                policy_.born(p.slot);
            }
            if (!l.ranks.empty()) {
                listener_.send(d.conn, wire::encode(wire::Message{-1, std::move(l)}));
            }
        }
    }
    for (std::size_t k = 0; k < procs.size(); ++k) {
        res.procs[k] = wire::SpawnedRank{
            procs[k].slot, 0, ranks_[static_cast<std::size_t>(procs[k].slot)].incarnation};
    }
    res.group = group;
    res.world_group = world_group;
    ULMPI_DEBUG("rank %d spawned ranks %s (groups %d, %d)", root, world_text.c_str(), group,
                world_group);
    kv_->send_to(root, std::move(res));
}

} // namespace ulmpi::rt::mpirun
