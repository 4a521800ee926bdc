#include "ft/detector.h"

#include "runtime/ft_mode.h"
#include "runtime/log.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace ulmpi::ft {

Mode mode_from_params()
{
    // The runtime's `ft` parameter (ULMPI_FT; mpirun --with-ft sets it).
    return rt::ft_mode() == rt::FtMode::ulfm ? Mode::ulfm : Mode::abort;
}

Detector::Detector(rt::Bootstrap& boot, ulm::Engine& engine, Mode mode)
    : boot_(boot), engine_(engine), mode_(mode)
{
    is_failed_.assign(static_cast<std::size_t>(engine.size()), false);
    details_.assign(static_cast<std::size_t>(engine.size()), std::string());
}

const std::string& Detector::detail(int rank) const
{
    static const std::string none;
    return failed(rank) ? details_[static_cast<std::size_t>(rank)] : none;
}

void Detector::record(int rank, const char* detail)
{
    if (rank < 0 || rank >= engine_.size() || rank == engine_.rank() || failed(rank)) {
        return;
    }
    is_failed_[static_cast<std::size_t>(rank)] = true;
    details_[static_cast<std::size_t>(rank)] = detail != nullptr ? detail : "";
    failed_.push_back(rank);
    engine_.mark_peer_failed(rank);
    for (std::size_t i = 0; i < listeners_.size(); ++i) {
        listeners_[i](rank);
    }
}

void Detector::learned(int rank, const char* how)
{
    if (!failed(rank)) {
        ULMPI_DEBUG("rank %d failed (%s)", rank, how);
    }
    record(rank, how);
}

void Detector::revive(int rank)
{
    if (!failed(rank)) {
        return;
    }
    is_failed_[static_cast<std::size_t>(rank)] = false;
    details_[static_cast<std::size_t>(rank)].clear();
    if (revivals_.size() <= static_cast<std::size_t>(rank)) {
        revivals_.resize(static_cast<std::size_t>(rank) + 1, 0);
    }
    ++revivals_[static_cast<std::size_t>(rank)];
}

void Detector::on_peer_failed(int peer, const char* detail)
{
    // ABORT mode: the launcher ends the job and says which rank failed; we
    // only make sure this rank does not wait for it in the meantime.
    ULMPI_DEBUG("rank %d failed (%s)", peer, detail);
    record(peer, detail);
}

void Detector::on_peer_unreachable(int peer, const char* why)
{
    if (tolerant()) {
        ULMPI_WARN("rank %d: rank %d is failed: no path reaches it (%s)", engine_.rank(), peer, why);
        record(peer, why);
        return;
    }
    record(peer, why);
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
