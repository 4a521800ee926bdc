#include "ft/revoke.h"

#include "runtime/log.h"

#include <algorithm>

namespace ulmpi::ft {

namespace {
constexpr std::uint8_t kNotice = 1;
}

Revoker::Revoker(Channel& channel, Detector& detector, int my_world_rank)
    : channel_(channel), detector_(detector), me_(my_world_rank)
{
    channel_.on(MsgKind::revoke, [this](int from, const Header& h, const std::byte*, std::size_t) {
        on_notice(from, h);
    });
}

std::uint64_t Revoker::members_hash(const std::vector<int>& members)
{
    // FNV-1a over the world ranks, in order.
    std::uint64_t h = 1469598103934665603ull;
    for (int w : members) {
        for (int b = 0; b < 4; ++b) {
            h ^= static_cast<std::uint8_t>(static_cast<std::uint32_t>(w) >> (8 * b));
            h *= 1099511628211ull;
        }
    }
    return h;
}

void Revoker::attach(std::uint32_t ctx, const std::vector<int>& members, OnRevoked on_revoked)
{
    Entry& e = comms_[ctx];
    e.members = members;
    e.hash = members_hash(members);
    e.on_revoked = std::move(on_revoked);
    e.revoked = false;
    auto it = early_.find(ctx);
    if (it != early_.end()) {
        const bool mine = it->second == e.hash;
        early_.erase(it);
        if (mine) {
            mark(ctx, e);
        }
    }
}

void Revoker::detach(std::uint32_t ctx)
{
    comms_.erase(ctx);
}

bool Revoker::revoked(std::uint32_t ctx) const
{
    auto it = comms_.find(ctx);
    return it != comms_.end() && it->second.revoked;
}

void Revoker::revoke(std::uint32_t ctx)
{
    auto it = comms_.find(ctx);
    if (it != comms_.end()) {
        mark(ctx, it->second);
    }
}

void Revoker::mark(std::uint32_t ctx, Entry& e)
{
    if (e.revoked) {
        return;
    }
    e.revoked = true;
    forward(ctx, e);
    if (e.on_revoked) {
        e.on_revoked();
    }
}

void Revoker::forward(std::uint32_t ctx, const Entry& e)
{
    const int n = static_cast<int>(e.members.size());
    auto pos = std::find(e.members.begin(), e.members.end(), me_);
    if (pos == e.members.end() || n < 2) {
        return;
    }
    const int i = static_cast<int>(pos - e.members.begin());
    Header h{MsgKind::revoke, kNotice, 0, ctx, e.hash};
    std::vector<bool> told(static_cast<std::size_t>(n), false);
    told[static_cast<std::size_t>(i)] = true;
    auto tell = [&](int j) {
        if (!told[static_cast<std::size_t>(j)]) {
            told[static_cast<std::size_t>(j)] = true;
            channel_.send(e.members[static_cast<std::size_t>(j)], h, nullptr, 0);
            ++sent_;
        }
    };
    for (int d = 1; d < n; d *= 2) {
        for (int dir : {1, -1}) {
            // The neighbour at distance d, or the next live member beyond it.
            int j = ((i + dir * d) % n + n) % n;
            for (int k = 0; k < n && j != i && detector_.failed(e.members[static_cast<std::size_t>(j)]); ++k) {
                j = ((j + dir) % n + n) % n;
            }
            if (j != i) {
                tell(j);
            }
        }
    }
}

void Revoker::on_notice(int from, const Header& h)
{
    auto it = comms_.find(h.ctx);
    if (it == comms_.end()) {
        early_[h.ctx] = h.seq; // applied if that communicator shows up here
        return;
    }
    if (it->second.hash != h.seq) {
        ULMPI_DEBUG("fault tolerance: a revoke notice from rank %d for an earlier communicator on "
                    "context %u was ignored",
                    from, h.ctx);
        return;
    }
    mark(h.ctx, it->second);
}

} // namespace ulmpi::ft
