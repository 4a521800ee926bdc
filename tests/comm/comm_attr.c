/*
 * Attribute caching, MPI-2 and MPI-1 names: keyvals, set/get/delete, copy
 * callbacks on Comm_dup in set order (a callback may decline to copy),
 * delete callbacks on Comm_free in reverse set order, on replacement and
 * on delete; a freed keyval whose attribute still runs its callbacks;
 * errors returned by callbacks reach the caller (a failed copy drops the
 * new communicator after deleting what it copied; a failed delete keeps
 * the attribute and the communicator); the predefined attributes and
 * callbacks; datatype attributes through Type_dup and Type_free; keyvals
 * of the wrong kind. At MPI_Finalize, MPI_COMM_SELF's attributes are
 * deleted first, in reverse set order, while MPI still works: rank 0
 * prints "self attributes deleted: 321" (the testlist checks it). Any size.
 */
#include "mpitest.h"

static char events[512];
static int fail_copy_key = MPI_KEYVAL_INVALID;
static int fail_delete = 0;
static int my_class, my_code;

static void log_event(char kind, int which)
{
    size_t n = strlen(events);
    if (n + 4 < sizeof events) {
        events[n] = kind;
        events[n + 1] = (char)('0' + which);
        events[n + 2] = ' ';
        events[n + 3] = '\0';
    }
}

/* extra_state points at the key's number (1..5); values are small ints
 * cast to pointers. Copies add 10; key 3 declines to copy. */
static int copy_fn(MPI_Comm oldcomm, int keyval, void* extra, void* in, void* out, int* flag)
{
    int which = *(int*)extra;
    (void)oldcomm;
    log_event('c', which);
    if (keyval == fail_copy_key) {
        return my_code;
    }
    if (which == 3) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    *(void**)out = (void*)((char*)in + 10);
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void* value, void* extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    log_event('d', *(int*)extra);
    return fail_delete ? my_code : MPI_SUCCESS;
}

static int type_copy_fn(MPI_Datatype t, int keyval, void* extra, void* in, void* out, int* flag)
{
    (void)t;
    (void)keyval;
    log_event('C', *(int*)extra);
    *(void**)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int type_delete_fn(MPI_Datatype t, int keyval, void* value, void* extra)
{
    (void)t;
    (void)keyval;
    (void)value;
    log_event('D', *(int*)extra);
    return MPI_SUCCESS;
}

static char self_order[16];
static int self_delete(MPI_Comm comm, int keyval, void* value, void* extra)
{
    int one = 1, sum = 0;
    size_t n = strlen(self_order);
    (void)keyval;
    (void)extra;
    if (comm != MPI_COMM_SELF) {
        fprintf(stderr, "[%d] self_delete called on 0x%x\n", mt_rank, (unsigned)comm);
    }
    self_order[n] = (char)('0' + (int)(long)value);
    self_order[n + 1] = '\0';
    /* MPI still works here */
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != mt_size) {
        fprintf(stderr, "[%d] allreduce inside a delete callback at finalize gave %d\n", mt_rank,
                sum);
    }
    if (n + 1 == 3 && mt_rank == 0) {
        printf("self attributes deleted: %s\n", self_order);
        fflush(stdout);
    }
    return MPI_SUCCESS;
}

static void expect_events(const char* want, const char* what)
{
    MT_CHECK(strcmp(events, want) == 0, "%s: callbacks \"%s\", expected \"%s\"", what, events,
             want);
    events[0] = '\0';
}

static void* get(MPI_Comm c, int key, int* flag)
{
    void* v = NULL;
    MT_OK(MPI_Comm_get_attr(c, key, &v, flag));
    return v;
}

int main(int argc, char** argv)
{
    static int num[6] = {0, 1, 2, 3, 4, 5};
    int key[6];
    MPI_Comm c, d, e;
    int flag, i, saved;
    void* v;

    mt_init(&argc, &argv);
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Add_error_class(&my_class));
    MT_OK(MPI_Add_error_code(my_class, &my_code));
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    for (i = 1; i <= 5; ++i) {
        MT_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &key[i], &num[i]));
    }

    /* ---- set in the order 2, 1, 3; get; no callbacks yet */
    MT_OK(MPI_Comm_set_attr(c, key[2], (void*)2));
    MT_OK(MPI_Comm_set_attr(c, key[1], (void*)1));
    MT_OK(MPI_Comm_set_attr(c, key[3], (void*)3));
    v = get(c, key[1], &flag);
    MT_CHECK(flag && v == (void*)1, "get key 1: flag %d value %p", flag, v);
    v = get(c, key[4], &flag);
    MT_CHECK(!flag, "key 4 was never set but flag is %d", flag);
    expect_events("", "set");

    /* ---- dup: copies in set order; key 3 declines */
    MT_OK(MPI_Comm_dup(c, &d));
    expect_events("c2 c1 c3 ", "dup");
    v = get(d, key[1], &flag);
    MT_CHECK(flag && v == (void*)11, "copied key 1: flag %d value %p", flag, v);
    v = get(d, key[2], &flag);
    MT_CHECK(flag && v == (void*)12, "copied key 2: flag %d value %p", flag, v);
    v = get(d, key[3], &flag);
    MT_CHECK(!flag, "key 3 was copied though its callback declined");

    /* ---- replace: the old value's delete runs first; delete; delete again */
    MT_OK(MPI_Comm_set_attr(d, key[2], (void*)22));
    expect_events("d2 ", "replace");
    v = get(d, key[2], &flag);
    MT_CHECK(flag && v == (void*)22, "replaced key 2: %p", v);
    MT_OK(MPI_Comm_delete_attr(d, key[1]));
    expect_events("d1 ", "delete");
    v = get(d, key[1], &flag);
    MT_CHECK(!flag, "deleted key 1 still there");
    MT_OK(MPI_Comm_delete_attr(d, key[1]));
    expect_events("", "delete of an absent attribute");

    /* ---- free: deletes in reverse set order (2 was set before 4 and 5) */
    MT_OK(MPI_Comm_set_attr(d, key[4], (void*)4));
    MT_OK(MPI_Comm_set_attr(d, key[5], (void*)5));
    MT_OK(MPI_Comm_free(&d));
    expect_events("d5 d4 d2 ", "free");

    /* ---- a freed keyval: unusable by the program, its attributes live on */
    MT_OK(MPI_Comm_dup(c, &d)); /* d has keys 2 and 1 (copied) */
    expect_events("c2 c1 c3 ", "second dup");
    saved = key[1];
    MT_OK(MPI_Comm_free_keyval(&key[1]));
    MT_CHECK(key[1] == MPI_KEYVAL_INVALID, "freed keyval is 0x%x", (unsigned)key[1]);
    /* while attributes keep it, the freed key still names them (MPICH too) */
    v = get(d, saved, &flag);
    MT_CHECK(flag && v == (void*)11, "freed key: flag %d value %p", flag, v);
    {
        int again = saved;
        MT_OK(MPI_Comm_free_keyval(&again)); /* a second free does nothing */
    }
    MT_OK(MPI_Comm_dup(d, &e)); /* the freed key's copy callback still runs */
    expect_events("c2 c1 ", "dup with a freed keyval");
    MT_OK(MPI_Comm_free(&e));
    expect_events("d1 d2 ", "free with a freed keyval");
    MT_OK(MPI_Comm_free(&d));
    expect_events("d1 d2 ", "free of the other one");
    MT_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &key[1], &num[1]));
    MT_CHECK(key[1] != saved, "a keyval number was reused");
    /* a freed key whose last attribute goes is gone */
    {
        int k, kcopy;
        MT_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &k, &num[5]));
        kcopy = k;
        MT_OK(MPI_Comm_set_attr(c, k, (void*)5));
        MT_OK(MPI_Comm_free_keyval(&k));
        MT_OK(MPI_Comm_delete_attr(c, kcopy));
        expect_events("d5 ", "delete through a freed key");
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_get_attr(c, kcopy, &v, &flag));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_set_attr(c, kcopy, NULL));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_free_keyval(&kcopy));
    }

    /* ---- a copy callback fails: the error comes back, the copies are deleted */
    MT_OK(MPI_Comm_set_attr(c, key[4], (void*)4)); /* c: 2, 1(old key, still set), 3, 4 */
    fail_copy_key = key[4];
    e = MPI_COMM_WORLD;
    {
        int rc = MPI_Comm_dup(c, &e), cls = -1;
        MPI_Error_class(rc, &cls);
        MT_CHECK(rc == my_code, "failed copy: dup returned %d, expected %d", rc, my_code);
        MT_CHECK(cls == my_class, "failed copy: class %d, expected %d", cls, my_class);
        MT_CHECK(e == MPI_COMM_NULL, "failed copy: newcomm is 0x%x", (unsigned)e);
    }
    expect_events("c2 c1 c3 c4 d1 d2 ", "failed copy");
    fail_copy_key = MPI_KEYVAL_INVALID;

    /* ---- a delete callback fails: the attribute and the communicator stay */
    MT_OK(MPI_Comm_dup(c, &d));
    expect_events("c2 c1 c3 c4 ", "dup for the failing deletes");
    fail_delete = 1;
    {
        int rc = MPI_Comm_delete_attr(d, key[4]);
        MT_CHECK(rc == my_code, "failed delete: returned %d", rc);
        v = get(d, key[4], &flag);
        MT_CHECK(flag && v == (void*)14, "the attribute went with a failed delete");
        rc = MPI_Comm_free(&d);
        MT_CHECK(rc == my_code, "failed free: returned %d", rc);
        MT_CHECK(d != MPI_COMM_NULL, "the handle was cleared by a failed free");
    }
    expect_events("d4 d4 ", "failing deletes");
    fail_delete = 0;
    MT_OK(MPI_Comm_free(&d));
    expect_events("d4 d1 d2 ", "free after the failures");

    /* ---- predefined attributes */
    {
        int* ip;
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ip, &flag));
        MT_CHECK(flag && *ip == 0x7fffffff, "MPI_TAG_UB: flag %d value %d", flag, flag ? *ip : 0);
        MT_OK(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &ip, &flag));
        MT_CHECK(flag && *ip >= 32767, "MPI_TAG_UB through MPI_Attr_get");
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &ip, &flag));
        MT_CHECK(flag && *ip == MPI_PROC_NULL, "MPI_HOST: %d", flag ? *ip : -99);
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &ip, &flag));
        MT_CHECK(flag && *ip == MPI_ANY_SOURCE, "MPI_IO: %d", flag ? *ip : -99);
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &ip, &flag));
        MT_CHECK(!flag || *ip == 0, "MPI_WTIME_IS_GLOBAL: %d", *ip);
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &ip, &flag));
        MT_CHECK(flag && *ip >= mt_size, "MPI_UNIVERSE_SIZE: %d", flag ? *ip : -99);
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &ip, &flag));
        MT_CHECK(flag && *ip == 0, "MPI_APPNUM: %d", flag ? *ip : -99);
        MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &ip, &flag));
        MT_CHECK(flag && *ip == my_code, "MPI_LASTUSEDCODE %d, expected %d", *ip, my_code);
        {
            int cls2;
            MT_OK(MPI_Add_error_class(&cls2));
            MT_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &ip, &flag));
            MT_CHECK(*ip == cls2, "MPI_LASTUSEDCODE did not follow MPI_Add_error_class");
        }
        MT_OK(MPI_Comm_get_attr(c, MPI_TAG_UB, &ip, &flag));
        MT_CHECK(flag && *ip == 0x7fffffff, "MPI_TAG_UB on a dup");
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_HOST));
        saved = MPI_TAG_UB;
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_free_keyval(&saved));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &ip, &flag));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_set_attr(MPI_COMM_WORLD, 0x64401234, NULL));
        MT_ERR(MPI_ERR_ARG, MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL, &flag));
        MT_ERR(MPI_ERR_COMM, MPI_Comm_set_attr(MPI_COMM_NULL, key[2], NULL));
    }

    /* ---- MPI-1 names and the predefined callbacks */
    {
        int k1, k2, k3;
        MPI_Comm f;
        MT_OK(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &k1, NULL));
        MT_OK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &k2, NULL));
        MT_OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &k3, NULL));
        MT_OK(MPI_Attr_put(c, k1, (void*)101));
        MT_OK(MPI_Attr_put(c, k2, (void*)102));
        MT_OK(MPI_Attr_put(c, k3, (void*)103));
        MT_OK(MPI_Comm_dup(c, &f));
        events[0] = '\0';
        MT_OK(MPI_Attr_get(f, k1, &v, &flag));
        MT_CHECK(flag && v == (void*)101, "MPI_DUP_FN did not copy");
        MT_OK(MPI_Attr_get(f, k2, &v, &flag));
        MT_CHECK(!flag, "MPI_NULL_COPY_FN copied");
        MT_OK(MPI_Attr_get(f, k3, &v, &flag));
        MT_CHECK(flag && v == (void*)103, "MPI_COMM_DUP_FN did not copy");
        MT_OK(MPI_Attr_delete(f, k1));
        MT_OK(MPI_Attr_get(f, k1, &v, &flag));
        MT_CHECK(!flag, "MPI_Attr_delete did not delete");
        MT_OK(MPI_Comm_free(&f));
        expect_events("d4 d1 d2 ", "free of a communicator with MPI-1 attributes");
        MT_OK(MPI_Attr_delete(c, k1));
        MT_OK(MPI_Attr_delete(c, k2));
        MT_OK(MPI_Attr_delete(c, k3));
        MT_OK(MPI_Keyval_free(&k1));
        MT_OK(MPI_Keyval_free(&k2));
        MT_OK(MPI_Comm_free_keyval(&k3));
        MT_CHECK(k1 == MPI_KEYVAL_INVALID, "MPI_Keyval_free did not reset the key");
    }

    /* ---- datatype attributes */
    {
        int tk[3], ck;
        MPI_Datatype t, t2;
        for (i = 1; i <= 2; ++i) {
            MT_OK(MPI_Type_create_keyval(type_copy_fn, type_delete_fn, &tk[i], &num[i]));
        }
        MT_OK(MPI_Type_contiguous(3, MPI_INT, &t));
        MT_OK(MPI_Type_set_attr(t, tk[2], (void*)2));
        MT_OK(MPI_Type_set_attr(t, tk[1], (void*)1));
        MT_OK(MPI_Type_get_attr(t, tk[2], &v, &flag));
        MT_CHECK(flag && v == (void*)2, "type attribute: %p", v);
        MT_OK(MPI_Type_dup(t, &t2));
        expect_events("C2 C1 ", "Type_dup");
        MT_OK(MPI_Type_get_attr(t2, tk[1], &v, &flag));
        MT_CHECK(flag && v == (void*)1, "copied type attribute: %p", v);
        MT_OK(MPI_Type_commit(&t2));
        {
            /* the duplicate still communicates */
            int a[3] = {1, 2, 3}, b[3] = {0, 0, 0};
            MT_OK(MPI_Sendrecv(a, 1, t2, mt_rank, 0, b, 1, t2, mt_rank, 0, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
            MT_CHECK(b[2] == 3, "send with the duplicate type");
        }
        MT_OK(MPI_Type_free(&t2));
        expect_events("D1 D2 ", "Type_free of the duplicate");
        MT_OK(MPI_Type_delete_attr(t, tk[2]));
        expect_events("D2 ", "Type_delete_attr");
        MT_OK(MPI_Type_free(&t));
        expect_events("D1 ", "Type_free");
        /* predefined types carry attributes too */
        MT_OK(MPI_Type_set_attr(MPI_INT, tk[1], (void*)7));
        MT_OK(MPI_Type_get_attr(MPI_INT, tk[1], &v, &flag));
        MT_CHECK(flag && v == (void*)7, "attribute on MPI_INT");
        MT_OK(MPI_Type_delete_attr(MPI_INT, tk[1]));
        expect_events("D1 ", "delete on MPI_INT");
        /* keys of the other kind */
        MT_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ck, NULL));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Type_set_attr(MPI_INT, ck, NULL));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_set_attr(c, tk[1], NULL));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Comm_get_attr(c, tk[1], &v, &flag));
        MT_ERR(MPI_ERR_KEYVAL, MPI_Type_free_keyval(&ck));
        MT_ERR(MPI_ERR_TYPE, MPI_Type_set_attr(MPI_DATATYPE_NULL, tk[1], NULL));
        MT_OK(MPI_Comm_free_keyval(&ck));
        MT_OK(MPI_Type_free_keyval(&tk[1]));
        MT_OK(MPI_Type_free_keyval(&tk[2]));
    }

    /* ---- MPI_COMM_SELF: deleted at MPI_Finalize, in reverse set order */
    {
        int sk;
        MT_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &sk, NULL));
        MT_OK(MPI_Comm_set_attr(MPI_COMM_SELF, sk, (void*)1));
        MT_OK(MPI_Comm_free_keyval(&sk)); /* the attribute outlives its key */
        MT_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &sk, NULL));
        MT_OK(MPI_Comm_set_attr(MPI_COMM_SELF, sk, (void*)2));
        MT_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &sk, NULL));
        MT_OK(MPI_Comm_set_attr(MPI_COMM_SELF, sk, (void*)3));
    }

    MT_OK(MPI_Comm_free(&c));
    events[0] = '\0';
    for (i = 2; i <= 5; ++i) {
        MT_OK(MPI_Comm_free_keyval(&key[i]));
    }
    MT_OK(MPI_Comm_free_keyval(&key[1]));
    return mt_finalize();
}
