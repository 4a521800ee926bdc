// What the launcher-facing bootstraps (PMI-2, PMIx) share: the job layout
// derived from the node of every rank, names safe for shared-memory files,
// and what Slurm tells a task in its environment.
#pragma once

#include "runtime/bootstrap.h"

#include <string>
#include <string_view>

namespace ulmpi::rt::bootenv {

// From job.rank and job.node_of_rank: node_id, num_nodes (highest node
// index + 1), local_rank (my index among the ranks of my node, in rank
// order) and local_size. False with `why` when node_of_rank is not
// job.size entries of non-negative node indexes.
bool fill_locality(JobInfo& job, std::string& why);

// `prefix` + `id` with every character other than [A-Za-z0-9._-] made '_'
// (the job id names /dev/shm files).
std::string safe_jobid(std::string_view prefix, std::string_view id);

// CPUs Slurm gave this job on this node (SLURM_CPUS_ON_NODE), never more than
// the machine has online; 0 when Slurm does not say.
int slurm_local_cpus();

// This node's name: SLURMD_NODENAME when Slurm started us, else gethostname().
std::string node_name();

// An integer environment variable. Absent: false, why empty. Present but not
// a non-negative integer: false, why says so.
bool env_int(const char* name, int& out, std::string& why);

// Writes "ulmpi: rank R called MPI_Abort with code C: msg" to stderr.
void print_abort(int rank, int code, std::string_view msg);

// Sleeps long enough for the launcher to forward what this rank printed
// last (its error message) before it is asked to kill the step: Slurm's
// step daemons drop output still in flight when the tasks are killed.
void let_output_drain();

} // namespace ulmpi::rt::bootenv
