/*
 * MPI_Get_count, MPI_Get_elements and MPI_Get_elements_x on the statuses of
 * real receives (from the partner, eager and rendezvous):
 *   - whole numbers of the type: the count;
 *   - a size that is not a whole number of the type: MPI_Get_count gives
 *     MPI_UNDEFINED; MPI_Get_elements counts basic elements, which for a pair
 *     type may be whole where the pair is not (MPI-3.1 section 4.1.11), else
 *     MPI_UNDEFINED too;
 *   - zero bytes: 0 for every type;
 *   - a receive buffer larger than the message: the message's size.
 * Each message is sent as MPI_BYTE and received as MPI_BYTE; only the
 * queries use the other types.
 *
 * Argument "pairs": only the partial pairs whose two members differ in size
 * (MPI_DOUBLE_INT, MPI_SHORT_INT): 20 bytes of MPI_DOUBLE_INT are a pair and
 * a double, 3 basic elements.
 */
#include "mpitest.h"

struct query {
    MPI_Datatype type;
    const char* name;
    int count;    /* expected MPI_Get_count (MPI_UNDEFINED allowed) */
    int elements; /* expected MPI_Get_elements */
};

static void check(const MPI_Status* st, const struct query* q, int nbytes)
{
    int c = -5, e = -5;
    MPI_Count ex = -5;
    MT_OK(MPI_Get_count(st, q->type, &c));
    MT_OK(MPI_Get_elements(st, q->type, &e));
    MT_OK(MPI_Get_elements_x(st, q->type, &ex));
    MT_CHECK(c == q->count, "%d bytes as %s: MPI_Get_count %d, expected %d", nbytes, q->name, c,
             q->count);
    MT_CHECK(e == q->elements, "%d bytes as %s: MPI_Get_elements %d, expected %d", nbytes, q->name,
             e, q->elements);
    MT_CHECK(ex == (MPI_Count)q->elements, "%d bytes as %s: MPI_Get_elements_x %lld, expected %d",
             nbytes, q->name, (long long)ex, q->elements);
}

#define Q(t, c, e) {t, #t, c, e}
#define U MPI_UNDEFINED

int main(int argc, char** argv)
{
    int partner;
    unsigned char* out;
    unsigned char* in;
    int t;

    /* (message size in bytes, queries on its status) */
    static const struct query q40[] = {
        Q(MPI_BYTE, 40, 40),     Q(MPI_CHAR, 40, 40),       Q(MPI_INT, 10, 10),
        Q(MPI_DOUBLE, 5, 5),     Q(MPI_SHORT, 20, 20),      Q(MPI_LONG_DOUBLE, U, U),
        Q(MPI_2INT, 5, 10),      Q(MPI_FLOAT_INT, 5, 10),   Q(MPI_C_DOUBLE_COMPLEX, U, U),
        Q(MPI_INT64_T, 5, 5),    Q(MPI_UINT16_T, 20, 20),   Q(MPI_PACKED, 40, 40),
    };
    static const struct query q12[] = {
        Q(MPI_INT, 3, 3),        Q(MPI_DOUBLE, U, U),       Q(MPI_SHORT, 6, 6),
        Q(MPI_2INT, U, 3),       Q(MPI_FLOAT_INT, U, 3),    Q(MPI_DOUBLE_INT, 1, 2),
        Q(MPI_LONG_INT, 1, 2),   Q(MPI_C_FLOAT_COMPLEX, U, U),
    };
    static const struct query q20[] = {
        /* one (double, int) pair and one more double: 3 basic elements */
        Q(MPI_DOUBLE_INT, U, 3), Q(MPI_INT, 5, 5),          Q(MPI_DOUBLE, U, U),
    };
    static const struct query q8[] = {
        /* (short, int) and one more short */
        Q(MPI_SHORT_INT, U, 3),  Q(MPI_SHORT, 4, 4),        Q(MPI_INT, 2, 2),
    };
    static const struct query q7[] = {
        Q(MPI_BYTE, 7, 7),       Q(MPI_INT, U, U),          Q(MPI_SHORT, U, U),
        Q(MPI_2INT, U, U),       Q(MPI_SHORT_INT, U, U),
    };
    static const struct query q0[] = {
        Q(MPI_BYTE, 0, 0),       Q(MPI_INT, 0, 0),          Q(MPI_LONG_DOUBLE_INT, 0, 0),
        Q(MPI_2INT, 0, 0),       Q(MPI_C_LONG_DOUBLE_COMPLEX, 0, 0),
    };
    static const struct query q100k[] = {
        Q(MPI_BYTE, 100008, 100008), Q(MPI_INT, 25002, 25002), Q(MPI_DOUBLE, 12501, 12501),
        Q(MPI_2INT, 12501, 25002),   Q(MPI_LONG_DOUBLE, U, U),
    };
    struct testcase {
        int bytes;
        const struct query* q;
        int n;
    };
    static const struct testcase cases[] = {
        {40, q40, (int)(sizeof q40 / sizeof q40[0])},
        {12, q12, (int)(sizeof q12 / sizeof q12[0])},
        {7, q7, (int)(sizeof q7 / sizeof q7[0])},
        {0, q0, (int)(sizeof q0 / sizeof q0[0])},
        {100008, q100k, (int)(sizeof q100k / sizeof q100k[0])},
    };
    static const struct testcase pair_cases[] = {
        {20, q20, (int)(sizeof q20 / sizeof q20[0])},
        {8, q8, (int)(sizeof q8 / sizeof q8[0])},
    };
    const struct testcase* run = cases;
    int nrun = (int)(sizeof cases / sizeof cases[0]);

    mt_init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "pairs") == 0) {
        run = pair_cases;
        nrun = (int)(sizeof pair_cases / sizeof pair_cases[0]);
    }
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    out = malloc(200000);
    in = malloc(200000);
    mt_fill(out, 200000, 3);

    for (t = 0; t < nrun; ++t) {
        int n = run[t].bytes;
        int i;
        MPI_Request r;
        MPI_Status st;
        /* Into a buffer twice as large as the message. */
        MT_OK(MPI_Irecv(in, 2 * n + 16, MPI_BYTE, partner, t, MPI_COMM_WORLD, &r));
        MT_OK(MPI_Send(out, n, MPI_BYTE, partner, t, MPI_COMM_WORLD));
        MT_OK(MPI_Wait(&r, &st));
        MT_CHECK(mt_count(&st) == n, "message of %d bytes: count %d", n, mt_count(&st));
        for (i = 0; i < run[t].n; ++i) {
            check(&st, &run[t].q[i], n);
        }
        /* The same through MPI_Recv and through a probe. */
        MT_OK(MPI_Isend(out, n, MPI_BYTE, 0, t, MPI_COMM_SELF, &r));
        MT_OK(MPI_Probe(0, t, MPI_COMM_SELF, &st));
        for (i = 0; i < run[t].n; ++i) {
            check(&st, &run[t].q[i], n);
        }
        MT_OK(MPI_Recv(in, n, MPI_BYTE, 0, t, MPI_COMM_SELF, &st));
        for (i = 0; i < run[t].n; ++i) {
            check(&st, &run[t].q[i], n);
        }
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }

    /* Type sizes the counts above rely on. */
    {
        int s = 0;
        MPI_Count sx = 0;
        MT_OK(MPI_Type_size(MPI_DOUBLE_INT, &s));
        MT_CHECK(s == 12, "MPI_Type_size(MPI_DOUBLE_INT) %d", s);
        MT_OK(MPI_Type_size(MPI_SHORT_INT, &s));
        MT_CHECK(s == 6, "MPI_Type_size(MPI_SHORT_INT) %d", s);
        MT_OK(MPI_Type_size_x(MPI_LONG_DOUBLE_INT, &sx));
        MT_CHECK(sx == (MPI_Count)(sizeof(long double) + sizeof(int)),
                 "MPI_Type_size_x(MPI_LONG_DOUBLE_INT) %lld", (long long)sx);
    }
    free(out);
    free(in);
    return mt_finalize();
}
