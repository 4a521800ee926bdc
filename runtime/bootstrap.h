// Bootstrap: how a rank learns who it is and exchanges wire-up addresses.
//
// Interface (the same whichever launcher started us):
//   job()            rank, size, local rank/size, host of every rank
//   put(key, bytes)  publish a value under (my rank, key)
//   fence()          collective over all ranks: returns once every rank has
//                    called fence; every value put before it is then visible
//   get(rank, key)   read a value another rank put before the last fence
//   abort(code,msg)  end the whole job: the launcher kills every rank and
//                    exits with `code`, printing msg and the calling rank
//   finalize()       tell the launcher this rank finished MPI cleanly
//   poll_event()     failure notices (a rank or host died) pushed by the launcher
//   notice_word()    a word in memory that changes when a notice may be
//                    waiting, so that a caller polls for notices at the cost
//                    of one load (fault-tolerant jobs)
//   respawn(r, k)    ask the launcher for a new process for failed rank r, as
//                    incarnation k; it joins the job's next fence (REBUILD)
//   revived(r, k)    rank r was replaced by its process of incarnation k:
//                    notices about older ones are stale, its next failure news
//
// Implementations: OurBootstrap (mpirun's key-value service over a Unix or TCP
// socket with the job secret), PmixBootstrap (a PMIx server: srun --mpi=pmix,
// PRRTE; built when libpmix is found), Pmi2Bootstrap (the PMI-2 wire protocol
// on PMI_FD: srun --mpi=pmi2, hydra), SingletonBootstrap (a program started
// without a launcher is a job of size 1). docs/slurm.md tells the choice.
#pragma once

#include "runtime/status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ulmpi::rt {

struct JobInfo {
    int rank = 0;
    int size = 1;
    int local_rank = 0;  // index among the ranks on my host
    int local_size = 1;
    int local_cpus = 0;  // CPUs for the ranks of my host before binding (0: unknown)
    int node_id = 0;     // index of my host in the job map
    int num_nodes = 1;
    std::string host;    // my host's name in the job map (not gethostname())
    std::string jobid;   // unique per job; names shared-memory files
    std::vector<int> node_of_rank; // host index of every rank (size entries)
    // Where the job map placed every rank, once a rank has moved (a replica
    // re-created by fork on its substitute's host: Bootstrap::moved); empty
    // while none has, when node_of_rank says it.
    std::vector<int> placed_node_of_rank;
    // Whether ranks a and b share a host's shared-memory segment: they run
    // on one host now, and each on the host the job map placed it on (the
    // segment has a region for every rank placed there, and none for a
    // rank that moved in).
    bool same_segment(int a, int b) const
    {
        const auto n = node_of_rank.size();
        if (a < 0 || b < 0 || static_cast<std::size_t>(a) >= n || static_cast<std::size_t>(b) >= n) {
            return false;
        }
        const auto ua = static_cast<std::size_t>(a);
        const auto ub = static_cast<std::size_t>(b);
        const std::vector<int>& placed = placed_node_of_rank.size() == n ? placed_node_of_rank : node_of_rank;
        return node_of_rank[ua] == node_of_rank[ub] && placed[ua] == node_of_rank[ua] &&
               placed[ub] == node_of_rank[ub];
    }
    int universe_size = 1;
    int appnum = 0;
    // > 0 for a process respawned by fault recovery, or spawned into a
    // spawn slot that held processes before (then `spawned` too).
    int incarnation = 0;
    // Failed ranks may be started again (FT-MPI REBUILD): paths keep what a
    // new process needs to join (shm: the segment's name) until they close.
    bool respawnable = false;
    // The host's shared-memory segment, inherited from our launcher (an
    // anonymous one: runtime/shm_segment.h); -1: none, shm names its own.
    // The bootstrap owns the descriptor.
    int shm_fd = -1;
    // The incarnation of every rank as this process starts (size entries;
    // all 0 but in a respawned process that has replaced peers).
    std::vector<int> incarnation_of_rank;
    // Dynamic processes (docs/dynamic_processes.md). Ranks from first_slot
    // on are spawn slots: no process holds them at the start, MPI_Comm_spawn
    // starts processes in them (-1: the job has none).
    int first_slot = -1;
    bool is_spawn_slot(int r) const { return first_slot >= 0 && r >= first_slot; }
    // My MPI_COMM_WORLD as ranks of the job: 0 .. first_slot-1, or for a
    // spawned process the processes spawned with it, in the order of the
    // commands (empty: every rank of the job).
    std::vector<int> world;
    // A spawned process: its parents' world ranks, the root's index among
    // them, the context pair of the intercommunicator to them, and its
    // bootstrap fence groups (wire-up with the parents; its own world).
    bool spawned = false;
    std::vector<int> parents;
    int parent_root = 0;
    int parent_pair = -1;
    int spawn_group = -1;
    int world_group = -1;
};

// MPI_Comm_spawn[_multiple], from the root of the spawning communicator.
struct SpawnCommand {
    std::vector<std::string> argv; // argv[0]: the command
    int maxprocs = 1;
    std::string host; // a host of the job ("" : the launcher chooses)
    std::string wdir; // working directory ("" : the launcher's)
};
struct SpawnRequest {
    int pair = -1;            // context pair of the parent-child intercommunicator
    int root = 0;             // the root's rank among the parents
    std::vector<int> parents; // world ranks of the spawning communicator
    std::vector<SpawnCommand> commands;
};
struct SpawnReply {
    int group = -1;        // fence group of parents and children (wire-up)
    std::string reason;    // why processes were not started ("" : all were)
    std::vector<int> ranks; // per process asked for: its world rank, -1 if not started
    std::vector<int> errs;  // per process: 0, or the errno of what failed
    std::vector<int> incarnations; // per process: > 0 when its slot held processes before
};

struct FailureEvent {
    enum class Kind : std::uint8_t { rank_failed, host_failed, job_ending };
    Kind kind = Kind::rank_failed;
    int rank = -1;        // for rank_failed
    int node_id = -1;     // for host_failed
    int incarnation = 0;  // for rank_failed: which process of the rank failed
    std::string detail;   // human-readable reason ("exited with signal 9 (Killed)")
};

class Bootstrap {
public:
    virtual ~Bootstrap() = default;

    virtual const JobInfo& job() const = 0;
    virtual Status put(std::string_view key, const void* data, std::size_t len) = 0;
    virtual Status fence() = 0;
    // A fence the caller can keep working through (ULM acknowledges its
    // peers' last fragments while it waits at MPI_Finalize): fence_begin()
    // enters it; fence_test() answers ok once every rank has entered (values
    // are then visible as after fence()), Errc::again while not, or an error.
    // The default runs the whole fence in fence_begin().
    virtual Status fence_begin() { return fence(); }
    virtual Status fence_test() { return Errc::ok; }
    // Fills `out` with the value rank `rank` put under `key` before the last fence.
    // Errc::invalid_arg when no such key.
    virtual Status get(int rank, std::string_view key, std::vector<std::byte>& out) = 0;
    [[noreturn]] virtual void abort(int code, std::string_view msg) = 0;
    virtual Status finalize() = 0;
    // Non-blocking: true and fills ev when a failure notice has arrived.
    virtual bool poll_event(FailureEvent& ev) = 0;
    // A descriptor that becomes readable when events may be waiting (or -1).
    virtual int event_fd() const = 0;
    // A counter that only grows and changes whenever a failure notice may be
    // waiting for poll_event(): a caller that saw value g and reads g again
    // has no new notice to look for. Reading it is one memory load (no
    // system call); it may live in memory another process writes. nullptr:
    // this bootstrap has none, so poll_event() must be called now and then.
    virtual const std::atomic<std::uint64_t>* notice_word() const { return nullptr; }
    // Starts a new process for the failed rank `rank` as incarnation
    // `incarnation` (> its last). Every survivor may ask; the launcher
    // starts one process per incarnation. The new process counts in fences
    // from the moment the launcher has the request, so a fence entered
    // after respawn() returns waits for it (or for its failure).
    // not_supported: this launcher cannot start processes into a job.
    virtual Status respawn(int rank, int incarnation)
    {
        (void)rank, (void)incarnation;
        return Errc::not_supported;
    }
    // The failed rank `rank` has been replaced (after the fence that the new
    // process joined): poll_event() reports its next failure again.
    virtual void revived(int rank, int incarnation) { (void)rank, (void)incarnation; }
    // Starts new processes into the job (MPI_Comm_spawn; only the root of
    // the spawning communicator asks). ok: `out` says which started (none
    // may have: out.reason says why). not_supported: this launcher cannot.
    virtual Status spawn(const SpawnRequest& req, SpawnReply& out)
    {
        (void)req, (void)out;
        return Errc::not_supported;
    }
    // Replica recovery (docs/replication.md "Recovery"), by the substitute:
    // may it fork a new process for the dead process `rank` as incarnation
    // `incarnation`? ok: yes, fork now (the launcher waits for the new
    // process); again: another recovery is under way, ask later; any other
    // error: no (`why` says why). Standard output is flushed first.
    virtual Status replica_fork(int rank, int incarnation, std::string& why)
    {
        (void)rank, (void)incarnation;
        why = std::string("the launcher (") + name() + ") cannot adopt a forked process";
        return Errc::not_supported;
    }
    // In the forked process: it is `rank`, incarnation `incarnation`, from
    // now on, with a connection, a standard output and error of its own.
    virtual Status become_replica(int rank, int incarnation, std::string& why)
    {
        (void)rank, (void)incarnation;
        why = "not supported";
        return Errc::not_supported;
    }
    // Whether `rank` is failed now as far as the launcher's notices say
    // (true when this bootstrap cannot tell): a failure event that arrives
    // after the rank was re-created is about its old process.
    virtual bool failed_now(int rank) const
    {
        (void)rank;
        return true;
    }
    // Values rank `rank` put are stale: it was replaced by a process that
    // puts its own; the next get() of them asks the launcher again.
    virtual void forget(int rank) { (void)rank; }
    // Rank `rank` runs on host `node` from now on (a replica re-created by
    // fork runs on its substitute's host): job().node_of_rank says so, and
    // job().placed_node_of_rank keeps where the job map put every rank.
    virtual void moved(int rank, int node) { (void)rank, (void)node; }
    // Returns once the launcher has every value this process put() before
    // the call, so that a peer told afterwards (by any other way) reads
    // them with get().
    virtual Status sync() { return Errc::ok; }
    // The forked process: every live process knows it (the launcher says so
    // and lets the next recovery start).
    virtual Status replica_back() { return Errc::not_supported; }
    // The job's name service (MPI_Publish_name, MPI_Lookup_name,
    // MPI_Unpublish_name): service names mapped to port names, kept by the
    // launcher for the job's life. publish_name: `again` when the name is
    // published already (it is left as it is); unpublish_name and
    // lookup_name: `invalid_arg` when the name is not published.
    // not_supported: this launcher keeps no names.
    virtual Status publish_name(std::string_view service, std::string_view port)
    {
        (void)service, (void)port;
        return Errc::not_supported;
    }
    virtual Status unpublish_name(std::string_view service)
    {
        (void)service;
        return Errc::not_supported;
    }
    virtual Status lookup_name(std::string_view service, std::string& port)
    {
        (void)service, (void)port;
        return Errc::not_supported;
    }
    // The fences that follow are over the members of `group` (a spawn's
    // group: GROUP_FENCE) rather than the whole job (-1).
    virtual void set_fence_group(int group) { (void)group; }
    // Name of the implementation, for ulmpi_info and logs.
    virtual const char* name() const = 0;
};

// Which bootstrap the environment asks for, first match wins:
//   ULMPI_BOOT_ADDR  -> ours (mpirun)
//   PMIX_NAMESPACE   -> pmix
//   PMI_FD, PMI_RANK -> pmi2
//   none of them     -> singleton
enum class BootKind : std::uint8_t { ours, pmix, pmi2, singleton };
struct BootChoice {
    BootKind kind = BootKind::singleton;
    std::string reason; // "PMIX_NAMESPACE=slurm.pmix.12.0 is set"
};
BootChoice choose_bootstrap();
const char* boot_kind_name(BootKind kind); // "ulmpi", "pmix", "pmi2", "singleton"
// Whether this build has the PMIx client (libpmix was found).
bool pmix_built();

// Picks the bootstrap from the environment (choose_bootstrap) and starts it.
// On failure returns nullptr and sets `why`, naming the variable that chose
// it and what is wrong.
std::unique_ptr<Bootstrap> make_bootstrap(std::string& why);

} // namespace ulmpi::rt
