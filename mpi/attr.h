// Attribute caching (MPI-3.1 section 6.7) on communicators and datatypes.
//
// Keyvals. A keyval is an int 0x64400000 | n (mpi.h): n = 1..12 are the
// predefined keys (MPI_TAG_UB ...), keys the program makes count up from
// 1024 and are never reused. A Keyval object knows its kind (communicator
// or datatype), its copy and delete callbacks and extra_state. It is
// reference counted: the program's key is one reference (MPI_*_free_keyval
// drops it), every attribute stored under it is another, so the callbacks
// of an attribute still run after the key was freed. As in MPICH (whose
// attr tests rely on it), a freed key whose attributes remain still names
// them (get, delete; freeing it again does nothing); once its last
// attribute is gone the number is invalid (MPI_ERR_KEYVAL).
//
// Storage. An object's attributes are an AttrList: (keyval, value) in the
// order they were first set (setting a key again replaces the value in
// place, after the old value's delete callback). Lists are short; a linear
// search beats any map here.
//
// Callback order. Duplication (MPI_Comm_dup, MPI_Type_dup) runs the copy
// callbacks in set order; freeing (MPI_Comm_free, MPI_Type_free, and
// MPI_COMM_SELF at the start of MPI_Finalize, as MPI-3.1 8.7.1 requires)
// runs the delete callbacks in the reverse of set order. A callback that
// returns an error stops the operation and the error becomes the return
// value of the MPI call: a failed copy drops the new object (after running
// the delete callbacks of what was already copied), a failed delete leaves
// that attribute and those not yet deleted in place.
//
// Predefined attributes (MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL,
// MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE) are not stored: every
// communicator answers them (as MPICH does), they cannot be set or deleted.
#pragma once

#include "mpi/entry.h"

#include <vector>

namespace ulmpi::mpi {

enum class AttrKind : unsigned char { comm, type };

struct Keyval {
    int id = 0;
    AttrKind kind = AttrKind::comm;
    MPI_Comm_copy_attr_function* comm_copy = nullptr;
    MPI_Comm_delete_attr_function* comm_delete = nullptr;
    MPI_Type_copy_attr_function* type_copy = nullptr;
    MPI_Type_delete_attr_function* type_delete = nullptr;
    void* extra = nullptr;
    int refs = 1;
    bool freed = false; // the program freed the key (attributes may remain)
};

struct Attr {
    Keyval* keyval;
    void* value;
};

struct AttrList {
    std::vector<Attr> items; // in the order first set
};

inline constexpr int kKeyvalBase = MPI_KEYVAL_INVALID;
inline constexpr int kFirstUserKeyval = kKeyvalBase | 1024;

bool keyval_predefined(int id);           // MPI_TAG_UB .. MPI_WIN_MODEL
Keyval* keyval_get(int id);               // existing user keyval, else nullptr
int keyval_create(AttrKind kind, Keyval proto); // new key id (proto's callbacks and extra)
void keyval_free(Keyval* k);               // the program's reference
void keyval_release(Keyval* k);

// The value of a predefined communicator attribute (pointer to a static
// int), or nullptr when the key is not one of them.
void* predefined_comm_attr(int id);

// Operations on one object's list; `obj` is the object's handle (given to
// the callbacks). Each returns MPI_SUCCESS or the callback's error code.
int attr_set(AttrList*& list, AttrKind kind, int obj, Keyval* k, void* value);
bool attr_get(const AttrList* list, const Keyval* k, void** value);
// Deleting a key that is not set succeeds and calls nothing.
int attr_delete(AttrList*& list, AttrKind kind, int obj, Keyval* k);
// Copies `from`'s attributes onto `to` (empty) through the copy callbacks.
// On failure `to` is left empty (delete callbacks of the copies ran).
int attr_copy_all(const AttrList* from, AttrKind kind, int from_obj, AttrList*& to, int to_obj);
// Deletes every attribute, in reverse set order; frees the list when done.
int attr_delete_all(AttrList*& list, AttrKind kind, int obj);

// Installs the datatype engine's hooks (datatype.h: type_attr_hooks).
void attr_install_type_hooks();

} // namespace ulmpi::mpi
