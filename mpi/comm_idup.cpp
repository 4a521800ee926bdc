// MPI_Comm_idup: MPI_Comm_dup as a nonblocking operation.
//
// At the call, as MPI_Comm_dup would at that moment: the attributes are
// copied (copy callbacks run now; delete callbacks of a failed copy get
// MPI_COMM_NULL, the new communicator having no handle yet), the hints,
// topology and error handler are taken, and the parent's next collective
// tag is taken (so the parent's later collectives stay in step). Then the
// context pair is agreed without blocking, in rounds that are schedules on
// the parent's collective context with that one tag, advanced by a ULM
// progress hook like any nonblocking collective:
//
//   propose   AND of the members' free-pair bitmaps (for an
//             intercommunicator: in each group, the leaders swap, each
//             leader broadcasts), as the blocking constructors do. Each
//             member takes the candidate (the lowest pair of the AND) and
//             reserves it at once if it is still free here: another
//             constructor (blocking, or an idup whose propose round ended
//             first) may have taken it since this member contributed.
//             Below MULTIPLE, while a blocking constructor is agreeing
//             here, the member waits with this step until it has its pair
//             (the bitmap it contributed may offer the same pair and it
//             does not confirm; comm_coll.h). Under MULTIPLE every
//             constructor confirms like this one (comm_ctx.h): no wait.
//   confirm   AND of one word, "the candidate was free here". All 1: the
//             pair is ours everywhere, the communicator is made and
//             *newcomm set. Otherwise every member releases what it
//             reserved and proposes again; from the second attempt the
//             candidate is the k-th common free pair (k < 256), k a hash
//             of (parent, tag, attempt) that every member computes alike,
//             so idups that collided on one pair part ways.
//
// Under ULFM each round is a fault-tolerant agreement (ft/agree.h) instead
// of a schedule, numbered from the agreement number taken at the call
// (ft_agree_round_seq): as for MPI_Comm_dup, the result is the same at every
// member even when one dies after it completed here.
//
// A reserved candidate is out of every later bitmap, so blocking
// constructors and other idups never pick it, and nothing waits for
// another operation: idups on overlapping communicators may be started
// in any order and completed in any order. When nothing interferes (one
// idup at a time), the result is that of MPI_Comm_dup: the lowest pair free
// on every member, with one extra round. *newcomm is written when the
// request completes (also after MPI_Request_free); MPI forbids reading it
// earlier. The operation holds the parent until it finishes.
#include "mpi/checks.h"
#include "mpi/coll/coll.h"
#include "mpi/coll/schedule.h"
#include "mpi/comm.h"
#include "mpi/comm_coll.h"
#include "mpi/comm_ctx.h"
#include "mpi/entry.h"
#include "mpi/ft_comm.h"
#include "mpi/ftmpi.h"
#include "mpi/request.h"
#include "mpi/state.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

namespace ulmpi::mpi {

struct Idup {
    Comm* parent = nullptr;      // retained until finished
    int tag = 0;
    Request* request = nullptr;  // nullptr after MPI_Request_free
    MPI_Comm* out = nullptr;
    AttrList* attrs = nullptr;   // copied at the call
    int copy_error = MPI_SUCCESS;
    InfoPairs hints;
    std::shared_ptr<const Topology> topo;
    Errhandler* eh = nullptr;    // retained
    coll::Schedule sched;        // the round in flight
    bool ft = false;             // ULFM: rounds are agreements
    std::uint64_t ft_base = 0;   // the agreement number taken at the call
    int ft_round = 0;            // rounds started so far
    int ft_handle = 0;           // the round in flight (0: none, or it decided)
    bool confirming = false;
    int attempt = 0;
    int candidate = -1;
    bool reserved = false;       // candidate reserved here
    std::vector<std::uint32_t> words; // my contribution, then (intra) the AND
    std::vector<std::uint32_t> in;    // intercommunicators: the AND
};

namespace {

// Appends the AND of words[0..n) over every member of c (both groups of an
// intercommunicator) to ph; returns where the result will be.
std::uint32_t* build_and(Phase& ph, Comm* c, std::uint32_t* words, std::uint32_t* in, int n)
{
    Members lm = local_members(c);
    ph.allreduce_band(lm, words, n);
    if (!c->inter()) {
        return words;
    }
    ph.fence();
    if (c->rank == 0) {
        ph.swap(c->remote->world[0], words, n, in, n);
        ph.fence();
        ph.band(words, in, n);
        ph.fence();
    }
    ph.bcast(lm, 0, in, n);
    return in;
}

int n_words(const Idup& op) { return op.confirming ? 1 : kContextWords; }

// Builds and starts the next round; an MPI error class if it cannot.
int start_round(Idup& op)
{
    const int n = n_words(op);
    op.words.assign(static_cast<std::size_t>(n), 0);
    op.in.assign(static_cast<std::size_t>(n), 0);
    if (op.confirming) {
        op.words[0] = op.reserved ? 1u : 0u;
    } else {
        const ContextMask& m = context_free_mask();
        std::memcpy(op.words.data(), m.data(), sizeof m);
    }
    if (op.ft) {
        op.ft_handle = ft_agree_words_start(op.parent, op.words.data(), n,
                                            ft_agree_round_seq(op.ft_base, op.ft_round++));
        return MPI_SUCCESS;
    }
    op.sched.clear();
    op.sched.begin(op.parent, op.tag);
    Phase ph(op.sched);
    (void)build_and(ph, op.parent, op.words.data(), op.in.data(), n);
    if (ph.error() != MPI_SUCCESS) {
        return ph.error();
    }
    op.sched.start();
    return MPI_SUCCESS;
}

const std::uint32_t* result(const Idup& op)
{
    return op.parent->inter() && !op.ft ? op.in.data() : op.words.data();
}

// The pair this attempt takes from the AND `m` (the same on every member).
int pick(const Idup& op, const std::uint32_t* m)
{
    ContextMask mask;
    std::memcpy(mask.data(), m, sizeof mask);
    return context_pick(mask, context_key(op.parent->ctx_pair, op.tag), op.attempt);
}

// Ends the operation: the communicator (or the error), the request.
void finish(Idup* op, int err)
{
    Comm* n = nullptr;
    if (err == MPI_SUCCESS) {
        Comm* p = op->parent;
        group_retain(p->local);
        if (p->remote != nullptr) {
            group_retain(p->remote);
        }
        n = comm_new(p->local, p->remote, p->rank, op->candidate, op->eh);
        op->reserved = false; // the communicator owns the pair now
        n->topo = std::move(op->topo);
        n->hints = std::move(op->hints);
        if (comm_publish(n) == MPI_COMM_NULL) {
            comm_release(n);
            n = nullptr;
            err = MPI_ERR_INTERN;
        } else if (op->copy_error != MPI_SUCCESS) {
            err = op->copy_error; // as MPI_Comm_dup: the new communicator goes again
            comm_free(n);
            n = nullptr;
        } else {
            n->attrs = op->attrs;
            op->attrs = nullptr;
        }
    }
    if (op->reserved) {
        context_release(op->candidate);
    }
    if (op->attrs != nullptr) {
        (void)attr_delete_all(op->attrs, AttrKind::comm, MPI_COMM_NULL);
        delete op->attrs;
    }
    *op->out = n != nullptr ? n->handle : MPI_COMM_NULL;
    if (Request* r = op->request) {
        status_empty(&r->status);
        r->status.MPI_ERROR = err;
        r->sched_done = true;
        r->idup = nullptr;
    }
    errhandler_release(op->eh);
    comm_release(op->parent);
    delete op;
}

// Advances one operation; true when it finished.
bool advance(Idup* op)
{
    if (op->ft) {
        if (op->ft_handle != 0) { // 0: decided, waiting below for a blocking constructor
            if (!ft_agree_words_done(op->ft_handle)) {
                return false;
            }
            const char* why = nullptr;
            const int e = ft_agree_words_end(op->ft_handle, op->words.data(), n_words(*op), &why);
            op->ft_handle = 0;
            if (e != MPI_SUCCESS) {
                finish(op, e);
                return true;
            }
        }
    } else if (!op->sched.advance()) {
        return false;
    } else if (int e = op->sched.error()) {
        finish(op, e);
        return true;
    }
    const std::uint32_t* m = result(*op);
    if (!op->confirming) {
        if (!ulm::thread_lock().on() && blocking_phase_alive()) {
            // Below MULTIPLE a blocking constructor takes the lowest pair
            // of its AND without confirming (comm_ctx.h): decide once it
            // has it. Under MULTIPLE it confirms like this, so no wait.
            return false;
        }
        op->candidate = pick(*op, m);
        if (op->candidate < 0) {
            finish(op, MPI_ERR_OTHER); // every member sees the same AND
            return true;
        }
        op->reserved = !context_in_use(op->candidate);
        if (op->reserved) {
            context_reserve(op->candidate);
        }
        op->confirming = true;
    } else if (m[0] == 1u) {
        finish(op, MPI_SUCCESS);
        return true;
    } else {
        if (op->reserved) {
            context_release(op->candidate);
            op->reserved = false;
        }
        op->confirming = false;
        ++op->attempt;
    }
    if (int e = start_round(*op)) {
        finish(op, e);
        return true;
    }
    return false;
}

class IdupHook final : public ulm::ProgressHook {
public:
    void add(Idup* op)
    {
        if (!registered_) {
            state().engine.add_progress_hook(this);
            registered_ = true;
        }
        ops_.push_back(op);
    }

    int poll() override
    {
        if (polling_ || ops_.empty()) {
            return 0;
        }
        polling_ = true;
        int n = 0;
        for (std::size_t i = 0; i < ops_.size();) {
            if (advance(ops_[i])) {
                ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(i));
                ++n;
            } else {
                ++i;
            }
        }
        polling_ = false;
        return n;
    }

private:
    std::vector<Idup*> ops_; // in start order
    bool registered_ = false;
    bool polling_ = false;
};

IdupHook& hook()
{
    static auto* h = new IdupHook; // never destroyed: the engine may poll it until exit
    return *h;
}

} // namespace

void comm_idup_detach(Idup* op) { op->request = nullptr; }

} // namespace ulmpi::mpi

using namespace ulmpi::mpi;

int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_idup";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (newcomm == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "newcomm is NULL");
    }
    if (request == nullptr) {
        return raise(c, MPI_ERR_REQUEST, fn, "the request pointer is NULL");
    }
    Request* r = request_new(Request::Kind::schedule, c);
    if (r == nullptr) {
        return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a request");
    }
    auto* op = new Idup;
    op->parent = c;
    comm_retain(c);
    op->tag = coll::next_tag(c);
    op->request = r;
    op->out = newcomm;
    op->copy_error = attr_copy_all(c->attrs, AttrKind::comm, comm, op->attrs, MPI_COMM_NULL);
    op->hints = c->hints;
    std::erase_if(op->hints, [](const auto& kv) { return kv.first == "ulmpi_context_id"; });
    op->topo = c->topo;
    op->eh = c->errhandler;
    errhandler_retain(op->eh);
    op->ft = ft_enabled() && !ftmpi_on();
    if (op->ft) {
        op->ft_base = c->ft_agree_seq++;
    }
    r->idup = op;
    *request = r->handle;
    if (int e = start_round(*op)) {
        finish(op, e); // the request completes with the error
        return MPI_SUCCESS;
    }
    hook().add(op);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_idup");
}
ULMPI_ALIAS(MPI_Comm_idup)
