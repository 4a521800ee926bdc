// Starting local ranks: their environment, CPU binding and the fork/exec
// itself, plus the job-wide helpers that go with processes (random ids,
// signalling process groups, removing a job's shared-memory files).
//
// Each rank is forked into its own process group (so mpirun can signal it
// and everything it started), with PR_SET_PDEATHSIG SIGKILL (it never
// outlives mpirun), stdout/stderr on pipes read by mpirun, stdin on a pipe
// (the stdin rank) or /dev/null. A close-on-exec pipe reports a failed exec:
// spawn_rank() returns only once the child has exec'd or failed to;
// start_rank() and await_exec() split it for starting many at once.
#pragma once

#include "runtime/mpirun/options.h"
#include "runtime/status.h"

#include <array>
#include <csignal>
#include <sched.h>
#include <string>
#include <sys/types.h>
#include <vector>

namespace ulmpi::rt::mpirun {

struct SpawnSpec {
    std::vector<std::string> argv;
    std::vector<std::string> env; // NAME=value
    std::string wdir;             // empty: mpirun's
    bool stdin_pipe = false;      // false: /dev/null
    bool bind = false;
    cpu_set_t cpus{};
    bool sigpipe_ignored = false; // mpirun itself was started with SIGPIPE ignored
    int death_signal = SIGKILL;   // PR_SET_PDEATHSIG: sent when the parent dies
    // Close-on-exec descriptors the program inherits at the same numbers
    // (the notice board, the host's shared memory); -1: none.
    std::array<int, 2> keep_fds{-1, -1};
};

struct Child {
    pid_t pid = -1;
    int out_fd = -1; // read ends, non-blocking, close-on-exec
    int err_fd = -1;
    int in_fd = -1;  // write end of the stdin pipe, or -1
};

struct SpawnFailure {
    int err = 0;           // errno of the failed step
    const char* step = ""; // "fork", "pipe", "chdir", "exec"
};

// ok: the child runs `argv`. Otherwise `fail` says why. Whenever fork
// succeeded `out` is filled (pid and pipes) and the child is left for the
// caller's waitpid, like every other child; after a failed exec it exits
// with 127 or 126 by itself.
Status spawn_rank(const SpawnSpec& spec, Child& out, SpawnFailure& fail);

// spawn_rank() in two halves, so that many children can be started without
// waiting for each exec in turn: start_rank() forks and fills `out` (and
// `report_fd`, the read end of the exec pipe) as spawn_rank() does, or fails
// as it does before fork; await_exec() then waits until the child has
// exec'd (ok) or failed to (`fail` says why), and closes `report_fd`.
Status start_rank(const SpawnSpec& spec, Child& out, int& report_fd, SpawnFailure& fail);
Status await_exec(int& report_fd, SpawnFailure& fail);

// Exit status for a failed spawn: 127 when the program does not exist, 126 otherwise.
int spawn_exit_status(const SpawnFailure& fail);

// The environment every rank starts from: mpirun's own, without any
// variable of the launcher contract (a nested mpirun must not leak its
// job's), plus -x exports and --param values. `warnings` gets one line per
// -x of an unset variable.
std::vector<std::string> base_environment(const Options& opts, std::vector<std::string>& warnings);

// CPU sets for `nranks` local ranks, round-robin over the CPUs this process
// may use. Empty when nothing is to be bound (--bind-to none, or automatic
// and oversubscribed).
std::vector<cpu_set_t> binding_sets(BindMode mode, int nranks);
// CPUs this process may run on (its affinity mask), at least 1.
int usable_cpus();

// `nbytes` random bytes from getrandom, as lower-case hex.
std::string random_hex(std::size_t nbytes);

// Sends `sig` to the process group `pgid` (ESRCH ignored).
void signal_group(pid_t pgid, int sig);

// Removes /dev/shm/ulmpi-<jobid>* ; returns how many.
int remove_job_shm_files(const std::string& jobid);

// Host name of this machine.
std::string local_hostname();

// Number of CPUs in this process's affinity mask.
int allowed_cpu_count();

} // namespace ulmpi::rt::mpirun
