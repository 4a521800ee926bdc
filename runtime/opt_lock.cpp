#include "runtime/opt_lock.h"

#include "runtime/log.h"

#include <sched.h>

namespace ulmpi::rt {

constinit std::atomic<bool> g_fine_locks{false};

void set_fine_locks(bool on)
{
    g_fine_locks.store(on, std::memory_order_release);
}

namespace {

// The calling thread's hold on the (one) OptRwLock of the process: mode
// 0 none, 1 read, 2 write, and how many nested guards share it.
// initial-exec: one load, no __tls_get_addr call (libmpi is linked, not dlopened,
// and these few bytes fit the static TLS surplus when it is).
[[gnu::tls_model("initial-exec")]] thread_local int t_mode = 0;
[[gnu::tls_model("initial-exec")]] thread_local int t_depth = 0;

} // namespace

int OptRwLock::held()
{
    return t_mode;
}

void OptRwLock::lock_shared()
{
    if (t_mode != 0) {
        ++t_depth; // nested in a read or a write: already covered
        return;
    }
    for (;;) {
        // Announce, then look for a writer: a writer stores its flag, then
        // reads the count, so one of the two always sees the other.
        readers_.fetch_add(1, std::memory_order_seq_cst);
        if (!writer_.load(std::memory_order_seq_cst)) {
            break;
        }
        readers_.fetch_sub(1, std::memory_order_seq_cst);
        while (writer_.load(std::memory_order_acquire)) {
            sched_yield();
        }
    }
    t_mode = 1;
    t_depth = 1;
}

void OptRwLock::unlock_shared()
{
    if (--t_depth > 0) {
        return;
    }
    t_mode = 0;
    readers_.fetch_sub(1, std::memory_order_release);
}

void OptRwLock::lock()
{
    if (t_mode == 2) {
        ++t_depth;
        return;
    }
    if (t_mode == 1) {
        rt::fatal("ulm: a thread that progresses one peer asked for the whole engine (lock order)");
    }
    bool expected = false;
    while (!writer_.compare_exchange_weak(expected, true, std::memory_order_seq_cst)) {
        expected = false; // another writer (its callers hold the MPI lock: rare)
        sched_yield();
    }
    while (readers_.load(std::memory_order_seq_cst) != 0) {
        sched_yield();
    }
    t_mode = 2;
    t_depth = 1;
}

void OptRwLock::unlock()
{
    if (--t_depth > 0) {
        return;
    }
    t_mode = 0;
    writer_.store(false, std::memory_order_release);
}

} // namespace ulmpi::rt
