// Revoking a communicator (ULFM's MPIX_Comm_revoke): every live member
// learns that the communicator is revoked, even when the revoker or some
// forwarders fail while the notice spreads.
//
// Propagation is a reliable broadcast over a circulant graph (as Open
// MPI's ULFM does): the first time a process marks a communicator revoked
// (its own call, or a notice), it sends a notice to the members at
// distances +-1, +-2, +-4, ... from itself in the member order, and, for
// every such neighbour it knows to have failed, to the next live member
// beyond it. Every process forwards once, so a notice costs about
// 2 log2(n) messages per member, and it reaches every live member as long
// as the failures do not cut the graph (a neighbour that fails is replaced
// by the next live one, so they never do while one live member received
// it).
//
// A communicator is identified by its point-to-point context id and a hash
// of its members' world ranks, so that a late notice for a freed
// communicator does not revoke a later one on the same context. A notice
// for a communicator this process does not (yet) have is kept, and applied
// if one with that identity is attached.
#pragma once

#include "ft/channel.h"
#include "ft/detector.h"

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace ulmpi::ft {

class Revoker {
public:
    using OnRevoked = std::function<void()>;

    Revoker(Channel& channel, Detector& detector, int my_world_rank);

    static std::uint64_t members_hash(const std::vector<int>& members);

    // The MPI layer registers each communicator (and forgets it when freed).
    void attach(std::uint32_t ctx, const std::vector<int>& members, OnRevoked on_revoked);
    void detach(std::uint32_t ctx);
    // Drops a notice kept for a context no communicator has (a late one for
    // a freed communicator): the context is about to be used again.
    void forget(std::uint32_t ctx) { early_.erase(ctx); }
    // MPIX_Comm_revoke: marks it here and spreads the notice.
    void revoke(std::uint32_t ctx);
    bool revoked(std::uint32_t ctx) const;
    std::uint64_t notices_sent() const { return sent_; }

private:
    struct Entry {
        std::vector<int> members;
        std::uint64_t hash = 0;
        OnRevoked on_revoked;
        bool revoked = false;
    };
    void mark(std::uint32_t ctx, Entry& e);
    void forward(std::uint32_t ctx, const Entry& e);
    void on_notice(int from, const Header& h);

    Channel& channel_;
    Detector& detector_;
    int me_;
    std::unordered_map<std::uint32_t, Entry> comms_;
    std::unordered_map<std::uint32_t, std::uint64_t> early_; // notices for unattached ctx: hash
    std::uint64_t sent_ = 0;
};

} // namespace ulmpi::ft
