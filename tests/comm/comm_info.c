/*
 * Info objects: create, set (replacing in place), get (truncation to
 * valuelen), get_valuelen, delete, dup (a deep copy), get_nkeys,
 * get_nthkey (set order), free; MPI_INFO_ENV; the limits
 * (MPI_MAX_INFO_KEY / VAL) and the error classes MPI_ERR_INFO,
 * MPI_ERR_INFO_KEY, MPI_ERR_INFO_VALUE, MPI_ERR_INFO_NOKEY, MPI_ERR_ARG.
 * Any size.
 */
#include "mpitest.h"

int main(int argc, char** argv)
{
    MPI_Info info, dup, bad;
    char v[MPI_MAX_INFO_VAL + 8], k[MPI_MAX_INFO_KEY + 8];
    int flag, n, len;

    mt_init(&argc, &argv);
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MT_OK(MPI_Info_create(&info));
    MT_OK(MPI_Info_get_nkeys(info, &n));
    MT_CHECK(n == 0, "a new info has %d keys", n);
    MT_OK(MPI_Info_set(info, "b_key", "one"));
    MT_OK(MPI_Info_set(info, "a_key", "two"));
    MT_OK(MPI_Info_set(info, "c_key", "three"));
    MT_OK(MPI_Info_set(info, "b_key", "uno")); /* replaces in place */
    MT_OK(MPI_Info_get_nkeys(info, &n));
    MT_CHECK(n == 3, "nkeys %d", n);
    MT_OK(MPI_Info_get_nthkey(info, 0, k));
    MT_CHECK(strcmp(k, "b_key") == 0, "key 0 is \"%s\"", k);
    MT_OK(MPI_Info_get_nthkey(info, 1, k));
    MT_CHECK(strcmp(k, "a_key") == 0, "key 1 is \"%s\"", k);
    MT_OK(MPI_Info_get_nthkey(info, 2, k));
    MT_CHECK(strcmp(k, "c_key") == 0, "key 2 is \"%s\"", k);
    MT_OK(MPI_Info_get(info, "b_key", MPI_MAX_INFO_VAL, v, &flag));
    MT_CHECK(flag && strcmp(v, "uno") == 0, "b_key = \"%s\"", v);
    MT_OK(MPI_Info_get_valuelen(info, "c_key", &len, &flag));
    MT_CHECK(flag && len == 5, "valuelen of c_key %d", len);
    MT_OK(MPI_Info_get_valuelen(info, "nokey", &len, &flag));
    MT_CHECK(!flag, "valuelen of a missing key");
    /* truncation: valuelen characters and a NUL */
    memset(v, 'x', sizeof v);
    MT_OK(MPI_Info_get(info, "c_key", 2, v, &flag));
    MT_CHECK(flag && strcmp(v, "th") == 0, "truncated to \"%s\"", v);
    MT_OK(MPI_Info_get(info, "c_key", 0, v, &flag));
    MT_CHECK(flag && v[0] == '\0', "truncated to nothing: \"%s\"", v);
    MT_OK(MPI_Info_get(info, "missing", MPI_MAX_INFO_VAL, v, &flag));
    MT_CHECK(!flag, "a missing key was found");

    /* dup is a deep copy */
    MT_OK(MPI_Info_dup(info, &dup));
    MT_OK(MPI_Info_delete(info, "a_key"));
    MT_OK(MPI_Info_get(dup, "a_key", MPI_MAX_INFO_VAL, v, &flag));
    MT_CHECK(flag && strcmp(v, "two") == 0, "the dup lost a_key");
    MT_OK(MPI_Info_get_nkeys(info, &n));
    MT_CHECK(n == 2, "nkeys after delete %d", n);
    MT_OK(MPI_Info_get_nthkey(info, 1, k));
    MT_CHECK(strcmp(k, "c_key") == 0, "key 1 after delete is \"%s\"", k);
    MT_ERR(MPI_ERR_INFO_NOKEY, MPI_Info_delete(info, "a_key"));
    MT_OK(MPI_Info_free(&dup));
    MT_CHECK(dup == MPI_INFO_NULL, "freed info is 0x%x", (unsigned)dup);

    /* limits */
    memset(k, 'k', sizeof k);
    k[MPI_MAX_INFO_KEY - 1] = '\0'; /* the longest key */
    MT_OK(MPI_Info_set(info, k, "v"));
    MT_OK(MPI_Info_get(info, k, 10, v, &flag));
    MT_CHECK(flag && strcmp(v, "v") == 0, "longest key");
    k[MPI_MAX_INFO_KEY - 1] = 'k';
    k[MPI_MAX_INFO_KEY] = '\0'; /* one too long */
    MT_ERR(MPI_ERR_INFO_KEY, MPI_Info_set(info, k, "v"));
    MT_ERR(MPI_ERR_INFO_KEY, MPI_Info_get(info, k, 10, v, &flag));
    MT_ERR(MPI_ERR_INFO_KEY, MPI_Info_set(info, "", "v"));
    MT_ERR(MPI_ERR_INFO_KEY, MPI_Info_delete(info, NULL));
    memset(v, 'v', sizeof v);
    v[MPI_MAX_INFO_VAL - 1] = '\0'; /* the longest value */
    MT_OK(MPI_Info_set(info, "long", v));
    MT_OK(MPI_Info_get_valuelen(info, "long", &len, &flag));
    MT_CHECK(len == MPI_MAX_INFO_VAL - 1, "longest value length %d", len);
    v[MPI_MAX_INFO_VAL - 1] = 'v';
    v[MPI_MAX_INFO_VAL] = '\0';
    MT_ERR(MPI_ERR_INFO_VALUE, MPI_Info_set(info, "long", v));
    MT_ERR(MPI_ERR_INFO_VALUE, MPI_Info_set(info, "k", ""));
    MT_ERR(MPI_ERR_INFO_VALUE, MPI_Info_set(info, "k", NULL));
    MT_ERR(MPI_ERR_ARG, MPI_Info_get(info, "k", -1, v, &flag));
    MT_ERR(MPI_ERR_ARG, MPI_Info_get_nthkey(info, 99, k));
    MT_ERR(MPI_ERR_ARG, MPI_Info_get_nthkey(info, -1, k));
    MT_ERR(MPI_ERR_ARG, MPI_Info_get_nkeys(info, NULL));

    /* invalid objects */
    bad = MPI_INFO_NULL;
    MT_ERR(MPI_ERR_INFO, MPI_Info_set(bad, "k", "v"));
    MT_ERR(MPI_ERR_INFO, MPI_Info_free(&bad));
    MT_ERR(MPI_ERR_INFO, MPI_Info_get_nkeys(0x5c000999, &n));
    MT_ERR(MPI_ERR_INFO, MPI_Info_dup(MPI_COMM_WORLD, &dup));
    bad = info;
    MT_OK(MPI_Info_free(&info));
    MT_ERR(MPI_ERR_INFO, MPI_Info_get_nkeys(bad, &n)); /* freed */

    /* MPI_INFO_ENV: predefined, cannot be freed */
    MT_OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    MT_CHECK(n >= 1, "MPI_INFO_ENV has %d keys", n);
    MT_OK(MPI_Info_get(MPI_INFO_ENV, "maxprocs", MPI_MAX_INFO_VAL, v, &flag));
    MT_CHECK(flag && atoi(v) == mt_size, "MPI_INFO_ENV maxprocs \"%s\"", flag ? v : "");
    MT_OK(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL, v, &flag));
    MT_CHECK(flag && strstr(v, "comm_info") != NULL, "MPI_INFO_ENV command \"%s\"", flag ? v : "");
    MT_OK(MPI_Info_get(MPI_INFO_ENV, "thread_level", MPI_MAX_INFO_VAL, v, &flag));
    MT_CHECK(flag && strcmp(v, "MPI_THREAD_SINGLE") == 0, "MPI_INFO_ENV thread_level \"%s\"", v);
    MT_OK(MPI_Info_dup(MPI_INFO_ENV, &dup));
    MT_OK(MPI_Info_free(&dup));
    bad = MPI_INFO_ENV;
    MT_ERR(MPI_ERR_INFO, MPI_Info_free(&bad));
    MT_CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_ENV)) == MPI_INFO_ENV, "info c2f/f2c");

    return mt_finalize();
}
