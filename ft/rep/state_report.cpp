// The replicator's state on stderr, beside the engine's (Engine::print_state,
// called when a wait lasts longer than ulm_hang_report_s): what a hung
// replicated job is waiting for, per logical rank.
#include "ft/rep/replicator.h"

#include <cinttypes>
#include <cstdio>
#include <string>

namespace ulmpi::rep {

void Replicator::print_state() const
{
    const int p = eng_.phys_rank();
    std::string dead;
    for (int q = 0; q < eng_.phys_size(); ++q) {
        if (set_.dead(q)) {
            dead += " " + std::to_string(q);
        }
    }
    std::fprintf(stderr,
                 "ulmpi-rep process=%d rank=%d replica=%d incarnation=%d dead=[%s ] fork_for=%d "
                 "child=%d parent=%d born=%d unready=%d outbox=%zu tx=%zu pending_acks=%zu\n",
                 p, me_, k_, inc_[static_cast<std::size_t>(p)], dead.c_str(), fork_for_, child_,
                 parent_, born_at_ != 0 ? 1 : 0, unready_count_, outbox_.size(), tx_.size(),
                 pending_acks_.size());
    for (int j = 0; j < set_.logical_size(); ++j) {
        const auto ji = static_cast<std::size_t>(j);
        std::string holes;
        for (std::uint64_t h : recv_holes_[ji]) {
            holes += " " + std::to_string(h);
        }
        std::string held;
        int shown = 0;
        for (const auto& [m, e] : acks_.held(j)) {
            if (++shown <= 8) {
                held += " " + std::to_string(m) + (e.send != nullptr ? "s" : "c") + "/" +
                        std::to_string(e.waiting);
            }
        }
        std::string serve;
        for (const Orphan& o : serve_[ji]) {
            serve += " r" + std::to_string(o.replica) + ">=" + std::to_string(o.next);
        }
        std::fprintf(stderr,
                     "ulmpi-rep process=%d rank %d: sent=%" PRIu64 " next_in=%" PRIu64
                     " holes=[%s ] server=%d direct=%d parked=%d held=%zu[%s ] serve=[%s ] "
                     "stock=%zu\n",
                     p, j, send_next_[ji], recv_next_[ji], holes.c_str(), server_[ji],
                     direct_[ji] ? 1 : 0, acks_.parked(j) ? 1 : 0, acks_.held(j).size(),
                     held.c_str(), serve.c_str(), stock_[ji].size());
    }
}

} // namespace ulmpi::rep
