/*
 * Error handlers and user error codes: Comm_create_errhandler and the
 * MPI-1 Errhandler_create/set; a user handler is called with the
 * communicator and the code, by failing calls of every family (point-to-
 * point, communicator constructors, groups with no communicator: the
 * world's handler) and by Comm_call_errhandler; handlers are inherited by
 * Comm_dup/split; freeing a handler still in use; Add_error_class / code /
 * string with Error_class and Error_string.
 *
 * Arguments: "fatal" -- MPI_Comm_call_errhandler on MPI_COMM_WORLD with
 * the default handler ends the job with the class as exit code (16);
 * "selfinter" -- a self-intercommunicator under MPI_ERRORS_ARE_FATAL ends
 * the job with MPI_ERR_COMM (5). The testlist checks both.
 */
#include "mpitest.h"

static int calls;
static MPI_Comm last_comm;
static int last_code;

static void handler(MPI_Comm* comm, int* code, ...)
{
    ++calls;
    last_comm = *comm;
    last_code = *code;
}

static void expect_call(MPI_Comm comm, int cls, const char* what)
{
    int c = -1;
    MPI_Error_class(last_code, &c);
    MT_CHECK(calls == 1, "%s: handler called %d times", what, calls);
    MT_CHECK(last_comm == comm, "%s: handler got comm 0x%x, expected 0x%x", what,
             (unsigned)last_comm, (unsigned)comm);
    MT_CHECK(c == cls, "%s: handler got class %d, expected %d", what, c, cls);
    calls = 0;
}

int main(int argc, char** argv)
{
    MPI_Errhandler eh, eh1, got;
    MPI_Comm dup, dup2, x;
    int rc, v = 0, cls, code, code2, len, res;
    char str[MPI_MAX_ERROR_STRING];

    mt_init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
        if (mt_rank == 0) {
            printf("calling the fatal handler\n");
            fflush(stdout);
        }
        mt_barrier();
        MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
        printf("MPI_Comm_call_errhandler returned under MPI_ERRORS_ARE_FATAL\n");
        MPI_Finalize();
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "selfinter") == 0) {
        MPI_Intercomm_create(MPI_COMM_WORLD, 0, MPI_COMM_WORLD, 0, 7, &x);
        printf("a self-intercommunicator was made\n");
        MPI_Finalize();
        return 1;
    }

    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Comm_create_errhandler(handler, &eh));
    MT_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MT_OK(MPI_Comm_set_errhandler(dup, eh));
    MT_OK(MPI_Comm_get_errhandler(dup, &got));
    MT_CHECK(got == eh, "get_errhandler gave 0x%x", (unsigned)got);
    MT_OK(MPI_Errhandler_free(&got));

    /* failing calls reach the handler, which gets the communicator */
    rc = MPI_Send(&v, 1, MPI_INT, mt_size, 0, dup);
    MT_CHECK(rc != MPI_SUCCESS, "a send to rank %d succeeded", mt_size);
    expect_call(dup, MPI_ERR_RANK, "send to a bad rank");
    rc = MPI_Comm_split(dup, -4, 0, &x);
    expect_call(dup, MPI_ERR_ARG, "split with a bad colour");
    rc = MPI_Cart_shift(dup, 0, 1, &v, &v);
    expect_call(dup, MPI_ERR_TOPOLOGY, "Cart_shift without a topology");
    rc = MPI_Comm_set_attr(dup, MPI_TAG_UB, NULL);
    expect_call(dup, MPI_ERR_KEYVAL, "setting a predefined attribute");

    /* inherited by a dup and a split */
    MT_OK(MPI_Comm_dup(dup, &dup2));
    rc = MPI_Recv(&v, 1, MPI_INT, mt_size + 4, 0, dup2, MPI_STATUS_IGNORE);
    expect_call(dup2, MPI_ERR_RANK, "receive on the dup");
    MT_OK(MPI_Comm_free(&dup2));
    MT_OK(MPI_Comm_split(dup, 0, 0, &dup2));
    rc = MPI_Send(&v, -1, MPI_INT, 0, 0, dup2);
    expect_call(dup2, MPI_ERR_COUNT, "send on the split");
    MT_OK(MPI_Comm_free(&dup2));

    /* Comm_call_errhandler */
    MT_OK(MPI_Add_error_class(&cls));
    MT_OK(MPI_Add_error_code(cls, &code));
    MT_OK(MPI_Comm_call_errhandler(dup, code));
    MT_CHECK(calls == 1 && last_code == code && last_comm == dup,
             "Comm_call_errhandler: %d calls, code %d", calls, last_code);
    calls = 0;
    MT_OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, code)); /* MPI_ERRORS_RETURN: nothing */
    MT_CHECK(calls == 0, "MPI_ERRORS_RETURN called the handler");

    /* freed while in use: it stays attached and working */
    MT_OK(MPI_Errhandler_free(&eh));
    MT_CHECK(eh == MPI_ERRHANDLER_NULL, "freed handler is 0x%x", (unsigned)eh);
    rc = MPI_Send(&v, 1, MPI_INT, -9, 0, dup);
    expect_call(dup, MPI_ERR_RANK, "after Errhandler_free");
    MT_OK(MPI_Comm_get_errhandler(dup, &got));
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, got));
    MT_OK(MPI_Errhandler_free(&got));
    rc = MPI_Send(&v, 1, MPI_INT, 3, 0, MPI_COMM_SELF);
    expect_call(MPI_COMM_SELF, MPI_ERR_RANK, "the handler moved to MPI_COMM_SELF");
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    /* the MPI-1 names; errors without a communicator go to the world's handler */
    MT_OK(MPI_Errhandler_create(handler, &eh1));
    MT_OK(MPI_Errhandler_set(MPI_COMM_WORLD, eh1));
    rc = MPI_Group_size(MPI_GROUP_NULL, &v);
    expect_call(MPI_COMM_WORLD, MPI_ERR_GROUP, "group error (no communicator)");
    rc = MPI_Info_delete(MPI_INFO_NULL, "k");
    expect_call(MPI_COMM_WORLD, MPI_ERR_INFO, "info error (no communicator)");
    v = 3;
    rc = MPI_Dims_create(10, 1, &v);
    expect_call(MPI_COMM_WORLD, MPI_ERR_DIMS, "Dims_create that cannot be satisfied");
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Errhandler_free(&eh1));

    /* error handler objects */
    got = MPI_ERRORS_RETURN;
    MT_OK(MPI_Errhandler_free(&got)); /* what get_errhandler gave may be predefined */
    MT_CHECK(got == MPI_ERRHANDLER_NULL, "freed predefined handler is 0x%x", (unsigned)got);
    got = 0x54000777;
    MT_ERR(MPI_ERR_ARG, MPI_Errhandler_free(&got));
    MT_ERR(MPI_ERR_ARG, MPI_Comm_set_errhandler(dup, 0x54000777));
    MT_ERR(MPI_ERR_ARG, MPI_Comm_create_errhandler(NULL, &got));
    MT_ERR(MPI_ERR_COMM, MPI_Comm_call_errhandler(MPI_COMM_NULL, MPI_ERR_OTHER));
    MT_CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN,
             "errhandler c2f/f2c");

    /* user classes, codes and strings */
    MT_OK(MPI_Error_class(code, &res));
    MT_CHECK(res == cls, "class of the user code: %d, expected %d", res, cls);
    MT_OK(MPI_Error_class(cls, &res));
    MT_CHECK(res == cls, "class of the user class: %d", res);
    MT_OK(MPI_Error_string(code, str, &len));
    MT_CHECK(len == 0 && str[0] == '\0', "string of a code without one: \"%s\"", str);
    MT_OK(MPI_Add_error_string(code, "the frobnicator jammed"));
    MT_OK(MPI_Error_string(code, str, &len));
    MT_CHECK(strcmp(str, "the frobnicator jammed") == 0 && len == 22, "user string \"%s\"", str);
    MT_OK(MPI_Add_error_string(cls, "frobnication errors"));
    MT_OK(MPI_Error_string(cls, str, &len));
    MT_CHECK(strcmp(str, "frobnication errors") == 0, "user class string \"%s\"", str);
    MT_OK(MPI_Add_error_string(code, "replaced"));
    MT_OK(MPI_Error_string(code, str, &len));
    MT_CHECK(strcmp(str, "replaced") == 0, "replaced string \"%s\"", str);
    MT_OK(MPI_Add_error_code(MPI_ERR_RANK, &code2)); /* a code in a predefined class */
    MT_OK(MPI_Error_class(code2, &res));
    MT_CHECK(res == MPI_ERR_RANK && code2 > code, "code in MPI_ERR_RANK: class %d", res);
    MT_ERR(MPI_ERR_ARG, MPI_Add_error_code(code2 + 1000, &res));
    MT_ERR(MPI_ERR_ARG, MPI_Add_error_code(code, &res)); /* a code, not a class */
    MT_ERR(MPI_ERR_ARG, MPI_Add_error_string(MPI_ERR_RANK, "mine"));
    MT_ERR(MPI_ERR_ARG, MPI_Add_error_string(code2 + 1000, "nobody's"));
    {
        char big[MPI_MAX_ERROR_STRING + 10];
        memset(big, 'e', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        MT_ERR(MPI_ERR_ARG, MPI_Add_error_string(code, big));
    }
    MT_ERR(MPI_ERR_ARG, MPI_Add_error_class(NULL));

    MT_OK(MPI_Comm_free(&dup));
    (void)rc;
    return mt_finalize();
}
