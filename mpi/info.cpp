// Info objects and their entry points (info.h).
//
// Error classes: MPI_ERR_INFO (invalid info object, or freeing
// MPI_INFO_ENV), MPI_ERR_INFO_KEY (NULL, empty or longer than
// MPI_MAX_INFO_KEY - 1 characters), MPI_ERR_INFO_VALUE (NULL, empty or
// longer than MPI_MAX_INFO_VAL - 1), MPI_ERR_INFO_NOKEY (deleting a key
// that is not there), MPI_ERR_ARG (NULL outputs, negative valuelen, n out
// of range in get_nthkey).
#include "mpi/info.h"

#include "mpi/checks.h"
#include "mpi/errors.h"
#include "mpi/handle.h"
#include "mpi/state.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace ulmpi::mpi;

namespace ulmpi::mpi {
namespace {

Info g_env;

HandleTable<Info, ULMPI_KIND_INFO>& table()
{
    static HandleTable<Info, ULMPI_KIND_INFO> t = [] {
        HandleTable<Info, ULMPI_KIND_INFO> init;
        g_env.handle = MPI_INFO_ENV;
        g_env.predefined = true;
        init.set_predefined(handle_index(MPI_INFO_ENV), &g_env);
        return init;
    }();
    return t;
}

const char* thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "MPI_THREAD_SINGLE";
    }
}

// MPI_INFO_ENV, filled on first use once MPI is initialized.
void fill_env()
{
    static bool filled = false;
    if (filled || !state().initialized) {
        return;
    }
    filled = true;
    std::ifstream f("/proc/self/cmdline", std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    std::size_t pos = 0;
    while (pos < all.size()) {
        std::size_t end = all.find('\0', pos);
        if (end == std::string::npos) {
            end = all.size();
        }
        args.push_back(all.substr(pos, end - pos));
        pos = end + 1;
    }
    if (!args.empty()) {
        info_pairs_set(g_env.pairs, "command", args[0]);
        std::string rest;
        for (std::size_t i = 1; i < args.size(); ++i) {
            rest += (i > 1 ? " " : "") + args[i];
        }
        if (!rest.empty()) {
            info_pairs_set(g_env.pairs, "argv", rest);
        }
    }
    const rt::JobInfo& job = state().engine.job();
    // The processes of my MPI_COMM_WORLD (a job with spawn slots has more ranks).
    const std::size_t world = job.world.empty() ? static_cast<std::size_t>(job.size) : job.world.size();
    info_pairs_set(g_env.pairs, "maxprocs", std::to_string(world));
    if (!job.host.empty()) {
        info_pairs_set(g_env.pairs, "host", job.host);
    }
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) {
        info_pairs_set(g_env.pairs, "wdir", cwd);
    }
    info_pairs_set(g_env.pairs, "thread_level", thread_level_name(state().thread_level));
    info_pairs_set(g_env.pairs, "mpi_initial_errhandler", errhandler_initial_name());
}

} // namespace

Info* info_get(MPI_Info h)
{
    Info* i = table().get(h);
    if (i == &g_env) {
        fill_env();
    }
    return i;
}

MPI_Info info_new(const InfoPairs& pairs)
{
    auto* i = new Info;
    i->pairs = pairs;
    i->handle = table().insert(i);
    if (i->handle == 0) {
        delete i;
        return MPI_INFO_NULL;
    }
    return i->handle;
}

void info_pairs_set(InfoPairs& pairs, const std::string& key, const std::string& value)
{
    for (auto& p : pairs) {
        if (p.first == key) {
            p.second = value;
            return;
        }
    }
    pairs.emplace_back(key, value);
}

const std::string* info_pairs_find(const InfoPairs& pairs, const std::string& key)
{
    for (const auto& p : pairs) {
        if (p.first == key) {
            return &p.second;
        }
    }
    return nullptr;
}

} // namespace ulmpi::mpi

namespace {

int get_info(MPI_Info h, const char* fn, Info** out)
{
    Info* i = info_get(h);
    if (i == nullptr) {
        return raise(nullptr, MPI_ERR_INFO, fn,
                     h == MPI_INFO_NULL ? "the info object is MPI_INFO_NULL"
                                        : "0x%x is not a valid info object",
                     static_cast<unsigned>(h));
    }
    *out = i;
    return MPI_SUCCESS;
}

int check_key(const char* key, const char* fn)
{
    if (key == nullptr) {
        return raise(nullptr, MPI_ERR_INFO_KEY, fn, "the key is NULL");
    }
    std::size_t n = strnlen(key, MPI_MAX_INFO_KEY);
    if (n == 0) {
        return raise(nullptr, MPI_ERR_INFO_KEY, fn, "the key is empty");
    }
    if (n > MPI_MAX_INFO_KEY - 1) {
        return raise(nullptr, MPI_ERR_INFO_KEY, fn, "the key is longer than MPI_MAX_INFO_KEY - 1 "
                     "(%d) characters", MPI_MAX_INFO_KEY - 1);
    }
    return MPI_SUCCESS;
}

int need(const void* p, const char* what, const char* fn)
{
    if (p == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "%s is NULL", what);
    }
    return MPI_SUCCESS;
}

} // namespace

int PMPI_Info_create(MPI_Info* info) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_create";
    require_init(fn);
    if (int e = need(info, "info", fn)) {
        return e;
    }
    MPI_Info h = info_new({});
    if (h == MPI_INFO_NULL) {
        return raise(nullptr, MPI_ERR_INTERN, fn, "the info handle table is full");
    }
    *info = h;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_create");
}
ULMPI_ALIAS(MPI_Info_create)

int PMPI_Info_free(MPI_Info* info) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_free";
    require_init(fn);
    if (int e = need(info, "the info pointer", fn)) {
        return e;
    }
    Info* i = nullptr;
    if (int e = get_info(*info, fn, &i)) {
        return e;
    }
    if (i->predefined) {
        return raise(nullptr, MPI_ERR_INFO, fn, "MPI_INFO_ENV cannot be freed");
    }
    table().erase(i->handle);
    delete i;
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_free");
}
ULMPI_ALIAS(MPI_Info_free)

int PMPI_Info_set(MPI_Info info, const char* key, const char* value) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_set";
    require_init(fn);
    Info* i = nullptr;
    if (int e = get_info(info, fn, &i)) {
        return e;
    }
    if (int e = check_key(key, fn)) {
        return e;
    }
    if (value == nullptr) {
        return raise(nullptr, MPI_ERR_INFO_VALUE, fn, "the value is NULL");
    }
    std::size_t n = strnlen(value, MPI_MAX_INFO_VAL);
    if (n == 0 || n > MPI_MAX_INFO_VAL - 1) {
        return raise(nullptr, MPI_ERR_INFO_VALUE, fn, n == 0 ? "the value is empty"
                     : "the value is longer than MPI_MAX_INFO_VAL - 1 characters");
    }
    info_pairs_set(i->pairs, key, std::string(value, n));
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_set");
}
ULMPI_ALIAS(MPI_Info_set)

int PMPI_Info_get(MPI_Info info, const char* key, int valuelen, char* value, int* flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_get";
    require_init(fn);
    Info* i = nullptr;
    if (int e = get_info(info, fn, &i)) {
        return e;
    }
    if (int e = check_key(key, fn)) {
        return e;
    }
    if (valuelen < 0) {
        return raise(nullptr, MPI_ERR_ARG, fn, "valuelen %d is negative", valuelen);
    }
    if (int e = need(value, "value", fn)) {
        return e;
    }
    if (int e = need(flag, "flag", fn)) {
        return e;
    }
    const std::string* v = info_pairs_find(i->pairs, key);
    *flag = v != nullptr ? 1 : 0;
    if (v != nullptr) {
        std::size_t n = std::min<std::size_t>(v->size(), static_cast<std::size_t>(valuelen));
        std::memcpy(value, v->data(), n);
        value[n] = '\0';
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_get");
}
ULMPI_ALIAS(MPI_Info_get)

int PMPI_Info_get_valuelen(MPI_Info info, const char* key, int* valuelen, int* flag) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_get_valuelen";
    require_init(fn);
    Info* i = nullptr;
    if (int e = get_info(info, fn, &i)) {
        return e;
    }
    if (int e = check_key(key, fn)) {
        return e;
    }
    if (int e = need(valuelen, "valuelen", fn)) {
        return e;
    }
    if (int e = need(flag, "flag", fn)) {
        return e;
    }
    const std::string* v = info_pairs_find(i->pairs, key);
    *flag = v != nullptr ? 1 : 0;
    if (v != nullptr) {
        *valuelen = static_cast<int>(v->size());
    }
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_get_valuelen");
}
ULMPI_ALIAS(MPI_Info_get_valuelen)

int PMPI_Info_delete(MPI_Info info, const char* key) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_delete";
    require_init(fn);
    Info* i = nullptr;
    if (int e = get_info(info, fn, &i)) {
        return e;
    }
    if (int e = check_key(key, fn)) {
        return e;
    }
    auto it = std::find_if(i->pairs.begin(), i->pairs.end(),
                           [key](const auto& p) { return p.first == key; });
    if (it == i->pairs.end()) {
        return raise(nullptr, MPI_ERR_INFO_NOKEY, fn, "no key \"%s\"", key);
    }
    i->pairs.erase(it);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_delete");
}
ULMPI_ALIAS(MPI_Info_delete)

int PMPI_Info_dup(MPI_Info info, MPI_Info* newinfo) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_dup";
    require_init(fn);
    Info* i = nullptr;
    if (int e = get_info(info, fn, &i)) {
        return e;
    }
    if (int e = need(newinfo, "newinfo", fn)) {
        return e;
    }
    MPI_Info h = info_new(i->pairs);
    if (h == MPI_INFO_NULL) {
        return raise(nullptr, MPI_ERR_INTERN, fn, "the info handle table is full");
    }
    *newinfo = h;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_dup");
}
ULMPI_ALIAS(MPI_Info_dup)

int PMPI_Info_get_nkeys(MPI_Info info, int* nkeys) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_get_nkeys";
    require_init(fn);
    Info* i = nullptr;
    if (int e = get_info(info, fn, &i)) {
        return e;
    }
    if (int e = need(nkeys, "nkeys", fn)) {
        return e;
    }
    *nkeys = static_cast<int>(i->pairs.size());
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_get_nkeys");
}
ULMPI_ALIAS(MPI_Info_get_nkeys)

int PMPI_Info_get_nthkey(MPI_Info info, int n, char* key) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Info_get_nthkey";
    require_init(fn);
    Info* i = nullptr;
    if (int e = get_info(info, fn, &i)) {
        return e;
    }
    if (int e = need(key, "key", fn)) {
        return e;
    }
    if (n < 0 || static_cast<std::size_t>(n) >= i->pairs.size()) {
        return raise(nullptr, MPI_ERR_ARG, fn, "n = %d is not below the number of keys (%zu)", n,
                     i->pairs.size());
    }
    const std::string& k = i->pairs[static_cast<std::size_t>(n)].first;
    std::memcpy(key, k.c_str(), k.size() + 1);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Info_get_nthkey");
}
ULMPI_ALIAS(MPI_Info_get_nthkey)

MPI_Fint PMPI_Info_c2f(MPI_Info info) { return info; }
ULMPI_ALIAS(MPI_Info_c2f)
MPI_Info PMPI_Info_f2c(MPI_Fint info) { return info; }
ULMPI_ALIAS(MPI_Info_f2c)
