/*
 * The small MPI-2/3 functions: generalized requests (complete then wait,
 * test before completion, Waitall mixed with point-to-point, cancel, free
 * before completion, the query callback's status and error), Request_get_status
 * (does not free; on sends, receives, MPI_REQUEST_NULL),
 * Status_set_elements(_x) with Get_count / Get_elements,
 * Status_set_cancelled, Alloc_mem / Free_mem, Pcontrol, the c2f / f2c
 * round trips of every handle kind, Query_thread / Is_thread_main,
 * Get_version / Get_library_version. Any size.
 */
#include "mpitest.h"

struct greq_state {
    int queried;
    int freed;
    int cancelled;
    int cancel_complete;
    int query_error;
    int count;
};

static int query_fn(void* extra, MPI_Status* st)
{
    struct greq_state* s = (struct greq_state*)extra;
    ++s->queried;
    MPI_Status_set_elements(st, MPI_INT, s->count);
    MPI_Status_set_cancelled(st, s->cancelled);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = 1234;
    return s->query_error;
}

static int free_fn(void* extra)
{
    ++((struct greq_state*)extra)->freed;
    return MPI_SUCCESS;
}

static int cancel_fn(void* extra, int complete)
{
    struct greq_state* s = (struct greq_state*)extra;
    s->cancelled = 1;
    s->cancel_complete = complete;
    return MPI_SUCCESS;
}

static void test_grequest(void)
{
    struct greq_state s;
    MPI_Request r, rs[3];
    MPI_Status st, sts[3];
    int flag, n, v = 5, w = 0, cls;

    /* complete, then wait: query then free, the status is the query's */
    memset(&s, 0, sizeof s);
    s.count = 7;
    MT_OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &r));
    MT_OK(MPI_Test(&r, &flag, &st));
    MT_CHECK(!flag, "an incomplete generalized request tested complete");
    MT_OK(MPI_Request_get_status(r, &flag, &st));
    MT_CHECK(!flag, "Request_get_status: complete before Grequest_complete");
    MT_OK(MPI_Grequest_complete(r));
    MT_OK(MPI_Request_get_status(r, &flag, &st));
    MT_CHECK(flag && s.queried == 1 && s.freed == 0, "get_status: flag %d queried %d freed %d",
             flag, s.queried, s.freed);
    MT_OK(MPI_Wait(&r, &st));
    MT_CHECK(r == MPI_REQUEST_NULL, "the request was not freed");
    MT_CHECK(s.queried == 2 && s.freed == 1, "wait: queried %d freed %d", s.queried, s.freed);
    MT_OK(MPI_Get_count(&st, MPI_INT, &n));
    MT_CHECK(n == 7 && st.MPI_TAG == 1234, "status from the query: count %d tag %d", n,
             st.MPI_TAG);

    /* in a Waitall with point-to-point */
    memset(&s, 0, sizeof s);
    MT_OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &rs[0]));
    MT_OK(MPI_Isend(&v, 1, MPI_INT, mt_rank, 3, MPI_COMM_WORLD, &rs[1]));
    MT_OK(MPI_Irecv(&w, 1, MPI_INT, mt_rank, 3, MPI_COMM_WORLD, &rs[2]));
    MT_OK(MPI_Grequest_complete(rs[0]));
    MT_OK(MPI_Waitall(3, rs, sts));
    MT_CHECK(w == 5 && s.freed == 1, "Waitall with a generalized request");

    /* cancel before completion: the callback learns it was not complete */
    memset(&s, 0, sizeof s);
    MT_OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &r));
    MT_OK(MPI_Cancel(&r));
    MT_CHECK(s.cancelled && !s.cancel_complete, "cancel callback: %d %d", s.cancelled,
             s.cancel_complete);
    MT_OK(MPI_Grequest_complete(r));
    MT_OK(MPI_Wait(&r, &st));
    MT_OK(MPI_Test_cancelled(&st, &flag));
    MT_CHECK(flag, "the query's cancelled flag did not reach the status");

    /* freed before completion: free_fn runs at Grequest_complete */
    memset(&s, 0, sizeof s);
    MT_OK(MPI_Grequest_start(query_fn, free_fn, NULL, &s, &r));
    {
        MPI_Request keep = r;
        MT_OK(MPI_Request_free(&r));
        MT_CHECK(r == MPI_REQUEST_NULL && s.freed == 0, "Request_free: %d", s.freed);
        MT_OK(MPI_Grequest_complete(keep));
        MT_CHECK(s.freed == 1 && s.queried == 0, "complete after free: freed %d queried %d",
                 s.freed, s.queried);
    }

    /* the query's error becomes the completion's */
    memset(&s, 0, sizeof s);
    s.query_error = MPI_ERR_OTHER;
    MT_OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s, &r));
    MT_OK(MPI_Grequest_complete(r));
    MT_ERR(MPI_ERR_OTHER, MPI_Wait(&r, &st));
    MT_CHECK(s.freed == 1, "free_fn after a failing query");
    MT_ERR(MPI_ERR_REQUEST, MPI_Grequest_complete(MPI_REQUEST_NULL));
    MPI_Error_class(MPI_ERR_REQUEST, &cls);
    (void)cls;
}

static void test_get_status(void)
{
    int v = 9, w = 0, flag, n, p = mt_size, r = mt_rank;
    MPI_Request sr, rr;
    MPI_Status st;
    int to = (r + 1) % p, from = (r + p - 1) % p;

    MT_OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    MT_CHECK(flag && st.MPI_SOURCE == MPI_ANY_SOURCE, "get_status of MPI_REQUEST_NULL");
    MT_OK(MPI_Irecv(&w, 1, MPI_INT, from, 6, MPI_COMM_WORLD, &rr));
    MT_OK(MPI_Isend(&v, 1, MPI_INT, to, 6, MPI_COMM_WORLD, &sr));
    do {
        MT_OK(MPI_Request_get_status(rr, &flag, &st));
    } while (!flag);
    MT_CHECK(rr != MPI_REQUEST_NULL, "Request_get_status freed the request");
    MT_CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 6, "get_status: source %d tag %d",
             st.MPI_SOURCE, st.MPI_TAG);
    MT_OK(MPI_Get_count(&st, MPI_INT, &n));
    MT_CHECK(n == 1, "get_status count %d", n);
    MT_OK(MPI_Request_get_status(rr, &flag, MPI_STATUS_IGNORE)); /* again */
    MT_CHECK(flag, "second get_status");
    MT_OK(MPI_Wait(&rr, &st));
    MT_CHECK(w == 9 && st.MPI_SOURCE == from, "the receive after get_status");
    do {
        MT_OK(MPI_Request_get_status(sr, &flag, MPI_STATUS_IGNORE));
    } while (!flag);
    MT_OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    MT_ERR(MPI_ERR_REQUEST, MPI_Request_get_status(0x6c00fff0, &flag, &st));
}

static void test_status(void)
{
    MPI_Status st;
    int n, flag;
    MPI_Count nx;
    MPI_Datatype pair;

    memset(&st, 0, sizeof st);
    MT_OK(MPI_Status_set_elements(&st, MPI_DOUBLE, 3));
    MT_OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
    MT_CHECK(n == 3, "set_elements 3 doubles: Get_count %d", n);
    MT_OK(MPI_Get_elements(&st, MPI_DOUBLE, &n));
    MT_CHECK(n == 3, "Get_elements %d", n);
    MT_OK(MPI_Get_count(&st, MPI_INT, &n));
    MT_CHECK(n == 6, "as ints: %d", n);
    MT_OK(MPI_Status_set_elements_x(&st, MPI_CHAR, (MPI_Count)5000000000LL));
    MT_OK(MPI_Get_elements_x(&st, MPI_CHAR, &nx));
    MT_CHECK(nx == (MPI_Count)5000000000LL, "set_elements_x: %lld", (long long)nx);
    MT_OK(MPI_Get_count(&st, MPI_CHAR, &n));
    MT_CHECK(n == MPI_UNDEFINED, "a count beyond int: %d", n);
    MT_OK(MPI_Status_set_elements(&st, MPI_INT, 0));
    MT_OK(MPI_Get_count(&st, MPI_INT, &n));
    MT_CHECK(n == 0, "zero elements: %d", n);
    MT_OK(MPI_Status_set_cancelled(&st, 1));
    MT_OK(MPI_Test_cancelled(&st, &flag));
    MT_CHECK(flag, "set_cancelled(1)");
    MT_OK(MPI_Status_set_elements(&st, MPI_INT, 2)); /* keeps the cancelled bit */
    MT_OK(MPI_Test_cancelled(&st, &flag));
    MT_CHECK(flag, "set_elements cleared the cancelled bit");
    MT_OK(MPI_Status_set_cancelled(&st, 0));
    MT_OK(MPI_Test_cancelled(&st, &flag));
    MT_CHECK(!flag, "set_cancelled(0)");
    MT_OK(MPI_Get_count(&st, MPI_INT, &n));
    MT_CHECK(n == 2, "set_cancelled changed the count: %d", n);
    /* a derived type: elements count whole elements */
    MT_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    MT_OK(MPI_Type_commit(&pair));
    MT_OK(MPI_Status_set_elements(&st, pair, 3));
    MT_OK(MPI_Get_count(&st, pair, &n));
    MT_CHECK(n == 3, "derived: Get_count %d", n);
    MT_OK(MPI_Type_free(&pair));
    MT_ERR(MPI_ERR_COUNT, MPI_Status_set_elements(&st, MPI_INT, -1));
    MT_ERR(MPI_ERR_TYPE, MPI_Status_set_elements(&st, MPI_DATATYPE_NULL, 1));
    MT_ERR(MPI_ERR_ARG, MPI_Status_set_cancelled(MPI_STATUS_IGNORE, 1));
}

static void test_mem_and_handles(void)
{
    double* d = NULL;
    char* z = NULL;
    int i, provided, flag, version, subversion, len;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Info info;

    MT_OK(MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &d));
    MT_CHECK(d != NULL, "Alloc_mem gave NULL");
    for (i = 0; i < 1000; ++i) {
        d[i] = i;
    }
    MT_OK(MPI_Free_mem(d));
    MT_OK(MPI_Info_create(&info));
    MT_OK(MPI_Alloc_mem(0, info, &z)); /* zero bytes, with an info */
    MT_OK(MPI_Free_mem(z));
    MT_OK(MPI_Info_free(&info));
    MT_ERR(MPI_ERR_ARG, MPI_Alloc_mem(-1, MPI_INFO_NULL, &z));
    MT_ERR(MPI_ERR_INFO, MPI_Alloc_mem(8, 0x5c000777, &z));
    MT_OK(MPI_Pcontrol(0));
    MT_OK(MPI_Pcontrol(2, "extra", 3));

    MT_CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "comm");
    MT_CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "type");
    MT_CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "group");
    MT_CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM, "op");
    MT_CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN,
             "errhandler");
    MT_CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL, "info");
    MT_CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "request");
    MT_CHECK(MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL, "win");
    MT_CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "file");
    MT_CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC,
             "message");

    MT_OK(MPI_Query_thread(&provided));
    MT_CHECK(provided == MPI_THREAD_SINGLE, "Query_thread %d", provided);
    MT_OK(MPI_Is_thread_main(&flag));
    MT_CHECK(flag, "Is_thread_main");
    MT_OK(MPI_Get_version(&version, &subversion));
    MT_CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION, "Get_version");
    MT_OK(MPI_Get_library_version(lib, &len));
    MT_CHECK(len > 0 && strstr(lib, "ulmpi") != NULL && strstr(lib, "communicators") != NULL,
             "library version \"%s\"", lib);
}

int main(int argc, char** argv)
{
    mt_init(&argc, &argv);
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    test_grequest();
    test_get_status();
    test_status();
    test_mem_and_handles();
    return mt_finalize();
}
