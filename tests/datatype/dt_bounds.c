/*
 * dt_bounds.c -- lower and upper bounds, extents, true extents.
 *
 *   - MPI_LB / MPI_UB markers and their sticky propagation through
 *     contiguous, vector (positive and negative strides) and struct, with
 *     negative extents (the cases of MPICH's lbub test, worked by hand);
 *   - MPI_Type_create_resized markers are sticky too (MPI-2.2 4.1.7);
 *   - struct padding to the strictest alignment, and none with a marker;
 *   - MPI-1 Type_lb/ub/extent against MPI-2 get_extent, the _x forms;
 *   - a freed handle is refused; predefined types cannot be freed.
 */
#include "dttest.h"

static void expect(MPI_Datatype t, int size, MPI_Aint lb, MPI_Aint extent, MPI_Aint tlb,
                   MPI_Aint textent, const char* what)
{
    int s = -1;
    MPI_Aint l, e, tl, te, ub1, lb1, ext1;
    MPI_Count lx, ex, sx;
    MT_OK(MPI_Type_size(t, &s));
    MT_OK(MPI_Type_get_extent(t, &l, &e));
    MT_OK(MPI_Type_get_true_extent(t, &tl, &te));
    MT_OK(MPI_Type_lb(t, &lb1));
    MT_OK(MPI_Type_ub(t, &ub1));
    MT_OK(MPI_Type_extent(t, &ext1));
    MT_OK(MPI_Type_get_extent_x(t, &lx, &ex));
    MT_OK(MPI_Type_size_x(t, &sx));
    MT_CHECK(s == size && sx == size, "%s: size %d, expected %d", what, s, size);
    MT_CHECK(l == lb && lb1 == lb && lx == lb, "%s: lb %ld, expected %ld", what, (long)l, (long)lb);
    MT_CHECK(e == extent && ext1 == extent && ex == extent, "%s: extent %ld, expected %ld", what,
             (long)e, (long)extent);
    MT_CHECK(ub1 == lb + extent, "%s: ub %ld, expected %ld", what, (long)ub1, (long)(lb + extent));
    MT_CHECK(tl == tlb && te == textent, "%s: true lb %ld extent %ld, expected %ld %ld", what,
             (long)tl, (long)te, (long)tlb, (long)textent);
    {
        MPI_Count tlx, tex;
        MT_OK(MPI_Type_get_true_extent_x(t, &tlx, &tex));
        MT_CHECK(tlx == tlb && tex == textent, "%s: true extent _x", what);
    }
}

static MPI_Datatype evil(MPI_Aint lbm, MPI_Aint ubm)
{
    int blocks[3] = {1, 4, 1};
    MPI_Aint disps[3];
    MPI_Datatype types[3] = {MPI_LB, MPI_BYTE, MPI_UB}, t;
    disps[0] = lbm;
    disps[1] = 0;
    disps[2] = ubm;
    MT_OK(MPI_Type_struct(3, blocks, disps, types, &t));
    return t;
}

static void markers(void)
{
    MPI_Datatype e = evil(-3, 6), n = evil(6, -3), t;
    /* { (LB,-3), 4*(BYTE,0), (UB,6) } */
    expect(e, 4, -3, 9, 0, 4, "struct with LB/UB");
    /* three copies at 0, 9, 18: lb -3, ub 24 */
    MT_OK(MPI_Type_contiguous(3, e, &t));
    expect(t, 12, -3, 27, 0, 22, "contiguous(3) of it");
    MT_OK(MPI_Type_free(&t));
    /* vector(3, 4, 5): copies at 9*(5i + j): lb -3, ub 123 */
    MT_OK(MPI_Type_vector(3, 4, 5, e, &t));
    expect(t, 48, -3, 126, 0, 121, "vector(3,4,5) of it");
    MT_OK(MPI_Type_free(&t));
    /* negative stride: copies at 9*(-5i + j), i < 3, j < 4: lowest -90 */
    MT_OK(MPI_Type_vector(3, 4, -5, e, &t));
    expect(t, 48, -93, 126, -90, 121, "vector(3,4,-5) of it");
    MT_OK(MPI_Type_free(&t));
    /* negative extent -9: { (LB,6), 4*(BYTE,0), (UB,-3) } */
    expect(n, 4, 6, -9, 0, 4, "negative extent");
    MT_OK(MPI_Type_contiguous(3, n, &t));
    expect(t, 12, -12, 9, -18, 22, "contiguous(3) of negative extent");
    MT_OK(MPI_Type_free(&t));
    MT_OK(MPI_Type_vector(3, 4, 5, n, &t));
    expect(t, 48, -111, 108, -117, 121, "vector(3,4,5) of negative extent");
    MT_OK(MPI_Type_free(&t));
    /* Sticky: an outer struct of the evil type and an int beyond its UB keeps UB 6. */
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 100};
        MPI_Datatype ty[2];
        ty[0] = e;
        ty[1] = MPI_INT;
        MT_OK(MPI_Type_create_struct(2, bl, d, ty, &t));
        expect(t, 8, -3, 9, 0, 104, "struct beyond a sticky UB");
        MT_OK(MPI_Type_free(&t));
    }
    /* Only an LB marker: { (LB,10) } has ub 0 and extent -10. */
    {
        int one = 1;
        MPI_Aint ten = 10;
        MPI_Datatype lbt = MPI_LB;
        MT_OK(MPI_Type_create_struct(1, &one, &ten, &lbt, &t));
        expect(t, 0, 10, -10, 0, 0, "struct of an LB only");
        MT_OK(MPI_Type_free(&t));
    }
    MT_OK(MPI_Type_free(&e));
    MT_OK(MPI_Type_free(&n));
}

static void resized_is_sticky(void)
{
    MPI_Datatype r, t;
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 40};
    MPI_Datatype ty[2];
    MT_OK(MPI_Type_create_resized(MPI_INT, -4, 16, &r));
    expect(r, 4, -4, 16, 0, 4, "resized(int, -4, 16)");
    ty[0] = r;
    ty[1] = MPI_DOUBLE;
    MT_OK(MPI_Type_create_struct(2, bl, d, ty, &t));
    /* Markers at -4 and 12 bound the struct although the double is at 40. */
    expect(t, 12, -4, 16, 0, 48, "struct of resized and a double beyond");
    MT_OK(MPI_Type_free(&t));
    /* Resizing again replaces the markers. */
    MT_OK(MPI_Type_create_resized(r, 0, 4, &t));
    expect(t, 4, 0, 4, 0, 4, "resized of resized");
    MT_OK(MPI_Type_free(&t));
    /* dup keeps bounds, size and true extent */
    MT_OK(MPI_Type_dup(r, &t));
    expect(t, 4, -4, 16, 0, 4, "dup of resized");
    MT_OK(MPI_Type_free(&t));
    MT_OK(MPI_Type_free(&r));
}

static void padding(void)
{
    struct {
        double d;
        char c;
    } s;
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 8};
    MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_CHAR}, t, v;
    MT_OK(MPI_Type_create_struct(2, bl, d, ty, &t));
    expect(t, 9, 0, (MPI_Aint)sizeof s, 0, 9, "struct {double; char} is padded");
    /* A vector of it keeps the padding in its stride. */
    MT_OK(MPI_Type_vector(2, 1, 1, t, &v));
    expect(v, 18, 0, 32, 0, 25, "vector of a padded struct");
    MT_OK(MPI_Type_free(&v));
    MT_OK(MPI_Type_free(&t));
    /* An explicit UB switches padding off. */
    {
        int b3[3] = {1, 1, 1};
        MPI_Aint d3[3] = {0, 8, 9};
        MPI_Datatype t3[3] = {MPI_DOUBLE, MPI_CHAR, MPI_UB};
        MT_OK(MPI_Type_create_struct(3, b3, d3, t3, &t));
        expect(t, 9, 0, 9, 0, 9, "struct with UB right after the char");
        MT_OK(MPI_Type_free(&t));
    }
    /* hvector with an odd stride is not padded (only struct is). */
    MT_OK(MPI_Type_create_hvector(2, 1, 12, MPI_DOUBLE, &t));
    expect(t, 16, 0, 20, 0, 20, "hvector(2,1,12 bytes) of double");
    MT_OK(MPI_Type_free(&t));
    (void)s;
}

static void handles(void)
{
    MPI_Datatype t, keep, dt = MPI_INT;
    MPI_Aint l, e;
    MT_OK(MPI_Type_contiguous(2, MPI_INT, &t));
    keep = t;
    MT_OK(MPI_Type_free(&t));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MT_ERR(MPI_ERR_TYPE, MPI_Type_get_extent(keep, &l, &e));
    MT_ERR(MPI_ERR_TYPE, MPI_Type_commit(&keep));
    MT_ERR(MPI_ERR_TYPE, MPI_Type_free(&dt));
    MT_ERR(MPI_ERR_TYPE, MPI_Type_get_extent(MPI_DATATYPE_NULL, &l, &e));
    MT_ERR(MPI_ERR_COUNT, MPI_Type_contiguous(-1, MPI_INT, &t));
    MT_ERR(MPI_ERR_ARG, MPI_Type_vector(2, -1, 1, MPI_INT, &t));
    MT_ERR(MPI_ERR_TYPE, MPI_Type_vector(2, 1, 1, MPI_DATATYPE_NULL, &t));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    /* Predefined bounds */
    expect(MPI_DOUBLE_INT, 12, 0, 16, 0, 12, "MPI_DOUBLE_INT");
    expect(MPI_LB, 0, 0, 0, 0, 0, "MPI_LB");
    /* Commit of a predefined type is allowed. */
    MT_OK(MPI_Type_commit(&dt));
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    markers();
    resized_is_sticky();
    padding();
    handles();
    return mt_finalize();
}
