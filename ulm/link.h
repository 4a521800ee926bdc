// The per-peer link: everything about one peer that is not about a message.
//
// Between the protocols (engine.h) and the paths, one Link per peer owns:
//   * the rails: every path that reaches the peer, each with its state and
//     measurements (rail.h), and the choice of rail for every fragment:
//     control fragments and small messages take the up rail of lowest
//     latency; the data fragments of a large message are striped over every
//     up rail, each fragment to the rail that would deliver it first given
//     what it already has in flight and its measured rate (so each rail's
//     share follows its bandwidth), never beyond a rail's in-flight cap
//     (rate x twice its shortest round trip, at least kMinRailCap) so that
//     queues, and the time to notice a dead rail, stay short;
//   * reliability in both directions (reliability.h): fragment sequence
//     numbers, the window of unacknowledged fragments, the range sets of
//     what arrived, the ACK owed, timers and the round trip;
//   * the peer's lifetime: alive, or failed (nothing is sent or accepted;
//     every fragment kept for it was freed and its owner told), and the
//     pair's epoch, which changes when either process is replaced by a new
//     incarnation (wire.h) and then starts a fresh sequence space.
// LinkSet (link_set.h) holds the links and runs these protocols.
#pragma once

#include "paths/path.h"
#include "runtime/intrusive_list.h"
#include "ulm/message.h"
#include "ulm/rail.h"
#include "ulm/range_set.h"
#include "ulm/reliability.h"
#include "ulm/types.h"
#include "ulm/wire.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace ulmpi::ulm {

// A control fragment (cts, fin, ack) that found no room on its path.
struct CtrlFrag {
    rt::ListHook hook;
    std::uint32_t len = 0;
    alignas(8) std::byte bytes[kMaxHeader];
};

struct LinkCounters {
    std::uint64_t frags_sent = 0;
    std::uint64_t frags_received = 0;
    std::uint64_t bytes_sent = 0;       // payload bytes
    std::uint64_t bad_frags = 0;        // malformed or misaddressed fragments dropped
    std::uint64_t retransmits = 0;      // fragments sent again, for one of these reasons:
    std::uint64_t resent_timer = 0;     //   the retransmission timer expired
    std::uint64_t resent_fast = 0;      //   later fragments were acknowledged
    std::uint64_t resent_recovery = 0;  //   a partial ACK after a timeout showed a hole
    std::uint64_t resent_corrupt = 0;   //   the peer answered corrupt
    std::uint64_t resent_failover = 0;  //   their rail went down: sent over another
    std::uint64_t split = 0;            // fragments failed over in pieces (no other rail took them whole)
    std::uint64_t pieces_dropped = 0;   // received pieces of a fragment that had arrived whole
    std::uint64_t crc_header_fail = 0;  // dropped: header checksum wrong
    std::uint64_t crc_payload_fail = 0; // answered corrupt: payload checksum wrong
    std::uint64_t duplicates = 0;       // dropped: already delivered
    std::uint64_t stale = 0;            // dropped: another epoch (a dead incarnation's)
    std::uint64_t acks_sent = 0;        // ACK fragments
    std::uint64_t acks_received = 0;
    std::uint64_t piggy_acks_sent = 0;  // ACKs carried by other fragments (AckExt)
    std::uint64_t piggy_acks_received = 0;
    std::uint64_t piggy_acks_held = 0;  // left off a fragment it would have cost a line (Rail::costs_a_line)
    std::uint64_t corrupt_acks_received = 0;
};

// Data fragments of matched messages take the bulk lane, all others (match,
// control, ACK) the control lane. `type` is the header's second byte.
inline path::Lane lane_of(std::byte type)
{
    return type == static_cast<std::byte>(FragType::data) || type == static_cast<std::byte>(FragType::piece)
               ? path::Lane::bulk
               : path::Lane::control;
}

class Link {
public:
    static constexpr int kMaxRails = 8;
    static constexpr std::uint64_t kMinRailCap = 256u << 10;

    // replacing: reset for a new process that is not connected yet (FT-MPI
    // REBUILD: Engine::replace_peer .. connect_replaced); nothing is sent
    // or accepted, and notices of the old process's failure are ignored.
    enum class Lifetime : std::uint8_t { alive, failed, replacing };

    int rank = -1;
    Lifetime life = Lifetime::alive;
    int peer_incarnation = 0;
    std::uint8_t epoch = 0;        // of fragments both ways (wire.h)
    bool reliable = false;         // some rail is reliable: sequences tracked, ACKs sent
    bool time_all = false;         // time every fragment (a kernel path: see LinkSet::bind)
    bool stripe = true;            // bulk data over every up rail (else the control rail's)
    bool paced = false;            // a network rail: bulk data kept under its in-flight cap
                                   // even when it is the only rail (rail_cap)

    // The paths that reach the peer, allocated when the link is bound with
    // room for exactly those (one, between two ranks of a host): a job's
    // links cost memory per peer, and 8 rails inline were 1.7 KB of each.
    // The fast path goes through ctrl_ and bulk_rail(), not this array.
    std::unique_ptr<Rail[]> rails;
    int nrails = 0;

    // Sender side.
    FragSeq next_frag_out{1};
    SeqWindow unacked;
    RttEstimate rtt;
    rt::Nanos timer = 0;           // retransmission timer (while `unacked` is not empty; 0: to be armed)
    std::uint64_t tx_count = 0;    // transmissions to the peer, first ones and resends
    std::uint64_t rtt_seq = 0;     // fragment timed for the round trip (0: none)
    rt::Nanos rtt_sent = 0;        // ... when it left
    std::uint64_t next_rtt_seq = 1; // the next one timed is at least this
    std::uint32_t backoff = 0;     // timer expiries in a row without progress
    rt::Nanos silent_since = 0;    // when the first of them expired
    std::uint64_t recover_seq = 0; // after a timeout: last seq sent then (0: none)
    bool failover_due = false;     // kept fragments wait to leave a down rail
    rt::IntrusiveList<CtrlFrag, &CtrlFrag::hook> ctrl_pending;

    // Receiver side.
    RangeSet received;             // header intact
    RangeSet delivered;            // payload intact and processed
    std::uint64_t ack_latest = 0;  // newest delivered seq not yet acknowledged
    std::uint64_t ack_low = 0;     // out-of-order arrivals since the last ACK: lowest and
    std::uint64_t ack_high = 0;    // highest (0: none); the next ACK's map starts at ack_low
    bool ack_due = false;          // an ACK is owed (on LinkSet's ack list)
    bool ack_urgent = false;       // ... and must not wait
    std::uint32_t ack_owed = 0;    // fragments it covers
    std::uint32_t ack_seen = 0;    // ack_owed at the last pass that looked at it (flush_one)
    std::uint32_t ack_quiet = 0;   // passes since then that found nothing new (flush_one)
    rt::Nanos ack_deadline = 0;    // when it goes out at the latest (0, -1: set in a later pass)
    Rail* ack_rail = nullptr;      // where the last reliable fragment came from
    // Fragments being received in pieces (wire.h, piece): the whole's
    // sequence number and the bytes of it still to come.
    struct Pieces {
        std::uint64_t whole = 0;
        std::uint32_t left = 0;
    };
    std::vector<Pieces> pieces;

    rt::ListHook ack_hook;         // LinkSet's list of links owed an ACK
    rt::ListHook unacked_hook;     // LinkSet's list of links with fragments kept
    rt::ListHook probe_hook;       // LinkSet's list of links with a rail down
    rt::ListHook read_hook;        // LinkSet's list of links with reads in flight
    // Whether the link is on each list, guarded like the link (its peer's
    // lock): the hooks themselves change under the lists' lock whenever a
    // neighbour comes or goes (LinkSet::list_*).
    bool on_ack_list = false;
    bool on_unacked_list = false;
    bool on_probe_list = false;
    bool on_read_list = false;
    LinkCounters counters;

    bool alive() const { return life == Lifetime::alive; }
    // The largest fragment, and eager message, that every rail takes: a
    // fragment other than data (which is split, LinkSet::split) must fit any
    // rail it may fail over to.
    std::uint32_t frag_floor() const;
    std::uint64_t eager_floor() const;
    bool multi() const { return nrails > 1; }
    // Rails measure their rate and round trip (ACKs read the clock): with
    // several rails (striping, evidence of life) or a paced one (its cap).
    bool measured() const { return paced || nrails > 1; }
    int up_rails() const { return nup_; } // rails in use (up; standby ones only when no other is up)
    // The rail for control fragments and small messages (nullptr: failed).
    Rail* control_rail() const { return ctrl_; }
    // The rails go (LinkSet::rebind, before it binds the link afresh): so
    // does every pointer into them.
    void drop_rails()
    {
        ctrl_ = nullptr;
        ack_rail = nullptr;
        rails.reset();
        nrails = 0;
        nup_ = 0;
    }
    // The largest message that leaves whole in one eager fragment over the
    // control rail, fitting every other rail it may fail over to (a match
    // fragment cannot be split): set by choose(), read by Engine::send_now.
    std::uint64_t eager_max() const { return eager_max_; }
    path::Path* control_path() const { return ctrl_ != nullptr ? ctrl_->path : nullptr; }
    // The rail for `bytes` of bulk data: the up rail that would deliver them
    // first and has room; nullptr when every up rail is at its cap.
    Rail* bulk_rail(std::uint64_t bytes)
    {
        if (nup_ <= 1 || !stripe) [[likely]] {
            return ctrl_ != nullptr && at_cap(*ctrl_, bytes) ? nullptr : ctrl_;
        }
        return striped_rail(bytes);
    }
    // Another up rail than `r`, for a resend that should avoid it.
    Rail* other_rail(const Rail* r);
    Rail* rail_of(const path::Path* p)
    {
        for (int i = 0; i < nrails; ++i) {
            if (rails[i].path == p) {
                return &rails[i];
            }
        }
        return nullptr;
    }
    int index_of(const Rail* r) const { return static_cast<int>(r - rails.get()); }
    std::uint64_t rail_cap(const Rail& r) const;
    // A paced rail that holds its cap: `bytes` more would only lengthen the
    // queue before the slowest link on the way (or before a receiver that
    // falls behind, which inflates the round trip and with it every timer).
    bool at_cap(const Rail& r, std::uint64_t bytes) const
    {
        return paced && r.inflight != 0 && r.inflight + bytes > rail_cap(r);
    }

    // Recomputes the control rail and the count of up rails (after a rail
    // changes state, or its latency estimate moves).
    void choose();

private:
    Rail* striped_rail(std::uint64_t bytes);
    // Rails in use: up, and not standby unless no other rail is up.
    bool in_use(const Rail& r) const { return r.up() && r.standby == standby_in_use_; }

    Rail* ctrl_ = nullptr;
    std::uint64_t eager_max_ = 0;
    int nup_ = 0;
    bool standby_in_use_ = false;
};

} // namespace ulmpi::ulm
