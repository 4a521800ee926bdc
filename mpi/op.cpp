// Reduction operations: the predefined kernels, user ops, and the entry
// points MPI_Op_create / MPI_Op_free / MPI_Op_commutative / MPI_Reduce_local.
//
// The kernel table has one entry per (predefined op, predefined datatype)
// that MPI allows, built from mpi/datatype/predefined.def by category:
//   MAX MIN            integers, floating point
//   SUM PROD           integers, floating point, complex
//   LAND LOR LXOR      integers, logical
//   BAND BOR BXOR      integers, MPI_BYTE
//   MAXLOC MINLOC      the pair types
//   REPLACE NO_OP      every type (meant for one-sided; harmless here)
// "Integers" includes the character types (MPI_CHAR, MPI_WCHAR,
// MPI_CHARACTER) as MPICH does, since programs and test suites reduce them.
// Signed integer arithmetic wraps (done in the unsigned type), as every MPI
// in practice does.
#include "mpi/op.h"

#include "mpi/checks.h"
#include "mpi/handle.h"

#include <climits>
#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

namespace ulmpi::mpi {
namespace {

constexpr int kOps = 15;    // op indexes 1..14
constexpr int kTypes = 64;  // datatype indexes 1..62

using Kernel = void (*)(const void* in, void* inout, std::uint64_t n);

enum OpIndex : int {
    op_max = 1, op_min, op_sum, op_prod, op_land, op_band, op_lor, op_bor, op_lxor, op_bxor,
    op_maxloc, op_minloc, op_replace, op_no_op,
};

// Wrapping arithmetic for integers (no signed overflow), plain for the rest.
template <class T> T add(T a, T b)
{
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        using U = std::make_unsigned_t<decltype(+a)>;
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
        return a + b;
    }
}

template <class T> T mul(T a, T b)
{
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        using U = std::make_unsigned_t<decltype(+a)>;
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
        return a * b;
    }
}

template <class T, int Op> void kernel(const void* in_v, void* io_v, std::uint64_t n)
{
    const T* __restrict in = static_cast<const T*>(in_v);
    T* __restrict io = static_cast<T*>(io_v);
    for (std::uint64_t i = 0; i < n; ++i) {
        const T a = in[i];
        T& b = io[i];
        if constexpr (Op == op_max) {
            b = a > b ? a : b;
        } else if constexpr (Op == op_min) {
            b = a < b ? a : b;
        } else if constexpr (Op == op_sum) {
            b = add(a, b);
        } else if constexpr (Op == op_prod) {
            b = mul(a, b);
        } else if constexpr (Op == op_land) {
            b = static_cast<T>((a != T{}) && (b != T{}));
        } else if constexpr (Op == op_lor) {
            b = static_cast<T>((a != T{}) || (b != T{}));
        } else if constexpr (Op == op_lxor) {
            b = static_cast<T>((a != T{}) != (b != T{}));
        } else if constexpr (Op == op_band) {
            b = static_cast<T>(a & b);
        } else if constexpr (Op == op_bor) {
            b = static_cast<T>(a | b);
        } else if constexpr (Op == op_bxor) {
            b = static_cast<T>(a ^ b);
        }
    }
}

// MAXLOC / MINLOC: the better value wins; on a tie the lower index.
template <class P, int Op> void loc_kernel(const void* in_v, void* io_v, std::uint64_t n)
{
    const P* in = static_cast<const P*>(in_v);
    P* io = static_cast<P*>(io_v);
    for (std::uint64_t i = 0; i < n; ++i) {
        const P& a = in[i];
        P& b = io[i];
        bool better = Op == op_maxloc ? a.value > b.value : a.value < b.value;
        if (better) {
            b.value = a.value;
            b.index = a.index;
        } else if (a.value == b.value && a.index < b.index) {
            b.index = a.index;
        }
    }
}

struct KernelTable {
    Kernel k[kOps][kTypes] = {};

    template <class T, int... Ops> void set(int type)
    {
        ((k[Ops][type] = &kernel<T, Ops>), ...);
    }

    // One row of predefined.def.
    template <class T> void add(int type, Category cat)
    {
        switch (cat) {
        case Category::signed_int:
        case Category::unsigned_int:
        case Category::character:
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                set<T, op_max, op_min, op_sum, op_prod, op_land, op_lor, op_lxor, op_band, op_bor,
                    op_bxor>(type);
            }
            break;
        case Category::floating:
            if constexpr (std::is_floating_point_v<T>) {
                set<T, op_max, op_min, op_sum, op_prod>(type);
            }
            break;
        case Category::floating_complex:
            if constexpr (!std::is_arithmetic_v<T> && requires(T a) { a.real(); }) {
                set<T, op_sum, op_prod>(type);
            }
            break;
        case Category::logical:
            if constexpr (std::is_integral_v<T>) {
                set<T, op_land, op_lor, op_lxor>(type);
            }
            break;
        case Category::byte:
            if constexpr (std::is_integral_v<T>) {
                set<T, op_band, op_bor, op_bxor>(type);
            }
            break;
        case Category::pair:
            if constexpr (requires(T p) { p.index; }) {
                k[op_maxloc][type] = &loc_kernel<T, op_maxloc>;
                k[op_minloc][type] = &loc_kernel<T, op_minloc>;
            }
            break;
        default:
            break;
        }
    }

    KernelTable()
    {
#define ULMPI_DT_COMPLEX(T) std::complex<T>
#define ULMPI_DT_PAIR(V, I) LocPair<V, I>
#define ULMPI_DATATYPE(name, index, size, extent, align, category, ctype)                          \
    add_row<ctype>(index, Category::category);
#include "mpi/datatype/predefined.def"
#undef ULMPI_DT_COMPLEX
#undef ULMPI_DT_PAIR
    }

    template <class T> void add_row(int type, Category cat)
    {
        if constexpr (!std::is_void_v<T>) {
            add<T>(type, cat);
        }
    }
};

const KernelTable& kernels()
{
    static const KernelTable t;
    return t;
}

struct Predefined {
    Op ops[kOps];
    Predefined()
    {
        static const char* const names[kOps] = {
            "",         "MPI_MAX",  "MPI_MIN", "MPI_SUM",  "MPI_PROD",   "MPI_LAND",
            "MPI_BAND", "MPI_LOR",  "MPI_BOR", "MPI_LXOR", "MPI_BXOR",   "MPI_MAXLOC",
            "MPI_MINLOC", "MPI_REPLACE", "MPI_NO_OP"};
        for (int i = 1; i < kOps; ++i) {
            ops[i].handle = make_handle(ULMPI_KIND_OP, i);
            ops[i].index = i;
            ops[i].commutative = true;
            ops[i].name = names[i];
            ops[i].refs = 1 << 30;
        }
    }
};

HandleTable<Op, ULMPI_KIND_OP>& table()
{
    static HandleTable<Op, ULMPI_KIND_OP>* t = [] {
        static Predefined pre;
        auto* tab = new HandleTable<Op, ULMPI_KIND_OP>;
        for (int i = 1; i < kOps; ++i) {
            tab->set_predefined(i, &pre.ops[i]);
        }
        return tab;
    }();
    return *t;
}

int type_index(const Datatype* t) { return handle_index(t->handle); }

Kernel find_kernel(const Op* op, const Datatype* basic)
{
    if (basic == nullptr || !basic->predefined) {
        return nullptr;
    }
    int ti = type_index(basic);
    if (ti <= 0 || ti >= kTypes) {
        return nullptr;
    }
    return kernels().k[op->index][ti];
}

// Copies `bytes` of packed data from one typed buffer to another.
void copy_packed(const ulm::DataRef& src, const ulm::DataRef& dst, std::uint64_t bytes)
{
    std::uint64_t pos = 0;
    ulm::for_each_segment(src, 0, bytes, [&](std::byte* p, std::size_t len) {
        ulm::unpack(dst, pos, p, len);
        pos += len;
    });
}

} // namespace

Op* op_get(MPI_Op h) { return table().get(h); }

void op_retain(Op* op) { ++op->refs; }

void op_release(Op* op)
{
    if (op->predefined()) {
        return;
    }
    if (--op->refs == 0) {
        delete op;
    }
}

bool op_accepts(const Op* op, const Datatype* t)
{
    if (!op->predefined() || op->index == op_replace || op->index == op_no_op) {
        return true;
    }
    return find_kernel(op, t->basic) != nullptr;
}

void op_apply(const Op* op, const void* in, void* inout, std::uint64_t count, const Datatype* t)
{
    if (count == 0 || op->index == op_no_op) {
        return;
    }
    if (!op->predefined()) {
        // The user function takes an int count: call it in pieces.
        MPI_Datatype h = t->handle;
        const auto* a = static_cast<const std::byte*>(in);
        auto* b = static_cast<std::byte*>(inout);
        while (count > 0) {
            int n = count > static_cast<std::uint64_t>(INT_MAX) ? INT_MAX : static_cast<int>(count);
            op->user_fn(const_cast<std::byte*>(a), b, &n, &h);
            count -= static_cast<std::uint64_t>(n);
            a += static_cast<std::int64_t>(n) * t->extent();
            b += static_cast<std::int64_t>(n) * t->extent();
        }
        return;
    }
    if (op->index == op_replace) {
        copy_packed(t->ref(in, count), t->ref(inout, count), count * t->size);
        return;
    }
    const Datatype* basic = t->basic;
    Kernel k = find_kernel(op, basic);
    if (k == nullptr) [[unlikely]] {
        return; // op_accepts said no; callers check first
    }
    if (basic == t) {
        k(in, inout, count);
        return;
    }
    // A derived type: gather its basic elements into native arrays, reduce,
    // scatter the result back.
    std::uint64_t bytes = count * t->size;
    std::uint64_t n = basic->size == 0 ? 0 : bytes / basic->size;
    std::vector<std::byte> a(n * static_cast<std::uint64_t>(basic->extent()));
    std::vector<std::byte> b(a.size());
    copy_packed(t->ref(in, count), basic->ref(a.data(), n), bytes);
    copy_packed(t->ref(inout, count), basic->ref(b.data(), n), bytes);
    k(a.data(), b.data(), n);
    copy_packed(basic->ref(b.data(), n), t->ref(inout, count), bytes);
}

} // namespace ulmpi::mpi

using namespace ulmpi;
using namespace ulmpi::mpi;

int PMPI_Op_create(MPI_User_function* fn, int commute, MPI_Op* op) try {
    EntryGuard guard;
    constexpr const char* fn_name = "MPI_Op_create";
    require_init(fn_name);
    if (fn == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn_name, "the user function is NULL");
    }
    if (op == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn_name, "op is NULL");
    }
    auto* o = new Op;
    o->user_fn = fn;
    o->commutative = commute != 0;
    o->handle = table().insert(o);
    if (o->handle == 0) {
        delete o;
        return raise(nullptr, MPI_ERR_INTERN, fn_name, "out of op handles");
    }
    *op = o->handle;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Op_create");
}
ULMPI_ALIAS(MPI_Op_create)

int PMPI_Op_free(MPI_Op* op) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Op_free";
    require_init(fn);
    if (op == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "op is NULL");
    }
    Op* o = op_get(*op);
    if (o == nullptr) {
        return raise(nullptr, MPI_ERR_OP, fn, "0x%x is not a valid op", static_cast<unsigned>(*op));
    }
    if (o->predefined()) {
        return raise(nullptr, MPI_ERR_OP, fn, "%s is predefined and cannot be freed", o->name);
    }
    table().erase(o->handle);
    op_release(o);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Op_free");
}
ULMPI_ALIAS(MPI_Op_free)

int PMPI_Op_commutative(MPI_Op op, int* commute) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Op_commutative";
    require_init(fn);
    Op* o = op_get(op);
    if (o == nullptr) {
        return raise(nullptr, MPI_ERR_OP, fn, "0x%x is not a valid op", static_cast<unsigned>(op));
    }
    if (commute == nullptr) {
        return raise(nullptr, MPI_ERR_ARG, fn, "commute is NULL");
    }
    *commute = o->commutative ? 1 : 0;
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Op_commutative");
}
ULMPI_ALIAS(MPI_Op_commutative)

int PMPI_Reduce_local(const void* inbuf, void* inoutbuf, int count, MPI_Datatype type, MPI_Op op) try {
    EntryGuard guard;
    constexpr const char* fn = "MPI_Reduce_local";
    require_init(fn);
    Datatype* t = datatype_get(type);
    if (t == nullptr || !t->committed || t->category == Category::marker) {
        return raise(nullptr, MPI_ERR_TYPE, fn, "0x%x is not a valid committed datatype",
                     static_cast<unsigned>(type));
    }
    Op* o = op_get(op);
    if (o == nullptr) {
        return raise(nullptr, MPI_ERR_OP, fn, "0x%x is not a valid op", static_cast<unsigned>(op));
    }
    if (count < 0) {
        return raise(nullptr, MPI_ERR_COUNT, fn, "count %d is negative", count);
    }
    if (!op_accepts(o, t)) {
        return raise(nullptr, MPI_ERR_OP, fn, "%s is not defined for datatype %s", o->name,
                     t->name.empty() ? "(derived)" : t->name.c_str());
    }
    if (count > 0 && (inbuf == MPI_IN_PLACE || inoutbuf == MPI_IN_PLACE)) {
        return raise(nullptr, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not allowed here");
    }
    if (count > 0 && t->size > 0 && t->predefined && (inbuf == nullptr || inoutbuf == nullptr)) {
        return raise(nullptr, MPI_ERR_BUFFER, fn, "a buffer is NULL with count %d", count);
    }
    op_apply(o, inbuf, inoutbuf, static_cast<std::uint64_t>(count), t);
    return MPI_SUCCESS;
} catch (...) {
    return api_exception("MPI_Reduce_local");
}
ULMPI_ALIAS(MPI_Reduce_local)

MPI_Fint PMPI_Op_c2f(MPI_Op op) { return op; }
ULMPI_ALIAS(MPI_Op_c2f)
MPI_Op PMPI_Op_f2c(MPI_Fint op) { return op; }
ULMPI_ALIAS(MPI_Op_f2c)
