// Relay: the bootstrap side of ulmpi_daemon, as a state machine without I/O.
//
// The ranks of the daemon's host connect to the daemon (an abstract Unix
// socket in the host's network namespace) exactly as they would to mpirun:
// HELLO with the job secret, then PUT / FENCE / GET / ABORT / FINALIZE. The
// relay checks the secret itself (a connection without it is refused here,
// counted, and never reaches mpirun), accepts only the ranks this host runs,
// each once, and passes every frame up unchanged over the daemon's single
// connection to mpirun, where the header's rank field keeps them apart.
//
// Down, frames are routed by that same field: WELCOME, REFUSED and VALUE go
// to the connection that introduced the rank; frames for rank -1 (FENCE_DONE,
// EVENT) go once to every connection that carries a welcomed rank. Since a
// daemon's upward stream looks exactly like a rank connection that carries
// many ranks, and the routing down is by rank, daemons can be stacked into
// a tree without a new message.
//
// When a rank's connection ends, RANK_CLOSED goes up for each rank it
// introduced, after every frame it sent.
//
// Replica recovery: a REPLICA frame of a rank goes up after what the rank
// wrote to its stdout (Uplink::drain_stdout); mpirun's answers come down
// by rank as the others do. The process a substitute forks connects as
// the re-created rank, which add_rank() (at mpirun's ADOPT expect) makes
// one of this host's.
#pragma once

#include "runtime/boot_wire.h"
#include "runtime/mpirun/kv_server.h"

#include <map>
#include <unordered_map>
#include <vector>

namespace ulmpi::rt::daemon {

using mpirun::ConnId;

class Relay final : public mpirun::ConnHandler {
public:
    class Uplink {
    public:
        virtual ~Uplink() = default;
        virtual void up(wire::Bytes frame) = 0;
        // What `rank` has written to its stdout so far goes up now, before
        // the frame that follows: a substitute's REPLICA (it flushed, then
        // asked; mpirun starts the new process's output where it stands).
        virtual void drain_stdout(int rank) { (void)rank; }
    };

    Relay(const wire::Secret& secret, std::vector<int> my_ranks, mpirun::KvServer::Sink& down,
          Uplink& up);

    void on_connect(ConnId conn) override;
    void on_data(ConnId conn, const void* data, std::size_t len) override;
    void on_close(ConnId conn) override;

    // A frame from mpirun for the ranks (WELCOME, REFUSED, VALUE, FENCE_DONE, EVENT).
    void from_up(const wire::Message& m);

    // A process started on this host later (MPI_Comm_spawn, a new process
    // for a failed rank or in a spawn slot used again) may connect too. A
    // connection of the rank's last process that is still open no longer
    // speaks for it (mpirun knows that process ended: no RANK_CLOSED).
    void add_rank(int rank);
    // The connection that introduced `rank`, or -1.
    ConnId conn_of(int rank) const;
    unsigned refused_count() const { return refused_; }

private:
    struct Conn {
        wire::FrameReader reader{wire::kMaxHelloFrame};
        std::vector<int> ranks; // introduced by HELLO (welcomed or not yet answered)
        bool trusted = false;   // a rank of it was welcomed
    };
    void handle(ConnId id, Conn& c, wire::Message& m);
    void refuse(ConnId id, const std::string& why);
    void drop(ConnId id, const std::string& why);

    wire::Secret secret_;
    std::vector<int> my_ranks_;
    mpirun::KvServer::Sink& down_;
    Uplink& up_;
    std::unordered_map<ConnId, Conn> conns_;
    std::map<int, ConnId> conn_of_rank_;
    unsigned refused_ = 0;
};

} // namespace ulmpi::rt::daemon
