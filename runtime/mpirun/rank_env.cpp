#include "runtime/mpirun/rank_env.h"

#include "runtime/boot_wire.h"
#include "runtime/mpirun/launcher.h"

namespace ulmpi::rt::mpirun {

void append_rank_env(std::vector<std::string>& env, const RankEnv& e)
{
    auto set = [&](const char* name, const std::string& value) {
        env.push_back(std::string(name) + "=" + value);
    };
    set(wire::env::rank, std::to_string(e.rank));
    set(wire::env::size, std::to_string(e.size));
    set(wire::env::local_rank, std::to_string(e.local_rank));
    set(wire::env::local_size, std::to_string(e.local_size));
    set(wire::env::local_cpus, std::to_string(usable_cpus()));
    set(wire::env::node_id, std::to_string(e.node));
    set(wire::env::num_nodes, std::to_string(e.num_nodes));
    set(wire::env::host, e.host);
    set(wire::env::jobid, e.jobid);
    set(wire::env::boot_addr, e.boot_addr);
    set(wire::env::job_secret, e.secret);
    set(wire::env::universe_size, std::to_string(e.universe_size));
    set(wire::env::appnum, std::to_string(e.appnum));
    if (e.notice_fd >= 0) {
        set(wire::env::notice_fd, std::to_string(e.notice_fd));
    }
    if (e.shm_fd >= 0) {
        set(wire::env::shm_fd, std::to_string(e.shm_fd));
    }
}

} // namespace ulmpi::rt::mpirun
