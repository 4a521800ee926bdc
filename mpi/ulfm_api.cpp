// The ULFM interface (User-Level Failure Mitigation, as Open MPI 5 ships it
// and the MPI Forum's fault-tolerance proposal describes): revoke, shrink,
// agree and the failure acknowledgement calls, with their PMPIX_ names.
// What failures do to communicators and operations is in mpi/ft_comm.h;
// the protocols are in ft/ (revoke.h, agree.h).
//
// The calls work without `--with-ft ulfm` too (a job without failures):
// their machinery is made at MPI_Init all the same (mpi/ft_comm.h).
#include "mpi/checks.h"
#include "mpi/comm_coll.h"
#include "mpi/comm_ctx.h"
#include "mpi/entry.h"
#include "mpi/errors.h"
#include "mpi/ft_comm.h"
#include "mpi/group.h"
#include "mpi/request.h"
#include "mpi/state.h"

#include <algorithm>
#include <string>
#include <vector>

namespace ulmpi::mpi {

// A nonblocking agree or shrink while its agreement runs.
struct FtOp {
    enum class Kind : std::uint8_t { agree, shrink };
    Kind kind = Kind::agree;
    Comm* comm = nullptr;
    Request* req = nullptr;   // nullptr once the program freed it
    int handle = 0;           // the agreement's
    int* flag = nullptr;      // agree: where the result goes
    MPI_Comm* newcomm = nullptr; // shrink: where the new communicator goes
    std::vector<int> gone;       // shrink: member indices agreed failed so far
};

namespace {

// The operation bits of an agreement's contributions (ft::AgreeValue::kinds):
// agree and shrink share a communicator's agreement sequence, so a program
// whose members call one while others call the other (say, a shrink right
// after a collective that failed at some members only) meets in one
// agreement instance. Its outcome then carries both bits at every member,
// and both calls raise MPI_ERR_OTHER instead of leaving the members to wait
// for each other in what they do next.
constexpr std::uint32_t kKindAgree = 1;
constexpr std::uint32_t kKindShrink = 2;
constexpr std::uint32_t kKindCreate = 4; // a communicator constructor (ft_agree_words)

bool mixed_calls(const ft::AgreeOutcome& o, std::uint32_t mine)
{
    return (o.value.kinds & ~mine) != 0;
}

constexpr const char* kMixedAgree =
    "other members called MPIX_Comm_shrink (or ishrink) or a communicator constructor where this "
    "one called agree: the program called different collectives on the communicator";
constexpr const char* kMixedShrink =
    "other members called MPIX_Comm_agree (or iagree) or a communicator constructor where this "
    "one called shrink: the program called different collectives on the communicator";
constexpr const char* kMixedCreate =
    "other members called MPIX_Comm_agree or shrink (or their nonblocking forms) where this one "
    "created a communicator: the program called different collectives on the communicator";

// Starts the agreement behind agree (flag) and shrink (the context mask),
// as the `seq`-th agreement on c.
int agreement_start(Comm* c, const ft::AgreeValue& mine, std::uint64_t seq)
{
    FtState& f = ft_machinery();
    const std::vector<int> members = ft_members(c);
    std::vector<bool> acked(members.size(), false);
    for (int i = 0; i < c->ft_acked && static_cast<std::size_t>(i) < c->ft_failed.size(); ++i) {
        auto it = std::find(members.begin(), members.end(), c->ft_failed[static_cast<std::size_t>(i)]);
        if (it != members.end()) {
            acked[static_cast<std::size_t>(it - members.begin())] = true;
        }
    }
    return f.agreements->start(c->ctx.value(), seq, members, mine, acked);
}

// The next agreement of c's sequence.
int agreement_start(Comm* c, const ft::AgreeValue& mine)
{
    return agreement_start(c, mine, c->ft_agree_seq++);
}

// Shrink agrees on the failed members in rounds, so that a member that
// contributed to an agreement and died before it ended is not left in the
// new communicator: a round contributes the free context ids and a flag
// "every member I know to have failed is in `gone`" (the failures agreed
// in the rounds before). The round is the last one when every contributor
// said yes and no member failed to contribute beyond `gone`; otherwise its
// non-contributors join `gone` and another round runs. Every survivor sees
// the same outcomes, so all take the same decisions. A member known failed
// by anyone cannot contribute to the next round, so each extra round adds
// to `gone`: the rounds end. Without failures one round suffices.
ft::AgreeValue shrink_value(const Comm* c, const std::vector<int>& gone)
{
    ft::AgreeValue v;
    v.kinds = kKindShrink;
    const ContextMask& m = context_free_mask();
    v.mask.assign(m.begin(), m.end());
    const std::vector<int> members = ft_members(c);
    const ft::Detector& d = *state().detector;
    v.flag = 1;
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (d.failed(members[i]) &&
            std::find(gone.begin(), gone.end(), static_cast<int>(i)) == gone.end()) {
            v.flag = 0;
        }
    }
    return v;
}

// Takes a round's outcome: true when it was the last (see shrink_value).
bool shrink_round_last(const ft::AgreeOutcome& o, std::vector<int>& gone)
{
    bool last = o.value.flag == 1;
    for (int i : o.failed) {
        if (std::find(gone.begin(), gone.end(), i) == gone.end()) {
            gone.push_back(i);
            last = false;
        }
    }
    return last;
}

// MPIX_Comm_agree's result: the flag, and MPIX_ERR_PROC_FAILED (the same
// everywhere) when a member that did not contribute was not acknowledged
// by every contributor.
int agree_result(Comm* c, const ft::AgreeOutcome& o, int* flag, const char* fn)
{
    if (mixed_calls(o, kKindAgree)) {
        return raise(c, MPI_ERR_OTHER, fn, "%s", kMixedAgree);
    }
    *flag = static_cast<int>(o.value.flag);
    if (o.unacked_failure) {
        return raise(c, kErrProcFailed, fn,
                     "members failed before they contributed and not every process acknowledged "
                     "it: %s",
                     ft_failed_text(c).c_str());
    }
    return MPI_SUCCESS;
}

// MPIX_Comm_shrink's result: the survivors, on the context pair free at
// all of them. MPI_SUCCESS, or an error class with `why`.
int shrink_make(Comm* c, const ft::AgreeOutcome& o, const std::vector<int>& failed,
                MPI_Comm* out, std::string& why)
{
    const std::vector<int> members = ft_members(c);
    std::vector<bool> gone(members.size(), false);
    for (int i : failed) {
        gone[static_cast<std::size_t>(i)] = true;
    }
    // Members keep their order: the local group's first (or second, for an
    // intercommunicator whose remote leader is lower), then the remote one.
    std::vector<int> local, remote;
    int my_rank = -1;
    const int me = state().engine.rank();
    for (std::size_t i = 0; i < members.size(); ++i) {
        if (gone[i]) {
            continue;
        }
        const int w = members[i];
        if (c->local->rank_of(w) != MPI_UNDEFINED) {
            if (w == me) {
                my_rank = static_cast<int>(local.size());
            }
            local.push_back(w);
        } else {
            remote.push_back(w);
        }
    }
    ContextMask mask{};
    for (std::size_t i = 0; i < mask.size() && i < o.value.mask.size(); ++i) {
        mask[i] = o.value.mask[i];
    }
    const int pair = context_lowest(mask);
    if (pair < 0) {
        why = "no context id is free at every survivor";
        return MPI_ERR_INTERN;
    }
    if (my_rank < 0) {
        why = "the agreement counted this process as failed";
        return MPI_ERR_INTERN;
    }
    if (c->inter() && remote.empty()) {
        why = "every process of the remote group failed";
        return kErrProcFailed;
    }
    Group* lg = group_new(std::move(local));
    Group* rg = c->inter() ? group_new(std::move(remote)) : nullptr;
    Comm* n = comm_new(lg, rg, my_rank, pair, c->errhandler);
    if (comm_publish(n) == MPI_COMM_NULL) {
        comm_release(n);
        why = "too many communicators";
        return MPI_ERR_INTERN;
    }
    *out = n->handle;
    return MPI_SUCCESS;
}

} // namespace

int ft_agree_words_start(Comm* c, const std::uint32_t* words, int n, std::uint64_t seq,
                         int local_error)
{
    // Every member takes part, whatever it knows: one that returned at once
    // (a failure or a revoke it had heard of) would leave the others waiting
    // in the agreement for its contribution. What each knew goes into the
    // flag, so that all decide alike: bit 0 "no member failed", bit 1 "not
    // revoked".
    ft::AgreeValue v;
    const bool revoked = c->revoked || local_error == kErrRevoked;
    const bool failed = !c->ft_failed.empty() || (local_error != MPI_SUCCESS && !revoked);
    v.flag = (failed ? 0u : 1u) | (revoked ? 0u : 2u);
    v.kinds = kKindCreate;
    v.mask.assign(words, words + n);
    return agreement_start(c, v, seq);
}

bool ft_agree_words_done(int handle) { return ft_machinery().agreements->done(handle); }

int ft_agree_words_end(int handle, std::uint32_t* words, int n, const char** why)
{
    ft::Agreements& a = *ft_machinery().agreements;
    const ft::AgreeOutcome o = a.outcome(handle);
    a.finish(handle);
    if (mixed_calls(o, kKindCreate) || o.value.mask.size() != static_cast<std::size_t>(n)) {
        *why = kMixedCreate;
        return MPI_ERR_OTHER;
    }
    if ((o.value.flag & 2u) == 0) {
        return kErrRevoked;
    }
    // A member that failed before it contributed: the constructor fails at
    // every member. One that contributed and died after (it may have
    // returned already, with the new communicator): it succeeds everywhere.
    if ((o.value.flag & 1u) == 0 || !o.failed.empty()) {
        return kErrProcFailed;
    }
    std::copy(o.value.mask.begin(), o.value.mask.end(), words);
    return MPI_SUCCESS;
}

int ft_agree_words(Comm* c, std::uint32_t* words, int n, const char** why, int local_error)
{
    // The caller is a blocking constructor: MPI_Comm_idup's rounds must not
    // take a pair from the bitmap contributed here meanwhile (comm_coll.h).
    BlockingPhaseMark blocking;
    const int h = ft_agree_words_start(c, words, n, c->ft_agree_seq++, local_error);
    state().engine.wait([&] { return ft_agree_words_done(h); });
    return ft_agree_words_end(h, words, n, why);
}

namespace {

// Progress for the nonblocking forms: finishes each operation whose
// agreement is done.
class FtOps final : public ulm::ProgressHook {
public:
    void add(FtOp* op)
    {
        if (ops_.empty()) {
            state().engine.add_progress_hook(this);
        }
        ops_.push_back(op);
    }
    int poll() override
    {
        int n = 0;
        ft::Agreements& a = *ft_machinery().agreements;
        for (std::size_t i = 0; i < ops_.size();) {
            FtOp* op = ops_[i];
            if (!a.done(op->handle)) {
                ++i;
                continue;
            }
            const ft::AgreeOutcome o = a.outcome(op->handle);
            a.finish(op->handle);
            if (op->kind == FtOp::Kind::shrink && !mixed_calls(o, kKindShrink) &&
                !shrink_round_last(o, op->gone)) {
                op->handle = agreement_start(op->comm, shrink_value(op->comm, op->gone));
                ++i;
                continue;
            }
            ops_[i] = ops_.back();
            ops_.pop_back();
            complete(op, o);
            ++n;
        }
        if (ops_.empty()) {
            state().engine.remove_progress_hook(this);
        }
        return n;
    }

private:
    static void complete(FtOp* op, const ft::AgreeOutcome& o)
    {
        Comm* c = op->comm;
        int err = MPI_SUCCESS;
        MPI_Comm made = MPI_COMM_NULL;
        int flag = 0;
        if (op->kind == FtOp::Kind::agree) {
            flag = static_cast<int>(o.value.flag);
            err = mixed_calls(o, kKindAgree) ? MPI_ERR_OTHER
                  : o.unacked_failure        ? kErrProcFailed
                                             : MPI_SUCCESS;
        } else if (mixed_calls(o, kKindShrink)) {
            err = MPI_ERR_OTHER;
        } else {
            // An error is reported by the completion call, through the handler.
            std::string why;
            err = shrink_make(c, o, op->gone, &made, why);
        }
        if (op->req != nullptr) {
            if (op->kind == FtOp::Kind::agree) {
                *op->flag = flag;
            } else {
                *op->newcomm = made;
            }
            status_empty(&op->req->status);
            op->req->status.MPI_ERROR = err;
            op->req->sched_done = true;
            op->req->ftop = nullptr;
        } else if (made != MPI_COMM_NULL) {
            comm_free(comm_get(made)); // its request was freed: nobody will use it
        }
        comm_release(c);
        delete op;
    }

    std::vector<FtOp*> ops_;
};

FtOps& ft_ops()
{
    static FtOps ops;
    return ops;
}

int start_op(Comm* c, FtOp::Kind kind, const ft::AgreeValue& v, int* flag, MPI_Comm* newcomm,
             MPI_Request* request, const char* fn)
{
    Request* r = request_new(Request::Kind::schedule, c);
    if (r == nullptr) {
        return raise(c, MPI_ERR_NO_MEM, fn, "no memory for a request");
    }
    auto* op = new FtOp;
    op->kind = kind;
    op->comm = c;
    comm_retain(c);
    op->req = r;
    op->flag = flag;
    op->newcomm = newcomm;
    op->handle = agreement_start(c, v);
    r->ftop = op;
    *request = r->handle;
    ft_ops().add(op);
    return MPI_SUCCESS;
}

int comm_of(MPI_Comm comm, const char* fn, Comm** c)
{
    require_init(fn);
    return check_comm(comm, fn, c);
}

} // namespace

void ft_op_detach(FtOp* op)
{
    op->req = nullptr; // it finishes on its own; a shrink's communicator is freed
}

} // namespace ulmpi::mpi

using namespace ulmpi::mpi;
namespace ft = ulmpi::ft;

int PMPIX_Comm_revoke(MPI_Comm comm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_revoke";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    ft_machinery().revoker->revoke(c->ctx.value());
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Comm_revoke");
}
ULMPI_ALIAS(MPIX_Comm_revoke)

int PMPIX_Comm_is_revoked(MPI_Comm comm, int* flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_is_revoked";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    if (int e = check_out_ptr(c, flag, "flag", fn)) {
        return e;
    }
    state().engine.poll(); // a notice may be waiting
    *flag = c->revoked ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Comm_is_revoked");
}
ULMPI_ALIAS(MPIX_Comm_is_revoked)

int PMPIX_Comm_agree(MPI_Comm comm, int* flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_agree";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    if (int e = check_out_ptr(c, flag, "flag", fn)) {
        return e;
    }
    ft::AgreeValue v;
    v.flag = static_cast<std::uint32_t>(*flag);
    v.kinds = kKindAgree;
    ft::Agreements& a = *ft_machinery().agreements;
    const int h = agreement_start(c, v);
    state().engine.wait([&] { return a.done(h); });
    const ft::AgreeOutcome o = a.outcome(h);
    a.finish(h);
    return agree_result(c, o, flag, fn);
} catch (...) {
    return api_exception("MPIX_Comm_agree");
}
ULMPI_ALIAS(MPIX_Comm_agree)

int PMPIX_Comm_iagree(MPI_Comm comm, int* flag, MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_iagree";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    if (int e = check_out_ptr(c, flag, "flag", fn)) {
        return e;
    }
    if (int e = check_out_ptr(c, request, "request pointer", fn)) {
        return e;
    }
    ft::AgreeValue v;
    v.flag = static_cast<std::uint32_t>(*flag);
    v.kinds = kKindAgree;
    return start_op(c, FtOp::Kind::agree, v, flag, nullptr, request, fn);
} catch (...) {
    return api_exception("MPIX_Comm_iagree");
}
ULMPI_ALIAS(MPIX_Comm_iagree)

int PMPIX_Comm_shrink(MPI_Comm comm, MPI_Comm* newcomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_shrink";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    if (int e = check_out_ptr(c, newcomm, "newcomm", fn)) {
        return e;
    }
    ft::Agreements& a = *ft_machinery().agreements;
    std::vector<int> gone;
    ft::AgreeOutcome o;
    do {
        const int h = agreement_start(c, shrink_value(c, gone));
        state().engine.wait([&] { return a.done(h); });
        o = a.outcome(h);
        a.finish(h);
        if (mixed_calls(o, kKindShrink)) {
            return raise(c, MPI_ERR_OTHER, fn, "%s", kMixedShrink);
        }
    } while (!shrink_round_last(o, gone));
    std::string why;
    if (int e = shrink_make(c, o, gone, newcomm, why)) {
        return raise(c, e, fn, "%s", why.c_str());
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Comm_shrink");
}
ULMPI_ALIAS(MPIX_Comm_shrink)

int PMPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_ishrink";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    if (int e = check_out_ptr(c, newcomm, "newcomm", fn)) {
        return e;
    }
    if (int e = check_out_ptr(c, request, "request pointer", fn)) {
        return e;
    }
    *newcomm = MPI_COMM_NULL;
    return start_op(c, FtOp::Kind::shrink, shrink_value(c, {}), nullptr, newcomm, request, fn);
} catch (...) {
    return api_exception("MPIX_Comm_ishrink");
}
ULMPI_ALIAS(MPIX_Comm_ishrink)

namespace {

int failed_group(Comm* c, int count, MPI_Group* out, const char* fn)
{
    if (int e = check_out_ptr(c, out, "group pointer", fn)) {
        return e;
    }
    state().engine.poll(); // notices may be waiting
    std::vector<int> w(c->ft_failed.begin(), c->ft_failed.begin() + count);
    Group* g = group_make(std::move(w));
    *out = group_handle(g);
    return MPI_SUCCESS;
}

} // namespace

int PMPIX_Comm_get_failed(MPI_Comm comm, MPI_Group* failedgroup) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_get_failed";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    state().engine.poll();
    return failed_group(c, static_cast<int>(c->ft_failed.size()), failedgroup, fn);
} catch (...) {
    return api_exception("MPIX_Comm_get_failed");
}
ULMPI_ALIAS(MPIX_Comm_get_failed)

int PMPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int* num_acked) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_ack_failed";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    if (int e = check_out_ptr(c, num_acked, "num_acked", fn)) {
        return e;
    }
    if (num_to_ack < 0) {
        return raise(c, MPI_ERR_ARG, fn, "num_to_ack %d is negative", num_to_ack);
    }
    state().engine.poll();
    const int known = static_cast<int>(c->ft_failed.size());
    c->ft_acked = std::max(c->ft_acked, std::min(num_to_ack, known));
    *num_acked = c->ft_acked;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Comm_ack_failed");
}
ULMPI_ALIAS(MPIX_Comm_ack_failed)

int PMPIX_Comm_failure_ack(MPI_Comm comm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_failure_ack";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    state().engine.poll();
    c->ft_acked = static_cast<int>(c->ft_failed.size());
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPIX_Comm_failure_ack");
}
ULMPI_ALIAS(MPIX_Comm_failure_ack)

int PMPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group* failedgrp) try {
    EntryGuard guard;
    constexpr const char* fn = "MPIX_Comm_failure_get_acked";
    Comm* c;
    if (int e = comm_of(comm, fn, &c)) {
        return e;
    }
    return failed_group(c, c->ft_acked, failedgrp, fn);
} catch (...) {
    return api_exception("MPIX_Comm_failure_get_acked");
}
ULMPI_ALIAS(MPIX_Comm_failure_get_acked)
