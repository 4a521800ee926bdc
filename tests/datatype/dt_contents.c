/*
 * dt_contents.c -- MPI_Type_get_envelope / MPI_Type_get_contents for every
 * combiner, names, MPI_Type_dup, MPI_Type_match_size.
 *
 * For each constructor: the envelope gives the combiner and the array
 * lengths of MPI-3.1 4.1.13, the contents give back the arguments, and
 * rebuilding the type from its contents yields the same type map (packed
 * images of a patterned arena compare equal) and the same extent. Derived
 * types returned by get_contents are new handles the caller frees; the
 * types they name stay alive after the original handles are freed.
 */
#include "dttest.h"

/* Rebuilds a type from its envelope and contents; frees the returned types. */
static MPI_Datatype rebuild(MPI_Datatype t, int want_combiner, int want_ni, int want_na,
                            int want_nd, const char* what)
{
    int ni, na, nd, comb, k;
    int* ints;
    MPI_Aint* aints;
    MPI_Datatype* types;
    MPI_Datatype out = MPI_DATATYPE_NULL;
    MT_OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    MT_CHECK(comb == want_combiner && ni == want_ni && na == want_na && nd == want_nd,
             "%s: envelope (%d, %d, %d, combiner %d), expected (%d, %d, %d, %d)", what, ni, na, nd,
             comb, want_ni, want_na, want_nd, want_combiner);
    ints = (int*)malloc(sizeof(int) * (size_t)(ni + 1));
    aints = (MPI_Aint*)malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    types = (MPI_Datatype*)malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    MT_OK(MPI_Type_get_contents(t, ni, na, nd, ints, aints, types));
    switch (comb) {
    case MPI_COMBINER_DUP: MT_OK(MPI_Type_dup(types[0], &out)); break;
    case MPI_COMBINER_CONTIGUOUS: MT_OK(MPI_Type_contiguous(ints[0], types[0], &out)); break;
    case MPI_COMBINER_VECTOR:
        MT_OK(MPI_Type_vector(ints[0], ints[1], ints[2], types[0], &out));
        break;
    case MPI_COMBINER_HVECTOR:
        MT_OK(MPI_Type_create_hvector(ints[0], ints[1], aints[0], types[0], &out));
        break;
    case MPI_COMBINER_INDEXED:
        MT_OK(MPI_Type_indexed(ints[0], &ints[1], &ints[1 + ints[0]], types[0], &out));
        break;
    case MPI_COMBINER_HINDEXED:
        MT_OK(MPI_Type_create_hindexed(ints[0], &ints[1], aints, types[0], &out));
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        MT_OK(MPI_Type_create_indexed_block(ints[0], ints[1], &ints[2], types[0], &out));
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        MT_OK(MPI_Type_create_hindexed_block(ints[0], ints[1], aints, types[0], &out));
        break;
    case MPI_COMBINER_STRUCT:
        MT_OK(MPI_Type_create_struct(ints[0], &ints[1], aints, types, &out));
        break;
    case MPI_COMBINER_SUBARRAY: {
        int n = ints[0];
        MT_OK(MPI_Type_create_subarray(n, &ints[1], &ints[1 + n], &ints[1 + 2 * n], ints[1 + 3 * n],
                                       types[0], &out));
        break;
    }
    case MPI_COMBINER_DARRAY: {
        int n = ints[2];
        MT_OK(MPI_Type_create_darray(ints[0], ints[1], n, &ints[3], &ints[3 + n], &ints[3 + 2 * n],
                                     &ints[3 + 3 * n], ints[3 + 4 * n], types[0], &out));
        break;
    }
    case MPI_COMBINER_RESIZED:
        MT_OK(MPI_Type_create_resized(types[0], aints[0], aints[1], &out));
        break;
    default: mt_fail(__FILE__, __LINE__, "%s: unexpected combiner %d", what, comb);
    }
    for (k = 0; k < nd; ++k) {
        int cni, cna, cnd, ccomb;
        MT_OK(MPI_Type_get_envelope(types[k], &cni, &cna, &cnd, &ccomb));
        if (ccomb != MPI_COMBINER_NAMED) {
            MT_OK(MPI_Type_free(&types[k]));
        }
    }
    free(ints);
    free(aints);
    free(types);
    if (out != MPI_DATATYPE_NULL) {
        MT_OK(MPI_Type_commit(&out));
    }
    return out;
}

/* Checks t against its rebuild, then frees both. */
static void round_trip(MPI_Datatype t, int comb, int ni, int na, int nd, const char* what)
{
    MPI_Datatype r;
    MT_OK(MPI_Type_commit(&t));
    r = rebuild(t, comb, ni, na, nd, what);
    if (r != MPI_DATATYPE_NULL) {
        MT_CHECK(dt_same_map(t, r, 1) && dt_same_map(t, r, 3), "%s: the rebuilt type differs",
                 what);
        MT_OK(MPI_Type_free(&r));
    }
    MT_OK(MPI_Type_free(&t));
}

static void every_combiner(void)
{
    MPI_Datatype t, inner;
    int lens[3] = {2, 0, 3}, idisp[3] = {4, 1, -2};
    MPI_Aint adisp[3] = {16, 2, -40};
    MPI_Datatype stypes[3] = {MPI_DOUBLE, MPI_CHAR, MPI_INT};
    int sizes[2] = {5, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    int gs[2] = {9, 4}, dist[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
    int dargs[2] = {2, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {3, 2};

    MT_OK(MPI_Type_vector(2, 1, 3, MPI_SHORT, &inner)); /* a derived child */

    MT_OK(MPI_Type_contiguous(3, inner, &t));
    round_trip(t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, "contiguous");
    MT_OK(MPI_Type_vector(3, 2, -4, inner, &t));
    round_trip(t, MPI_COMBINER_VECTOR, 3, 0, 1, "vector");
    MT_OK(MPI_Type_hvector(3, 2, 100, inner, &t));
    round_trip(t, MPI_COMBINER_HVECTOR, 2, 1, 1, "hvector (MPI-1)");
    MT_OK(MPI_Type_create_hvector(2, 1, -7, MPI_INT, &t));
    round_trip(t, MPI_COMBINER_HVECTOR, 2, 1, 1, "create_hvector");
    MT_OK(MPI_Type_indexed(3, lens, idisp, inner, &t));
    round_trip(t, MPI_COMBINER_INDEXED, 7, 0, 1, "indexed");
    MT_OK(MPI_Type_hindexed(3, lens, adisp, MPI_INT, &t));
    round_trip(t, MPI_COMBINER_HINDEXED, 4, 3, 1, "hindexed (MPI-1)");
    MT_OK(MPI_Type_create_hindexed(3, lens, adisp, inner, &t));
    round_trip(t, MPI_COMBINER_HINDEXED, 4, 3, 1, "create_hindexed");
    MT_OK(MPI_Type_create_indexed_block(3, 2, idisp, inner, &t));
    round_trip(t, MPI_COMBINER_INDEXED_BLOCK, 5, 0, 1, "indexed_block");
    MT_OK(MPI_Type_create_hindexed_block(3, 2, adisp, MPI_DOUBLE, &t));
    round_trip(t, MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1, "hindexed_block");
    stypes[1] = inner;
    MT_OK(MPI_Type_create_struct(3, lens, adisp, stypes, &t));
    round_trip(t, MPI_COMBINER_STRUCT, 4, 3, 3, "create_struct");
    MT_OK(MPI_Type_struct(3, lens, adisp, stypes, &t));
    round_trip(t, MPI_COMBINER_STRUCT, 4, 3, 3, "struct (MPI-1)");
    MT_OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, inner, &t));
    round_trip(t, MPI_COMBINER_SUBARRAY, 8, 0, 1, "subarray");
    MT_OK(MPI_Type_create_darray(6, 4, 2, gs, dist, dargs, ps, MPI_ORDER_C, MPI_FLOAT, &t));
    round_trip(t, MPI_COMBINER_DARRAY, 4 * 2 + 4, 0, 1, "darray");
    MT_OK(MPI_Type_create_resized(inner, -3, 50, &t));
    round_trip(t, MPI_COMBINER_RESIZED, 0, 2, 1, "resized");
    MT_OK(MPI_Type_dup(inner, &t));
    round_trip(t, MPI_COMBINER_DUP, 0, 0, 1, "dup");
    MT_OK(MPI_Type_contiguous(0, MPI_INT, &t));
    round_trip(t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, "contiguous(0)");
    MT_OK(MPI_Type_create_struct(0, lens, adisp, stypes, &t));
    round_trip(t, MPI_COMBINER_STRUCT, 1, 0, 0, "struct(0)");

    /* The contents of a vector: (count, blocklength, stride) and the child. */
    {
        int ints[3];
        MPI_Aint none[1];
        MPI_Datatype ty[1];
        int ni, na, nd, comb;
        MT_OK(MPI_Type_vector(5, 2, -3, inner, &t));
        MT_OK(MPI_Type_get_contents(t, 3, 0, 1, ints, none, ty));
        MT_CHECK(ints[0] == 5 && ints[1] == 2 && ints[2] == -3, "vector contents %d %d %d", ints[0],
                 ints[1], ints[2]);
        MT_OK(MPI_Type_get_envelope(ty[0], &ni, &na, &nd, &comb));
        MT_CHECK(comb == MPI_COMBINER_VECTOR && ni == 3, "the child comes back as a vector");
        /* the original child handle and the returned one can both be freed */
        MT_OK(MPI_Type_free(&ty[0]));
        MT_OK(MPI_Type_free(&t));
    }
    /* The child outlives its freed handle inside a parent, and get_contents
     * hands it out again. */
    {
        MPI_Datatype parent, ty[1], again;
        int ints[1];
        MPI_Aint none[1];
        MT_OK(MPI_Type_contiguous(2, inner, &parent));
        MT_OK(MPI_Type_free(&inner));
        MT_OK(MPI_Type_commit(&parent));
        MT_OK(MPI_Type_get_contents(parent, 1, 0, 1, ints, none, ty));
        MT_OK(MPI_Type_contiguous(2, ty[0], &again));
        MT_OK(MPI_Type_commit(&again));
        MT_CHECK(dt_same_map(parent, again, 2), "rebuilt from a freed child");
        MT_OK(MPI_Type_free(&ty[0]));
        MT_OK(MPI_Type_free(&again));
        MT_OK(MPI_Type_free(&parent));
    }
}

static void named(void)
{
    int ni, na, nd, comb, len;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Datatype t;
    int ints[1];
    MPI_Aint aints[1];
    MPI_Datatype types[1];
    MT_OK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb));
    MT_CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "MPI_INT envelope");
    MT_OK(MPI_Type_get_envelope(MPI_UB, &ni, &na, &nd, &comb));
    MT_CHECK(comb == MPI_COMBINER_NAMED, "MPI_UB envelope");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MT_ERR(MPI_ERR_TYPE, MPI_Type_get_contents(MPI_INT, 1, 1, 1, ints, aints, types));
    MT_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &t));
    MT_ERR(MPI_ERR_ARG, MPI_Type_get_contents(t, 2, 0, 1, ints, aints, types));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    /* names: predefined types answer their MPI name; derived start empty */
    MT_OK(MPI_Type_get_name(MPI_DOUBLE, name, &len));
    MT_CHECK(strcmp(name, "MPI_DOUBLE") == 0 && len == 10, "name of MPI_DOUBLE: '%s' (%d)", name,
             len);
    MT_OK(MPI_Type_get_name(MPI_2INT, name, &len));
    MT_CHECK(strcmp(name, "MPI_2INT") == 0, "name of MPI_2INT: '%s'", name);
    /* MPI_C_COMPLEX and its synonym MPI_C_FLOAT_COMPLEX are one handle: it
     * answers the standard's first name (MPICH's typename test expects it) */
    MT_OK(MPI_Type_get_name(MPI_C_COMPLEX, name, &len));
    MT_CHECK(strcmp(name, "MPI_C_COMPLEX") == 0, "name of MPI_C_COMPLEX: '%s'", name);
    MT_OK(MPI_Type_get_name(t, name, &len));
    MT_CHECK(len == 0 && name[0] == '\0', "a new type's name: '%s'", name);
    MT_OK(MPI_Type_set_name(t, "my vector"));
    MT_OK(MPI_Type_get_name(t, name, &len));
    MT_CHECK(strcmp(name, "my vector") == 0 && len == 9, "name after set: '%s'", name);
    {
        char longname[300];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = '\0';
        MT_OK(MPI_Type_set_name(t, longname));
        MT_OK(MPI_Type_get_name(t, name, &len));
        MT_CHECK(len == MPI_MAX_OBJECT_NAME - 1, "a long name is cut to %d: %d",
                 MPI_MAX_OBJECT_NAME - 1, len);
    }
    {
        MPI_Datatype d;
        MT_OK(MPI_Type_commit(&t));
        MT_OK(MPI_Type_dup(t, &d));
        MT_OK(MPI_Type_get_envelope(d, &ni, &na, &nd, &comb));
        MT_CHECK(comb == MPI_COMBINER_DUP && nd == 1, "dup envelope");
        /* a dup of a committed type is committed: usable at once */
        MT_CHECK(dt_same_map(t, d, 2), "dup has the same type map");
        MT_OK(MPI_Type_free(&d));
        MT_OK(MPI_Type_dup(MPI_INT, &d));
        MT_OK(MPI_Type_get_contents(d, 0, 0, 1, ints, aints, types));
        MT_CHECK(types[0] == MPI_INT, "dup of MPI_INT names MPI_INT");
        MT_OK(MPI_Type_free(&d));
    }
    MT_OK(MPI_Type_free(&t));
}

static void match_size(void)
{
    MPI_Datatype t;
    int size;
    struct {
        int cls, size;
    } cases[] = {{MPI_TYPECLASS_INTEGER, 1},
                 {MPI_TYPECLASS_INTEGER, 2},
                 {MPI_TYPECLASS_INTEGER, 4},
                 {MPI_TYPECLASS_INTEGER, 8},
                 {MPI_TYPECLASS_REAL, 4},
                 {MPI_TYPECLASS_REAL, 8},
                 {MPI_TYPECLASS_REAL, (int)sizeof(long double)},
                 {MPI_TYPECLASS_COMPLEX, 8},
                 {MPI_TYPECLASS_COMPLEX, 16}};
    size_t k;
    for (k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        int ni, na, nd, comb;
        MT_OK(MPI_Type_match_size(cases[k].cls, cases[k].size, &t));
        MT_OK(MPI_Type_size(t, &size));
        MT_CHECK(size == cases[k].size, "match_size(%d, %d) gave a type of %d bytes", cases[k].cls,
                 cases[k].size, size);
        MT_OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
        MT_CHECK(comb == MPI_COMBINER_NAMED, "match_size returns a named type");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MT_ERR(MPI_ERR_ARG, MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t));
    MT_ERR(MPI_ERR_ARG, MPI_Type_match_size(42, 4, &t));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    every_combiner();
    named();
    match_size();
    return mt_finalize();
}
