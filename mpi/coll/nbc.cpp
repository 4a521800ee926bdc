#include "mpi/coll/nbc.h"

#include "mpi/coll/schedule.h"
#include "mpi/request.h"
#include "mpi/state.h"
#include "runtime/intrusive_list.h"

#include <vector>

namespace ulmpi::mpi::coll {
namespace {

class Nbc final : public ulm::ProgressHook {
public:
    Schedule* get()
    {
        if (free_.empty()) {
            auto* s = new Schedule;
            s->pooled = true;
            return s;
        }
        Schedule* s = free_.back();
        free_.pop_back();
        return s;
    }

    void put(Schedule* s)
    {
        s->clear();
        s->request = nullptr;
        free_.push_back(s);
    }

    void add(Schedule* s)
    {
        if (!registered_) {
            state().engine.add_progress_hook(this);
            registered_ = true;
        }
        active_.push_back(s);
    }

    // Completes the request of a finished schedule, recycles it and drops
    // its reference to the communicator (start_nonblocking), which may be
    // the last one.
    void finish(Schedule* s)
    {
        if (Request* r = s->request) {
            status_empty(&r->status);
            r->status.MPI_ERROR = s->error();
            r->sched = nullptr;
            r->sched_done = true;
        }
        Comm* c = s->comm();
        put(s);
        comm_release(c);
    }

    int poll() override
    {
        if (polling_ || active_.empty()) {
            return 0; // a user op that calls MPI_Test inside a schedule
        }
        polling_ = true;
        int n = 0;
        for (Schedule *s = active_.front(), *next; s != nullptr; s = next) {
            next = active_.next(s);
            if (s->advance()) {
                active_.remove(s);
                finish(s);
                ++n;
            }
        }
        polling_ = false;
        return n;
    }

private:
    rt::IntrusiveList<Schedule, &Schedule::hook> active_;
    std::vector<Schedule*> free_;
    bool registered_ = false;
    bool polling_ = false;
};

Nbc& nbc()
{
    static Nbc* n = new Nbc; // never destroyed: the engine may poll it until exit
    return *n;
}

Schedule* g_blocking = nullptr;
bool g_blocking_busy = false;

} // namespace

Schedule* nbc_schedule() { return nbc().get(); }

void nbc_discard(Schedule* s) { nbc().put(s); }

int start_nonblocking(Schedule* s, MPI_Request* out)
{
    Request* r = request_new(Request::Kind::schedule, s->comm());
    if (r == nullptr) {
        nbc().put(s);
        return MPI_ERR_NO_MEM;
    }
    r->sched = s;
    s->request = r;
    *out = r->handle;
    // The schedule holds the communicator (and so its context pair) until
    // it finishes, also when its request is freed (nbc_detach) and the
    // program frees the communicator.
    comm_retain(s->comm());
    s->start();
    if (s->finished()) {
        nbc().finish(s);
    } else {
        nbc().add(s);
    }
    return MPI_SUCCESS;
}

void nbc_detach(Schedule* s) { s->request = nullptr; }

Schedule& blocking_schedule()
{
    if (g_blocking == nullptr) {
        g_blocking = new Schedule;
    }
    if (g_blocking_busy) {
        return *nbc().get();
    }
    g_blocking_busy = true;
    return *g_blocking;
}

void release_blocking_schedule(Schedule& s)
{
    if (&s == g_blocking) {
        s.clear();
        g_blocking_busy = false;
    } else {
        nbc().put(&s);
    }
}

} // namespace ulmpi::mpi::coll
