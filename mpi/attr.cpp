#include "mpi/attr.h"

#include "mpi/ft_comm.h"
#include "mpi/ftmpi.h"

#include "mpi/checks.h"
#include "mpi/datatype/datatype.h"
#include "mpi/errors.h"
#include "mpi/state.h"

#include <algorithm>
#include <unordered_map>

namespace ulmpi::mpi {
namespace {

// Never destroyed (as the op and datatype tables): a keyval the program never freed
// stays reachable, not lost when static destructors run at exit.
std::unordered_map<int, Keyval*>& keyvals()
{
    static auto* m = new std::unordered_map<int, Keyval*>;
    return *m;
}

int g_next_keyval = kFirstUserKeyval;

// Values of the predefined attributes (the program gets pointers to them).
int g_tag_ub = kTagUb;
int g_host = MPI_PROC_NULL;
int g_io = MPI_ANY_SOURCE;
int g_wtime_is_global = 0;
int g_universe_size = 1;
int g_appnum = 0;
int g_lastusedcode = MPI_ERR_LASTCODE;
int g_ft = 0;

int call_copy(const Keyval* k, AttrKind kind, int obj, void* in, void** out, int* flag)
{
    if (kind == AttrKind::comm) {
        return k->comm_copy == nullptr ? (*flag = 0, MPI_SUCCESS)
                                       : k->comm_copy(obj, k->id, k->extra, in, out, flag);
    }
    return k->type_copy == nullptr ? (*flag = 0, MPI_SUCCESS)
                                   : k->type_copy(obj, k->id, k->extra, in, out, flag);
}

int call_delete(const Keyval* k, AttrKind kind, int obj, void* value)
{
    if (kind == AttrKind::comm) {
        return k->comm_delete == nullptr ? MPI_SUCCESS
                                         : k->comm_delete(obj, k->id, value, k->extra);
    }
    return k->type_delete == nullptr ? MPI_SUCCESS : k->type_delete(obj, k->id, value, k->extra);
}

Attr* find(AttrList* list, const Keyval* k)
{
    if (list == nullptr) {
        return nullptr;
    }
    for (Attr& a : list->items) {
        if (a.keyval == k) {
            return &a;
        }
    }
    return nullptr;
}

void drop_if_empty(AttrList*& list)
{
    if (list != nullptr && list->items.empty()) {
        delete list;
        list = nullptr;
    }
}

int type_copy_hook(Datatype* from, Datatype* to)
{
    AttrList* copy = nullptr;
    int e = attr_copy_all(static_cast<AttrList*>(from->attrs), AttrKind::type, from->handle, copy,
                          to->handle);
    to->attrs = copy;
    return e;
}

int type_erase_hook(Datatype* t)
{
    auto* list = static_cast<AttrList*>(t->attrs);
    int e = attr_delete_all(list, AttrKind::type, t->handle);
    t->attrs = list;
    return e;
}

} // namespace

bool keyval_predefined(int id)
{
    return (id > kKeyvalBase && id <= MPI_FT) || ftmpi_keyval(id);
}

Keyval* keyval_get(int id)
{
    auto it = keyvals().find(id);
    return it == keyvals().end() ? nullptr : it->second;
}

int keyval_create(AttrKind kind, Keyval proto)
{
    auto* k = new Keyval(proto);
    k->kind = kind;
    k->id = g_next_keyval++;
    k->refs = 1;
    k->freed = false;
    keyvals().emplace(k->id, k);
    return k->id;
}

void keyval_free(Keyval* k)
{
    if (k->freed) {
        return; // freed again while attributes keep it: nothing more to drop
    }
    k->freed = true;
    keyval_release(k);
}

void keyval_release(Keyval* k)
{
    if (--k->refs == 0) {
        keyvals().erase(k->id);
        delete k;
    }
}

void* predefined_comm_attr(int id)
{
    const rt::JobInfo& job = state().engine.job();
    switch (id) {
    case MPI_TAG_UB: return &g_tag_ub;
    case MPI_HOST: return &g_host;
    case MPI_IO: return &g_io;
    case MPI_WTIME_IS_GLOBAL: return &g_wtime_is_global;
    case MPI_UNIVERSE_SIZE:
        g_universe_size = std::max(job.universe_size, job.size);
        return &g_universe_size;
    case MPI_APPNUM:
        g_appnum = job.appnum;
        return &g_appnum;
    case MPI_LASTUSEDCODE:
        g_lastusedcode = last_used_code();
        return &g_lastusedcode;
    case MPI_FT:
        g_ft = ft_enabled() ? 1 : 0;
        return &g_ft;
    default: return ftmpi_attr_get(id); // FT-MPI's keys (mpi/ftmpi_attr.cpp), else nullptr
    }
}

int attr_set(AttrList*& list, AttrKind kind, int obj, Keyval* k, void* value)
{
    if (Attr* a = find(list, k)) {
        if (int e = call_delete(k, kind, obj, a->value)) {
            return e;
        }
        a->value = value;
        return MPI_SUCCESS;
    }
    if (list == nullptr) {
        list = new AttrList;
    }
    list->items.push_back(Attr{k, value});
    ++k->refs;
    return MPI_SUCCESS;
}

bool attr_get(const AttrList* list, const Keyval* k, void** value)
{
    if (Attr* a = find(const_cast<AttrList*>(list), k)) {
        *value = a->value;
        return true;
    }
    return false;
}

int attr_delete(AttrList*& list, AttrKind kind, int obj, Keyval* k)
{
    Attr* a = find(list, k);
    if (a == nullptr) {
        return MPI_SUCCESS;
    }
    if (int e = call_delete(k, kind, obj, a->value)) {
        return e;
    }
    // The callback may have changed the list: look again.
    auto& items = list->items;
    auto it = std::find_if(items.begin(), items.end(),
                           [k](const Attr& x) { return x.keyval == k; });
    if (it != items.end()) {
        items.erase(it);
        keyval_release(k);
    }
    drop_if_empty(list);
    return MPI_SUCCESS;
}

int attr_copy_all(const AttrList* from, AttrKind kind, int from_obj, AttrList*& to, int to_obj)
{
    if (from == nullptr) {
        return MPI_SUCCESS;
    }
    const std::vector<Attr> items = from->items; // callbacks may touch the source
    for (const Attr& a : items) {
        void* out = nullptr;
        int flag = 0;
        int e = call_copy(a.keyval, kind, from_obj, a.value, &out, &flag);
        if (e != MPI_SUCCESS) {
            (void)attr_delete_all(to, kind, to_obj);
            delete to;
            to = nullptr;
            return e;
        }
        if (flag != 0) {
            if (to == nullptr) {
                to = new AttrList;
            }
            to->items.push_back(Attr{a.keyval, out});
            ++a.keyval->refs;
        }
    }
    return MPI_SUCCESS;
}

int attr_delete_all(AttrList*& list, AttrKind kind, int obj)
{
    while (list != nullptr && !list->items.empty()) {
        Attr a = list->items.back();
        if (int e = call_delete(a.keyval, kind, obj, a.value)) {
            return e;
        }
        auto& items = list->items;
        auto it = std::find_if(items.begin(), items.end(),
                               [&a](const Attr& x) { return x.keyval == a.keyval; });
        if (it != items.end()) {
            items.erase(it);
            keyval_release(a.keyval);
        }
    }
    drop_if_empty(list);
    return MPI_SUCCESS;
}

void attr_install_type_hooks()
{
    type_attr_hooks.copy = type_copy_hook;
    type_attr_hooks.erase = type_erase_hook;
}

} // namespace ulmpi::mpi
