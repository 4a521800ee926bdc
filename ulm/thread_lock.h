// The MPI lock: how ulmpi serves MPI_THREAD_MULTIPLE.
//
// Levels. MPI_Init_thread grants what it is asked for. Below MULTIPLE the
// program promises that no two threads are in MPI at once, so nothing here
// runs: the lock is off, every guard is one test of a flag that never changes
// after init (well predicted, no atomic read-modify-write, no TLS access).
// At MULTIPLE the lock is turned on before MPI_Init_thread returns, i.e.
// before a second thread can make an MPI call.
//
// What the lock guards. Everything the MPI layer keeps per process:
//   mpi/      the handle tables (comm, group, datatype, op, errhandler,
//             request, info), the request pool and the detached-request
//             list, communicators and their context-id bitmap, attributes
//             and keyvals, user error codes, the Bsend buffer, messages of
//             MPI_Mprobe, nonblocking-collective schedules and comm idup
//             state (both polled from progress hooks), FT/ULFM state.
//   ft/       the detector, the control channel, agreements, revoke.
// Below it, ULM either runs under this lock too (the coarse mode: a path
// that cannot be driven by several threads, or a reliable rail) or guards
// itself with per-peer locks (the fine mode: engine.h, "Locking"), and then
// a blocking send or receive (wait_p2p) releases this lock for its whole
// wait. Memory ordering between threads comes from the mutexes, so the
// single-threaded code is used unchanged.
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
// Per-peer locks (as LA-MPI had) are ULM's, not this lock's: engine.h says
// which locks guard what below the MPI layer and in which order they are
// taken; this lock is always the outermost.
//
// Communicator construction under MULTIPLE: two threads may build
// communicators from different parents at once; the context-id agreement
// then proposes, reserves and confirms (comm_ctx.h says how).
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
