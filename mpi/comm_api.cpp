// Communicator entry points: dup (with info), create, create_group, split,
// split_type, free, compare, test_inter, remote_size, remote_group,
// Intercomm_create / merge, names and info hints. The collective work is in
// comm_make.cpp.
//
// Error classes: MPI_ERR_COMM (invalid communicator; an intercommunicator
// where an intracommunicator is needed or the reverse; freeing
// MPI_COMM_WORLD or MPI_COMM_SELF; overlapping groups in
// MPI_Intercomm_create), MPI_ERR_GROUP (invalid group, or not a subgroup),
// MPI_ERR_RANK (leaders), MPI_ERR_TAG, MPI_ERR_ARG (colours below 0 other
// than MPI_UNDEFINED, unknown split types, NULL pointers), MPI_ERR_INFO; an
// attribute callback's error code is returned as it is.
#include "mpi/checks.h"
#include "mpi/comm.h"
#include "mpi/comm_make.h"
#include "mpi/ftmpi.h"
#include "mpi/entry.h"
#include "mpi/info.h"
#include "mpi/state.h"

#include <cstring>
#include <string>
#include <vector>

using namespace ulmpi::mpi;

namespace {

int out_ptr(Comm* c, const void* p, const char* what, const char* fn)
{
    if (p == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    return MPI_SUCCESS;
}

int need_intra(Comm* c, const char* fn)
{
    if (c->inter()) {
        return raise(c, MPI_ERR_COMM, fn, "%s is an intercommunicator; this call needs an "
                     "intracommunicator", c->display_name().c_str());
    }
    return MPI_SUCCESS;
}

int need_inter(Comm* c, const char* fn)
{
    if (!c->inter()) {
        return raise(c, MPI_ERR_COMM, fn, "%s is not an intercommunicator",
                     c->display_name().c_str());
    }
    return MPI_SUCCESS;
}

// Comm_dup and Comm_dup_with_info: new contexts, then the attributes.
int dup(MPI_Comm comm, const InfoPairs* hints, MPI_Comm* newcomm, const char* fn)
{
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (ftmpi_on()) [[unlikely]] {
        // FT-MPI's recovery idiom: duplicating MPI_COMM_WORLD recovers it first.
        if (int e = ftmpi_dup_trigger(c, fn)) {
            return raise(c, e, fn, "the FT-MPI recovery failed");
        }
    }
    if (int e = out_ptr(c, newcomm, "newcomm", fn)) {
        return e;
    }
    if (ulmpi::ulm::thread_lock().on()) {
        // MPI_THREAD_MULTIPLE: as MPI_Comm_idup + MPI_Wait. Its pair is
        // proposed, reserved and confirmed without owning this process's
        // bitmap while it waits for the other members, so a dup never waits
        // for another thread's creation here while that one waits for a
        // creation this thread has yet to start elsewhere (comm_ctx.h).
        MPI_Request r = MPI_REQUEST_NULL;
        if (int e = PMPI_Comm_idup(comm, newcomm, &r)) {
            return e;
        }
        if (int e = PMPI_Wait(&r, MPI_STATUS_IGNORE)) {
            return e;
        }
        if (hints != nullptr && *newcomm != MPI_COMM_NULL) {
            Comm* n = comm_get(*newcomm);
            n->hints = *hints;
            std::erase_if(n->hints, [](const auto& kv) { return kv.first == "ulmpi_context_id"; });
        }
        return MPI_SUCCESS;
    }
    Comm* n = nullptr;
    if (int e = comm_make_dup(c, &n, fn)) {
        return e;
    }
    n->topo = c->topo;
    n->hints = hints != nullptr ? *hints : c->hints;
    std::erase_if(n->hints, [](const auto& kv) { return kv.first == "ulmpi_context_id"; });
    if (int e = attr_copy_all(c->attrs, AttrKind::comm, comm, n->attrs, n->handle)) {
        comm_release(n);
        *newcomm = MPI_COMM_NULL;
        return raise(c, e, fn, "an attribute copy callback failed (it returned %d)", e);
    }
    *newcomm = n->handle;
    return MPI_SUCCESS;
}

int split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm, const char* fn)
{
    Comm* c = comm_get(comm);
    Comm* n = nullptr;
    if (int e = comm_make_split(c, color, key, &n, fn)) {
        return e;
    }
    *newcomm = n != nullptr ? n->handle : MPI_COMM_NULL;
    return MPI_SUCCESS;
}

// An info argument that may be MPI_INFO_NULL.
int check_info(Comm* c, MPI_Info info, const char* fn, Info** out)
{
    *out = nullptr;
    if (info == MPI_INFO_NULL) {
        return MPI_SUCCESS;
    }
    Info* i = info_get(info);
    if (i == nullptr) {
        return raise(c, MPI_ERR_INFO, fn, "0x%x is not a valid info object",
                     static_cast<unsigned>(info));
    }
    *out = i;
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) try {
    EntryGuard guard;
    return dup(comm, nullptr, newcomm, "MPI_Comm_dup");
} catch (...) {
    return api_exception("MPI_Comm_dup");
}
ULMPI_ALIAS(MPI_Comm_dup)

int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_dup_with_info";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Info* i = nullptr;
    if (int e = check_info(c, info, fn, &i)) {
        return e;
    }
    InfoPairs hints;
    if (i != nullptr) {
        hints = i->pairs;
    }
    return dup(comm, &hints, newcomm, fn);
} catch (...) {
    return api_exception("MPI_Comm_dup_with_info");
}
ULMPI_ALIAS(MPI_Comm_dup_with_info)

int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_create";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Group* g = nullptr;
    if (int e = check_group(c, group, "group", fn, &g)) {
        return e;
    }
    if (int e = out_ptr(c, newcomm, "newcomm", fn)) {
        return e;
    }
    if (!group_subset(*g, *c->local)) {
        return raise(c, MPI_ERR_GROUP, fn, "the group is not a subgroup of the %sgroup of %s",
                     c->inter() ? "local " : "", c->display_name().c_str());
    }
    Comm* n = nullptr;
    if (c->inter()) {
        if (int e = comm_make_inter_create(c, g, &n, fn)) {
            return e;
        }
    } else {
        const bool member = g->rank_of(state().engine.rank()) != MPI_UNDEFINED;
        if (member) {
            group_retain(g);
        }
        if (int e = comm_make_intra(c, member ? g : nullptr, &n, fn)) {
            return e;
        }
    }
    *newcomm = n != nullptr ? n->handle : MPI_COMM_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_create");
}
ULMPI_ALIAS(MPI_Comm_create)

int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_create_group";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = need_intra(c, fn)) {
        return e;
    }
    Group* g = nullptr;
    if (int e = check_group(c, group, "group", fn, &g)) {
        return e;
    }
    if (int e = out_ptr(c, newcomm, "newcomm", fn)) {
        return e;
    }
    if (state().check_args) {
        if (int e = check_send_tag(c, tag, fn)) {
            return e;
        }
    }
    if (!group_subset(*g, *c->local)) {
        return raise(c, MPI_ERR_GROUP, fn, "the group is not a subgroup of %s",
                     c->display_name().c_str());
    }
    const int grank = g->rank_of(state().engine.rank());
    if (grank == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL; // not a member: a local call
        return MPI_SUCCESS;
    }
    Comm* n = nullptr;
    if (int e = comm_make_group(c, g, grank, tag, &n, fn)) {
        return e;
    }
    *newcomm = n->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_create_group");
}
ULMPI_ALIAS(MPI_Comm_create_group)

int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_split";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = out_ptr(c, newcomm, "newcomm", fn)) {
        return e;
    }
    if (color < 0 && color != MPI_UNDEFINED) {
        return raise(c, MPI_ERR_ARG, fn, "color %d is negative and not MPI_UNDEFINED", color);
    }
    return split(comm, color, key, newcomm, fn);
} catch (...) {
    return api_exception("MPI_Comm_split");
}
ULMPI_ALIAS(MPI_Comm_split)

int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                         MPI_Comm* newcomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_split_type";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = need_intra(c, fn)) {
        return e;
    }
    if (int e = out_ptr(c, newcomm, "newcomm", fn)) {
        return e;
    }
    Info* i = nullptr;
    if (int e = check_info(c, info, fn, &i)) {
        return e;
    }
    if (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED) {
        return raise(c, MPI_ERR_ARG, fn, "split_type %d is neither MPI_COMM_TYPE_SHARED nor "
                     "MPI_UNDEFINED", split_type);
    }
    int color = MPI_UNDEFINED;
    if (split_type == MPI_COMM_TYPE_SHARED) {
        const ulmpi::rt::JobInfo& job = state().engine.job();
        const auto me = static_cast<std::size_t>(state().engine.rank());
        color = me < job.node_of_rank.size() ? job.node_of_rank[me] : job.node_id;
    }
    return split(comm, color, key, newcomm, fn);
} catch (...) {
    return api_exception("MPI_Comm_split_type");
}
ULMPI_ALIAS(MPI_Comm_split_type)

int PMPI_Comm_free(MPI_Comm* comm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_free";
    require_init(fn);
    if (comm == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the communicator pointer is NULL");
    }
    Comm* c = nullptr;
    if (int e = check_comm(*comm, fn, &c)) {
        return e;
    }
    if (c->predefined) {
        return raise(c, MPI_ERR_COMM, fn, "%s cannot be freed", c->display_name().c_str());
    }
    if (int e = comm_free(c)) {
        return raise(c, e, fn, "an attribute delete callback failed (it returned %d)", e);
    }
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_free");
}
ULMPI_ALIAS(MPI_Comm_free)

int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int* result) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_compare";
    require_init(fn);
    Comm* a = nullptr;
    Comm* b = nullptr;
    if (int e = check_comm(comm1, fn, &a)) {
        return e;
    }
    if (int e = check_comm(comm2, fn, &b)) {
        return e;
    }
    if (int e = out_ptr(a, result, "result", fn)) {
        return e;
    }
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (a->inter() != b->inter()) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int l = group_compare(*a->local, *b->local);
    int r = a->inter() ? group_compare(*a->remote, *b->remote) : MPI_IDENT;
    if (l == MPI_UNEQUAL || r == MPI_UNEQUAL) {
        *result = MPI_UNEQUAL;
    } else if (l == MPI_IDENT && r == MPI_IDENT) {
        *result = MPI_CONGRUENT;
    } else {
        *result = MPI_SIMILAR;
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_compare");
}
ULMPI_ALIAS(MPI_Comm_compare)

int PMPI_Comm_test_inter(MPI_Comm comm, int* flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_test_inter";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = out_ptr(c, flag, "flag", fn)) {
        return e;
    }
    *flag = c->inter() ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_test_inter");
}
ULMPI_ALIAS(MPI_Comm_test_inter)

int PMPI_Comm_remote_size(MPI_Comm comm, int* size) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_remote_size";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = need_inter(c, fn)) {
        return e;
    }
    if (int e = out_ptr(c, size, "size", fn)) {
        return e;
    }
    *size = c->remote->size();
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_remote_size");
}
ULMPI_ALIAS(MPI_Comm_remote_size)

int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group* group) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_remote_group";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = need_inter(c, fn)) {
        return e;
    }
    if (int e = out_ptr(c, group, "group", fn)) {
        return e;
    }
    group_retain(c->remote);
    MPI_Group h = group_handle(c->remote);
    if (h == 0) {
        group_release(c->remote);
        return raise(c, MPI_ERR_INTERN, fn, "the group handle table is full");
    }
    *group = h;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_remote_group");
}
ULMPI_ALIAS(MPI_Comm_remote_group)

int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                          int remote_leader, int tag, MPI_Comm* newintercomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Intercomm_create";
    require_init(fn);
    Comm* l = nullptr;
    if (int e = check_comm(local_comm, fn, &l)) {
        return e;
    }
    if (int e = need_intra(l, fn)) {
        return e;
    }
    if (int e = out_ptr(l, newintercomm, "newintercomm", fn)) {
        return e;
    }
    if (local_leader < 0 || local_leader >= l->size()) {
        return raise(l, MPI_ERR_RANK, fn, "local_leader %d is not a rank of the local "
                     "communicator (size %d)", local_leader, l->size());
    }
    Comm* p = nullptr;
    if (l->rank == local_leader) {
        if (int e = check_comm(peer_comm, fn, &p)) {
            return e;
        }
        if (remote_leader < 0 || remote_leader >= p->peer_count()) {
            return raise(l, MPI_ERR_RANK, fn, "remote_leader %d is not a rank of the peer "
                         "communicator (size %d)", remote_leader, p->peer_count());
        }
        if (int e = check_send_tag(l, tag, fn)) {
            return e;
        }
    }
    Comm* n = nullptr;
    if (int e = comm_make_intercomm(l, local_leader, p, remote_leader, tag, &n, fn)) {
        return e;
    }
    *newintercomm = n->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Intercomm_create");
}
ULMPI_ALIAS(MPI_Intercomm_create)

int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newintracomm) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Intercomm_merge";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(intercomm, fn, &c)) {
        return e;
    }
    if (int e = need_inter(c, fn)) {
        return e;
    }
    if (int e = out_ptr(c, newintracomm, "newintracomm", fn)) {
        return e;
    }
    Comm* n = nullptr;
    if (int e = comm_make_merge(c, high != 0, &n, fn)) {
        return e;
    }
    *newintracomm = n->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Intercomm_merge");
}
ULMPI_ALIAS(MPI_Intercomm_merge)

int PMPI_Comm_set_name(MPI_Comm comm, const char* name) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_set_name";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = out_ptr(c, name, "comm_name", fn)) {
        return e;
    }
    c->name.assign(name, strnlen(name, MPI_MAX_OBJECT_NAME - 1));
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_set_name");
}
ULMPI_ALIAS(MPI_Comm_set_name)

int PMPI_Comm_get_name(MPI_Comm comm, char* name, int* resultlen) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_get_name";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = out_ptr(c, name, "comm_name", fn)) {
        return e;
    }
    if (int e = out_ptr(c, resultlen, "resultlen", fn)) {
        return e;
    }
    std::size_t n = std::min<std::size_t>(c->name.size(), MPI_MAX_OBJECT_NAME - 1);
    std::memcpy(name, c->name.data(), n);
    name[n] = '\0';
    *resultlen = static_cast<int>(n);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_get_name");
}
ULMPI_ALIAS(MPI_Comm_get_name)

int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_set_info";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Info* i = nullptr;
    if (int e = check_info(c, info, fn, &i)) {
        return e;
    }
    if (i == nullptr) {
        return raise(c, MPI_ERR_INFO, fn, "the info object is MPI_INFO_NULL");
    }
    // New values replace old ones key by key; other keys stay.
    for (const auto& [k, v] : i->pairs) {
        if (k != "ulmpi_context_id") {
            info_pairs_set(c->hints, k, v);
        }
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_set_info");
}
ULMPI_ALIAS(MPI_Comm_set_info)

int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info* info_used) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Comm_get_info";
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (int e = out_ptr(c, info_used, "info_used", fn)) {
        return e;
    }
    // Beside the program's hints: the communicator's point-to-point
    // context id, read-only (tests compare it across ranks; docs/communicators.md).
    InfoPairs used = c->hints;
    info_pairs_set(used, "ulmpi_context_id", std::to_string(c->ctx.value()));
    MPI_Info h = info_new(used);
    if (h == MPI_INFO_NULL) {
        return raise(c, MPI_ERR_INTERN, fn, "the info handle table is full");
    }
    *info_used = h;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Comm_get_info");
}
ULMPI_ALIAS(MPI_Comm_get_info)
