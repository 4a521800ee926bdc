// Locks that cost nothing unless the process runs with fine-grained locks.
//
// Under MPI_THREAD_MULTIPLE, when every path of the process can be driven
// by several threads at once (ulm/engine.h, "Locking"), ULM switches fine
// locks on, once, inside MPI_Init_thread (before a second thread can call
// MPI). Below MULTIPLE, or with paths that cannot, they stay off: every
// lock() below is one test of a flag that never changes afterwards (no
// atomic read-modify-write, no TLS), so the single-threaded fast path keeps
// its cost.
//
//   OptMutex    a mutex (leaf locks, per-peer locks, path FIFOs)
//   OptRwLock   a reader-writer lock that prefers the writer: readers are
//               the threads that progress one peer at a time, the writer a
//               thread that needs the whole engine (failures, queued sends,
//               timers). A writer announces itself and waits for readers
//               to drain; readers that see it step back until it is done,
//               so a writer is never starved by readers that keep
//               overlapping. Re-entrant per thread: a writer's nested
//               calls (read or write) pass through, a reader's nested
//               reads pass through; a reader asking to write is a lock
//               order bug and ends the process.
#pragma once

#include <atomic>
#include <mutex>

namespace ulmpi::rt {

// Whether fine locks are on (set once at init; read with one relaxed load).
// Hidden: read with one PC-relative load from inside libmpi.
[[gnu::visibility("hidden")]] extern constinit std::atomic<bool> g_fine_locks;
inline bool fine_locks() { return g_fine_locks.load(std::memory_order_relaxed); }
void set_fine_locks(bool on);

class OptMutex {
public:
    OptMutex() = default;
    // A new, unlocked mutex: lets containers that are built before any
    // thread uses them (a path's per-peer table) hold OptMutexes by value.
    OptMutex(OptMutex&&) noexcept {}
    OptMutex& operator=(OptMutex&&) = delete;

    void lock()
    {
        if (fine_locks()) [[unlikely]] {
            m_.lock();
        }
    }
    void unlock()
    {
        if (fine_locks()) [[unlikely]] {
            m_.unlock();
        }
    }
    // Off: always succeeds.
    bool try_lock() { return !fine_locks() || m_.try_lock(); }

private:
    friend class OptGuard;
    std::mutex m_;
};

// Scoped OptMutex (reads the flag once).
class OptGuard {
public:
    explicit OptGuard(OptMutex& m) : m_(m), on_(fine_locks())
    {
        if (on_) [[unlikely]] {
            m_.m_.lock();
        }
    }
    ~OptGuard()
    {
        if (on_) [[unlikely]] {
            m_.m_.unlock();
        }
    }
    OptGuard(const OptGuard&) = delete;
    OptGuard& operator=(const OptGuard&) = delete;

private:
    OptMutex& m_;
    bool on_;
};

class OptRwLock {
public:
    void lock_shared();
    void unlock_shared();
    void lock();
    void unlock();

    // What the calling thread holds: 0 nothing, 1 read, 2 write.
    static int held();

private:
    std::atomic<int> readers_{0};
    std::atomic<bool> writer_{false};
};

class ReadGuard {
public:
    explicit ReadGuard(OptRwLock& l) : l_(l), on_(fine_locks())
    {
        if (on_) [[unlikely]] {
            l_.lock_shared();
        }
    }
    ~ReadGuard()
    {
        if (on_) [[unlikely]] {
            l_.unlock_shared();
        }
    }
    ReadGuard(const ReadGuard&) = delete;
    ReadGuard& operator=(const ReadGuard&) = delete;

private:
    OptRwLock& l_;
    bool on_;
};

class WriteGuard {
public:
    explicit WriteGuard(OptRwLock& l) : l_(l), on_(fine_locks())
    {
        if (on_) [[unlikely]] {
            l_.lock();
        }
    }
    ~WriteGuard()
    {
        if (on_) [[unlikely]] {
            l_.unlock();
        }
    }
    WriteGuard(const WriteGuard&) = delete;
    WriteGuard& operator=(const WriteGuard&) = delete;

private:
    OptRwLock& l_;
    bool on_;
};

} // namespace ulmpi::rt
