/*
 * dt_elements.c -- MPI_Get_elements / MPI_Get_elements_x / MPI_Get_count on
 * derived types with whole and partial messages.
 *
 * A message shorter than the receive buffer ends wherever the sender's data
 * ends; the basic elements received are counted through the receive type's
 * structure: a struct {int; double} cut after the int holds 1 element,
 * cut inside the double it holds an undefined number (MPI_UNDEFINED).
 */
#include "dttest.h"

static int to, from;

static void check(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                  MPI_Datatype rtype, int want_elements, int want_count, const char* what)
{
    MPI_Status st;
    int n = -5, c = -5;
    MPI_Count nx = -5;
    MT_OK(MPI_Sendrecv(sbuf, scount, stype, to, 4, rbuf, rcount, rtype, from, 4, MPI_COMM_WORLD,
                       &st));
    MT_OK(MPI_Get_elements(&st, rtype, &n));
    MT_OK(MPI_Get_elements_x(&st, rtype, &nx));
    MT_OK(MPI_Get_count(&st, rtype, &c));
    MT_CHECK(n == want_elements && nx == want_elements, "%s: %d elements (_x %lld), expected %d",
             what, n, (long long)nx, want_elements);
    MT_CHECK(c == want_count, "%s: count %d, expected %d", what, c, want_count);
}

int main(int argc, char** argv)
{
    MPI_Datatype id, vec, nest, di2;
    int blen[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    char sbuf[256], rbuf[256];
    mt_init(&argc, &argv);
    to = (mt_rank + 1) % mt_size;
    from = (mt_rank + mt_size - 1) % mt_size;
    memset(sbuf, 1, sizeof sbuf);

    MT_OK(MPI_Type_create_struct(2, blen, disp, types,
                                 &id)); /* {int; double}: 12 bytes, 2 elements */
    MT_OK(MPI_Type_commit(&id));
    check(sbuf, 4, MPI_BYTE, rbuf, 3, id, 1, MPI_UNDEFINED, "struct cut after the int");
    check(sbuf, 6, MPI_BYTE, rbuf, 3, id, MPI_UNDEFINED, MPI_UNDEFINED,
          "struct cut inside the double");
    check(sbuf, 12, MPI_BYTE, rbuf, 3, id, 2, 1, "one whole struct");
    check(sbuf, 16, MPI_BYTE, rbuf, 3, id, 3, MPI_UNDEFINED, "a struct and an int");
    check(sbuf, 36, MPI_BYTE, rbuf, 3, id, 6, 3, "three structs");
    check(sbuf, 0, MPI_BYTE, rbuf, 3, id, 0, 0, "nothing");

    /* vector of 3 blocks of 2 ints (6 elements), nested in a contiguous of 2 */
    MT_OK(MPI_Type_vector(3, 2, 4, MPI_INT, &vec));
    MT_OK(MPI_Type_contiguous(2, vec, &nest));
    MT_OK(MPI_Type_commit(&nest));
    check(sbuf, 7, MPI_INT, rbuf, 1, nest, 7, MPI_UNDEFINED, "7 ints into contiguous(2, vector)");
    check(sbuf, 12, MPI_INT, rbuf, 1, nest, 12, 1, "12 ints into contiguous(2, vector)");
    check(sbuf, 5, MPI_SHORT, rbuf, 1, nest, MPI_UNDEFINED, MPI_UNDEFINED, "10 bytes into ints");

    /* Pair types count their members: 20 bytes of MPI_DOUBLE_INT are 3. */
    {
        struct {
            double a;
            int b;
            double c;
        } foo = {1.0, 2, 3.0};
        int bl3[3] = {1, 1, 1};
        MPI_Aint d3[3] = {0, 8, 16};
        MPI_Datatype t3[3] = {MPI_DOUBLE, MPI_INT, MPI_DOUBLE}, s3;
        MT_OK(MPI_Type_create_struct(3, bl3, d3, t3, &s3));
        MT_OK(MPI_Type_commit(&s3));
        check(&foo, 1, s3, rbuf, 2, MPI_DOUBLE_INT, 3, MPI_UNDEFINED,
              "double, int, double as DOUBLE_INT");
        MT_OK(MPI_Type_free(&s3));
    }

    /* A struct of two different pair types */
    {
        int bl[2] = {1, 1};
        MPI_Aint dd[2] = {0, 16};
        MPI_Datatype tt[2] = {MPI_DOUBLE_INT, MPI_2INT};
        MT_OK(MPI_Type_create_struct(2, bl, dd, tt, &di2)); /* 12 + 8 bytes, 4 elements */
        MT_OK(MPI_Type_commit(&di2));
        check(sbuf, 28, MPI_BYTE, rbuf, 2, di2, 5, MPI_UNDEFINED, "struct of pairs, 28 bytes");
        check(sbuf, 24, MPI_BYTE, rbuf, 2, di2, MPI_UNDEFINED, MPI_UNDEFINED,
              "struct of pairs, 24 bytes");
        check(sbuf, 16, MPI_BYTE, rbuf, 2, di2, 3, MPI_UNDEFINED, "struct of pairs, 16 bytes");
        MT_OK(MPI_Type_free(&di2));
    }

    MT_OK(MPI_Type_free(&id));
    MT_OK(MPI_Type_free(&vec));
    MT_OK(MPI_Type_free(&nest));
    return mt_finalize();
}
