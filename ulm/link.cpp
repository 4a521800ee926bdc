// Rail choice of a link (see link.h).
#include "ulm/link.h"

#include <algorithm>

namespace ulmpi::ulm {

void Link::choose()
{
    bool any_fast = false;
    for (int i = 0; i < nrails; ++i) {
        any_fast = any_fast || (rails[i].up() && !rails[i].standby);
    }
    standby_in_use_ = !any_fast;
    Rail* best = nullptr;
    int up = 0;
    for (int i = 0; i < nrails; ++i) {
        Rail& r = rails[i];
        if (!in_use(r)) {
            continue;
        }
        ++up;
        if (best == nullptr || r.latency_us() < best->latency_us()) {
            best = &r;
        }
    }
    nup_ = up;
    if (best != nullptr && ctrl_ != nullptr && ctrl_ != best && in_use(*ctrl_) &&
        ctrl_->latency_us() <= 1.25 * best->latency_us()) {
        best = ctrl_; // not clearly slower: no flapping between rails alike
    }
    if (best == nullptr && alive() && nrails > 0) {
        // Every rail is down: keep sending over the one declared down last
        // (probes decide when it is back; the retransmission timer decides
        // when the peer is unreachable).
        best = &rails[0];
        for (int i = 1; i < nrails; ++i) {
            if (rails[i].next_probe > best->next_probe) {
                best = &rails[i];
            }
        }
    }
    ctrl_ = alive() ? best : nullptr;
    eager_max_ = 0;
    if (ctrl_ != nullptr) {
        std::uint64_t limit = ctrl_->path->info().eager_limit;
        std::uint64_t frag = ctrl_->max_frag;
        if (multi()) {
            limit = std::min(limit, eager_floor());
            frag = std::min<std::uint64_t>(frag, frag_floor());
        }
        eager_max_ = frag >= sizeof(EagerHeader) ? std::min(limit, frag - sizeof(EagerHeader)) : 0;
    }
}

std::uint64_t Link::rail_cap(const Rail& r) const
{
    // Twice the bandwidth-delay product, at least kMinRailCap: enough to
    // keep the rail busy, short enough that its queue (and so the time
    // to tell a dead rail from a slow one) stays a few milliseconds.
    const double rtt_us = r.min_rtt != 0 ? static_cast<double>(r.min_rtt) / 1e3 : r.latency_us();
    const double bdp = r.rate * (2 * rtt_us + 1000);
    return std::max<std::uint64_t>(kMinRailCap, static_cast<std::uint64_t>(bdp));
}

Rail* Link::striped_rail(std::uint64_t bytes)
{
    // Earliest finish: the rail whose queue, with these bytes added, drains
    // first at its measured rate.
    Rail* best = nullptr;
    double best_t = 0;
    for (int i = 0; i < nrails; ++i) {
        Rail& r = rails[i];
        if (!in_use(r) || (r.inflight != 0 && r.inflight + bytes > rail_cap(r))) {
            continue;
        }
        const double t = static_cast<double>(r.inflight + bytes) / std::max(r.rate, 1e-3);
        if (best == nullptr || t < best_t) {
            best = &r;
            best_t = t;
        }
    }
    return best;
}

std::uint32_t Link::frag_floor() const
{
    std::uint32_t m = rails[0].max_frag;
    for (int i = 1; i < nrails; ++i) {
        m = std::min(m, rails[i].max_frag);
    }
    return m;
}

std::uint64_t Link::eager_floor() const
{
    std::uint64_t m = rails[0].path->info().eager_limit;
    for (int i = 1; i < nrails; ++i) {
        m = std::min(m, rails[i].path->info().eager_limit);
    }
    return m;
}

Rail* Link::other_rail(const Rail* avoid)
{
    Rail* best = nullptr;
    for (int i = 0; i < nrails; ++i) {
        Rail& r = rails[i];
        if (&r == avoid || !in_use(r)) {
            continue;
        }
        if (best == nullptr || r.inflight / std::max(r.rate, 1e-3) < best->inflight / std::max(best->rate, 1e-3)) {
            best = &r;
        }
    }
    return best;
}

} // namespace ulmpi::ulm
