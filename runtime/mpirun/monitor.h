// Monitor: runs one job from start to end in mpirun's single poll() loop.
//
// It owns the job's identity (id, secret), the key-value service, the rank
// processes and their output, the timers (time limit, kill after grace,
// connection-loss grace, output drain) and the decision of how the job ends.
//
// Ending. The first cause wins and fixes the exit status: a rank's
// MPI_Abort, a rank that failed (non-zero exit, signal, or left MPI without
// MPI_Finalize), the time limit, an interrupt of mpirun, or a launch failure.
// mpirun prints one line naming the cause, tells the connected ranks
// (EVENT job_ending), sends SIGTERM to every rank's process group and
// SIGKILL after a grace period (0.5 s; 2 s after an interrupt, or at once on
// a second one). Later deaths of ranks are consequences and are not
// reported. The loop ends only when every child has been reaped and its
// output drained (output pipes kept open by stray grandchildren get one more
// second, then their process groups are killed); then the job's
// /dev/shm/ulmpi-<jobid>* files are removed.
#pragma once

#include "runtime/boot_wire.h"
#include "runtime/clock.h"
#include "runtime/mpirun/boot_listener.h"
#include "runtime/mpirun/io_forward.h"
#include "runtime/mpirun/job_map.h"
#include "runtime/mpirun/kv_server.h"
#include "runtime/mpirun/options.h"

#include <memory>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

namespace ulmpi::rt::mpirun {

class Monitor {
public:
    Monitor(const Options& opts, const JobMap& map) : opts_(opts), map_(map) {}
    ~Monitor();
    Monitor(const Monitor&) = delete;
    Monitor& operator=(const Monitor&) = delete;

    // Runs the job; returns mpirun's exit status.
    int run();

private:
    struct Rank {
        pid_t pid = -1;
        bool reaped = false;
        std::unique_ptr<OutputStream> out;
        std::unique_ptr<OutputStream> err;
        Nanos lost_deadline = 0; // connection lost: judge at this time unless reaped
        std::string lost_reason;
    };

    bool setup();
    void launch_all();
    void loop();
    void reap_children();
    void judge_exit(int rank, int status);
    void handle_notes(std::vector<KvServer::Note>& notes, bool deferred_part);
    void rank_lost(int rank, const std::string& reason);
    void end_job(int code, const std::string& message, Nanos grace);
    void interrupted(int sig);
    void check_timers(Nanos now);
    void kill_all(int sig);
    bool all_reaped() const;
    bool outputs_open() const;
    Nanos next_deadline() const;
    std::string who(int rank) const; // "rank 3 (pid 1234)"

    const Options& opts_;
    const JobMap& map_;
    std::string jobid_;
    wire::Secret secret_{};
    BootListener listener_;
    std::unique_ptr<KvServer> kv_;
    StdinForwarder stdin_;
    std::vector<Rank> ranks_;
    std::unordered_map<pid_t, int> rank_of_pid_;
    int sig_fd_ = -1;
    bool sigpipe_ignored_ = false;
    bool ending_ = false;
    int exit_code_ = 0;
    Nanos timeout_at_ = 0;
    Nanos kill_at_ = 0;
    Nanos drain_until_ = 0;
};

// Writes "mpirun: <text>\n" to stderr with one write.
void report(const std::string& text);

} // namespace ulmpi::rt::mpirun
