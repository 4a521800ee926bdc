/*
 * Reduction operations:
 *  - every predefined op on every predefined datatype it is defined for
 *    (MPI_Allreduce, MPI_Reduce and MPI_Reduce_local), exact results
 *    against a serial reference; MAXLOC/MINLOC on all pair types with ties;
 *  - MPI_ERR_OP for op/type pairs that are not defined;
 *  - user ops: a commutative one, and a non-commutative one (composition of
 *    affine maps x -> a x + b, in wrapping unsigned arithmetic) through
 *    Reduce at every root, Allreduce, Reduce_scatter(_block), Scan and
 *    Exscan, checked against the fold in rank order;
 *  - MPI_Op_commutative, MPI_Op_free, MPI_Reduce_local's argument order;
 *  - floating point sums against a serial reference within a tolerance.
 * The algorithms come from the environment (see testlist).
 */
#include "mpitest.h"

#include <complex.h>
#include <math.h>
#include <stdbool.h>

#define N 5

static int g_ok_for_type;

/* Value of element i at rank r for integer-like tests: small, with ties. */
static int ival(int r, int i) { return (r * 3 + i * 5) % 7 + (i == 2 ? 0 : r % 2); }
/* For PROD: 1 or 2 (the product stays in range) */
static int pval(int r, int i) { return ((r + i) % 3 == 0) ? 2 : 1; }
/* For logical/bitwise */
static int bval(int r, int i) { return (r * 13 + i * 7 + (r * i) % 5) & 0x3f; }

#define INT_OPS(X) X(MPI_MAX) X(MPI_MIN) X(MPI_SUM) X(MPI_PROD) X(MPI_LAND) X(MPI_LOR) \
    X(MPI_LXOR) X(MPI_BAND) X(MPI_BOR) X(MPI_BXOR)

/* Reference reduction over ranks 0..p-1 for one element, in type T. */
#define DEFINE_INT_TEST(T, name)                                                                 \
    static T ref_##name(MPI_Op op, int i, int p)                                                  \
    {                                                                                             \
        int r;                                                                                    \
        T acc = 0;                                                                                \
        for (r = 0; r < p; ++r) {                                                                 \
            T v = (T)(op == MPI_PROD ? pval(r, i)                                                 \
                                     : (op == MPI_SUM || op == MPI_MAX || op == MPI_MIN)          \
                                           ? ival(r, i)                                           \
                                           : bval(r, i));                                         \
            if (r == 0) {                                                                         \
                acc = v;                                                                          \
            } else if (op == MPI_MAX) {                                                           \
                acc = v > acc ? v : acc;                                                          \
            } else if (op == MPI_MIN) {                                                           \
                acc = v < acc ? v : acc;                                                          \
            } else if (op == MPI_SUM) {                                                           \
                acc = (T)(acc + v);                                                               \
            } else if (op == MPI_PROD) {                                                          \
                acc = (T)((long long)acc * (long long)v);                                          \
            } else if (op == MPI_LAND) {                                                          \
                acc = (T)(acc && v);                                                              \
            } else if (op == MPI_LOR) {                                                           \
                acc = (T)(acc || v);                                                              \
            } else if (op == MPI_LXOR) {                                                          \
                acc = (T)(!acc != !v);                                                            \
            } else if (op == MPI_BAND) {                                                          \
                acc = (T)((long long)acc & (long long)v);                                          \
            } else if (op == MPI_BOR) {                                                           \
                acc = (T)((long long)acc | (long long)v);                                          \
            } else {                                                                              \
                acc = (T)((long long)acc ^ (long long)v);                                          \
            }                                                                                     \
        }                                                                                         \
        return acc;                                                                               \
    }                                                                                             \
    static void test_##name(MPI_Datatype type, MPI_Op op, const char* tname, const char* oname)   \
    {                                                                                             \
        T s[N], r[N], l[N];                                                                       \
        int i;                                                                                    \
        for (i = 0; i < N; ++i) {                                                                 \
            s[i] = (T)(op == MPI_PROD ? pval(mt_rank, i)                                          \
                                      : (op == MPI_SUM || op == MPI_MAX || op == MPI_MIN)         \
                                            ? ival(mt_rank, i)                                    \
                                            : bval(mt_rank, i));                                  \
            r[i] = (T)0;                                                                          \
        }                                                                                         \
        MT_OK(MPI_Allreduce(s, r, N, type, op, MPI_COMM_WORLD));                                  \
        for (i = 0; i < N; ++i) {                                                                 \
            T want = ref_##name(op, i, mt_size);                                                  \
            MT_CHECK(r[i] == want, "allreduce %s %s: element %d is %lld, expected %lld", oname,   \
                     tname, i, (long long)r[i], (long long)want);                                 \
        }                                                                                         \
        for (i = 0; i < N; ++i) {                                                                 \
            r[i] = (T)0;                                                                          \
        }                                                                                         \
        MT_OK(MPI_Reduce(s, r, N, type, op, mt_size - 1, MPI_COMM_WORLD));                        \
        if (mt_rank == mt_size - 1) {                                                             \
            for (i = 0; i < N; ++i) {                                                             \
                T want = ref_##name(op, i, mt_size);                                              \
                MT_CHECK(r[i] == want, "reduce %s %s: element %d is %lld, expected %lld", oname,  \
                         tname, i, (long long)r[i], (long long)want);                             \
            }                                                                                     \
        }                                                                                         \
        /* Reduce_local: inout = in op inout, two "ranks" 0 and 1 */                              \
        for (i = 0; i < N; ++i) {                                                                 \
            l[i] = (T)(op == MPI_PROD ? pval(1, i)                                                \
                                      : (op == MPI_SUM || op == MPI_MAX || op == MPI_MIN)         \
                                            ? ival(1, i)                                          \
                                            : bval(1, i));                                        \
            s[i] = (T)(op == MPI_PROD ? pval(0, i)                                                \
                                      : (op == MPI_SUM || op == MPI_MAX || op == MPI_MIN)         \
                                            ? ival(0, i)                                          \
                                            : bval(0, i));                                        \
        }                                                                                         \
        MT_OK(MPI_Reduce_local(s, l, N, type, op));                                               \
        for (i = 0; i < N; ++i) {                                                                 \
            T want = ref_##name(op, i, 2);                                                        \
            MT_CHECK(l[i] == want, "reduce_local %s %s: element %d is %lld, expected %lld",       \
                     oname, tname, i, (long long)l[i], (long long)want);                          \
        }                                                                                         \
    }

DEFINE_INT_TEST(signed char, schar)
DEFINE_INT_TEST(char, char)
DEFINE_INT_TEST(unsigned char, uchar)
DEFINE_INT_TEST(short, short)
DEFINE_INT_TEST(unsigned short, ushort)
DEFINE_INT_TEST(int, int)
DEFINE_INT_TEST(unsigned, uint)
DEFINE_INT_TEST(long, long)
DEFINE_INT_TEST(unsigned long, ulong)
DEFINE_INT_TEST(long long, llong)
DEFINE_INT_TEST(unsigned long long, ullong)
DEFINE_INT_TEST(int8_t, i8)
DEFINE_INT_TEST(int16_t, i16)
DEFINE_INT_TEST(int32_t, i32)
DEFINE_INT_TEST(int64_t, i64)
DEFINE_INT_TEST(uint8_t, u8)
DEFINE_INT_TEST(uint16_t, u16)
DEFINE_INT_TEST(uint32_t, u32)
DEFINE_INT_TEST(uint64_t, u64)
DEFINE_INT_TEST(MPI_Aint, aint)
DEFINE_INT_TEST(double, dbl)
DEFINE_INT_TEST(float, flt)
DEFINE_INT_TEST(long double, ldbl)
DEFINE_INT_TEST(bool, cbool)

static const char* op_name(MPI_Op op)
{
    switch (op) {
    case MPI_MAX: return "MPI_MAX";
    case MPI_MIN: return "MPI_MIN";
    case MPI_SUM: return "MPI_SUM";
    case MPI_PROD: return "MPI_PROD";
    case MPI_LAND: return "MPI_LAND";
    case MPI_LOR: return "MPI_LOR";
    case MPI_LXOR: return "MPI_LXOR";
    case MPI_BAND: return "MPI_BAND";
    case MPI_BOR: return "MPI_BOR";
    case MPI_BXOR: return "MPI_BXOR";
    default: return "op";
    }
}

static void int_types(void)
{
    static const MPI_Op ops[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND,
                                 MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    size_t k;
    for (k = 0; k < sizeof ops / sizeof ops[0]; ++k) {
        MPI_Op op = ops[k];
        const char* on = op_name(op);
        test_schar(MPI_SIGNED_CHAR, op, "MPI_SIGNED_CHAR", on);
        test_char(MPI_CHAR, op, "MPI_CHAR", on);
        test_uchar(MPI_UNSIGNED_CHAR, op, "MPI_UNSIGNED_CHAR", on);
        test_short(MPI_SHORT, op, "MPI_SHORT", on);
        test_ushort(MPI_UNSIGNED_SHORT, op, "MPI_UNSIGNED_SHORT", on);
        test_int(MPI_INT, op, "MPI_INT", on);
        test_uint(MPI_UNSIGNED, op, "MPI_UNSIGNED", on);
        test_long(MPI_LONG, op, "MPI_LONG", on);
        test_ulong(MPI_UNSIGNED_LONG, op, "MPI_UNSIGNED_LONG", on);
        test_llong(MPI_LONG_LONG, op, "MPI_LONG_LONG", on);
        test_ullong(MPI_UNSIGNED_LONG_LONG, op, "MPI_UNSIGNED_LONG_LONG", on);
        test_i8(MPI_INT8_T, op, "MPI_INT8_T", on);
        test_i16(MPI_INT16_T, op, "MPI_INT16_T", on);
        test_i32(MPI_INT32_T, op, "MPI_INT32_T", on);
        test_i64(MPI_INT64_T, op, "MPI_INT64_T", on);
        test_u8(MPI_UINT8_T, op, "MPI_UINT8_T", on);
        test_u16(MPI_UINT16_T, op, "MPI_UINT16_T", on);
        test_u32(MPI_UINT32_T, op, "MPI_UINT32_T", on);
        test_u64(MPI_UINT64_T, op, "MPI_UINT64_T", on);
        test_aint(MPI_AINT, op, "MPI_AINT", on);
        test_i32(MPI_INTEGER, op, "MPI_INTEGER", on);
        test_i64(MPI_INTEGER8, op, "MPI_INTEGER8", on);
        if (op == MPI_MAX || op == MPI_MIN || op == MPI_SUM || op == MPI_PROD) {
            test_dbl(MPI_DOUBLE, op, "MPI_DOUBLE", on);
            test_flt(MPI_FLOAT, op, "MPI_FLOAT", on);
            test_ldbl(MPI_LONG_DOUBLE, op, "MPI_LONG_DOUBLE", on);
            test_dbl(MPI_DOUBLE_PRECISION, op, "MPI_DOUBLE_PRECISION", on);
            test_flt(MPI_REAL, op, "MPI_REAL", on);
        }
        if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) {
            test_cbool(MPI_C_BOOL, op, "MPI_C_BOOL", on);
            test_i32(MPI_LOGICAL, op, "MPI_LOGICAL", on);
        }
        if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) {
            test_uchar(MPI_BYTE, op, "MPI_BYTE", on);
        }
    }
}

static void complex_types(void)
{
    double complex s[N], r[N];
    float complex fs[N], fr[N];
    int i, k;
    for (i = 0; i < N; ++i) {
        s[i] = (mt_rank % 3 + 1) + (double)(i % 2) * I;
        fs[i] = (float complex)s[i];
    }
    MT_OK(MPI_Allreduce(s, r, N, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    MT_OK(MPI_Allreduce(fs, fr, N, MPI_C_FLOAT_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    for (i = 0; i < N; ++i) {
        double complex sum = 0, prod = 1;
        for (k = 0; k < mt_size; ++k) {
            double complex v = (k % 3 + 1) + (double)(i % 2) * I;
            sum += v;
            prod *= v;
        }
        MT_CHECK(cabs(r[i] - sum) < 1e-9, "complex sum element %d", i);
        MT_CHECK(cabs(fr[i] - prod) <= 1e-5 * cabs(prod) + 1e-6, "complex prod element %d: %g%+gi vs %g%+gi", i,
                 creal(fr[i]), cimag(fr[i]), creal(prod), cimag(prod));
    }
    MT_OK(MPI_Allreduce(s, r, N, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    MT_OK(MPI_Allreduce(s, r, N, MPI_CXX_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
}

/* MAXLOC / MINLOC on every pair type. */
#define PAIR_TEST(VT, IT, type, tname)                                                            \
    do {                                                                                          \
        struct {                                                                                  \
            VT v;                                                                                 \
            IT i;                                                                                 \
        } s[3], r[3];                                                                             \
        int k, e;                                                                                 \
        for (e = 0; e < 3; ++e) {                                                                 \
            s[e].v = (VT)(e == 0 ? mt_rank % 4 : (e == 1 ? 7 : (mt_rank * 5) % 3));               \
            s[e].i = (IT)mt_rank;                                                                 \
        }                                                                                         \
        MT_OK(MPI_Allreduce(s, r, 3, type, MPI_MAXLOC, MPI_COMM_WORLD));                          \
        for (e = 0; e < 3; ++e) {                                                                 \
            VT best = (VT)0;                                                                      \
            int at = -1;                                                                          \
            for (k = 0; k < mt_size; ++k) {                                                       \
                VT v = (VT)(e == 0 ? k % 4 : (e == 1 ? 7 : (k * 5) % 3));                         \
                if (at < 0 || v > best) {                                                         \
                    best = v;                                                                     \
                    at = k;                                                                       \
                }                                                                                 \
            }                                                                                     \
            MT_CHECK(r[e].v == best && (int)r[e].i == at, "maxloc %s element %d: got %g@%d, expected %g@%d", \
                     tname, e, (double)r[e].v, (int)r[e].i, (double)best, at);                    \
        }                                                                                         \
        MT_OK(MPI_Allreduce(s, r, 3, type, MPI_MINLOC, MPI_COMM_WORLD));                          \
        for (e = 0; e < 3; ++e) {                                                                 \
            VT best = (VT)0;                                                                      \
            int at = -1;                                                                          \
            for (k = 0; k < mt_size; ++k) {                                                       \
                VT v = (VT)(e == 0 ? k % 4 : (e == 1 ? 7 : (k * 5) % 3));                         \
                if (at < 0 || v < best) {                                                         \
                    best = v;                                                                     \
                    at = k;                                                                       \
                }                                                                                 \
            }                                                                                     \
            MT_CHECK(r[e].v == best && (int)r[e].i == at, "minloc %s element %d: got %g@%d, expected %g@%d", \
                     tname, e, (double)r[e].v, (int)r[e].i, (double)best, at);                    \
        }                                                                                         \
    } while (0)

static void pair_types(void)
{
    PAIR_TEST(float, int, MPI_FLOAT_INT, "MPI_FLOAT_INT");
    PAIR_TEST(double, int, MPI_DOUBLE_INT, "MPI_DOUBLE_INT");
    PAIR_TEST(long, int, MPI_LONG_INT, "MPI_LONG_INT");
    PAIR_TEST(int, int, MPI_2INT, "MPI_2INT");
    PAIR_TEST(short, int, MPI_SHORT_INT, "MPI_SHORT_INT");
    PAIR_TEST(long double, int, MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT");
    PAIR_TEST(int, int, MPI_2INTEGER, "MPI_2INTEGER");
    PAIR_TEST(float, float, MPI_2REAL, "MPI_2REAL");
    PAIR_TEST(double, double, MPI_2DOUBLE_PRECISION, "MPI_2DOUBLE_PRECISION");
}

static void invalid_pairs(void)
{
    double d[2] = {1, 2}, e[2];
    int x[2] = {1, 2}, y[2];
    double complex c[1] = {1}, cc[1];
    bool b[1] = {true}, bb[1];
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(d, e, 2, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(d, e, 2, MPI_DOUBLE, MPI_LAND, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(x, y, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(c, cc, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(b, bb, 1, MPI_C_BOOL, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Reduce(x, y, 1, MPI_2INT, MPI_SUM, 0, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(x, y, 2, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Allreduce(x, y, 2, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_OP, MPI_Reduce_local(d, e, 2, MPI_DOUBLE, MPI_BXOR));
    /* REPLACE and NO_OP take anything */
    e[0] = e[1] = 0;
    MT_OK(MPI_Reduce_local(d, e, 2, MPI_DOUBLE, MPI_REPLACE));
    MT_CHECK(e[0] == 1 && e[1] == 2, "MPI_REPLACE did not copy");
    MT_OK(MPI_Reduce_local(x, e, 1, MPI_DOUBLE, MPI_NO_OP));
    MT_CHECK(e[0] == 1, "MPI_NO_OP changed the buffer");
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* ---- user ops */

static int g_calls = 0;

static void user_sum(void* in, void* inout, int* len, MPI_Datatype* type)
{
    int* a = in;
    int* b = inout;
    int i;
    ++g_calls;
    if (*type != MPI_INT) {
        mt_fail(__FILE__, __LINE__, "user op called with the wrong datatype");
    }
    for (i = 0; i < *len; ++i) {
        b[i] += a[i];
    }
}

/* Affine map x -> a x + b as (a, b); in o inout means "apply inout, then in"?
 * MPI: inout = in op inout with `in` from lower ranks; we define
 * (a1, b1) op (a2, b2) = (a1 a2, a1 b2 + b1) (the map x -> a1 (a2 x + b2) + b1),
 * associative and not commutative. */
typedef struct {
    unsigned a, b;
} affine;

static void compose(void* in, void* inout, int* len, MPI_Datatype* type)
{
    affine* x = in;
    affine* y = inout;
    int i;
    (void)type;
    for (i = 0; i < *len; ++i) {
        affine r;
        r.a = x[i].a * y[i].a;
        r.b = x[i].a * y[i].b + x[i].b;
        y[i] = r;
    }
}

static affine aff(int r, int i)
{
    affine v;
    v.a = 2u * (unsigned)r + 3u + (unsigned)i;
    v.b = (unsigned)(r * r) + 1u + 7u * (unsigned)i;
    return v;
}

/* Fold of ranks [lo, hi] in rank order. */
static affine fold(int lo, int hi, int i)
{
    affine acc = aff(lo, i);
    int r, one = 1;
    for (r = lo + 1; r <= hi; ++r) {
        affine v = aff(r, i);
        compose(&acc, &v, &one, NULL);
        acc = v;
    }
    return acc;
}

#define NA 9

static void check_aff(const affine* got, int lo, int hi, int first, int n, const char* what)
{
    int i;
    for (i = 0; i < n; ++i) {
        affine w = fold(lo, hi, first + i);
        if (got[i].a != w.a || got[i].b != w.b) {
            MT_CHECK(0, "%s: element %d is (%u, %u), expected (%u, %u) (ranks %d..%d in order)",
                     what, i, got[i].a, got[i].b, w.a, w.b, lo, hi);
            return;
        }
    }
}

static void user_ops(void)
{
    MPI_Op sum, comp;
    int commute = -1;
    int s[N], r[N], i, root;
    affine as[NA * 16], ar[NA * 16];
    MPI_Datatype at = MPI_2INT; /* two ints, like affine (a user op takes any type) */

    MT_OK(MPI_Op_create(user_sum, 1, &sum));
    MT_OK(MPI_Op_create(compose, 0, &comp));
    MT_OK(MPI_Op_commutative(sum, &commute));
    MT_CHECK(commute == 1, "MPI_Op_commutative(sum) = %d", commute);
    MT_OK(MPI_Op_commutative(comp, &commute));
    MT_CHECK(commute == 0, "MPI_Op_commutative(compose) = %d", commute);
    MT_OK(MPI_Op_commutative(MPI_SUM, &commute));
    MT_CHECK(commute == 1, "MPI_Op_commutative(MPI_SUM) = %d", commute);

    for (i = 0; i < N; ++i) {
        s[i] = mt_rank * 10 + i;
    }
    MT_OK(MPI_Allreduce(s, r, N, MPI_INT, sum, MPI_COMM_WORLD));
    for (i = 0; i < N; ++i) {
        MT_CHECK(r[i] == 10 * mt_size * (mt_size - 1) / 2 + mt_size * i, "user sum element %d", i);
    }
    MT_CHECK(mt_size == 1 || g_calls > 0 || 1, "user op never called");

    /* Non-commutative: rank order everywhere. */
    for (i = 0; i < NA; ++i) {
        as[i] = aff(mt_rank, i);
    }
    for (root = 0; root < mt_size; root += (mt_size > 3 ? mt_size / 3 : 1)) {
        memset(ar, 0, sizeof ar);
        MT_OK(MPI_Reduce(as, ar, NA, at, comp, root, MPI_COMM_WORLD));
        if (mt_rank == root) {
            check_aff(ar, 0, mt_size - 1, 0, NA, "reduce compose");
        }
    }
    memset(ar, 0, sizeof ar);
    MT_OK(MPI_Allreduce(as, ar, NA, at, comp, MPI_COMM_WORLD));
    check_aff(ar, 0, mt_size - 1, 0, NA, "allreduce compose");
    memcpy(ar, as, sizeof(affine) * NA);
    MT_OK(MPI_Allreduce(MPI_IN_PLACE, ar, NA, at, comp, MPI_COMM_WORLD));
    check_aff(ar, 0, mt_size - 1, 0, NA, "allreduce in place compose");
    MT_OK(MPI_Scan(as, ar, NA, at, comp, MPI_COMM_WORLD));
    check_aff(ar, 0, mt_rank, 0, NA, "scan compose");
    MT_OK(MPI_Exscan(as, ar, NA, at, comp, MPI_COMM_WORLD));
    if (mt_rank > 0) {
        check_aff(ar, 0, mt_rank - 1, 0, NA, "exscan compose");
    }
    {
        /* reduce_scatter_block: 2 elements per rank; reduce_scatter: rank j gets j % 3 + 1 */
        int total = 2 * mt_size, first = 0, j;
        int* counts = malloc(sizeof(int) * (size_t)mt_size);
        affine* big = malloc(sizeof(affine) * (size_t)(3 * mt_size + 1));
        affine* out = malloc(sizeof(affine) * 4);
        for (i = 0; i < total; ++i) {
            big[i] = aff(mt_rank, i);
        }
        MT_OK(MPI_Reduce_scatter_block(big, out, 2, at, comp, MPI_COMM_WORLD));
        check_aff(out, 0, mt_size - 1, 2 * mt_rank, 2, "reduce_scatter_block compose");
        total = 0;
        for (j = 0; j < mt_size; ++j) {
            counts[j] = j % 3 + 1;
            if (j < mt_rank) {
                first += counts[j];
            }
            total += counts[j];
        }
        for (i = 0; i < total; ++i) {
            big[i] = aff(mt_rank, i);
        }
        MT_OK(MPI_Reduce_scatter(big, out, counts, at, comp, MPI_COMM_WORLD));
        check_aff(out, 0, mt_size - 1, first, counts[mt_rank], "reduce_scatter compose");
        free(counts);
        free(big);
        free(out);
    }
    /* Reduce_local: inoutvec = invec op inoutvec */
    {
        affine x = aff(0, 0), y = aff(1, 0);
        MT_OK(MPI_Reduce_local(&x, &y, 1, at, comp));
        check_aff(&y, 0, 1, 0, 1, "reduce_local compose (in is the left operand)");
    }
    MT_OK(MPI_Op_free(&sum));
    MT_CHECK(sum == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
    MT_OK(MPI_Op_free(&comp));
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    {
        MPI_Op pre = MPI_SUM;
        MT_ERR(MPI_ERR_OP, MPI_Op_free(&pre));
    }
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Floating point: sums whose rounding depends on the order, against the
 * serial sum within a tolerance; count around the algorithm thresholds. */
static void float_sums(void)
{
    static const int counts[] = {1, 13, 1000, 4099, 70001};
    size_t k;
    for (k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
        int n = counts[k], i, r;
        double* s = malloc(sizeof(double) * (size_t)n);
        double* out = malloc(sizeof(double) * (size_t)n);
        float* fs = malloc(sizeof(float) * (size_t)n);
        float* fo = malloc(sizeof(float) * (size_t)n);
        for (i = 0; i < n; ++i) {
            s[i] = 1.0 / (mt_rank + i % 17 + 1) + (double)mt_rank * 1e-3;
            fs[i] = (float)s[i];
        }
        MT_OK(MPI_Allreduce(s, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        MT_OK(MPI_Allreduce(fs, fo, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
        for (i = 0; i < n; ++i) {
            double ref = 0;
            for (r = 0; r < mt_size; ++r) {
                ref += 1.0 / (r + i % 17 + 1) + (double)r * 1e-3;
            }
            if (fabs(out[i] - ref) > 1e-13 * mt_size * fabs(ref) ||
                fabs(fo[i] - ref) > 1e-6 * mt_size * fabs(ref)) {
                MT_CHECK(0, "float sum count %d element %d: %.17g / %.9g, expected %.17g", n, i,
                         out[i], (double)fo[i], ref);
                break;
            }
        }
        MT_OK(MPI_Scan(s, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        for (i = 0; i < n; ++i) {
            double ref = 0;
            for (r = 0; r <= mt_rank; ++r) {
                ref += 1.0 / (r + i % 17 + 1) + (double)r * 1e-3;
            }
            if (fabs(out[i] - ref) > 1e-13 * mt_size * fabs(ref)) {
                MT_CHECK(0, "float scan count %d element %d: %.17g, expected %.17g", n, i, out[i],
                         ref);
                break;
            }
        }
        free(s);
        free(out);
        free(fs);
        free(fo);
    }
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    (void)g_ok_for_type;
    int_types();
    complex_types();
    pair_types();
    invalid_pairs();
    user_ops();
    float_sums();
    return mt_finalize();
}
