// Active replication of send-deterministic programs (SDR-MPI, Lefray,
// Ropars and Schiper 2013): the layer between the MPI layer and ULM
// (docs/replication.md).
//
// Under `mpirun --replicas R` every logical rank i runs as R processes; the
// program sees N ranks. The Replicator is installed into the engine as its
// replica hooks (ulm/replica_hooks.h), so every MPI operation, collectives
// and communicator creation included, runs unchanged on the logical ranks:
//
//  * Parallel protocol. Replica k of i sends a message only to replica k of
//    its destination j. When replica l of j completes the receive (at the
//    ULM level, not when the program waits) it acknowledges the message to
//    every live replica of i but l. A send completes when every live
//    replica l != k of j has acknowledged it; the descriptor holds the
//    message until then (AckTable). Messages are numbered per (sender rank,
//    destination rank) in send order on the sender side and in arrival
//    order on the receiver side: the same numbers, because every replica of
//    i sends the same messages (send-determinism) and ULM keeps the order.
//  * No leader. MPI_ANY_SOURCE, MPI_Test, MPI_Waitany and probes are decided
//    by each replica alone.
//  * Failure of replica l of rank x (from the runtime's notices). Sends
//    waiting for its acknowledgement stop waiting; if x's messages to this
//    process came from it, this process asks the substitute (the lowest
//    live replica of x) to take over: a request names the first message
//    number it has not received and the messages whose data the dead one
//    had not finished sending (holes). The substitute sends it those of its
//    held messages, in order, and from then on a copy of every later message
//    to that rank. The job ends with a clear error when every replica of a
//    rank has died.
//
//  * Cross-checking (rep_check, mpirun --replica-check; the RedMPI idea):
//    every replica sends its siblings a CRC32C of each message it sends
//    (destination rank, number, tag); a sibling whose own digest of that
//    message differs reports it (silent data corruption). With three or
//    more replicas the majority wins: a replica whose digest differs from
//    every other one (which agree) leaves the job and is treated as failed.
//
//  * Recovery (rep_recover, two replicas; recovery.cpp, docs/replication.md
//    "Recovery"): the substitute of a dead replica forks a new process for
//    it, which mpirun adopts as a new incarnation of the dead process; the
//    substitute tells every live process (a notice, FIFO after everything it
//    sent before the fork); each resets its link to the dead process, keeps
//    what it sends to that rank until the new replica asked for it, and the
//    new replica and the processes it receives from or sends to catch up
//    with the same requests that orphans send to a substitute.
#pragma once

#include "ft/rep/ack_table.h"
#include "ft/rep/replica_set.h"
#include "runtime/bootstrap.h"
#include "runtime/clock.h"
#include "ulm/engine.h"
#include "ulm/ft_hooks.h"
#include "ulm/replica_hooks.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ulmpi::rep {

inline constexpr ulm::ContextId kRepContext{0xfff1'0000u};
// The replica channel: messages between the replicas of one rank that are
// not the program's (intra-parallel task updates, intra/). Neither numbered
// nor acknowledged: the protocol above does not see them.
inline constexpr ulm::ContextId kSiblingContext{0xfff2'0000u};
// Marks: an empty message on this context from a server says that the next
// numbered message from it is the first of the numbers its receiver asked
// it for again (a resend, recovery): numbers follow the arrival order, and
// such a message comes in the middle of the server's stream.
inline constexpr ulm::ContextId kMarkContext{0xfff1'0001u};

// The replication degree of this job (the rep_replicas parameter, which
// mpirun --replicas sets); 1: no replication.
int replicas_param();

class Replicator final : public ulm::ReplicaHooks,
                         public ulm::FailureHooks,
                         public ulm::ProgressHook {
public:
    // `fallback` takes what is not a replica's failure (the job ending).
    // Fails (with `why`) when the job's size is not a multiple of `replicas`.
    static std::unique_ptr<Replicator> start(ulm::Engine& engine, rt::Bootstrap& boot,
                                             int replicas, ulm::FailureHooks* fallback,
                                             std::string& why);
    Replicator(ulm::Engine& engine, rt::Bootstrap& boot, int replicas,
               ulm::FailureHooks* fallback);
    ~Replicator();
    Replicator(const Replicator&) = delete;
    Replicator& operator=(const Replicator&) = delete;

    // Before the engine finalizes: every held message acknowledged, every
    // control message sent. The hooks stay through the engine's finalize
    // (its last fence): detach() after it takes them off.
    void finalize();
    void detach();

    const ReplicaSet& set() const { return set_; }
    int replica() const { return k_; }
    std::uint64_t takeovers() const { return takeovers_; }
    // Recovery: replicas this process re-created (forked) so far.
    std::uint64_t recoveries() const { return recoveries_; }
    // An intra-parallel section is open (ft/intra): a re-creation waits for
    // its end (the new process would inherit a half-run section).
    void hold_forks(bool on) { forks_held_ += on ? 1 : -1; }
    // Messages asked for again because their sender died during their transfer.
    std::uint64_t holes() const { return holes_; }
    // Cross-checking: messages compared, and those whose digests differed.
    std::uint64_t checked() const { return checked_; }
    std::uint64_t mismatches() const { return mismatches_; }

    // The replica channel (sibling_channel.cpp): sends to replica
    // `replica` of my rank on kSiblingContext; receives one message with
    // `tag` from whichever replica of my rank sends it (matching is on the
    // logical source, so the receive need not name the sender). A receive
    // whose sender dies in the middle of the data stays posted (cancel()
    // takes it back); a send to a dead replica completes without error.
    rt::Status isend_sibling(int replica, const ulm::DataRef& data, int tag, ulm::SendMsg** out);
    rt::Status irecv_sibling(const ulm::DataRef& data, int tag, ulm::RecvMsg** out);
    bool sibling_alive(int replica) const { return set_.alive(replica, me_); }
    // Whether replica `replica` of my rank shares my host's shared-memory
    // segment (the shared-memory path carries our messages; it can map
    // memory I share: ft/intra's staging area).
    bool sibling_on_my_host(int replica) const;
    int rank() const { return me_; }

    // ulm::ReplicaHooks
    const rt::JobInfo& logical_job() const override { return job_; }
    int logical_of(int phys) const override { return set_.logical_of(phys); }
    int route(int dst) const override;
    std::uint64_t on_arrival(int phys, ulm::ContextId ctx) override;
    void on_send(ulm::SendMsg& s, int dst) override;
    void on_recv_complete(const ulm::RecvMsg& r) override;
    void on_recv_orphaned(ulm::RecvMsg& r) override;
    void on_unexpected_dropped(int src, std::uint64_t rep_seq) override;
    std::uint64_t piggy_ack(int phys) override;
    void piggy_sent(int phys) override;
    void on_piggy_ack(int phys, std::uint64_t m) override;
    // Acknowledgements that left piggy-backed on the program's messages,
    // and those that left in control messages (counted per acknowledgement).
    std::uint64_t piggy_acks() const { return piggy_acks_; }
    // Messages I sent that some live replica has not acknowledged yet.
    std::size_t unacknowledged() const { return acks_.waiting(); }
    std::uint64_t standalone_acks() const { return standalone_acks_; }
    void print_state() const override; // state_report.cpp

    // ulm::FailureHooks
    void on_peer_failed(int peer, const char* detail) override;
    void on_peer_unreachable(int peer, const char* why) override;
    void on_job_ending(const char* detail) override;

    // ulm::ProgressHook
    int poll() override;

private:
    // A replica of rank `dst` whose messages from this rank this process sends
    // as the substitute: those numbered in `holes` or from `next` on.
    struct Orphan {
        int replica;
        std::uint64_t next;
        std::vector<std::uint64_t> holes;
        bool wants(std::uint64_t m) const;
    };
    struct Out {
        int to = -1;                 // physical
        std::vector<std::byte> ctrl; // an ack or a request; empty: a copy of `parent` or `held`
        ulm::SendMsg* parent = nullptr;
        std::shared_ptr<HeldCopy> held;
        bool mark = false;           // an empty message on kMarkContext (a resend follows)
    };
    struct Tx {
        ulm::SendMsg* send;
        std::vector<std::byte> bytes;
        ulm::SendMsg* parent;
        std::shared_ptr<HeldCopy> held;
    };

    void post_rx();
    void post_mark_rx();
    // Recovery: the numbers of rank `rank`'s messages that arrived but
    // whose receive has not completed (open_), but the holes and those asked
    // for again: a request or an ack_upto names them as pending (its
    // receiver neither sends them nor counts them as acknowledged), since
    // their sender may still die before their data all came.
    std::vector<std::uint64_t> pending_of(int rank) const;
    // Messages of `rank` cut by the death of a process that no longer
    // served me (a recovery moved me to a new server): asked for again from
    // my server (a resend), or, when it is dead too, put with the holes.
    void ask_again(int rank, std::vector<std::uint64_t> numbers);
    void on_resend(int from, int rank, const std::vector<std::uint64_t>& numbers);
    // A request's or an ack_upto's pending numbers: still held for `replica`.
    void keep_pending(int rank, int replica, const std::vector<std::uint64_t>& pending);
    void on_ack(int from_phys, int rank, std::uint64_t m);
    void on_request(int from_phys, int rank, std::uint64_t next, std::vector<std::uint64_t> holes,
                    const std::vector<std::uint64_t>& pending, int epoch);
    void queue_copy(const AckTable::Entry& e, int to);
    // Sends my message m to `rank` again to process `from` (its replica l):
    // the copy I hold, else the stock copy `stocked` I inherited (kept for
    // l until acknowledged).
    void send_again(int rank, int l, std::uint64_t m, int from,
                    const std::shared_ptr<HeldCopy>& stocked);
    void fail(int phys, const char* detail);
    int flush();
    void queue_acks();
    // Deferred acknowledgements (to ride on a message of the program's)
    // that go as control messages now: those past the delay, or all.
    void release_deferred(bool all);
    void send_acks(int to, const std::uint64_t* m, std::size_t n);
    bool queued_for(int to) const; // the outbox has something for `to`
    void drop_deferred(int to);
    void on_digest(int from, int dst, std::uint64_t m, int tag, std::uint32_t crc);
    void record_digest(int replica, int dst, std::uint64_t m, int tag, std::uint32_t crc);
    void report_waiting(const char* why) const;

    // Recovery (recovery.cpp).
    bool recovery_applies(int dead) const;
    static rt::Nanos fork_delay(); // rep_fork_delay_ms
    void try_fork();
    void give_up_fork(const std::string& why);
    // `told`: a pipe to the substitute, written once the new process's
    // addresses are stored (-1: it waits for none; Engine::fork_publishes).
    void become_new(int d, int incarnation, int told);
    // The substitute: waits until the new process says its addresses are
    // stored (one byte on `told`). False: it died or hung before.
    static bool wait_told(int told);
    void on_notice(int from, int d, int incarnation);
    void on_welcome(int from, int d, int incarnation);
    void on_ready(int p, int incarnation);
    // Messages to `rank` are kept (AckTable::park) while some replica of it
    // is to ask me for them from where it stands: a re-created one, whose
    // request names the first it lacks. keep_ has bit l for replica l.
    void keep_for(int rank, int replica);
    void stop_keeping(int rank, int replica);
    std::shared_ptr<HeldCopy> copy_of(const ulm::SendMsg& s) const;
    void queue_ctrl(int to, std::vector<std::byte> bytes);
    void send_request(int rank, int to);

    ulm::Engine& eng_;
    rt::Bootstrap& boot_;
    ulm::FailureHooks* fallback_;
    ReplicaSet set_;
    std::uint64_t copy_limit_; // rep_copy_limit
    int k_;      // my replica index
    int me_;     // my logical rank
    rt::JobInfo job_;
    AckTable acks_;
    std::vector<std::uint64_t> send_next_;   // per logical destination: last number sent
    std::vector<std::uint64_t> recv_next_;   // per logical source: next number expected
    std::vector<std::deque<std::uint64_t>> recv_holes_; // per source: numbers expected first
    std::vector<std::vector<std::uint64_t>> new_holes_; // per source, during a failure
    std::vector<int> server_;                // per logical source: who sends to me
    std::vector<std::vector<Orphan>> serve_; // per logical destination
    std::vector<Out> outbox_;
    struct PendingAck {
        int rank;          // the sender's
        std::uint64_t m;
        bool deferrable;   // its sender kept a copy: the acknowledgement may wait a little
    };
    std::vector<PendingAck> pending_acks_;
    // Acknowledgements to a process I send the program's messages to (my
    // replica of its rank), held up to rep_ack_delay_us for one of them to
    // carry (piggy_ack); then, or before any control message to that
    // process, they go as a control message.
    struct Deferred {
        std::vector<std::uint64_t> m;
        std::size_t head = 0;      // m[head..] wait
        rt::Nanos since = 0;       // when the first of them was deferred
    };
    std::vector<Deferred> deferred_;   // per physical process
    std::vector<int> deferred_procs_;  // those with some waiting
    rt::Nanos ack_delay_ = 0;
    struct PiggyIn {
        int from;          // physical
        int incarnation;   // of `from`, as I knew it when it came
        std::uint64_t m;
    };
    std::vector<PiggyIn> piggy_in_; // handled in poll
    std::uint64_t piggy_acks_ = 0;
    std::uint64_t standalone_acks_ = 0;
    std::vector<std::vector<std::byte>> spare_bufs_; // control message buffers to reuse
    std::vector<std::byte> msg_;                     // the control message being handled
    std::vector<Tx> tx_;
    ulm::RecvMsg* rx_ = nullptr;
    ulm::RecvMsg* rx_mark_ = nullptr;
    std::vector<std::vector<std::uint64_t>> open_;  // per source rank, sorted (recovery)
    std::vector<std::deque<std::uint64_t>> reasked_; // per server (physical): resent, in order
    std::vector<int> marks_;                         // per server: marks whose message is due
    std::vector<std::byte> rx_buf_;
    // Cross-checking: per destination rank and message number, each
    // replica's digest (bit `have` l: replica l's is known).
    struct Digests {
        std::uint32_t have = 0;
        int tag = 0;
        std::vector<std::uint32_t> crc;
    };
    bool check_ = false;
    std::vector<std::map<std::uint64_t, Digests>> digests_;
    std::uint64_t checked_ = 0;
    std::uint64_t mismatches_ = 0;
    std::uint64_t takeovers_ = 0;
    std::uint64_t holes_ = 0;
    std::vector<ulm::RecvMsg*> orphans_;     // during fail()
    // Recovery.
    bool recover_ = false;                   // rep_recover, two replicas
    std::vector<int> inc_;                   // per process: its incarnation as I know it
    std::vector<bool> direct_;               // per rank: my replica of it gets my sends directly
    std::vector<std::uint32_t> keep_;        // per rank: replicas whose request I keep messages for
    int fork_for_ = -1;                      // my dead sibling, to re-create
    int forks_held_ = 0;
    bool finishing_ = false;                 // in MPI_Finalize: no more re-creation
    rt::Nanos fork_retry_at_ = 0;
    std::uint64_t recoveries_ = 0;
    // The new process: what it inherited from the substitute's sends (per
    // destination rank, by number), for its replica there to ask for; and
    // the peers not connected yet (the substitute says when each is).
    std::vector<std::map<std::uint64_t, std::shared_ptr<HeldCopy>>> stock_;
    std::vector<bool> unready_;
    int unready_count_ = 0;
    rt::Nanos born_at_ = 0;
    int child_ = -1;                         // the substitute: the process it forked
    int parent_ = -1;                        // the new process: its substitute
    bool failing_ = false;
    bool polling_ = false;
    bool hooked_ = false;
};

} // namespace ulmpi::rep
