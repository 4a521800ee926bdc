// Resends (recovery, docs/replication.md "Recovery"): a message cut in the
// middle of its data by the death of a process that no longer served its
// receiver. A recovery moves a receiver from the substitute of a dead
// replica to the replica's new process, from the message after the last one
// that had arrived; messages of the substitute whose data had not all come
// then still come from the substitute. If the substitute dies before they
// did, the receiver asks its new server for them again (a resend) while the
// server's own stream to it is under way: each one follows a mark (an empty
// message on kMarkContext), and the receiver gives the message after a mark
// the first number it asked that server for, not the next in its stream.
// The server still holds them: every request and ack_upto names the
// messages that arrived but are not complete as pending, which the server
// neither sends nor counts as acknowledged.
#include "ft/rep/replicator.h"

#include "ft/rep/control_msg.h"

#include "runtime/log.h"

#include <algorithm>

namespace ulmpi::rep {

namespace {

constexpr std::size_t kMaxPending = 2048;

} // namespace

std::vector<std::uint64_t> Replicator::pending_of(int rank) const
{
    std::vector<std::uint64_t> out;
    if (!recover_) {
        return out;
    }
    const auto xi = static_cast<std::size_t>(rank);
    const auto& holes = recv_holes_[xi];
    for (std::uint64_t m : open_[xi]) {
        if (out.size() >= kMaxPending) {
            // Eager messages the program has not received yet are the
            // most of them: they need no sender any more.
            ULMPI_DEBUG("replication: %zu messages of rank %d pending, %zu named",
                        open_[xi].size(), rank, out.size());
            break;
        }
        if (std::find(holes.begin(), holes.end(), m) != holes.end()) {
            continue;
        }
        bool asked = false;
        for (int l = 0; l < set_.replicas() && !asked; ++l) {
            const auto& again = reasked_[static_cast<std::size_t>(set_.phys(l, rank))];
            asked = std::find(again.begin(), again.end(), m) != again.end();
        }
        if (!asked) {
            out.push_back(m);
        }
    }
    return out;
}

void Replicator::ask_again(int rank, std::vector<std::uint64_t> numbers)
{
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    const int s = server_[static_cast<std::size_t>(rank)];
    if (numbers.empty() || s < 0) {
        return;
    }
    auto& again = reasked_[static_cast<std::size_t>(s)];
    again.insert(again.end(), numbers.begin(), numbers.end());
    queue_ctrl(s, request_bytes(Kind::resend, 0,
                                static_cast<std::uint32_t>(inc_[static_cast<std::size_t>(s)]),
                                numbers));
}

void Replicator::on_resend(int from, int rank, const std::vector<std::uint64_t>& numbers)
{
    const int l = set_.replica_of(from);
    auto& stock = stock_[static_cast<std::size_t>(rank)];
    ULMPI_DEBUG("replication: process %d asks for %zu of my messages to rank %d again",
                from, numbers.size(), rank);
    for (std::uint64_t m : numbers) {
        const auto st = stock.find(m);
        if (acks_.held(rank).find(m) == nullptr && st == stock.end()) {
            // Its receiver numbers the next message after a mark as this
            // one: without it, the numbering would go wrong.
            rt::log(rt::LogLevel::error,
                    "replication: process %d asks again for message %llu to rank %d, which is no "
                    "longer held",
                    from, static_cast<unsigned long long>(m), rank);
            continue;
        }
        outbox_.push_back(Out{from, {}, nullptr, nullptr, true});
        send_again(rank, l, m, from, st != stock.end() ? st->second : nullptr);
    }
}

void Replicator::keep_pending(int rank, int replica, const std::vector<std::uint64_t>& pending)
{
    if (!recover_) {
        return;
    }
    const auto& stock = stock_[static_cast<std::size_t>(rank)];
    for (std::uint64_t m : pending) {
        if (acks_.held(rank).count(m) != 0) {
            if (ulm::SendMsg* s = acks_.wait_for(rank, replica, m)) {
                ++s->holds;
            }
        } else if (const auto st = stock.find(m); st != stock.end()) {
            (void)acks_.post(rank, m, nullptr, 1u << replica, st->second);
        }
    }
}

void Replicator::send_again(int rank, int l, std::uint64_t m, int from,
                            const std::shared_ptr<HeldCopy>& stocked)
{
    if (const AckTable::Entry* e = acks_.held(rank).find(m); e != nullptr) {
        if (recover_) {
            if (ulm::SendMsg* s = acks_.wait_for(rank, l, m)) {
                ++s->holds;
            }
        }
        queue_copy(*e, from);
        return;
    }
    if (recover_) {
        (void)acks_.post(rank, m, nullptr, 1u << l, stocked);
    }
    outbox_.push_back(Out{from, {}, nullptr, stocked});
}

} // namespace ulmpi::rep
