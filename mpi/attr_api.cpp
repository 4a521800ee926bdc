// Attribute entry points: the MPI-2 names (Comm_/Type_ create_keyval,
// free_keyval, set_attr, get_attr, delete_attr) and the MPI-1 names
// (Keyval_create/free, Attr_put/get/delete). Storage and callback order:
// attr.h.
//
// Error classes: MPI_ERR_KEYVAL (an invalid, freed or predefined key where
// the program's own key is needed, or a key of the other kind),
// MPI_ERR_COMM / MPI_ERR_TYPE (the object), MPI_ERR_ARG (NULL output
// pointers); a callback's own error code is returned as it is.
#include "mpi/attr.h"
#include "mpi/checks.h"
#include "mpi/comm.h"
#include "mpi/datatype/datatype.h"
#include "mpi/entry.h"
#include "mpi/ftmpi.h"

using namespace ulmpi::mpi;

namespace {

const char* kind_name(AttrKind k) { return k == AttrKind::comm ? "communicator" : "datatype"; }

// The program's key `id` of kind `kind`; raises MPI_ERR_KEYVAL otherwise.
int get_keyval(Comm* c, int id, AttrKind kind, const char* fn, Keyval** out)
{
    if (keyval_predefined(id)) {
        return raise(c, MPI_ERR_KEYVAL, fn, "keyval 0x%x is predefined: it cannot be set, "
                     "deleted or freed", static_cast<unsigned>(id));
    }
    Keyval* k = keyval_get(id);
    if (k == nullptr) {
        return raise(c, MPI_ERR_KEYVAL, fn, "0x%x is not a valid keyval%s",
                     static_cast<unsigned>(id), id == MPI_KEYVAL_INVALID ? " (MPI_KEYVAL_INVALID)"
                                                                        : "");
    }
    if (k->kind != kind) {
        return raise(c, MPI_ERR_KEYVAL, fn, "keyval 0x%x was made for %ss, not %ss",
                     static_cast<unsigned>(id), kind_name(k->kind), kind_name(kind));
    }
    *out = k;
    return MPI_SUCCESS;
}

int create_keyval(AttrKind kind, Keyval proto, int* keyval, const char* fn)
{
    require_init(fn);
    if (keyval == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the keyval pointer is NULL");
    }
    *keyval = keyval_create(kind, proto);
    return MPI_SUCCESS;
}

int free_keyval(AttrKind kind, int* keyval, const char* fn)
{
    require_init(fn);
    if (keyval == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "the keyval pointer is NULL");
    }
    Keyval* k = nullptr;
    if (int e = get_keyval(nullptr, *keyval, kind, fn, &k)) {
        return e;
    }
    keyval_free(k);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

// ---- communicators

int comm_set(MPI_Comm comm, int keyval, void* value, const char* fn)
{
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (ftmpi_keyval(keyval)) {
        return ftmpi_attr_set(c, keyval, value, fn); // FT-MPI's modes (mpi/ftmpi_attr.cpp)
    }
    Keyval* k = nullptr;
    if (int e = get_keyval(c, keyval, AttrKind::comm, fn, &k)) {
        return e;
    }
    if (int e = attr_set(c->attrs, AttrKind::comm, comm, k, value)) {
        return raise(c, e, fn, "the delete callback of keyval 0x%x (replacing the value) failed",
                     static_cast<unsigned>(keyval));
    }
    return MPI_SUCCESS;
}

int comm_get(MPI_Comm comm, int keyval, void* value, int* flag, const char* fn)
{
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    if (value == nullptr || flag == nullptr) {
        return raise(c, MPI_ERR_ARG, fn, "%s is NULL", value == nullptr ? "attribute_val" : "flag");
    }
    if (keyval_predefined(keyval)) {
        void* v = predefined_comm_attr(keyval);
        *flag = v != nullptr ? 1 : 0;
        if (v != nullptr) {
            *static_cast<void**>(value) = v;
        }
        return MPI_SUCCESS;
    }
    Keyval* k = nullptr;
    if (int e = get_keyval(c, keyval, AttrKind::comm, fn, &k)) {
        return e;
    }
    void* v = nullptr;
    *flag = attr_get(c->attrs, k, &v) ? 1 : 0;
    if (*flag != 0) {
        *static_cast<void**>(value) = v;
    }
    return MPI_SUCCESS;
}

int comm_delete(MPI_Comm comm, int keyval, const char* fn)
{
    require_init(fn);
    Comm* c = nullptr;
    if (int e = check_comm(comm, fn, &c)) {
        return e;
    }
    Keyval* k = nullptr;
    if (int e = get_keyval(c, keyval, AttrKind::comm, fn, &k)) {
        return e;
    }
    if (int e = attr_delete(c->attrs, AttrKind::comm, comm, k)) {
        return raise(c, e, fn, "the delete callback of keyval 0x%x failed",
                     static_cast<unsigned>(keyval));
    }
    return MPI_SUCCESS;
}

// ---- datatypes

int get_type(MPI_Datatype h, const char* fn, Datatype** out)
{
    Datatype* t = datatype_get(h);
    if (t == nullptr) {
        return raise(nullptr, MPI_ERR_TYPE, fn,
                     h == MPI_DATATYPE_NULL ? "the datatype is MPI_DATATYPE_NULL"
                                            : "0x%x is not a valid datatype",
                     static_cast<unsigned>(h));
    }
    *out = t;
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function* copy_fn,
                            MPI_Comm_delete_attr_function* delete_fn, int* keyval,
                            void* extra_state) try {
    EntryGuard guard;
    Keyval proto;
    proto.comm_copy = copy_fn;
    proto.comm_delete = delete_fn;
    proto.extra = extra_state;
    return create_keyval(AttrKind::comm, proto, keyval, "MPI_Comm_create_keyval");
} catch (...) {
    return api_exception("MPI_Comm_create_keyval");
}
ULMPI_ALIAS(MPI_Comm_create_keyval)

int PMPI_Keyval_create(MPI_Copy_function* copy_fn, MPI_Delete_function* delete_fn, int* keyval,
                       void* extra_state) try {
    EntryGuard guard;
    Keyval proto;
    proto.comm_copy = copy_fn;
    proto.comm_delete = delete_fn;
    proto.extra = extra_state;
    return create_keyval(AttrKind::comm, proto, keyval, "MPI_Keyval_create");
} catch (...) {
    return api_exception("MPI_Keyval_create");
}
ULMPI_ALIAS(MPI_Keyval_create)

int PMPI_Comm_free_keyval(int* keyval) try {
    EntryGuard guard;
    return free_keyval(AttrKind::comm, keyval, "MPI_Comm_free_keyval");
} catch (...) {
    return api_exception("MPI_Comm_free_keyval");
}
ULMPI_ALIAS(MPI_Comm_free_keyval)

int PMPI_Keyval_free(int* keyval) try {
    EntryGuard guard;
    return free_keyval(AttrKind::comm, keyval, "MPI_Keyval_free");
} catch (...) {
    return api_exception("MPI_Keyval_free");
}
ULMPI_ALIAS(MPI_Keyval_free)

int PMPI_Comm_set_attr(MPI_Comm comm, int keyval, void* value) try {
    EntryGuard guard;
    return comm_set(comm, keyval, value, "MPI_Comm_set_attr");
} catch (...) {
    return api_exception("MPI_Comm_set_attr");
}
ULMPI_ALIAS(MPI_Comm_set_attr)

int PMPI_Attr_put(MPI_Comm comm, int keyval, void* value) try {
    EntryGuard guard;
    return comm_set(comm, keyval, value, "MPI_Attr_put");
} catch (...) {
    return api_exception("MPI_Attr_put");
}
ULMPI_ALIAS(MPI_Attr_put)

int PMPI_Comm_get_attr(MPI_Comm comm, int keyval, void* value, int* flag) try {
    EntryGuard guard;
    return comm_get(comm, keyval, value, flag, "MPI_Comm_get_attr");
} catch (...) {
    return api_exception("MPI_Comm_get_attr");
}
ULMPI_ALIAS(MPI_Comm_get_attr)

int PMPI_Attr_get(MPI_Comm comm, int keyval, void* value, int* flag) try {
    EntryGuard guard;
    return comm_get(comm, keyval, value, flag, "MPI_Attr_get");
} catch (...) {
    return api_exception("MPI_Attr_get");
}
ULMPI_ALIAS(MPI_Attr_get)

int PMPI_Comm_delete_attr(MPI_Comm comm, int keyval) try {
    EntryGuard guard;
    return comm_delete(comm, keyval, "MPI_Comm_delete_attr");
} catch (...) {
    return api_exception("MPI_Comm_delete_attr");
}
ULMPI_ALIAS(MPI_Comm_delete_attr)

int PMPI_Attr_delete(MPI_Comm comm, int keyval) try {
    EntryGuard guard;
    return comm_delete(comm, keyval, "MPI_Attr_delete");
} catch (...) {
    return api_exception("MPI_Attr_delete");
}
ULMPI_ALIAS(MPI_Attr_delete)

int PMPI_Type_create_keyval(MPI_Type_copy_attr_function* copy_fn,
                            MPI_Type_delete_attr_function* delete_fn, int* keyval,
                            void* extra_state) try {
    EntryGuard guard;
    Keyval proto;
    proto.type_copy = copy_fn;
    proto.type_delete = delete_fn;
    proto.extra = extra_state;
    return create_keyval(AttrKind::type, proto, keyval, "MPI_Type_create_keyval");
} catch (...) {
    return api_exception("MPI_Type_create_keyval");
}
ULMPI_ALIAS(MPI_Type_create_keyval)

int PMPI_Type_free_keyval(int* keyval) try {
    EntryGuard guard;
    return free_keyval(AttrKind::type, keyval, "MPI_Type_free_keyval");
} catch (...) {
    return api_exception("MPI_Type_free_keyval");
}
ULMPI_ALIAS(MPI_Type_free_keyval)

int PMPI_Type_set_attr(MPI_Datatype type, int keyval, void* value) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_set_attr";
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, fn, &t)) {
        return e;
    }
    Keyval* k = nullptr;
    if (int e = get_keyval(nullptr, keyval, AttrKind::type, fn, &k)) {
        return e;
    }
    attr_install_type_hooks();
    auto* list = static_cast<AttrList*>(t->attrs);
    int e = attr_set(list, AttrKind::type, type, k, value);
    t->attrs = list;
    if (e != MPI_SUCCESS) {
        return raise(nullptr, e, fn, "the delete callback of keyval 0x%x (replacing the value) "
                     "failed", static_cast<unsigned>(keyval));
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_set_attr");
}
ULMPI_ALIAS(MPI_Type_set_attr)

int PMPI_Type_get_attr(MPI_Datatype type, int keyval, void* value, int* flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_get_attr";
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, fn, &t)) {
        return e;
    }
    if (value == nullptr || flag == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL",
                     value == nullptr ? "attribute_val" : "flag");
    }
    Keyval* k = nullptr;
    if (int e = get_keyval(nullptr, keyval, AttrKind::type, fn, &k)) {
        return e;
    }
    void* v = nullptr;
    *flag = attr_get(static_cast<AttrList*>(t->attrs), k, &v) ? 1 : 0;
    if (*flag != 0) {
        *static_cast<void**>(value) = v;
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_get_attr");
}
ULMPI_ALIAS(MPI_Type_get_attr)

int PMPI_Type_delete_attr(MPI_Datatype type, int keyval) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Type_delete_attr";
    require_init(fn);
    Datatype* t = nullptr;
    if (int e = get_type(type, fn, &t)) {
        return e;
    }
    Keyval* k = nullptr;
    if (int e = get_keyval(nullptr, keyval, AttrKind::type, fn, &k)) {
        return e;
    }
    auto* list = static_cast<AttrList*>(t->attrs);
    int e = attr_delete(list, AttrKind::type, type, k);
    t->attrs = list;
    if (e != MPI_SUCCESS) {
        return raise(nullptr, e, fn, "the delete callback of keyval 0x%x failed",
                     static_cast<unsigned>(keyval));
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Type_delete_attr");
}
ULMPI_ALIAS(MPI_Type_delete_attr)
