#include "ulm/thread_lock.h"

#include <sched.h>

namespace ulmpi::ulm {

namespace {

// Nesting depth of the lock in this thread: > 0 iff this thread holds it.
[[gnu::tls_model("initial-exec")]] thread_local int t_depth = 0;

} // namespace

constinit ThreadLock g_thread_lock;

bool ThreadLock::held()
{
    return t_depth > 0;
}

void ThreadLock::lock_queued()
{
    if (mutex_.try_lock()) {
        grants_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    contended_.fetch_add(1, std::memory_order_relaxed);
    waiting_.fetch_add(1, std::memory_order_relaxed);
    mutex_.lock();
    waiting_.fetch_sub(1, std::memory_order_relaxed);
    grants_.fetch_add(1, std::memory_order_relaxed);
}

void ThreadLock::enter()
{
    if (t_depth++ > 0) {
        return;
    }
    lock_queued();
}

bool ThreadLock::try_enter()
{
    if (t_depth > 0) {
        ++t_depth;
        return true;
    }
    if (!mutex_.try_lock()) {
        return false;
    }
    grants_.fetch_add(1, std::memory_order_relaxed);
    t_depth = 1;
    return true;
}

void ThreadLock::leave_quiet()
{
    if (--t_depth == 0) {
        mutex_.unlock();
    }
}

void ThreadLock::leave()
{
    if (--t_depth > 0) {
        return;
    }
    if (waiting_.load(std::memory_order_relaxed) == 0) {
        mutex_.unlock();
        return;
    }
    // Others queue: let one of them in before this thread (polling with
    // MPI_Test in a loop, say) can take the lock again at its next call.
    std::uint64_t seen = grants_.load(std::memory_order_relaxed);
    mutex_.unlock();
    yield_until_taken(seen);
}

void ThreadLock::yield_until_taken(std::uint64_t seen)
{
    // A queued thread sleeps in the mutex; unlocking wakes it, but this
    // thread would take the lock again long before it runs. Yield until it
    // has (bounded: it may have been served by another already).
    for (int i = 0; i < 64 && waiting_.load(std::memory_order_relaxed) > 0 &&
                    grants_.load(std::memory_order_relaxed) == seen;
         ++i) {
        sched_yield();
    }
}

int ThreadLock::release_all()
{
    int d = t_depth;
    if (d > 0) {
        t_depth = 0;
        mutex_.unlock();
    }
    return d;
}

void ThreadLock::reacquire(int depth)
{
    lock_queued();
    t_depth = depth;
}

void ThreadLock::hand_over()
{
    std::uint64_t seen = grants_.load(std::memory_order_relaxed);
    int d = release_all();
    yield_until_taken(seen);
    reacquire(d);
}

} // namespace ulmpi::ulm
