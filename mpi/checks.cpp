#include "mpi/checks.h"

#include "mpi/ft_comm.h"
#include "mpi/ftmpi.h"
#include "mpi/group.h"

#include <string_view>

namespace ulmpi::mpi {

namespace {

// What a program may still do with a communicator that an FT-MPI recovery
// made invalid (mpi/ftmpi.h): free it, and handle its errors.
bool allowed_when_stale(std::string_view fn)
{
    return fn == "MPI_Comm_free" || fn == "MPI_Comm_set_errhandler" ||
           fn == "MPI_Comm_get_errhandler" || fn == "MPI_Errhandler_set" ||
           fn == "MPI_Errhandler_get" || fn == "MPI_Comm_call_errhandler";
}

} // namespace

int check_comm(MPI_Comm h, const char* fn, Comm** out)
{
    Comm* c = comm_get(h);
    if (c == nullptr) [[unlikely]] {
        return raise(nullptr, MPI_ERR_COMM, fn,
                     h == MPI_COMM_NULL ? "the communicator is MPI_COMM_NULL"
                                        : "0x%x is not a valid communicator handle",
                     static_cast<unsigned>(h));
    }
    if (c->ft_stale && !allowed_when_stale(fn)) [[unlikely]] {
        return raise(c, MPI_ERR_COMM, fn,
                     "%s is invalid: FT-MPI recovery %d re-created MPI_COMM_WORLD; free it and "
                     "build it again",
                     c->display_name().c_str(), ftmpi_epoch());
    }
    *out = c;
    return MPI_SUCCESS;
}

int check_group(Comm* c, MPI_Group h, const char* what, const char* fn, Group** out)
{
    Group* g = group_get(h);
    if (g == nullptr) [[unlikely]] {
        return raise(c, MPI_ERR_GROUP, fn,
                     h == MPI_GROUP_NULL ? "%s is MPI_GROUP_NULL" : "%s (0x%x) is not a valid group",
                     what, static_cast<unsigned>(h));
    }
    if (group_stale(*g) && std::string_view(fn) != "MPI_Group_free") [[unlikely]] {
        return raise(c, MPI_ERR_GROUP, fn,
                     "%s is invalid: it was made before FT-MPI recovery %d; free it and build it "
                     "again",
                     what, ftmpi_epoch());
    }
    *out = g;
    return MPI_SUCCESS;
}

int check_type(Comm* c, MPI_Datatype h, const char* fn, Datatype** out)
{
    Datatype* t = datatype_get(h);
    if (t == nullptr) [[unlikely]] {
        return raise(c, MPI_ERR_TYPE, fn,
                     h == MPI_DATATYPE_NULL ? "the datatype is MPI_DATATYPE_NULL"
                                            : "0x%x is not a valid datatype handle",
                     static_cast<unsigned>(h));
    }
    if (!t->committed) [[unlikely]] {
        return raise(c, MPI_ERR_TYPE, fn, "datatype %s is not committed (call MPI_Type_commit)",
                     t->name.empty() ? "(unnamed)" : t->name.c_str());
    }
    if (t->category == Category::marker) [[unlikely]] {
        return raise(c, MPI_ERR_TYPE, fn, "%s cannot be used to communicate", t->name.c_str());
    }
    *out = t;
    return MPI_SUCCESS;
}

int check_count(Comm* c, int count, const char* fn)
{
    if (count < 0) [[unlikely]] {
        return raise(c, MPI_ERR_COUNT, fn, "count %d is negative", count);
    }
    return MPI_SUCCESS;
}

int check_dest(Comm* c, int rank, const char* fn)
{
    if (rank == MPI_PROC_NULL || (rank >= 0 && rank < c->peer_count())) [[likely]] {
        return MPI_SUCCESS;
    }
    return raise(c, MPI_ERR_RANK, fn, "destination rank %d is not in the %scommunicator (size %d)",
                 rank, c->inter() ? "remote group of the inter" : "", c->peer_count());
}

int check_source(Comm* c, int rank, const char* fn)
{
    if (rank == MPI_PROC_NULL || rank == MPI_ANY_SOURCE || (rank >= 0 && rank < c->peer_count()))
        [[likely]] {
        return MPI_SUCCESS;
    }
    return raise(c, MPI_ERR_RANK, fn, "source rank %d is not in the %scommunicator (size %d)", rank,
                 c->inter() ? "remote group of the inter" : "", c->peer_count());
}

int check_send_tag(Comm* c, int tag, const char* fn)
{
    if (tag < 0 || tag > kTagUb) [[unlikely]] {
        return raise(c, MPI_ERR_TAG, fn, "tag %d is outside 0..MPI_TAG_UB (%d)", tag, kTagUb);
    }
    return MPI_SUCCESS;
}

int check_recv_tag(Comm* c, int tag, const char* fn)
{
    if (tag == MPI_ANY_TAG) {
        return MPI_SUCCESS;
    }
    if (tag < 0 || tag > kTagUb) [[unlikely]] {
        return raise(c, MPI_ERR_TAG, fn, "tag %d is outside 0..MPI_TAG_UB (%d) and not MPI_ANY_TAG",
                     tag, kTagUb);
    }
    return MPI_SUCCESS;
}

int check_buffer(Comm* c, const void* buf, int count, const Datatype* t, const char* fn)
{
    // MPI_BOTTOM (NULL) is legal with derived types holding absolute
    // addresses; with a predefined type and data to move it is an error.
    if (buf == nullptr && count > 0 && t->size > 0 && t->predefined) [[unlikely]] {
        return raise(c, MPI_ERR_BUFFER, fn, "buffer is NULL with count %d of %s", count,
                     t->name.c_str());
    }
    if (buf == MPI_IN_PLACE) [[unlikely]] {
        return raise(c, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not a point-to-point buffer");
    }
    return MPI_SUCCESS;
}

int raise_null_ptr(Comm* c, const char* what, const char* fn)
{
    return raise(c, MPI_ERR_ARG, fn, "%s is NULL", what);
}

int check_send_all(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   const char* fn, Comm** c, Datatype** t)
{
    require_init(fn);
    if (int e = check_comm(comm, fn, c)) {
        return e;
    }
    if (int e = check_type(*c, type, fn, t)) {
        return e;
    }
    if (!state().check_args) {
        return MPI_SUCCESS;
    }
    if (int e = check_count(*c, count, fn)) {
        return e;
    }
    if (int e = check_dest(*c, dest, fn)) {
        return e;
    }
    if (int e = check_send_tag(*c, tag, fn)) {
        return e;
    }
    if (int e = check_buffer(*c, buf, count, *t, fn)) {
        return e;
    }
    return (*c)->revoked || (*c)->ft_gate ? ft_check_p2p(*c, fn) : MPI_SUCCESS;
}

int check_recv_all(const void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   const char* fn, Comm** c, Datatype** t)
{
    require_init(fn);
    if (int e = check_comm(comm, fn, c)) {
        return e;
    }
    if (int e = check_type(*c, type, fn, t)) {
        return e;
    }
    if (!state().check_args) {
        return MPI_SUCCESS;
    }
    if (int e = check_count(*c, count, fn)) {
        return e;
    }
    if (int e = check_source(*c, source, fn)) {
        return e;
    }
    if (int e = check_recv_tag(*c, tag, fn)) {
        return e;
    }
    if (int e = check_buffer(*c, buf, count, *t, fn)) {
        return e;
    }
    return (*c)->revoked || (*c)->ft_gate ? ft_check_p2p(*c, fn) : MPI_SUCCESS;
}

int check_intra_root(MPI_Comm comm, int root, const void* out, const char* what, const char* fn,
                     Comm** c)
{
    if (int e = check_comm(comm, fn, c)) {
        return e;
    }
    if ((*c)->inter()) {
        return raise(*c, MPI_ERR_COMM, fn, "%s is an intercommunicator; this call needs an "
                     "intracommunicator", (*c)->display_name().c_str());
    }
    if (root < 0 || root >= (*c)->size()) {
        return raise(*c, MPI_ERR_ROOT, fn, "root %d is not a rank of %s (size %d)", root,
                     (*c)->display_name().c_str(), (*c)->size());
    }
    if (out == nullptr) {
        return raise(*c, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    return MPI_SUCCESS;
}

} // namespace ulmpi::mpi
