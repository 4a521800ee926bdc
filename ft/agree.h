// Fault-tolerant agreement (ULFM's MPIX_Comm_agree; also the core of
// shrink): the live members of a communicator agree on one value — a flag
// and an optional bit mask, both ANDed over the contributions — and on who
// did not contribute, with the same result everywhere, even when members
// (the coordinator included) fail during it.
//
// The failure detector is perfect here: a process is failed only when the
// runtime saw it die (or no path reaches it any more), and every live
// process hears of every failure. So a coordinator that has heard from
// every live member knows everything any of them knows, and two phases
// suffice (no majority quorums as in Paxos):
//
//  gather   every member sends its contribution towards the root (the live
//           member of lowest index). While this process knows of no failed
//           member, up a binomial tree rooted at member 0: each node sends
//           the aggregate of its subtree once the subtree is complete
//           (aggregates merge idempotently: AND, union, intersection), so
//           the cost is logarithmic. Once any member is known failed, flat:
//           each member sends its state (contribution, and the outcome if
//           it already has one) straight to the root of its view.
//  commit   the root decides — the outcome some member already committed
//           if any reported one, else the aggregate: value, the members
//           that did not contribute, and whether one of them is a failure
//           some contributor had not acknowledged — and sends it down the
//           tree, or to every live member.
//
// Views change as failures become known; each change sends this process's
// state to the new root (a member that already committed sends its
// outcome, so a root that died half-way through its commit is completed
// by the next one). A stale commit from a root that died must not win over
// a different decision of the next root: a member that sent its state to
// a root of ballot b (its view: failed count, root) ignores commits of
// lower ballots. A root answers a state from its log with the sender's
// ballot (it is alive, so no later root exists).
#pragma once

#include "ft/channel.h"
#include "ft/detector.h"

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace ulmpi::ft {

struct AgreeValue {
    std::uint32_t flag = ~0u;
    std::vector<std::uint32_t> mask; // ANDed word by word; the same length everywhere
    // ORed: which operations the contributions came from (the caller's bits,
    // e.g. agree or shrink). An outcome with bits other than the caller's
    // says that members called different operations on one communicator
    // under the same sequence number — a program error that would otherwise
    // leave them waiting for each other; the caller reports it.
    std::uint32_t kinds = 0;
};

struct AgreeOutcome {
    AgreeValue value;
    std::vector<int> failed;       // member indices that did not contribute
    bool unacked_failure = false;  // one of them was not acknowledged by every contributor
};

class Agreements {
public:
    Agreements(Channel& channel, Detector& detector, int my_world_rank);
    ~Agreements();
    Agreements(const Agreements&) = delete;
    Agreements& operator=(const Agreements&) = delete;

    // Starts the `seq`-th agreement on the communicator with context `ctx`
    // among `members` (world ranks, in the same order everywhere; this
    // process is one of them). `acked[i]`: I acknowledged member i's failure.
    // Returns a handle for done()/outcome()/finish().
    int start(std::uint32_t ctx, std::uint64_t seq, const std::vector<int>& members,
              const AgreeValue& mine, const std::vector<bool>& acked);
    bool done(int handle) const;
    const AgreeOutcome& outcome(int handle) const;
    // The caller has the outcome; the instance stays in the log (bounded)
    // to answer members that ask later.
    void finish(int handle);
    // The communicator on context `ctx` was freed: its instances only
    // answer late questions now. The MPI layer keeps the context from a
    // new communicator until it drops them (mpi/ft_comm.h: quarantine).
    void retire(std::uint32_t ctx);
    // Whether any instance of context `ctx` is known; dropping them all (the
    // context may be reused by a new communicator now).
    bool has(std::uint32_t ctx) const;
    void drop(std::uint32_t ctx);
    // FT-MPI REBUILD: the instances of `ctx` that have not decided belong to
    // an epoch a recovery ended, and the ranks it replaced will never take
    // part in them. Each commits here as a failure (flag 0, nobody named
    // failed, so no revived rank is taken for failed) without a message;
    // a member that asks later gets that answer.
    void abandon(std::uint32_t ctx);

    // Messages and rounds so far (tests, figures).
    std::uint64_t messages_sent() const { return sent_; }

private:
    struct Inst;
    using Key = std::pair<std::uint32_t, std::uint64_t>;

    Inst& instance(std::uint32_t ctx, std::uint64_t seq);
    void on_message(int from, const Header& h, const std::byte* p, std::size_t n);
    void on_failure(int world);
    void view_changed(Inst& in);
    void step(Inst& in);
    void decide(Inst& in);
    void commit(Inst& in, std::uint64_t ballot, const AgreeOutcome& o, bool forward_tree);
    void send_state(Inst& in, int to_index, bool flat);
    void send_commit(Inst& in, int to_index, std::uint64_t ballot, bool tree);
    void evict(std::uint32_t ctx);

    Channel& channel_;
    Detector& detector_;
    int me_;
    std::map<Key, std::unique_ptr<Inst>> insts_;
    std::map<int, Inst*> handles_;
    int next_handle_ = 1;
    std::uint64_t sent_ = 0;
};

} // namespace ulmpi::ft
