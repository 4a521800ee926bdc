#include "ft/rep/ack_table.h"

#include <algorithm>
#include <utility>

namespace ulmpi::rep {

std::uint32_t AckTable::post(int dst, std::uint64_t m, ulm::SendMsg* s, std::uint32_t want,
                             std::shared_ptr<HeldCopy> copy)
{
    auto& early = early_[static_cast<std::size_t>(dst)];
    for (std::uint32_t l = 0; l < 32 && want != 0 && !early.empty(); ++l) {
        if ((want & (1u << l)) && early.erase(Early{l, m}) > 0) {
            want &= ~(1u << l);
        }
    }
    for (const auto& [l, u] : upto_[static_cast<std::size_t>(dst)]) {
        if ((want & (1u << l)) && m <= u.upto &&
            std::find(u.missing.begin(), u.missing.end(), m) == u.missing.end()) {
            want &= ~(1u << l);
        }
    }
    if (want != 0 || (parked(dst) && copy)) {
        // Numbers grow: the hint at the end makes the insertion constant time.
        auto& pend = pending_[static_cast<std::size_t>(dst)];
        pend.insert_or_assign(pend.end(), m, Entry{want != 0 ? s : nullptr, std::move(copy), want});
    }
    return want;
}

ulm::SendMsg* AckTable::ack(int dst, int replica, std::uint64_t m)
{
    auto& pend = pending_[static_cast<std::size_t>(dst)];
    auto it = pend.find(m);
    const std::uint32_t bit = 1u << replica;
    if (it == pend.end() || !(it->second.waiting & bit)) {
        if (it == pend.end()) {
            early_[static_cast<std::size_t>(dst)].insert(Early{static_cast<std::uint32_t>(replica), m});
        }
        return nullptr;
    }
    ulm::SendMsg* s = it->second.send;
    it->second.waiting &= ~bit;
    if (it->second.waiting == 0) {
        if (parked(dst)) {
            it->second.send = nullptr; // its copy stays
        } else {
            pend.erase(it);
        }
    }
    return s;
}

std::vector<ulm::SendMsg*> AckTable::drop_replica(int dst, int replica)
{
    std::vector<ulm::SendMsg*> out;
    auto& pend = pending_[static_cast<std::size_t>(dst)];
    const std::uint32_t bit = 1u << replica;
    for (auto it = pend.begin(); it != pend.end();) {
        if (it->second.waiting & bit) {
            if (it->second.send != nullptr) {
                out.push_back(it->second.send);
            }
            it->second.waiting &= ~bit;
        }
        if (it->second.waiting == 0 && parked(dst)) {
            it->second.send = nullptr;
            ++it;
            continue;
        }
        it = it->second.waiting == 0 ? pend.erase(it) : std::next(it);
    }
    auto& early = early_[static_cast<std::size_t>(dst)];
    for (auto it = early.begin(); it != early.end();) {
        it = it->replica == static_cast<std::uint32_t>(replica) ? early.erase(it) : std::next(it);
    }
    upto_[static_cast<std::size_t>(dst)].erase(replica);
    return out;
}

void AckTable::park(int dst,
                    const std::function<std::shared_ptr<HeldCopy>(const ulm::SendMsg&)>& copy_of)
{
    parked_[static_cast<std::size_t>(dst)] = true;
    for (auto& [m, e] : pending_[static_cast<std::size_t>(dst)]) {
        if (!e.copy && e.send != nullptr) {
            e.copy = copy_of(*e.send);
        }
    }
}

void AckTable::unpark(int dst)
{
    parked_[static_cast<std::size_t>(dst)] = false;
    std::erase_if(pending_[static_cast<std::size_t>(dst)],
                  [](const auto& kv) { return kv.second.waiting == 0; });
}

std::vector<ulm::SendMsg*> AckTable::wait_for_new(int dst, int replica)
{
    std::vector<ulm::SendMsg*> more;
    const std::uint32_t bit = 1u << replica;
    for (auto& [m, e] : pending_[static_cast<std::size_t>(dst)]) {
        if (!(e.waiting & bit)) {
            e.waiting |= bit;
            if (e.send != nullptr) {
                more.push_back(e.send);
            }
        }
    }
    return more;
}

ulm::SendMsg* AckTable::wait_for(int dst, int replica, std::uint64_t m)
{
    auto& pend = pending_[static_cast<std::size_t>(dst)];
    const auto it = pend.find(m);
    const std::uint32_t bit = 1u << replica;
    if (it == pend.end() || (it->second.waiting & bit)) {
        return nullptr;
    }
    it->second.waiting |= bit;
    return it->second.send;
}

std::vector<ulm::SendMsg*> AckTable::ack_upto(int dst, int replica, std::uint64_t upto,
                                              const std::vector<std::uint64_t>& missing)
{
    std::vector<ulm::SendMsg*> out;
    upto_[static_cast<std::size_t>(dst)][replica] = Upto{upto, missing};
    auto& pend = pending_[static_cast<std::size_t>(dst)];
    const std::uint32_t bit = 1u << replica;
    for (auto it = pend.begin(); it != pend.end() && it->first <= upto;) {
        Entry& e = it->second;
        if (!(e.waiting & bit) ||
            std::find(missing.begin(), missing.end(), it->first) != missing.end()) {
            ++it;
            continue;
        }
        if (e.send != nullptr) {
            out.push_back(e.send);
        }
        e.waiting &= ~bit;
        if (e.waiting == 0 && parked(dst)) {
            e.send = nullptr;
            ++it;
        } else if (e.waiting == 0) {
            it = pend.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

AckTable::Held AckTable::take(int dst)
{
    early_[static_cast<std::size_t>(dst)].clear();
    upto_[static_cast<std::size_t>(dst)].clear();
    parked_[static_cast<std::size_t>(dst)] = false;
    return std::exchange(pending_[static_cast<std::size_t>(dst)], {});
}

std::size_t AckTable::waiting() const
{
    std::size_t n = 0;
    for (const auto& p : pending_) {
        for (const auto& [m, e] : p) {
            n += e.waiting != 0 ? 1 : 0;
        }
    }
    return n;
}

bool AckTable::any_waiting() const
{
    for (const auto& p : pending_) {
        for (const auto& [m, e] : p) {
            if (e.waiting != 0) {
                return true;
            }
        }
    }
    return false;
}

} // namespace ulmpi::rep
