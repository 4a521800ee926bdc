// KvServer: the rank-facing side of mpirun, as a state machine without I/O.
//
// The socket code (BootListener) hands it the bytes of each connection and
// carries out what it asks through a Sink (send a frame, close a
// connection); mpirun's monitor reads the Notes it leaves (hello, abort,
// finalize, a rank that can no longer reach a fence ...) and decides what the
// job does. Unit tests drive it directly.
//
// Connections and ranks. A connection is trusted once a HELLO with the job
// secret arrives; until then its frames are limited to kMaxHelloFrame and any
// other message refuses it. A connection may carry several ranks (a per-host
// daemon relays for all ranks of its host): each HELLO adds one, and every
// later frame must name a rank that this connection introduced.
//
// Fence. Each rank fences once per round; when all `size` ranks have, every
// connection gets one FENCE_DONE (rank -1: for all its ranks) carrying each
// (rank, key, value) put since the previous fence. A rank that finalized,
// lost its connection or ended while others wait in a fence makes the fence
// impossible: a fence_stuck note says so, and the monitor ends the job rather
// than let it hang. In a fault-tolerant job the monitor declares such a rank
// failed (rank_failed()) instead: from then on every fence completes once
// all ranks but the failed ones have entered it.
//
// Respawn (FT-MPI REBUILD). A rank may ask for a failed rank to be started
// again (RESPAWN) as a later incarnation: from that frame on fences wait for
// the new process as for any rank (rank_respawned; the old process's
// connection no longer carries the rank), and a `respawn` note asks the
// monitor to start it. Notes about a rank's connection carry the
// incarnation they concern.
//
// Spawn (MPI_Comm_spawn, docs/dynamic_processes.md). Ranks from
// reserve_slots()'s first on are spawn slots: fences of the job do not wait
// for them (as if failed) and no process may say HELLO for one until
// rank_spawned(). A SPAWN frame becomes a `spawn` note (msg: the frame); the
// monitor starts the processes, makes their groups (make_group) and answers
// the root (send_to). A group is a set of ranks with fences of its own
// (GROUP_FENCE): a round completes once every member has entered it or is
// gone, and each member that entered gets FENCE_DONE with what the members
// put since the group's last round. Spawned ranks fence only in groups: the
// parents and children together for the wire-up, the children alone (their
// MPI_COMM_WORLD) afterwards.
//
// Daemons. The daemon of a remote host opens with DAEMON_HELLO (the job
// secret, its node and host name, which must be one expect_daemons() named).
// Its connection then carries the HELLO and later frames of that host's
// ranks (those of the job map, and a rank placed there by rank_placed),
// and only of those; a relayed HELLO that is refused refuses that rank
// alone (REFUSED with its rank), not the connection. RANK_CLOSED ends one
// rank's part of the connection as on_close() ends all of them. The daemon's
// own reports (SPAWNED, OUTPUT, EXITED, ADOPTED, BYE) become `daemon_msg` notes, in
// the order they arrived among the other notes; the connection's loss a
// `daemon_lost` note.
#pragma once

#include "runtime/boot_wire.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ulmpi::rt::mpirun {

using ConnId = int;

// What BootListener feeds with the bytes of its connections.
class ConnHandler {
public:
    virtual ~ConnHandler() = default;
    virtual void on_connect(ConnId conn) = 0;
    virtual void on_data(ConnId conn, const void* data, std::size_t len) = 0;
    // The peer closed (or the socket failed). Unknown ids are ignored.
    virtual void on_close(ConnId conn) = 0;
};

class KvServer final : public ConnHandler {
public:
    class Sink {
    public:
        virtual ~Sink() = default;
        virtual void send(ConnId conn, wire::Bytes frame) = 0;
        // Close once the frames already sent have gone out.
        virtual void close(ConnId conn) = 0;
    };

    struct Note {
        enum class Kind {
            hello,
            abort,
            finalize,
            conn_lost,
            fence_stuck,
            daemon_hello, // node, conn
            daemon_msg,   // node, conn, msg (SPAWNED, OUTPUT, EXITED, ADOPTED, BYE; msg.rank)
            daemon_lost,  // node: its connection closed or broke
            respawn,      // rank: to start again, code: as that incarnation
            spawn,        // rank: the asking root; msg: the SPAWN frame
            replica,      // rank: the sender; conn; msg: the REPLICA frame (recovery)
        };
        Kind kind;
        int rank = -1;
        int code = 0;       // abort; respawn: incarnation; conn_lost, fence_stuck:
                            // the rank's incarnation it is about
        std::string text;   // abort message; fence_stuck reason; daemon_lost reason
        int node = -1;
        ConnId conn = -1;
        wire::Message msg;
    };

    KvServer(const wire::Secret& secret, std::vector<std::int32_t> node_of_rank,
             std::uint32_t universe_size, Sink& sink);

    // Nodes whose ranks come through a daemon: host name by node, "" for a
    // node whose ranks connect directly.
    void expect_daemons(std::vector<std::string> host_of_node);

    void on_connect(ConnId conn) override;
    void on_data(ConnId conn, const void* data, std::size_t len) override;
    void on_close(ConnId conn) override;
    // The rank's process has ended.
    void rank_gone(int rank);
    // The rank failed and the job goes on without it (fault tolerance):
    // fences no longer wait for it. A fence waiting only for it completes now.
    void rank_failed(int rank);
    // The failed rank is started again as `incarnation` (FT-MPI REBUILD):
    // from now on fences wait for the new process, which may say HELLO; the
    // old one's connection, if still open, no longer carries it.
    void rank_respawned(int rank, int incarnation);
    // The rank's host is lost: its new processes start on mpirun's host and
    // say HELLO here, not through a daemon.
    void rank_moved(int rank);
    // The rank's next process runs on host `node` of the job map (a replica
    // re-created by a substitute there): its HELLO comes through that
    // node's daemon, or directly for mpirun's own host. WELCOME still
    // gives every rank's node of the job map. The daemons of the hosts it
    // ran on before may still report about its earlier processes.
    void rank_placed(int rank, int node);
    int incarnation(int rank) const { return ranks_[idx(rank)].incarnation; }
    // Ranks from `first` on are spawn slots (see above).
    void reserve_slots(int first);
    // A process is started in spawn slot `rank` as `incarnation` (> 0: the
    // slot held processes before): it may say HELLO; it fences in groups
    // only. The slot's earlier processes leave their groups (their fences
    // no longer wait for the slot). Call it before make_group() for the
    // new process's groups.
    void rank_spawned(int rank, int incarnation = 0);
    // A new fence group of these ranks; returns its id (>= 1).
    int make_group(std::vector<int> members);
    // A frame to one rank (on the connection that carries it), if connected.
    void send_to(int rank, wire::Body body);
    // Sends an EVENT to every connection that carries a rank, and to every
    // daemon.
    void broadcast(const wire::Event& ev);

    std::vector<Note> take_notes() { return std::exchange(notes_, {}); }

    int size() const { return static_cast<int>(ranks_.size()); }
    bool said_hello(int rank) const { return ranks_[idx(rank)].hello; }
    bool finalized(int rank) const { return ranks_[idx(rank)].finalized; }
    std::uint32_t pid(int rank) const { return ranks_[idx(rank)].pid; }
    // The connection carrying `rank`, or -1.
    ConnId conn_of(int rank) const { return ranks_[idx(rank)].conn; }
    // The connection of node's daemon, or -1.
    ConnId daemon_conn(int node) const;
    int fenced_count() const { return fenced_; }
    std::uint64_t fences_completed() const { return fences_done_; }
    unsigned refused_count() const { return refused_; }

private:
    struct Conn {
        wire::FrameReader reader{wire::kMaxHelloFrame};
        std::vector<int> ranks;
        bool trusted = false;
        int daemon_node = -1; // >= 0: the daemon of that node
    };
    struct RankState {
        ConnId conn = -1;
        std::uint32_t pid = 0;
        bool hello = false;
        bool fenced = false;   // in the current round
        bool finalized = false;
        bool gone = false;     // process ended or connection lost
        bool stuck_noted = false;
        bool failed = false;   // fences do not wait for it
        int incarnation = 0;   // of the process (rank_respawned)
        bool spawned = false;  // a spawn slot that has a process
        bool moved = false;    // its processes start on mpirun's host (rank_moved)
    };
    struct Group {
        std::vector<int> members; // -1: a slot's process that left it (slot used again)
        std::vector<bool> in;  // by member: entered the current round
        std::set<std::pair<int, std::string>> since; // keys members put since the last round
    };

    static std::size_t idx(int rank) { return static_cast<std::size_t>(rank); }
    void handle(ConnId id, Conn& c, wire::Message& m);
    // A PUT of the name service (boot_wire.h): answered here; false for
    // any other key.
    bool name_service(ConnId id, std::int32_t rank, const wire::Put& p);
    void on_hello(ConnId id, Conn& c, const wire::Message& m);
    void on_daemon_hello(ConnId id, Conn& c, const wire::Message& m);
    // A relayed HELLO is refused: that rank only, the connection stays.
    void refuse_hello(ConnId id, Conn& c, std::int32_t rank, const std::string& why);
    void rank_closed(Conn& c, int rank);
    void refuse(ConnId id, const std::string& why);
    void drop(ConnId id, const std::string& why);
    void check_fence();
    void check_groups();
    void group_fence(ConnId id, int rank, int group);
    void send(ConnId id, std::int32_t rank, wire::Body body);

    wire::Secret secret_;
    std::vector<std::int32_t> node_of_rank_;
    std::uint32_t universe_size_;
    Sink& sink_;
    std::unordered_map<ConnId, Conn> conns_;
    std::vector<RankState> ranks_;
    std::vector<int> place_;               // by rank: the node its process runs on
    std::vector<std::vector<int>> places_; // by rank: every node it ran on
    bool ran_on(int rank, int node) const;
    std::vector<std::string> daemon_host_;  // by node; "" : no daemon
    std::vector<ConnId> daemon_conn_;       // by node
    std::map<std::pair<int, std::string>, wire::Bytes> store_; // every value ever put
    std::map<std::string, std::string> names_; // MPI_Publish_name: service -> port
    std::set<std::pair<int, std::string>> since_fence_;        // keys put in this round
    int fenced_ = 0;
    int failed_unfenced_ = 0; // failed ranks not in the current round's fence
    int first_slot_ = -1;     // spawn slots from here on (-1: none)
    std::map<int, Group> groups_;
    int next_group_ = 1;
    std::uint64_t fences_done_ = 0;
    unsigned refused_ = 0;
    std::vector<Note> notes_;
};

} // namespace ulmpi::rt::mpirun
