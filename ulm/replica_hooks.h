// ULM -> replication: the interface ULM owns and rep/ implements
// (docs/replication.md).
//
// Under `mpirun --replicas R` a job of N ranks runs as R*N processes; ULM
// moves bytes between the physical processes, and its users (the MPI layer)
// speak of the N logical ranks. With hooks installed the engine:
//   * reports rank(), size() and job() of the logical rank;
//   * routes isend() to a logical rank through route() (a descriptor with no
//     physical send when it answers -1), and lets on_send() hold the send's
//     completion (SendMsg::holds) until rep/ releases it (release_hold);
//   * matches arrivals on the logical source (posted receives and probes name
//     logical ranks, so a receive is served by whichever replica of the
//     sender sends to this process), numbers every arrival with on_arrival()
//     in the sender's order, and reports every receive that completes
//     (irecvComplete) to on_recv_complete();
//   * on a peer's failure completes sends to it without error, keeps posted
//     receives posted, and hands rep/ every receive that had matched a
//     message of the dead peer whose data had not all come
//     (on_recv_orphaned; rep/ re-posts it with repost()) and the number of
//     every stored rendezvous message of the dead peer, which it drops
//     (on_unexpected_dropped);
//   * carries rep/'s acknowledgements on the program's messages when it has
//     one for their destination (piggy_ack, on_piggy_ack).
// isend_peer() sends to a physical process with none of this (rep/'s own
// acknowledgements and copies).
#pragma once

#include "runtime/bootstrap.h"
#include "ulm/message.h"

#include <cstdint>

namespace ulmpi::ulm {

class ReplicaHooks {
public:
    virtual const rt::JobInfo& logical_job() const = 0;
    virtual int logical_of(int phys) const = 0;
    // Physical destination of a send to logical rank `dst`; -1: none.
    virtual int route(int dst) const = 0;
    // A message on `ctx` from `phys` reached matching (in the sender's
    // order): its number in the logical sender's stream, 0 when not counted.
    virtual std::uint64_t on_arrival(int phys, ContextId ctx) = 0;
    // A send to logical rank `dst` was posted; may raise s.holds.
    virtual void on_send(SendMsg& s, int dst) = 0;
    virtual void on_recv_complete(const RecvMsg& r) = 0;
    virtual void on_recv_orphaned(RecvMsg& r) = 0;
    virtual void on_unexpected_dropped(int src, std::uint64_t rep_seq) = 0;
    // Piggy-backed acknowledgements (a RepExt on a match or eager fragment,
    // ulm/wire.h): the number to carry on a message of the program's (a send
    // that on_send() numbered) to physical process `phys`, 0 for none;
    // piggy_sent() once the fragment carrying it has left. on_piggy_ack():
    // a message from `phys` carried `m` (told before the message is matched;
    // not for a duplicate).
    virtual std::uint64_t piggy_ack(int phys) = 0;
    virtual void piggy_sent(int phys) = 0;
    virtual void on_piggy_ack(int phys, std::uint64_t m) = 0;
    // Engine::print_state (a wait that lasts, ulm_hang_report_s): the
    // replication state, on stderr.
    virtual void print_state() const = 0;

protected:
    ~ReplicaHooks() = default;
};

} // namespace ulmpi::ulm
