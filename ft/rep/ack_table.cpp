#include "ft/rep/ack_table.h"

#include <algorithm>
#include <utility>

namespace ulmpi::rep {

std::uint32_t AckTable::post(int dst, std::uint64_t m, ulm::SendMsg* s, std::uint32_t want,
                             std::shared_ptr<HeldCopy> copy)
{
    const auto d = static_cast<std::size_t>(dst);
    std::uint32_t known = 0; // replicas that said they have m (ack_upto)
    for (const auto& [l, u] : upto_[d]) {
        if (m <= u.upto && std::find(u.missing.begin(), u.missing.end(), m) == u.missing.end()) {
            known |= 1u << l;
        }
    }
    return pending_[d].post(m, want, known, s, std::move(copy), parked_[d]);
}

ulm::SendMsg* AckTable::ack(int dst, int replica, std::uint64_t m)
{
    const auto d = static_cast<std::size_t>(dst);
    const std::uint32_t bit = 1u << replica;
    Entry* e = pending_[d].ack(m, bit);
    if (e == nullptr || !(e->waiting & bit)) {
        return nullptr;
    }
    ulm::SendMsg* s = e->send;
    e->waiting &= ~bit;
    if (e->waiting == 0) {
        if (parked_[d]) {
            e->send = nullptr; // its copy stays
        } else {
            pending_[d].erase(m);
        }
    }
    return s;
}

std::vector<ulm::SendMsg*> AckTable::drop_replica(int dst, int replica)
{
    std::vector<ulm::SendMsg*> out;
    const auto d = static_cast<std::size_t>(dst);
    const std::uint32_t bit = 1u << replica;
    for (auto&& [m, e] : pending_[d]) {
        if (!take_bit(d, e, bit, out) && e.waiting == 0 && parked_[d]) {
            e.send = nullptr;
        }
    }
    erase_done(d);
    pending_[d].forget_early(bit);
    upto_[d].erase(replica);
    return out;
}

void AckTable::park(int dst,
                    const std::function<std::shared_ptr<HeldCopy>(const ulm::SendMsg&)>& copy_of)
{
    parked_[static_cast<std::size_t>(dst)] = true;
    for (auto&& [m, e] : pending_[static_cast<std::size_t>(dst)]) {
        if (!e.copy && e.send != nullptr) {
            e.copy = copy_of(*e.send);
        }
    }
}

void AckTable::unpark(int dst)
{
    parked_[static_cast<std::size_t>(dst)] = false;
    erase_done(static_cast<std::size_t>(dst));
}

std::vector<ulm::SendMsg*> AckTable::wait_for_new(int dst, int replica)
{
    std::vector<ulm::SendMsg*> more;
    const std::uint32_t bit = 1u << replica;
    for (auto&& [m, e] : pending_[static_cast<std::size_t>(dst)]) {
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
    Entry* e = pending_[static_cast<std::size_t>(dst)].find(m);
    const std::uint32_t bit = 1u << replica;
    if (e == nullptr || (e->waiting & bit)) {
        return nullptr;
    }
    e->waiting |= bit;
    return e->send;
}

std::vector<ulm::SendMsg*> AckTable::ack_upto(int dst, int replica, std::uint64_t upto,
                                              const std::vector<std::uint64_t>& missing)
{
    std::vector<ulm::SendMsg*> out;
    const auto d = static_cast<std::size_t>(dst);
    upto_[d][replica] = Upto{upto, missing};
    const std::uint32_t bit = 1u << replica;
    for (auto&& [m, e] : pending_[d]) {
        if (m > upto) {
            break;
        }
        if (std::find(missing.begin(), missing.end(), m) == missing.end()) {
            take_bit(d, e, bit, out);
        }
    }
    erase_done(d);
    return out;
}

bool AckTable::take_bit(std::size_t d, Entry& e, std::uint32_t bit, std::vector<ulm::SendMsg*>& out)
{
    if (!(e.waiting & bit)) {
        return false;
    }
    if (e.send != nullptr) {
        out.push_back(e.send);
    }
    e.waiting &= ~bit;
    if (e.waiting == 0 && parked_[d]) {
        e.send = nullptr; // its copy stays
    }
    return true;
}

void AckTable::erase_done(std::size_t d)
{
    if (!parked_[d]) {
        pending_[d].erase_if([](const Entry& e) { return e.waiting == 0; });
    }
}

AckTable::Held AckTable::take(int dst)
{
    const auto d = static_cast<std::size_t>(dst);
    upto_[d].clear();
    parked_[d] = false;
    return std::exchange(pending_[d], Held{});
}

std::size_t AckTable::waiting() const
{
    std::size_t n = 0;
    for (const Held& h : pending_) {
        for (const auto& [m, e] : h) {
            n += e.waiting != 0 ? 1 : 0;
        }
    }
    return n;
}

bool AckTable::any_waiting() const
{
    for (const Held& h : pending_) {
        for (const auto& [m, e] : h) {
            if (e.waiting != 0) {
                return true;
            }
        }
    }
    return false;
}

} // namespace ulmpi::rep
