/*
 * dt_pack.c -- MPI_Pack / MPI_Unpack / MPI_Pack_size.
 *
 *   - round trips of derived types (vector, struct, indexed with negative
 *     displacements), several packs into one buffer, positions advancing;
 *   - Pack_size is an upper bound of what Pack writes (here: exact);
 *   - a packed buffer sent as MPI_PACKED is received with the original type,
 *     and a typed message is received as MPI_PACKED and unpacked;
 *   - zero counts; truncation and uncommitted types are errors.
 */
#include "dttest.h"

#include <stddef.h>

static void round_trips(void)
{
    int a[40], b[40], k, pos = 0, size, total = 0;
    double d[4] = {1.5, -2.25, 3.0, 1e300}, e[4] = {0, 0, 0, 0};
    int blen[3] = {2, 1, 3}, disp[3] = {5, -3, 10};
    MPI_Datatype vec, idx;
    char buf[1024];
    for (k = 0; k < 40; ++k) {
        a[k] = 1000 + k;
        b[k] = -1;
    }
    MT_OK(MPI_Type_vector(4, 2, 5, MPI_INT, &vec));
    MT_OK(MPI_Type_commit(&vec));
    MT_OK(MPI_Type_indexed(3, blen, disp, MPI_INT, &idx));
    MT_OK(MPI_Type_commit(&idx));

    MT_OK(MPI_Pack_size(1, vec, MPI_COMM_WORLD, &size));
    total += size;
    MT_OK(MPI_Pack_size(2, idx, MPI_COMM_WORLD, &size));
    total += size;
    MT_OK(MPI_Pack_size(4, MPI_DOUBLE, MPI_COMM_WORLD, &size));
    total += size;
    MT_CHECK(total == 32 + 48 + 32, "Pack_size total %d", total);

    MT_OK(MPI_Pack(a, 1, vec, buf, (int)sizeof buf, &pos, MPI_COMM_WORLD));
    MT_CHECK(pos == 32, "position after the vector: %d", pos);
    MT_OK(MPI_Pack(&a[4], 2, idx, buf, (int)sizeof buf, &pos, MPI_COMM_WORLD));
    MT_OK(MPI_Pack(d, 4, MPI_DOUBLE, buf, (int)sizeof buf, &pos, MPI_COMM_WORLD));
    MT_CHECK(pos <= total, "Pack wrote %d bytes, Pack_size said %d", pos, total);

    /* The vector's packed ints are a[0,1,5,6,10,11,15,16]. */
    {
        int v[8], want[8] = {1000, 1001, 1005, 1006, 1010, 1011, 1015, 1016};
        memcpy(v, buf, sizeof v);
        MT_CHECK(memcmp(v, want, sizeof v) == 0, "packed vector bytes differ");
    }
    pos = 0;
    MT_OK(MPI_Unpack(buf, total, &pos, b, 1, vec, MPI_COMM_WORLD));
    MT_OK(MPI_Unpack(buf, total, &pos, &b[4], 2, idx, MPI_COMM_WORLD));
    MT_OK(MPI_Unpack(buf, total, &pos, e, 4, MPI_DOUBLE, MPI_COMM_WORLD));
    MT_CHECK(pos == total, "unpacked %d of %d bytes", pos, total);
    for (k = 0; k < 4; ++k) {
        MT_CHECK(e[k] == d[k], "double %d: %g", k, e[k]);
    }
    /* Every int the two types cover came back; the others are untouched. */
    {
        int covered[40] = {0};
        int j;
        for (k = 0; k < 4; ++k) {
            covered[5 * k] = covered[5 * k + 1] = 1;
        }
        for (j = 0; j < 2; ++j) { /* idx extent: from -3 to 13 -> 16 ints */
            int base = 4 + 16 * j;
            for (k = 0; k < 3; ++k) {
                int m;
                for (m = 0; m < blen[k]; ++m) {
                    int at = base + disp[k] + m;
                    if (at >= 0 && at < 40) {
                        covered[at] = 1;
                    }
                }
            }
        }
        for (k = 0; k < 40; ++k) {
            if (covered[k]) {
                MT_CHECK(b[k] == a[k], "b[%d] = %d, expected %d", k, b[k], a[k]);
            } else {
                MT_CHECK(b[k] == -1, "b[%d] = %d was not to be written", k, b[k]);
            }
        }
    }
    MT_OK(MPI_Type_free(&vec));
    MT_OK(MPI_Type_free(&idx));
}

struct P {
    int i;
    double x;
    char c[3];
};

static void packed_messages(void)
{
    struct P s[3], r[3];
    int blen[3] = {1, 1, 3};
    MPI_Aint disp[3] = {offsetof(struct P, i), offsetof(struct P, x), offsetof(struct P, c)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st;
    char buf[256];
    int pos = 0, k, to = (mt_rank + 1) % mt_size, from = (mt_rank + mt_size - 1) % mt_size, size;
    MPI_Status status;
    MT_OK(MPI_Type_create_struct(3, blen, disp, types, &st));
    MT_OK(MPI_Type_commit(&st));
    for (k = 0; k < 3; ++k) {
        s[k].i = mt_rank * 10 + k;
        s[k].x = k + 0.5;
        s[k].c[0] = 'x';
        s[k].c[1] = (char)('0' + k);
        s[k].c[2] = 'z';
    }
    /* packed -> typed */
    MT_OK(MPI_Pack(s, 3, st, buf, (int)sizeof buf, &pos, MPI_COMM_WORLD));
    memset(r, 0, sizeof r);
    MT_OK(MPI_Sendrecv(buf, pos, MPI_PACKED, to, 1, r, 3, st, from, 1, MPI_COMM_WORLD, &status));
    for (k = 0; k < 3; ++k) {
        MT_CHECK(r[k].i == from * 10 + k && r[k].x == k + 0.5 && r[k].c[1] == '0' + k,
                 "packed->typed element %d differs", k);
    }
    /* typed -> packed */
    memset(buf, 0, sizeof buf);
    MT_OK(MPI_Sendrecv(s, 3, st, to, 2, buf, (int)sizeof buf, MPI_PACKED, from, 2, MPI_COMM_WORLD,
                       &status));
    MT_OK(MPI_Get_count(&status, MPI_PACKED, &size));
    MT_CHECK(size == 3 * 15, "typed->packed: %d bytes", size);
    memset(r, 0, sizeof r);
    pos = 0;
    MT_OK(MPI_Unpack(buf, size, &pos, r, 3, st, MPI_COMM_WORLD));
    for (k = 0; k < 3; ++k) {
        MT_CHECK(r[k].i == from * 10 + k && r[k].x == k + 0.5 && r[k].c[2] == 'z',
                 "typed->packed element %d differs", k);
    }
    MT_OK(MPI_Type_free(&st));
}

static void edges(void)
{
    int a[4] = {1, 2, 3, 4}, pos = 0, size = -1;
    char buf[8];
    MPI_Datatype t;
    MT_OK(MPI_Pack(a, 0, MPI_INT, buf, 0, &pos, MPI_COMM_WORLD));
    MT_CHECK(pos == 0, "zero count moved the position to %d", pos);
    MT_OK(MPI_Unpack(buf, 0, &pos, a, 0, MPI_INT, MPI_COMM_WORLD));
    MT_OK(MPI_Pack_size(0, MPI_INT, MPI_COMM_WORLD, &size));
    MT_CHECK(size == 0, "Pack_size(0) = %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pos = 4;
    MT_ERR(MPI_ERR_TRUNCATE, MPI_Pack(a, 2, MPI_INT, buf, 8, &pos, MPI_COMM_WORLD));
    MT_CHECK(pos == 4, "a failed Pack moved the position");
    pos = 0;
    MT_ERR(MPI_ERR_TRUNCATE, MPI_Unpack(buf, 4, &pos, a, 2, MPI_INT, MPI_COMM_WORLD));
    MT_OK(MPI_Type_contiguous(2, MPI_INT, &t));
    pos = 0;
    MT_ERR(MPI_ERR_TYPE, MPI_Pack(a, 1, t, buf, 8, &pos, MPI_COMM_WORLD));
    /* Pack_size does not need a committed type */
    MT_OK(MPI_Pack_size(3, t, MPI_COMM_WORLD, &size));
    MT_CHECK(size == 24, "Pack_size of an uncommitted type: %d", size);
    MT_ERR(MPI_ERR_COMM, MPI_Pack(a, 1, MPI_INT, buf, 8, &pos, MPI_COMM_NULL));
    MT_ERR(MPI_ERR_COUNT, MPI_Pack(a, -1, MPI_INT, buf, 8, &pos, MPI_COMM_WORLD));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MT_OK(MPI_Type_free(&t));
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    round_trips();
    packed_messages();
    edges();
    return mt_finalize();
}
