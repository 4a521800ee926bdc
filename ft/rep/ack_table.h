// The sender's side of the SDR protocol: sends that wait for the
// acknowledgements of the other replicas of their destination.
//
// Replica k of rank i numbers its sends to each logical destination j from 1
// (every replica of i sends the same messages, so message m means the same
// message on every replica). Replica l of j acknowledges message m to every
// replica of i but l once it has received it; replica k's send of m completes
// when each live replica l != k of j has acknowledged it, and the send
// descriptor (so the message) is kept until then: it is what a substitute
// sends again. A message up to rep_copy_limit is copied instead (the send
// completes as without replication and the copy is kept until the
// acknowledgements came). An acknowledgement may come before the send is
// posted (a sender replica behind its siblings): it is remembered.
#pragma once

#include "ft/rep/ack_ring.h"
#include "ft/rep/held_copy.h"
#include "ulm/message.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace ulmpi::rep {

class AckTable {
public:
    using Entry = AckEntry;
    // Per destination, by message number (ack_ring.h).
    using Held = AckRing;

    explicit AckTable(int logical_size)
        : pending_(static_cast<std::size_t>(logical_size)),
          parked_(static_cast<std::size_t>(logical_size), false),
          upto_(static_cast<std::size_t>(logical_size))
    {
    }

    // Send m to `dst` waits for the replicas in `want`; returns those it
    // still waits for (acknowledgements that came early are taken off).
    std::uint32_t post(int dst, std::uint64_t m, ulm::SendMsg* s, std::uint32_t want,
                       std::shared_ptr<HeldCopy> copy = nullptr);
    // Replica `replica` of `dst` acknowledged m: the send to release one
    // hold of, or nullptr (not waiting for it, a copy, or not posted yet).
    ulm::SendMsg* ack(int dst, int replica, std::uint64_t m);
    // Replica `replica` of `dst` failed: every send waiting for it, once
    // (copies are dropped when nobody waits any more).
    std::vector<ulm::SendMsg*> drop_replica(int dst, int replica);
    // The sends to `dst` still waiting, in message order.
    const Held& held(int dst) const
    {
        return pending_[static_cast<std::size_t>(dst)];
    }
    // Entries that still wait for an acknowledgement (not those kept only
    // for a replica being re-created, parked).
    std::size_t waiting() const;
    // Whether one does: stops at the first (MPI_Finalize asks on every poll
    // of its wait, with thousands held when a sibling is far behind).
    bool any_waiting() const;

    // Recovery (docs/replication.md "Recovery"): while a replica of `dst`
    // is being re-created, the messages to `dst` are kept even once
    // acknowledged, for the new replica to ask for. park() gives every
    // entry a copy (`copy_of` makes one from a send) so that its send may
    // complete; the caller posts only entries with a copy while parked.
    // unpark() drops the entries nobody waits for any more.
    void park(int dst, const std::function<std::shared_ptr<HeldCopy>(const ulm::SendMsg&)>& copy_of);
    bool parked(int dst) const { return parked_[static_cast<std::size_t>(dst)]; }
    void unpark(int dst);
    // A re-created replica `replica` of `dst` (recovery): every message to
    // `dst` still held waits for its acknowledgement too; the sends it
    // holds once more are returned (one more release_hold each, later).
    std::vector<ulm::SendMsg*> wait_for_new(int dst, int replica);
    // Replica `replica` of `dst` asked for message m again (a request): the
    // entry waits for its acknowledgement too. The send to hold once more
    // (one more release_hold later), or nullptr.
    ulm::SendMsg* wait_for(int dst, int replica, std::uint64_t m);
    // That replica has every message up to `upto` but `missing`: released
    // as by ack() (returns the sends to release once each), and a send of
    // such a message posted later (a sender replica behind) does not wait
    // for it.
    std::vector<ulm::SendMsg*> ack_upto(int dst, int replica, std::uint64_t upto,
                                        const std::vector<std::uint64_t>& missing);
    // Every entry to `dst`, taken out (a forked process's inheritance).
    Held take(int dst);

private:
    // Replica `bit` has the message of entry `e` to destination d: false if
    // the entry was not waiting for it; else its send goes to `out`, and an
    // entry no replica waits for any more keeps only its copy while d is
    // parked (otherwise erase_done() takes it out).
    bool take_bit(std::size_t d, Entry& e, std::uint32_t bit, std::vector<ulm::SendMsg*>& out);
    // Entries to d no replica waits for, unless d is parked.
    void erase_done(std::size_t d);

    std::vector<Held> pending_;
    std::vector<bool> parked_;
    // ack_upto(): per destination and replica, what it is known to have.
    struct Upto {
        std::uint64_t upto = 0;
        std::vector<std::uint64_t> missing;
    };
    std::vector<std::map<int, Upto>> upto_;
};

} // namespace ulmpi::rep
