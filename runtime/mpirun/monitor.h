// Monitor: runs one job from start to end in mpirun's single poll() loop.
// Its parts: monitor.cpp (set-up, the loop, children, timers, outputs),
// local_ranks.cpp (this machine's ranks), hosts.cpp (the other hosts'
// daemons), failures.cpp (judging ends, announcing failures, ending the
// job), respawn.cpp (FT-MPI REBUILD) and spawn.cpp (MPI_Comm_spawn).
//
// It owns the job's identity (id, secret), the key-value service, the rank
// processes and their output, the timers (time limit, kill after grace,
// connection-loss grace, output drain) and the decision of how the job ends.
//
// Ending. The first cause wins and fixes the exit status: a rank's
// MPI_Abort, a rank that failed (non-zero exit, signal, or left MPI without
// MPI_Finalize), the time limit, an interrupt of mpirun, or a launch failure.
// What a failure means is the FailurePolicy's to say (failure_policy.h): in
// a fault-tolerant job (--with-ft ulfm) a failed rank or lost host does not
// end the job. mpirun then prints one line naming it, kills what is left of
// the rank, tells every survivor (EVENT rank_failed / host_failed on the
// bootstrap connections, then the notice board: notice_board.h), and the
// key-value service stops waiting for it in fences.
// mpirun prints one line naming the cause, tells the connected ranks
// (EVENT job_ending), sends SIGTERM to every rank's process group and
// SIGKILL after a grace period (0.5 s; 2 s after an interrupt, or at once on
// a second one). Later deaths of ranks are consequences and are not
// reported. The loop ends only when every child has been reaped and its
// output drained (output pipes kept open by stray grandchildren get one more
// second, then their process groups are killed); then the job's
// /dev/shm/ulmpi-<jobid>* files are removed.
//
// Respawn (FT-MPI REBUILD, respawn.cpp). In a fault-tolerant job with
// ft_mode=rebuild, a survivor may ask (RESPAWN) for a new process for a
// failed local rank: mpirun kills what is left of the old one, clears its
// mark on the notice board, makes fences wait for the rank again and, once
// the old process is reaped, starts the new one (same rank, binding and
// program; ULMPI_INCARNATION, ULMPI_RESTARTED, ULMPI_PEER_INCARNATIONS).
// A replaced rank's failure does not count against the exit status when
// its new process finishes well.
//
// Spawn (MPI_Comm_spawn, spawn.cpp). With --spawn-slots, the ranks after
// the job's own are spawn slots; a root's SPAWN takes free ones (on the
// hosts its info keys name, else from the root's host on), checks every
// command and directory first (all or nothing), forks the processes with
// their own MPI_COMM_WORLD, parents and fence groups in the environment,
// and answers SPAWN_RESULT. They are judged as any rank of the job when
// they end.
//
// Other hosts. Every host of the job map that is not this machine gets one
// ulmpi_daemon, started through the launch agent (`ssh host ...`, or the
// --launch-agent template) in its own process group; the job secret goes to
// it on the agent's stdin, never on a command line. The daemon connects
// back over TCP (DAEMON_HELLO), gets the host's part of the job (LAUNCH),
// forks the ranks and from then on is their stand-in: SPAWNED gives a
// rank's pid, OUTPUT its stdout/stderr (written here line by line through a
// LineForwarder, as for local ranks), EXITED its wait status, which is judged
// as a local child's would be; the ranks' bootstrap frames come through the
// same connection. kill_all() sends SIGNAL to every daemon. A host is lost
// when its daemon's connection closes or its launch agent ends before BYE,
// or when it does not connect in time: the job then ends with a message
// naming the host (EVENT host_failed to the others first). At the end every
// daemon gets SHUTDOWN, removes the job's shared memory on its host, says
// BYE and exits; mpirun waits for its agent (5 s, then kills it).
#pragma once

#include "runtime/boot_wire.h"
#include "runtime/clock.h"
#include "runtime/notice_board.h"
#include "runtime/shm_segment.h"
#include "runtime/mpirun/boot_listener.h"
#include "runtime/mpirun/failure_policy.h"
#include "runtime/mpirun/io_forward.h"
#include "runtime/mpirun/job_map.h"
#include "runtime/mpirun/kv_server.h"
#include "runtime/mpirun/launcher.h"
#include "runtime/mpirun/options.h"
#include "runtime/mpirun/rank_env.h"

#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

namespace ulmpi::rt::mpirun {

class Monitor {
public:
    Monitor(const Options& opts, const JobMap& map)
        : opts_(opts), map_(map), policy_(opts.ft, map.total())
    {
    }
    ~Monitor();
    Monitor(const Monitor&) = delete;
    Monitor& operator=(const Monitor&) = delete;

    // Runs the job; returns mpirun's exit status.
    int run();

private:
    struct Rank {
        pid_t pid = -1;
        bool reaped = false;
        bool remote = false; // started (or adopted) by the daemon of its host
        // The host its process runs on: the job map's, or its substitute's
        // once a replica was re-created (replica_adopt.cpp).
        int node = -1;
        // Started again on mpirun's host because its own host was lost
        // (respawn.cpp): it keeps its place in the job map, uses no shm.
        bool moved = false;
        std::unique_ptr<OutputStream> out;
        std::unique_ptr<OutputStream> err;
        // Remote rank: its output comes in OUTPUT frames; open until the
        // daemon says the stream ended.
        std::unique_ptr<OutputSink> rout;
        std::unique_ptr<OutputSink> rerr;
        bool rout_open = false;
        bool rerr_open = false;
        Nanos lost_deadline = 0; // connection lost: judge at this time unless reaped
        std::string lost_reason;
        int incarnation = 0;     // of the process that runs (or ran) it
        int respawn_pending = 0; // > incarnation: start it again as this one
        int restarts = 0;        // new processes started for it (REBUILD)
        bool spawned = false;    // a spawn slot given to a process (spawn.cpp)
        bool discarded = false;  // killed with its spawn, which failed: not judged
        std::string spawn_cmd;   // a spawned process: its command and wdir (messages)
        std::string spawn_wdir;
    };
    // The daemon of a remote host.
    struct Daemon {
        int node = -1;
        pid_t agent_pid = -1;
        bool agent_reaped = true;
        std::unique_ptr<OutputStream> agent_out; // both go to mpirun's stderr
        std::unique_ptr<OutputStream> agent_err;
        std::string agent_cmd;   // for messages
        ConnId conn = -1;
        std::uint32_t daemon_pid = 0;
        bool connected = false;  // ever
        bool lost = false;
        bool bye = false;
        Nanos connect_deadline = 0;
        // Connection closed, agent not yet reaped: wait this long for its
        // exit status, which says more.
        Nanos closed_deadline = 0;
    };

    bool setup();
    void launch_all();
    // The spawn of a local rank: program, environment, binding.
    SpawnSpec local_spec(int rank) const;
    // The launcher contract's variables of a process of this machine.
    RankEnv rank_env(int rank, int appnum, int local_size) const;
    // Respawn (runtime/mpirun/respawn.cpp): a rank asked for a new process
    // for a failed rank; start_again() starts it once the old one is reaped.
    void on_respawn(int rank, int incarnation);
    void start_again(int rank);
    void start_again_remote(int rank, const std::string& peers);
    // MPI_Comm_spawn (runtime/mpirun/spawn.cpp): a root asked for processes.
    // Until `wait_until` (0: not at all), when every slot it could take
    // holds a running spawned process, the request waits (retry_spawns)
    // for one to end.
    void on_spawn(const KvServer::Note& n, Nanos wait_until);
    // A spawned process ended, or a waiting request's time is up.
    void retry_spawns(Nanos now);
    // Replica recovery (runtime/mpirun/replica_adopt.cpp): a substitute
    // forks a new process for its dead sibling; mpirun adopts it.
    void on_replica(const KvServer::Note& n);
    void replica_fork(int from, int d, int incarnation);
    void replica_adopt(int d, const wire::Replica& q);
    // The new process is taken (its output streams made, mpirun's or its
    // host's daemon's child): it becomes process d.
    void replica_taken(int d, pid_t pid, int out_fd, int err_fd);
    // ADOPTED from the daemon of the new process's host.
    void on_adopted(int node, int d, const wire::Adopted& a);
    bool recovery_busy() const;
    std::uint64_t merged_seen(int process) const;
    void check_adoption(Nanos now);
    Nanos adoption_deadline() const;
    void start_daemons();
    void start_daemon(Daemon& d, const std::string& daemon_path,
                      const std::vector<std::string>& agent);
    // A LAUNCH for host `node` without ranks: the job, its programs and
    // the environment every rank there starts from.
    wire::Launch launch_frame(int node) const;
    void send_launch(Daemon& d);
    void on_daemon_msg(const KvServer::Note& n);
    void remote_exit(int rank, int status);
    void host_lost(int node, const std::string& reason);
    void agent_ended(Daemon& d, int status);
    void finish_daemons();
    void poll_once(int timeout_ms, bool stdin_too);
    void pump_remote_stdin(bool readable);
    void loop();
    void reap_children();
    void judge_exit(int rank, int status);
    void handle_notes(std::vector<KvServer::Note>& notes, bool deferred_part);
    void rank_lost(int rank, const std::string& reason);
    // The policy says a rank failed and the job goes on: tell everyone.
    // `fences`: the key-value service stops waiting for it (not for a rank
    // being replaced: it waits for the new process).
    void announce_rank(int rank, const std::string& detail, bool fences = true);
    void announce_host(int node, const std::string& detail);
    // A failed rank gets a new process (REBUILD, a re-created replica): its
    // mark goes from every host's notice board, mpirun's and the daemons'.
    void clear_notice(int rank, int incarnation);
    void end_job(int code, const std::string& message, Nanos grace);
    void interrupted(int sig);
    void check_timers(Nanos now);
    void kill_all(int sig);
    bool all_reaped() const;
    bool outputs_open() const;
    bool remote_outputs_open() const;
    void close_outputs(bool remote);
    Nanos next_deadline() const;
    std::string who(int rank) const; // "rank 3 (pid 1234)", "rank 3 (pid 1234 on h2)"
    std::string host_name(int node) const { return map_.host(node).name; }
    // The ranks whose process runs (or ran last) on host `node`.
    std::vector<int> ranks_on(int node) const;
    // A rank of the job map's host `node` runs elsewhere now, or one of
    // another host runs there (re-created replicas).
    bool placement_changed(int node) const;

    const Options& opts_;
    const JobMap& map_;
    FailurePolicy policy_;
    NoticeBoard board_; // fault-tolerant jobs: this machine's ranks read it
    HostSegmentFd shm_; // this machine's shared memory (its ranks map it)
    std::vector<wire::Event> announced_; // every failure announced, for late daemons
    std::string jobid_;
    wire::Secret secret_{};
    BootListener listener_;
    std::unique_ptr<KvServer> kv_;
    StdinForwarder stdin_;
    std::vector<Rank> ranks_;
    // --replicas: the stdout of a rank's replicas, merged (io_forward.h).
    std::vector<std::shared_ptr<ReplicaOutput>> merged_out_;
    OutputSink out_sink(int r, int fd);
    std::string why_alive() const; // what keeps the job alive on a failure
    std::unordered_map<pid_t, int> rank_of_pid_;
    std::vector<Daemon> daemons_;          // by node; node < 0 for this machine's node
    // What every local rank starts with (launch_all), kept for respawns.
    std::vector<std::string> base_env_;
    std::vector<cpu_set_t> cpus_;
    bool stdin_usable_ = false;
    // FT-MPI REBUILD (ft_mode=rebuild with fault tolerance): failed ranks
    // may be started again; the notice board's descriptor stays open.
    bool respawnable_ = false;
    // SPAWN requests waiting for a slot to be free (spawn.cpp).
    struct WaitingSpawn {
        KvServer::Note note;
        Nanos until = 0;
    };
    std::vector<WaitingSpawn> waiting_spawns_;
    // The recovery under way (one at a time; rank < 0: none).
    struct Adoption {
        int rank = -1;          // the process re-created
        int incarnation = 0;
        int from = -1;          // its substitute
        int node = -1;          // the substitute's host: the new process's
        bool remote = false;    // that host has a daemon, which adopts it
        bool asked = false;     // ADOPT take sent to that daemon, ADOPTED awaited
        std::uint32_t pid = 0;  // of the new process (asked)
        std::uint64_t out_offset = 0; // where its stdout starts in the rank's output
        Nanos deadline = 0;     // for its REPLICA adopt (and the daemon's ADOPTED)
        bool adopted = false;
        bool back = false;
    };
    Adoption adopt_;
    // Output of processes that were replaced, still drained.
    std::vector<std::unique_ptr<OutputStream>> retired_;
    std::unordered_map<pid_t, int> node_of_agent_;
    std::string boot_tcp_;                 // tcp:IP:PORT the daemons connect to
    std::string cwd_;
    int stdin_remote_rank_ = -1;           // the stdin rank when it is remote
    bool stdin_remote_eof_ = true;
    bool finishing_ = false;               // every rank ended: daemons are shutting down
    unsigned daemon_refused_ = 0;
    int sig_fd_ = -1;
    bool sigpipe_ignored_ = false;
    bool ending_ = false;
    int exit_code_ = 0;
    Nanos timeout_at_ = 0;
    Nanos kill_at_ = 0;
    Nanos give_up_at_ = 0; // ending: when silent hosts are given up
    Nanos drain_until_ = 0;
};

// Writes "mpirun: <text>\n" to stderr with one write.
void report(const std::string& text);
// report(), but for a failure the job lives on with: nothing under MPICH's
// rule (--disable-auto-cleanup), whose tests take any line as an error.
void report_ft(const FailurePolicy& policy, const std::string& text);

} // namespace ulmpi::rt::mpirun
