// The MPI lock: how ulmpi serves MPI_THREAD_MULTIPLE.
//
// Levels. MPI_Init_thread grants what it is asked for. Below MULTIPLE the
// program promises that no two threads are in MPI at once, so nothing here
// runs: the lock is off, every guard is one test of a flag that never changes
// after init (well predicted, no atomic read-modify-write, no TLS access).
// At MULTIPLE the lock is turned on before MPI_Init_thread returns, i.e.
// before a second thread can make an MPI call.
//
// What the lock guards. Everything the MPI layer and the layers below keep
// per process, because that state is one web, not separable pieces:
//   mpi/      the handle tables (comm, group, datatype, op, errhandler,
//             request, info), the request pool and the detached-request
//             list, communicators and their context-id bitmap, attributes
//             and keyvals, user error codes, the Bsend buffer, messages of
//             MPI_Mprobe, nonblocking-collective schedules and comm idup
//             state (both polled from progress hooks), FT/ULFM state.
//   ulm/      the engine: the matcher (posted, unexpected, ahead-of-sequence
//             lists of every peer), the message and unexpected pools, the
//             descriptor tables, the active-peer list, progress hooks.
//             The link set: per-peer sequence numbers, range sets, ACK
//             state, kept fragments, timers, rails.
//   paths/    each path's send and receive side: shm FIFOs and their
//             overflow queues, udp sockets and reassembly, verbs queues.
//   ft/       the detector, the control channel, agreements, revoke.
// Only one thread at a time runs any of it; memory ordering between threads
// comes from the mutex, so the single-threaded code is used unchanged.
//
// Waiting without holding it. A thread enters the lock at the top of an MPI
// call and leaves it at the return, except while it waits: a blocking call
// (MPI_Wait*, MPI_Recv, MPI_Probe, a blocking collective, a communicator
// constructor, MPI_Finalize...) runs one progress pass under the lock, tests
// its condition under the lock, and then
//   - when the pass did nothing, it releases the lock for its whole idle step
//     (spin, sched_yield or sleep, as Backoff decides), so a waiter never
//     keeps others out while it sleeps;
//   - when other threads are queued for the lock (a counter they raise
//     before they block), it hands the lock over: releases it and yields
//     until one of them has taken it (bounded), then queues again. Every
//     MPI call that returns while others queue does the same, so a thread
//     polling MPI_Test in a loop cannot keep the lock to itself either.
// A progress pass completes whatever it finds, for every thread: a request
// posted by thread A is completed by thread B's pass while A sleeps, and A
// sees `complete` at its next test. So blocking calls in one thread never
// starve another: the other gets the lock at the next pass boundary, and
// its operations advance on anyone's pass. The state a waiting call keeps
// on its stack (its request, the communicator it works on) belongs to that
// call; another thread touching the same request at the same time is
// erroneous in MPI (MPI-4.0 11.6.2), so the guarded state stays consistent
// across the release.
//
// Nesting. Callbacks (attribute copy/delete, error handlers, user ops,
// generalized requests) may call MPI again from the thread that holds the
// lock: a per-thread depth makes those inner calls pass through, and a wait
// inside them releases the lock fully and takes it back at the same depth.
//
// Why one lock and not per-peer locks (as LA-MPI had). Per-peer locks pay
// off when several threads copy data for different peers at the same time.
// Here a progress pass polls every path for every peer, and the message
// layer's pools, matcher, active list and the link set's ACK/timer state are
// shared by all peers; the MPI layer's progress hooks (nonblocking
// collectives) reach into the request and communicator tables from inside
// that pass. Splitting them needs the pools made per-thread or locked, the
// matcher locked per context, and progress hooks run outside the engine: see
// docs/threads.md for the measured cost of the single lock and for that
// plan. What this design does promise: no lock is held while anybody sleeps
// or yields, a waiter hands the lock over when another thread asks for it,
// and one thread's progress completes every thread's operations.
//
// Communicator construction under MULTIPLE: two threads may build
// communicators from different parents at once; the context-id agreement
// then needs an owner of the local bitmap (comm_ctx.h says how).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace ulmpi::ulm {

class ThreadLock {
public:
    // Turns the lock on. Called once, before MPI_Init_thread returns
    // MPI_THREAD_MULTIPLE; never turned off (MPI_Finalize leaves it on).
    void enable() { on_.store(true, std::memory_order_release); }
    bool on() const { return on_.load(std::memory_order_relaxed); }

    // An MPI call's entry and exit (use Guard). Nested calls pass through.
    void enter();
    void leave();
    // enter() only when the lock is free or already held by this thread;
    // leave_quiet() is leave() without the hand-over (a progress pass that
    // borrowed the lock for the MPI layer's hooks, engine.h).
    bool try_enter();
    void leave_quiet();
    // True when the calling thread holds the lock.
    static bool held();

    // Between two progress passes of a waiting thread: when others are
    // queued for the lock, hands it over and queues again. Cheap when not.
    void let_others_in()
    {
        if (waiting_.load(std::memory_order_relaxed) > 0 && held()) {
            hand_over();
        }
    }

    // Releases the lock held by this thread (all nesting levels) for the
    // lifetime of the object, e.g. while a waiter yields or sleeps.
    class Released {
    public:
        explicit Released(ThreadLock& l) : l_(l), depth_(l.on() ? l.release_all() : 0) {}
        ~Released()
        {
            if (depth_ > 0) {
                l_.reacquire(depth_);
            }
        }
        Released(const Released&) = delete;
        Released& operator=(const Released&) = delete;

    private:
        ThreadLock& l_;
        int depth_;
    };

    // The RAII form of enter()/leave(), placed first in every MPI entry
    // point. Off: one test of a flag.
    class Guard {
    public:
        explicit Guard(ThreadLock& l) : l_(l), on_(l.on())
        {
            if (on_) [[unlikely]] {
                l_.enter();
            }
        }
        ~Guard()
        {
            if (on_) [[unlikely]] {
                l_.leave();
            }
        }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;

    private:
        ThreadLock& l_;
        bool on_;
    };

    // How often the lock was taken while another thread held it (a measure
    // of contention, for --stats and tests).
    std::uint64_t contended() const { return contended_.load(std::memory_order_relaxed); }

private:
    int release_all();
    void reacquire(int depth);
    void lock_queued();
    void hand_over();
    void yield_until_taken(std::uint64_t seen);

    std::atomic<bool> on_{false};
    std::mutex mutex_;
    std::atomic<int> waiting_{0};        // threads blocked in lock_queued()
    std::atomic<std::uint64_t> grants_{0}; // acquisitions so far
    std::atomic<std::uint64_t> contended_{0};
};

// The process's one lock (MPI and everything below it). Constant-initialized,
// so a guard reads its flag straight from memory.
extern constinit ThreadLock g_thread_lock;
inline ThreadLock& thread_lock()
{
    return g_thread_lock;
}

} // namespace ulmpi::ulm
