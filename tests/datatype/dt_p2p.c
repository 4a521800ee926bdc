/*
 * dt_p2p.c -- derived datatypes through point-to-point messages.
 *
 * Every rank sends to rank+1 and receives from rank-1 (itself when alone),
 * with MPI_Sendrecv so the ring never deadlocks:
 *   - a vector sent, received contiguous, and the reverse (small and
 *     rendezvous-sized), gaps of the receive buffer left untouched;
 *   - a struct with gaps (C struct layout), received as struct and as bytes;
 *   - indexed with overlapping blocks (legal for sends);
 *   - negative strides, sent and received;
 *   - resized types with counts > 1 (and a negative lower bound);
 *   - zero counts and zero-size types;
 *   - a type freed while a nonblocking receive / send / persistent request
 *     using it is pending (reference counting keeps it alive);
 *   - absolute addresses with MPI_BOTTOM;
 *   - an uncommitted type refused with MPI_ERR_TYPE.
 */
#include "dttest.h"

#include <stddef.h>

static int to, from;

static void ring(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Status* st)
{
    MT_OK(
        MPI_Sendrecv(sbuf, scount, stype, to, 7, rbuf, rcount, rtype, from, 7, MPI_COMM_WORLD, st));
}

/* Values carry the sender's rank so a wrong source shows. */
static int val(int rank, int i) { return rank * 1000003 + i; }

static void vector_and_contiguous(int n, int stride)
{
    MPI_Datatype vec;
    int* strided = (int*)malloc(sizeof(int) * (size_t)n * (size_t)stride);
    int* flat = (int*)malloc(sizeof(int) * (size_t)n);
    int i, bad = 0;
    MPI_Status st;
    MT_OK(MPI_Type_vector(n, 1, stride, MPI_INT, &vec));
    MT_OK(MPI_Type_commit(&vec));

    /* vector -> contiguous */
    for (i = 0; i < n * stride; ++i) {
        strided[i] = i % stride == 0 ? val(mt_rank, i / stride) : -1;
    }
    ring(strided, 1, vec, flat, n, MPI_INT, &st);
    for (i = 0; i < n && !bad; ++i) {
        if (flat[i] != val(from, i)) {
            mt_fail(__FILE__, __LINE__, "vector->contig n=%d: flat[%d] = %d, expected %d", n, i,
                    flat[i], val(from, i));
            bad = 1;
        }
    }
    MT_CHECK(mt_count(&st) == n * 4, "vector->contig: %d bytes", mt_count(&st));

    /* contiguous -> vector; the gaps keep their sentinel */
    for (i = 0; i < n; ++i) {
        flat[i] = val(mt_rank, i);
    }
    for (i = 0; i < n * stride; ++i) {
        strided[i] = -7;
    }
    ring(flat, n, MPI_INT, strided, 1, vec, &st);
    for (i = 0, bad = 0; i < n * stride && !bad; ++i) {
        int want = i % stride == 0 ? val(from, i / stride) : -7;
        if (strided[i] != want) {
            mt_fail(__FILE__, __LINE__, "contig->vector n=%d: [%d] = %d, expected %d", n, i,
                    strided[i], want);
            bad = 1;
        }
    }
    MT_OK(MPI_Type_free(&vec));
    MT_CHECK(vec == MPI_DATATYPE_NULL, "MPI_Type_free did not set MPI_DATATYPE_NULL");
    free(strided);
    free(flat);
}

struct S {
    char c;
    double d;
    int i[3];
    short s;
};

static void struct_with_gaps(void)
{
    struct S out[5], in[5];
    unsigned char bytes[5 * 23];
    int blen[4] = {1, 1, 3, 1};
    MPI_Aint disp[4] = {offsetof(struct S, c), offsetof(struct S, d), offsetof(struct S, i),
                        offsetof(struct S, s)};
    MPI_Datatype types[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
    MPI_Datatype st;
    MPI_Aint lb, ext;
    int size, k, bad = 0;
    MPI_Status status;
    MT_OK(MPI_Type_create_struct(4, blen, disp, types, &st));
    MT_OK(MPI_Type_commit(&st));
    MT_OK(MPI_Type_size(st, &size));
    MT_OK(MPI_Type_get_extent(st, &lb, &ext));
    MT_CHECK(size == 23, "struct size %d", size);
    MT_CHECK(lb == 0 && ext == (MPI_Aint)sizeof(struct S), "struct lb %ld extent %ld, sizeof %zu",
             (long)lb, (long)ext, sizeof(struct S));
    memset(out, 0x5a, sizeof out);
    for (k = 0; k < 5; ++k) {
        out[k].c = (char)('a' + k);
        out[k].d = mt_rank + k * 0.5;
        out[k].i[0] = k;
        out[k].i[1] = -k;
        out[k].i[2] = mt_rank;
        out[k].s = (short)(100 + k);
    }
    memset(in, 0x33, sizeof in);
    ring(out, 5, st, in, 5, st, &status);
    for (k = 0; k < 5 && !bad; ++k) {
        unsigned char* gap = (unsigned char*)&in[k] + 1; /* padding after c */
        if (in[k].c != 'a' + k || in[k].d != from + k * 0.5 || in[k].i[0] != k ||
            in[k].i[1] != -k || in[k].i[2] != from || in[k].s != 100 + k) {
            mt_fail(__FILE__, __LINE__, "struct element %d differs", k);
            bad = 1;
        }
        if (*gap != 0x33) {
            mt_fail(__FILE__, __LINE__, "struct element %d: the gap after c was written", k);
            bad = 1;
        }
    }
    /* As bytes: c, d, i[3], s packed with no gaps. */
    ring(out, 5, st, bytes, 5 * 23, MPI_BYTE, &status);
    MT_CHECK(mt_count(&status) == 5 * 23, "struct as bytes: %d", mt_count(&status));
    for (k = 0; k < 5; ++k) {
        double d;
        short s;
        int iv[3];
        memcpy(&d, bytes + k * 23 + 1, 8);
        memcpy(iv, bytes + k * 23 + 9, 12);
        memcpy(&s, bytes + k * 23 + 21, 2);
        MT_CHECK(bytes[k * 23] == 'a' + k && d == from + k * 0.5 && iv[2] == from && s == 100 + k,
                 "struct element %d as bytes differs", k);
    }
    MT_OK(MPI_Type_free(&st));
}

static void overlapping_indexed_send(void)
{
    int a[4] = {val(mt_rank, 0), val(mt_rank, 1), val(mt_rank, 2), val(mt_rank, 3)};
    int blen[3] = {2, 2, 2}, disp[3] = {0, 1, 2}, in[6], k;
    int idx[6] = {0, 1, 1, 2, 2, 3};
    MPI_Datatype t;
    MPI_Status st;
    MT_OK(MPI_Type_indexed(3, blen, disp, MPI_INT, &t));
    MT_OK(MPI_Type_commit(&t));
    ring(a, 1, t, in, 6, MPI_INT, &st);
    for (k = 0; k < 6; ++k) {
        MT_CHECK(in[k] == val(from, idx[k]), "overlapping indexed: in[%d] = %d", k, in[k]);
    }
    MT_OK(MPI_Type_free(&t));
}

static void negative_strides(void)
{
    int a[7], b[7], k;
    MPI_Datatype down;
    MPI_Aint lb, ext;
    MPI_Status st;
    MT_OK(MPI_Type_vector(4, 1, -2, MPI_INT, &down));
    MT_OK(MPI_Type_commit(&down));
    MT_OK(MPI_Type_get_extent(down, &lb, &ext));
    MT_CHECK(lb == -24 && ext == 28, "vector(4,1,-2): lb %ld extent %ld", (long)lb, (long)ext);
    for (k = 0; k < 7; ++k) {
        a[k] = val(mt_rank, k);
        b[k] = -1;
    }
    /* Sends a[6], a[4], a[2], a[0]; lands in b[6], b[4], ... reversed: b[6] = a[6]. */
    ring(&a[6], 1, down, &b[6], 1, down, &st);
    for (k = 0; k < 7; ++k) {
        int want = k % 2 == 0 ? val(from, k) : -1;
        MT_CHECK(b[k] == want, "negative stride: b[%d] = %d, expected %d", k, b[k], want);
    }
    /* Received contiguous: order of the type map. */
    ring(&a[6], 1, down, b, 4, MPI_INT, &st);
    for (k = 0; k < 4; ++k) {
        MT_CHECK(b[k] == val(from, 6 - 2 * k), "negative stride to contig: b[%d] = %d", k, b[k]);
    }
    MT_OK(MPI_Type_free(&down));
}

static void resized_counts(void)
{
    int a[20], in[5], back[20], k;
    MPI_Datatype every3, shifted, tmp;
    MPI_Status st;
    MT_OK(MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &every3));
    MT_OK(MPI_Type_commit(&every3));
    for (k = 0; k < 20; ++k) {
        a[k] = val(mt_rank, k);
        back[k] = -1;
    }
    ring(a, 5, every3, in, 5, MPI_INT, &st);
    for (k = 0; k < 5; ++k) {
        MT_CHECK(in[k] == val(from, 3 * k), "resized count 5: in[%d] = %d", k, in[k]);
    }
    ring(a, 5, MPI_INT, back, 5, every3, &st);
    for (k = 0; k < 15; ++k) {
        int want = k % 3 == 0 ? val(from, k / 3) : -1;
        MT_CHECK(back[k] == want, "into resized: back[%d] = %d, expected %d", k, back[k], want);
    }
    /* lb -4, extent 8 over a pair of ints: element j is a[2j+1] (data at 4 past the lb). */
    MT_OK(MPI_Type_contiguous(1, MPI_INT, &tmp));
    MT_OK(MPI_Type_create_resized(tmp, -4, 8, &shifted));
    MT_OK(MPI_Type_free(&tmp));
    MT_OK(MPI_Type_commit(&shifted));
    ring(&a[1], 4, shifted, in, 4, MPI_INT, &st);
    for (k = 0; k < 4; ++k) {
        MT_CHECK(in[k] == val(from, 1 + 2 * k), "resized lb<0: in[%d] = %d", k, in[k]);
    }
    MT_OK(MPI_Type_free(&every3));
    MT_OK(MPI_Type_free(&shifted));
}

static void zero_counts(void)
{
    MPI_Datatype empty, vec;
    MPI_Status st;
    int x = 5, count = -1, size = -1;
    MT_OK(MPI_Type_contiguous(0, MPI_INT, &empty));
    MT_OK(MPI_Type_commit(&empty));
    MT_OK(MPI_Type_size(empty, &size));
    MT_CHECK(size == 0, "contiguous(0) size %d", size);
    ring(&x, 3, empty, &x, 3, empty, &st);
    MT_CHECK(mt_count(&st) == 0, "zero-size type moved %d bytes", mt_count(&st));
    MT_OK(MPI_Get_count(&st, empty, &count));
    MT_CHECK(count == 0, "Get_count of a zero-size type: %d", count);
    MT_OK(MPI_Type_vector(3, 1, 4, MPI_INT, &vec));
    MT_OK(MPI_Type_commit(&vec));
    ring(NULL, 0, vec, NULL, 0, vec, &st);
    MT_CHECK(mt_count(&st) == 0, "count 0: %d bytes", mt_count(&st));
    MT_CHECK(x == 5, "zero-size receive wrote memory");
    MT_OK(MPI_Type_free(&empty));
    MT_OK(MPI_Type_free(&vec));
}

static void freed_while_pending(void)
{
    enum { N = 20000 };
    int* src = (int*)malloc(sizeof(int) * 2 * N);
    int* dst = (int*)malloc(sizeof(int) * 2 * N);
    MPI_Datatype vec, vec2;
    MPI_Request rr, sr, pr;
    int k, bad = 0;
    for (k = 0; k < 2 * N; ++k) {
        src[k] = val(mt_rank, k);
        dst[k] = -1;
    }
    /* Receive with a type freed at once; the data arrives afterwards. */
    MT_OK(MPI_Type_vector(N, 1, 2, MPI_INT, &vec));
    MT_OK(MPI_Type_commit(&vec));
    MT_OK(MPI_Irecv(dst, 1, vec, from, 8, MPI_COMM_WORLD, &rr));
    MT_OK(MPI_Type_free(&vec));
    /* Send with another freed type (rendezvous-sized). */
    MT_OK(MPI_Type_vector(N, 1, 2, MPI_INT, &vec2));
    MT_OK(MPI_Type_commit(&vec2));
    MT_OK(MPI_Isend(src, 1, vec2, to, 8, MPI_COMM_WORLD, &sr));
    MT_OK(MPI_Type_free(&vec2));
    MT_OK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    MT_OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    for (k = 0; k < 2 * N && !bad; ++k) {
        int want = k % 2 == 0 ? val(from, k) : -1;
        if (dst[k] != want) {
            mt_fail(__FILE__, __LINE__, "freed-while-pending: dst[%d] = %d, expected %d", k, dst[k],
                    want);
            bad = 1;
        }
    }
    /* A persistent receive outlives its freed type across two starts. */
    MT_OK(MPI_Type_vector(N, 1, 2, MPI_INT, &vec));
    MT_OK(MPI_Type_commit(&vec));
    MT_OK(MPI_Recv_init(dst, 1, vec, from, 9, MPI_COMM_WORLD, &pr));
    MT_OK(MPI_Type_free(&vec));
    for (k = 0; k < 2; ++k) {
        int j;
        for (j = 0; j < 2 * N; ++j) {
            dst[j] = -1;
        }
        MT_OK(MPI_Start(&pr));
        MT_OK(MPI_Send(src, N, MPI_INT, to, 9, MPI_COMM_WORLD));
        MT_OK(MPI_Wait(&pr, MPI_STATUS_IGNORE));
        for (j = 0; j < 2 * N; j += 2) {
            if (dst[j] != val(from, j / 2) || dst[j + 1] != -1) {
                mt_fail(__FILE__, __LINE__, "persistent start %d: dst[%d] wrong", k, j);
                break;
            }
        }
    }
    MT_OK(MPI_Request_free(&pr));
    free(src);
    free(dst);
}

static void absolute_addresses(void)
{
    int a = val(mt_rank, 1);
    double b = mt_rank + 0.25;
    int ra = 0;
    double rb = 0;
    int blen[2] = {1, 1};
    MPI_Aint disp[2];
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, sabs, rabs;
    MPI_Status st;
    MT_OK(MPI_Get_address(&a, &disp[0]));
    MT_OK(MPI_Get_address(&b, &disp[1]));
    MT_OK(MPI_Type_create_struct(2, blen, disp, types, &sabs));
    MT_OK(MPI_Type_commit(&sabs));
    MT_OK(MPI_Get_address(&ra, &disp[0]));
    MT_OK(MPI_Address(&rb, &disp[1]));
    MT_OK(MPI_Type_struct(2, blen, disp, types, &rabs));
    MT_OK(MPI_Type_commit(&rabs));
    ring(MPI_BOTTOM, 1, sabs, MPI_BOTTOM, 1, rabs, &st);
    MT_CHECK(ra == val(from, 1) && rb == from + 0.25, "MPI_BOTTOM struct: %d %g", ra, rb);
    MT_OK(MPI_Type_free(&sabs));
    MT_OK(MPI_Type_free(&rabs));
}

static void uncommitted_is_refused(void)
{
    MPI_Datatype t;
    int x[4] = {0, 0, 0, 0};
    MT_OK(MPI_Type_contiguous(2, MPI_INT, &t));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MT_ERR(MPI_ERR_TYPE, MPI_Send(x, 1, t, to, 3, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_TYPE, MPI_Send(x, 1, MPI_UB, to, 3, MPI_COMM_WORLD));
    MT_ERR(MPI_ERR_ARG, MPI_Type_commit(NULL));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    /* ... but usable in constructors, and then committed. */
    {
        MPI_Datatype v;
        int y[4];
        MPI_Status st;
        x[0] = val(mt_rank, 0);
        x[1] = val(mt_rank, 1);
        x[2] = val(mt_rank, 2);
        x[3] = val(mt_rank, 3);
        MT_OK(MPI_Type_contiguous(2, t, &v));
        MT_OK(MPI_Type_commit(&v));
        ring(x, 1, v, y, 4, MPI_INT, &st);
        MT_CHECK(y[3] == val(from, 3), "type built on an uncommitted type: y[3] = %d", y[3]);
        MT_OK(MPI_Type_free(&v));
    }
    MT_OK(MPI_Type_free(&t));
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    to = (mt_rank + 1) % mt_size;
    from = (mt_rank + mt_size - 1) % mt_size;
    vector_and_contiguous(10, 3);
    vector_and_contiguous(100000, 2); /* 400 kB of data: rendezvous */
    struct_with_gaps();
    overlapping_indexed_send();
    negative_strides();
    resized_counts();
    zero_counts();
    freed_while_pending();
    absolute_addresses();
    uncommitted_is_refused();
    return mt_finalize();
}
