#include "ft/detector.h"

#include "runtime/log.h"

#include <algorithm>
#include <string>
#include <unistd.h>

namespace ulmpi::ft {

Detector::Detector(rt::Bootstrap& boot, ulm::Engine& engine) : boot_(boot), engine_(engine) {}

bool Detector::failed(int rank) const
{
    return std::find(failed_.begin(), failed_.end(), rank) != failed_.end();
}

void Detector::on_peer_failed(int peer, const char* detail)
{
    if (!failed(peer)) {
        failed_.push_back(peer);
    }
    engine_.mark_peer_failed(peer);
    // ABORT mode: the launcher ends the job and says which rank failed; we
    // only make sure this rank does not wait for it in the meantime.
    ULMPI_DEBUG("rank %d failed (%s)", peer, detail);
}

void Detector::on_peer_unreachable(int peer, const char* why)
{
    if (!failed(peer)) {
        failed_.push_back(peer);
    }
    std::string msg = "rank " + std::to_string(engine_.rank()) + " lost contact with rank " +
                      std::to_string(peer) + ": no path can reach it (" + why + ")";
    boot_.abort(1, msg);
}

void Detector::on_job_ending(const char* detail)
{
    ULMPI_ERROR("the launcher is gone or ending the job (%s); exiting", detail);
    _exit(1);
}

} // namespace ulmpi::ft
