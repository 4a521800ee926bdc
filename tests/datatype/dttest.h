/*
 * dttest.h -- helpers for the datatype test programs (on top of
 * tests/mpi/mpitest.h).
 *
 * dt_image(type, count, ...) packs `count` elements of a type out of a
 * patterned arena (byte at offset o from the arena's middle is dt_pat(o)),
 * so two types with the same type map (for those counts) give the same
 * image.
 */
#ifndef ULMPI_TESTS_DTTEST_H
#define ULMPI_TESTS_DTTEST_H

#include "mpitest.h"

#define DT_ARENA (1 << 20)

static unsigned char* dt_arena_mem MT_UNUSED = NULL;

static inline unsigned char dt_pat(long o)
{
    unsigned long u = (unsigned long)(o + DT_ARENA);
    return (unsigned char)(u * 131u + (u >> 8) * 7u + (u >> 16) * 3u + 1u);
}

/* The middle of a patterned arena of DT_ARENA bytes each side. */
static inline unsigned char* dt_arena(void)
{
    long o;
    if (dt_arena_mem == NULL) {
        dt_arena_mem = (unsigned char*)malloc(2 * DT_ARENA);
        for (o = -DT_ARENA; o < DT_ARENA; ++o) {
            dt_arena_mem[o + DT_ARENA] = dt_pat(o);
        }
    }
    return dt_arena_mem + DT_ARENA;
}

/* Packs count elements of type from the arena into a malloc'ed image;
 * *len = its size in bytes. */
static inline unsigned char* dt_image(MPI_Datatype type, int count, int* len)
{
    int size = 0, pos = 0;
    unsigned char* img;
    MPI_Pack_size(count, type, MPI_COMM_WORLD, &size);
    img = (unsigned char*)malloc((size_t)size + 1);
    MT_OK(MPI_Pack(dt_arena(), count, type, img, size, &pos, MPI_COMM_WORLD));
    *len = pos;
    return img;
}

/* Same type map for `count` elements (and same extent)? */
static inline int dt_same_map(MPI_Datatype a, MPI_Datatype b, int count)
{
    int la = 0, lb = 0, same;
    MPI_Aint lba, ea, lbb, eb;
    unsigned char* ia = dt_image(a, count, &la);
    unsigned char* ib = dt_image(b, count, &lb);
    MPI_Type_get_extent(a, &lba, &ea);
    MPI_Type_get_extent(b, &lbb, &eb);
    same = la == lb && memcmp(ia, ib, (size_t)la) == 0 && lba == lbb && ea == eb;
    free(ia);
    free(ib);
    return same;
}

#endif /* ULMPI_TESTS_DTTEST_H */
