/*
 * Every predefined datatype of MPI-3.1 for C (and the C++ and Fortran ones
 * the header defines) sent and received between partners: fixed-width
 * integers, C_BOOL, WCHAR, long long, the floating and complex types,
 * AINT/OFFSET/COUNT, BYTE, PACKED, the aliases and the pair types of
 * MINLOC/MAXLOC. For each type and for 7 and 20000 elements (eager and
 * rendezvous): values compared member by member, MPI_Get_count in that
 * type, MPI_Type_size against the C type, and for the pair types with
 * padding (MPI_DOUBLE_INT, MPI_SHORT_INT, ...) the padding of the receive
 * buffer is left alone (only the type map's bytes are written).
 */
#include "mpitest.h"

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include <wchar.h>

#define NSMALL 7
#define NBIG 20000

static int g_partner;

/* Sends n elements of `dt` from s to the partner and receives n into r. */
static void exchange(void* s, void* r, int n, MPI_Datatype dt, const char* name)
{
    MPI_Request req[2];
    MPI_Status st[2];
    int cnt = -1;
    MT_OK(MPI_Irecv(r, n, dt, g_partner, 7, MPI_COMM_WORLD, &req[0]));
    MT_OK(MPI_Isend(s, n, dt, g_partner, 7, MPI_COMM_WORLD, &req[1]));
    MT_OK(MPI_Waitall(2, req, st));
    MT_OK(MPI_Get_count(&st[0], dt, &cnt));
    MT_CHECK(cnt == n, "%s: MPI_Get_count %d, expected %d", name, cnt, n);
}

static void check_size(MPI_Datatype dt, const char* name, int expect)
{
    int size = -1;
    MPI_Count sx = -1;
    MT_OK(MPI_Type_size(dt, &size));
    MT_OK(MPI_Type_size_x(dt, &sx));
    MT_CHECK(size == expect && sx == expect, "%s: MPI_Type_size %d / %lld, expected %d", name,
             size, (long long)sx, expect);
}

/* A scalar type T with a value generator GEN(who, i) and equality. */
#define SCALAR_TEST(fn, T, GEN)                                                                 \
    static void fn(MPI_Datatype dt, const char* name, int n)                                    \
    {                                                                                           \
        size_t bytes = sizeof(T) * (size_t)(n > 0 ? n : 0);                                     \
        T* s = malloc(bytes + sizeof(T));                                                       \
        T* r = malloc(bytes + sizeof(T));                                                       \
        int i;                                                                                  \
        check_size(dt, name, (int)sizeof(T));                                                   \
        for (i = 0; i < n; ++i) {                                                               \
            s[i] = GEN(mt_rank, i);                                                             \
        }                                                                                       \
        memset(r, 0xab, bytes);                                                                 \
        exchange(s, r, n, dt, name);                                                            \
        for (i = 0; i < n; ++i) {                                                               \
            T e = GEN(g_partner, i);                                                            \
            if (!(r[i] == e)) {                                                                 \
                MT_CHECK(0, "%s: element %d of %d differs", name, i, n);                        \
                break;                                                                          \
            }                                                                                   \
        }                                                                                       \
        free(s);                                                                                \
        free(r);                                                                                \
    }

#define GEN_INT(who, i) ((who) * 37 + (i) * 11 + 1)
#define GEN_SMALL(who, i) (((who) * 7 + (i)) % 100)
#define GEN_BOOL(who, i) ((((who) + (i)) % 3) == 0)
#define GEN_FP(who, i) ((who) * 1.5 + (i) * 0.25 - 1000.0)
#define GEN_CPLX(who, i) (GEN_FP(who, i) + GEN_FP(who + 1, i) * I)
#define GEN_WIDE(who, i) ((wchar_t)(0x100 + (who) * 37 + (i)))
#define GEN_BIG(who, i) ((long long)(who) * 0x100000001LL + (long long)(i) * 0x7777777LL)

SCALAR_TEST(t_char, char, GEN_SMALL)
SCALAR_TEST(t_schar, signed char, GEN_SMALL)
SCALAR_TEST(t_uchar, unsigned char, GEN_SMALL)
SCALAR_TEST(t_wchar, wchar_t, GEN_WIDE)
SCALAR_TEST(t_short, short, GEN_INT)
SCALAR_TEST(t_ushort, unsigned short, GEN_INT)
SCALAR_TEST(t_int, int, GEN_INT)
SCALAR_TEST(t_uint, unsigned, GEN_INT)
SCALAR_TEST(t_long, long, GEN_BIG)
SCALAR_TEST(t_ulong, unsigned long, GEN_BIG)
SCALAR_TEST(t_llong, long long, GEN_BIG)
SCALAR_TEST(t_ullong, unsigned long long, GEN_BIG)
SCALAR_TEST(t_float, float, GEN_FP)
SCALAR_TEST(t_double, double, GEN_FP)
SCALAR_TEST(t_ldouble, long double, GEN_FP)
SCALAR_TEST(t_i8, int8_t, GEN_SMALL)
SCALAR_TEST(t_i16, int16_t, GEN_INT)
SCALAR_TEST(t_i32, int32_t, GEN_INT)
SCALAR_TEST(t_i64, int64_t, GEN_BIG)
SCALAR_TEST(t_u8, uint8_t, GEN_SMALL)
SCALAR_TEST(t_u16, uint16_t, GEN_INT)
SCALAR_TEST(t_u32, uint32_t, GEN_INT)
SCALAR_TEST(t_u64, uint64_t, GEN_BIG)
SCALAR_TEST(t_bool, bool, GEN_BOOL)
SCALAR_TEST(t_fcplx, float _Complex, GEN_CPLX)
SCALAR_TEST(t_dcplx, double _Complex, GEN_CPLX)
SCALAR_TEST(t_ldcplx, long double _Complex, GEN_CPLX)
SCALAR_TEST(t_aint, MPI_Aint, GEN_BIG)
SCALAR_TEST(t_offset, MPI_Offset, GEN_BIG)
SCALAR_TEST(t_count, MPI_Count, GEN_BIG)

/* A pair type {V value; I index;}: members compared, padding untouched. */
#define PAIR_TEST(fn, V, IX, GENV)                                                               \
    typedef struct {                                                                            \
        V value;                                                                                \
        IX index;                                                                                \
    } fn##_t;                                                                                   \
    static void fn(MPI_Datatype dt, const char* name, int n)                                    \
    {                                                                                           \
        size_t bytes = sizeof(fn##_t) * (size_t)(n > 0 ? n : 0);                                \
        fn##_t* s = malloc(bytes + sizeof(fn##_t));                                             \
        fn##_t* r = malloc(bytes + sizeof(fn##_t));                                             \
        size_t off_i = offsetof(fn##_t, index);                                                 \
        int i;                                                                                  \
        check_size(dt, name, (int)(sizeof(V) + sizeof(IX)));                                     \
        memset(s, 0, bytes);                                               \
        for (i = 0; i < n; ++i) {                                                               \
            s[i].value = GENV(mt_rank, i);                                                      \
            s[i].index = (IX)GEN_INT(mt_rank, i);                                                \
        }                                                                                       \
        memset(r, 0xab, bytes);                                            \
        exchange(s, r, n, dt, name);                                                            \
        for (i = 0; i < n; ++i) {                                                               \
            const unsigned char* b = (const unsigned char*)&r[i];                               \
            size_t k;                                                                           \
            if (!(r[i].value == (V)GENV(g_partner, i)) ||                                          \
                !(r[i].index == (IX)GEN_INT(g_partner, i))) {                                    \
                MT_CHECK(0, "%s: element %d of %d differs", name, i, n);                        \
                break;                                                                          \
            }                                                                                   \
            for (k = sizeof(V); k < sizeof(fn##_t); ++k) {                                      \
                if ((k < off_i || k >= off_i + sizeof(IX)) && b[k] != 0xab) {                    \
                    MT_CHECK(0, "%s: element %d: padding byte %zu was written", name, i, k);    \
                    i = n;                                                                      \
                    break;                                                                      \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
        free(s);                                                                                \
        free(r);                                                                                \
    }

PAIR_TEST(t_float_int, float, int, GEN_FP)
PAIR_TEST(t_double_int, double, int, GEN_FP)
PAIR_TEST(t_long_int, long, int, GEN_BIG)
PAIR_TEST(t_2int, int, int, GEN_INT)
PAIR_TEST(t_short_int, short, int, GEN_INT)
PAIR_TEST(t_ldouble_int, long double, int, GEN_FP)
PAIR_TEST(t_2float, float, float, GEN_FP)
PAIR_TEST(t_2double, double, double, GEN_FP)

typedef void (*test_fn)(MPI_Datatype, const char*, int);

#define T(dt, fn) {dt, #dt, fn}

int main(int argc, char** argv)
{
    static const struct {
        MPI_Datatype dt;
        const char* name;
        test_fn fn;
    } types[] = {
        /* C */
        T(MPI_CHAR, t_char), T(MPI_SIGNED_CHAR, t_schar), T(MPI_UNSIGNED_CHAR, t_uchar),
        T(MPI_BYTE, t_uchar), T(MPI_WCHAR, t_wchar), T(MPI_SHORT, t_short),
        T(MPI_UNSIGNED_SHORT, t_ushort), T(MPI_INT, t_int), T(MPI_UNSIGNED, t_uint),
        T(MPI_LONG, t_long), T(MPI_UNSIGNED_LONG, t_ulong), T(MPI_LONG_LONG_INT, t_llong),
        T(MPI_LONG_LONG, t_llong), T(MPI_UNSIGNED_LONG_LONG, t_ullong), T(MPI_FLOAT, t_float),
        T(MPI_DOUBLE, t_double), T(MPI_LONG_DOUBLE, t_ldouble), T(MPI_INT8_T, t_i8),
        T(MPI_INT16_T, t_i16), T(MPI_INT32_T, t_i32), T(MPI_INT64_T, t_i64),
        T(MPI_UINT8_T, t_u8), T(MPI_UINT16_T, t_u16), T(MPI_UINT32_T, t_u32),
        T(MPI_UINT64_T, t_u64), T(MPI_C_BOOL, t_bool), T(MPI_C_FLOAT_COMPLEX, t_fcplx),
        T(MPI_C_COMPLEX, t_fcplx), T(MPI_C_DOUBLE_COMPLEX, t_dcplx),
        T(MPI_C_LONG_DOUBLE_COMPLEX, t_ldcplx), T(MPI_AINT, t_aint), T(MPI_OFFSET, t_offset),
        T(MPI_COUNT, t_count), T(MPI_PACKED, t_uchar),
        T(MPI_FLOAT_INT, t_float_int), T(MPI_DOUBLE_INT, t_double_int),
        T(MPI_LONG_INT, t_long_int), T(MPI_2INT, t_2int), T(MPI_SHORT_INT, t_short_int),
        T(MPI_LONG_DOUBLE_INT, t_ldouble_int),
        /* C++ */
        T(MPI_CXX_BOOL, t_bool), T(MPI_CXX_FLOAT_COMPLEX, t_fcplx),
        T(MPI_CXX_DOUBLE_COMPLEX, t_dcplx), T(MPI_CXX_LONG_DOUBLE_COMPLEX, t_ldcplx),
        /* Fortran, as the C types of gfortran's default kinds */
        T(MPI_INTEGER, t_int), T(MPI_REAL, t_float), T(MPI_DOUBLE_PRECISION, t_double),
        T(MPI_COMPLEX, t_fcplx), T(MPI_DOUBLE_COMPLEX, t_dcplx), T(MPI_LOGICAL, t_int),
        T(MPI_CHARACTER, t_char), T(MPI_INTEGER1, t_i8), T(MPI_INTEGER2, t_i16),
        T(MPI_INTEGER4, t_i32), T(MPI_INTEGER8, t_i64), T(MPI_REAL4, t_float),
        T(MPI_REAL8, t_double), T(MPI_COMPLEX8, t_fcplx), T(MPI_COMPLEX16, t_dcplx),
        T(MPI_2INTEGER, t_2int), T(MPI_2REAL, t_2float), T(MPI_2DOUBLE_PRECISION, t_2double),
    };
    int i;

    mt_init(&argc, &argv);
    g_partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    for (i = 0; i < (int)(sizeof types / sizeof types[0]); ++i) {
        types[i].fn(types[i].dt, types[i].name, NSMALL);
        types[i].fn(types[i].dt, types[i].name, NBIG);
        types[i].fn(types[i].dt, types[i].name, 0);
    }
    return mt_finalize();
}
