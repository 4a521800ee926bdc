/*
 * dt_external32.c -- MPI_Pack_external / MPI_Unpack_external /
 * MPI_Pack_external_size against hand-built big-endian byte strings.
 *
 * external32 (MPI-3.1 13.5.2): big-endian, IEEE; MPI_LONG and
 * MPI_UNSIGNED_LONG are 4 bytes, MPI_WCHAR 2, MPI_LONG_DOUBLE 16 (binary128),
 * pair types are their two members without padding.
 */
#include "dttest.h"

#include <stddef.h>

static void expect_bytes(const void* in, int count, MPI_Datatype t, const unsigned char* want,
                         int n, const char* what)
{
    unsigned char out[256];
    MPI_Aint pos = 0, size = -1;
    int k;
    MT_OK(MPI_Pack_external_size("external32", count, t, &size));
    MT_CHECK(size == n, "%s: external32 size %ld, expected %d", what, (long)size, n);
    memset(out, 0xee, sizeof out);
    MT_OK(MPI_Pack_external("external32", in, count, t, out, (MPI_Aint)sizeof out, &pos));
    MT_CHECK(pos == n, "%s: position %ld, expected %d", what, (long)pos, n);
    for (k = 0; k < n; ++k) {
        if (out[k] != want[k]) {
            mt_fail(__FILE__, __LINE__, "%s: byte %d is 0x%02x, expected 0x%02x", what, k, out[k],
                    want[k]);
            break;
        }
    }
    MT_CHECK(out[n] == 0xee, "%s: wrote past the end", what);
}

static void basics(void)
{
    int i = 0x01020304;
    unsigned u = 0xdeadbeefu;
    long l = -2;
    unsigned long ul = 0x80000001ul;
    short s = -3;
    double d = 1.0;
    float f = -2.5f;
    long long ll = 0x0102030405060708ll;
    char c[3] = {'a', 'b', 'c'};
    wchar_t w = 0x263a;
    long double ld = -1.5L;
    struct {
        double v;
        int k;
    } di = {2.0, 5};
    static const unsigned char wi[] = {1, 2, 3, 4};
    static const unsigned char wu[] = {0xde, 0xad, 0xbe, 0xef};
    static const unsigned char wl[] = {0xff, 0xff, 0xff, 0xfe};
    static const unsigned char wul[] = {0x80, 0, 0, 1};
    static const unsigned char ws[] = {0xff, 0xfd};
    static const unsigned char wd[] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
    static const unsigned char wf[] = {0xc0, 0x20, 0, 0};
    static const unsigned char wll[] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const unsigned char wc[] = {'a', 'b', 'c'};
    static const unsigned char ww[] = {0x26, 0x3a};
    static const unsigned char wld[] = {0xbf, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char wdi[] = {0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
    expect_bytes(&i, 1, MPI_INT, wi, 4, "MPI_INT");
    expect_bytes(&u, 1, MPI_UNSIGNED, wu, 4, "MPI_UNSIGNED");
    expect_bytes(&l, 1, MPI_LONG, wl, 4, "MPI_LONG");
    expect_bytes(&ul, 1, MPI_UNSIGNED_LONG, wul, 4, "MPI_UNSIGNED_LONG");
    expect_bytes(&s, 1, MPI_SHORT, ws, 2, "MPI_SHORT");
    expect_bytes(&d, 1, MPI_DOUBLE, wd, 8, "MPI_DOUBLE");
    expect_bytes(&f, 1, MPI_FLOAT, wf, 4, "MPI_FLOAT");
    expect_bytes(&ll, 1, MPI_LONG_LONG, wll, 8, "MPI_LONG_LONG");
    expect_bytes(c, 3, MPI_CHAR, wc, 3, "MPI_CHAR");
    expect_bytes(&w, 1, MPI_WCHAR, ww, 2, "MPI_WCHAR");
    expect_bytes(&ld, 1, MPI_LONG_DOUBLE, wld, 16, "MPI_LONG_DOUBLE");
    expect_bytes(&di, 1, MPI_DOUBLE_INT, wdi, 12, "MPI_DOUBLE_INT");
}

struct R {
    char c;
    int i;
    long l;
    double d;
};

static void derived(void)
{
    struct R r[2] = {{'q', 0x11223344, -1, 0.5}, {'r', 7, 300, -0.0}};
    int blen[4] = {1, 1, 1, 1};
    MPI_Aint disp[4] = {offsetof(struct R, c), offsetof(struct R, i), offsetof(struct R, l),
                        offsetof(struct R, d)};
    MPI_Datatype types[4] = {MPI_CHAR, MPI_INT, MPI_LONG, MPI_DOUBLE}, st, vec;
    /* c | i (4) | l (4 in external32) | d (8) = 17 bytes per element */
    static const unsigned char want[34] = {
        'q', 0x11, 0x22, 0x33, 0x44, 0xff, 0xff, 0xff, 0xff, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0,
        'r', 0,    0,    0,    7,    0,    0,    0x01, 0x2c, 0x80, 0,    0, 0, 0, 0, 0, 0};
    struct R back[2];
    unsigned char buf[64];
    MPI_Aint pos = 0;
    int k;
    MT_OK(MPI_Type_create_struct(4, blen, disp, types, &st));
    MT_OK(MPI_Type_commit(&st));
    expect_bytes(r, 2, st, want, 34, "struct {char; int; long; double}");
    MT_OK(MPI_Pack_external("external32", r, 2, st, buf, (MPI_Aint)sizeof buf, &pos));
    memset(back, 0, sizeof back);
    pos = 0;
    MT_OK(MPI_Unpack_external("external32", buf, 34, &pos, back, 2, st));
    MT_CHECK(pos == 34, "unpacked %ld bytes", (long)pos);
    for (k = 0; k < 2; ++k) {
        MT_CHECK(back[k].c == r[k].c && back[k].i == r[k].i && back[k].l == r[k].l &&
                     back[k].d == r[k].d,
                 "struct element %d did not round-trip", k);
    }
    MT_OK(MPI_Type_free(&st));

    /* A strided vector of doubles: every second one, big-endian. */
    {
        double v[6] = {1.0, 9, 2.0, 9, -2.0, 9}, out[6] = {0, 0, 0, 0, 0, 0};
        static const unsigned char wv[24] = {0x3f, 0xf0, 0, 0, 0,    0, 0, 0, 0x40, 0, 0, 0,
                                             0,    0,    0, 0, 0xc0, 0, 0, 0, 0,    0, 0, 0};
        MT_OK(MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &vec));
        MT_OK(MPI_Type_commit(&vec));
        expect_bytes(v, 1, vec, wv, 24, "vector of doubles");
        pos = 0;
        MT_OK(MPI_Unpack_external("external32", wv, 24, &pos, out, 1, vec));
        MT_CHECK(out[0] == 1.0 && out[2] == 2.0 && out[4] == -2.0 && out[1] == 0 && out[3] == 0,
                 "vector unpack_external");
        MT_OK(MPI_Type_free(&vec));
    }
}

static void errors(void)
{
    long big = 1L << 40;
    int i = 1;
    unsigned char buf[8];
    MPI_Aint pos = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MT_ERR(MPI_ERR_ARG, MPI_Pack_external("native", &i, 1, MPI_INT, buf, 8, &pos));
    MT_ERR(MPI_ERR_CONVERSION, MPI_Pack_external("external32", &big, 1, MPI_LONG, buf, 8, &pos));
    pos = 6;
    MT_ERR(MPI_ERR_TRUNCATE, MPI_Pack_external("external32", &i, 1, MPI_INT, buf, 8, &pos));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    basics();
    derived();
    errors();
    return mt_finalize();
}
