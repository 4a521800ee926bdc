/*
 * FT-MPI modes (docs/ftmpi.md): one rank is killed (SIGKILL) at a seeded
 * random point of a loop of collectives; the survivors check the state
 * after the recovery against the FT-MPI specification:
 *   - the attributes (modes as started, FTMPI_NUM_FAILED_PROCS = 1, the
 *     string of FTMPI_ERROR_FAILURE names the victim's rank);
 *   - MPI_COMM_WORLD: SHRINK renumbers (size - 1, ranks above the victim
 *     move down), BLANK keeps size and ranks, the victim is a hole
 *     (send/receive with it fail), collectives run over the live ranks
 *     (allreduce, bcast, gather with the hole's slot untouched);
 *   - a communicator made before the failure is invalid (MPI_ERR_COMM, local
 *     calls such as MPI_Comm_size too) and can be freed; so is a group
 *     (MPI_ERR_GROUP), even MPI_COMM_WORLD's and MPI_COMM_SELF's of before,
 *     while MPI_Comm_group of the re-created ones gives a valid group;
 *   - messages: a message sent before the failure is received after the
 *     recovery in CONT and never in RESET; a receive posted before the
 *     failure completes after it in CONT (with the sender's new rank) and
 *     fails in RESET;
 *   - ATOMIC: every survivor saw the failure at the same iteration;
 *   - the delete callbacks of MPI_COMM_WORLD's attributes ran in the order
 *     the attributes were set;
 *   - manual recovery: calls fail until the program recovers
 *     (MPIX_Ftmpi_recover or MPI_Comm_dup(MPI_COMM_WORLD), by the seed).
 * Run with ULMPI_FT=ulfm, ULMPI_FT_MODE=blank|shrink, ULMPI_FT_MSG_MODE,
 * ULMPI_FT_COLL_MODE, ULMPI_FT_RECOVERY; argument: the seed.
 */
#include <mpi.h>
#include <mpi-ext.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int errors = 0;
static int world_rank0 = -1;
static int order[4];
static int norder = 0;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: line %d: ", world_rank0, __LINE__);                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            ++errors;                                                                              \
        }                                                                                          \
    } while (0)

static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "ftmpi_modes: watchdog expired (a hang)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(3);
}

static int del_cb(MPI_Comm comm, int key, void* val, void* extra)
{
    (void)comm;
    (void)key;
    (void)val;
    if (norder < 4) {
        order[norder] = (int)(intptr_t)extra;
    }
    ++norder;
    return MPI_SUCCESS;
}

static int attr(int key)
{
    int* v = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, key, &v, &flag);
    return flag && v != NULL ? *v : -1;
}

/* The context id ulmpi reports in MPI_Comm_get_info (the low 16 bits: the
 * pair; above: the generation, which RESET recoveries change). */
static long context_id(MPI_Comm comm)
{
    MPI_Info info;
    char value[64] = "";
    int flag = 0;
    MPI_Comm_get_info(comm, &info);
    MPI_Info_get(info, "ulmpi_context_id", (int)sizeof value - 1, value, &flag);
    MPI_Info_free(&info);
    return flag ? strtol(value, NULL, 10) : -1;
}

static int env_is(const char* var, const char* value)
{
    const char* e = getenv(var);
    return e != NULL && strcmp(e, value) == 0;
}

int main(int argc, char** argv)
{
    signal(SIGALRM, watchdog);
    alarm(50);
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    world_rank0 = rank;
    const unsigned seed = argc > 1 ? (unsigned)atoi(argv[1]) : 1u;
    if (size < 3) {
        if (rank == 0) {
            printf("needs 3 ranks or more\n");
        }
        MPI_Finalize();
        return 1;
    }
    const int shrink = env_is("ULMPI_FT_MODE", "shrink");
    const int cont = env_is("ULMPI_FT_MSG_MODE", "cont");
    const int nonatomic = env_is("ULMPI_FT_COLL_MODE", "nonatomic");
    const int manual = env_is("ULMPI_FT_RECOVERY", "manual");

    CHECK(attr(FTMPI_COMM_MODE) == (shrink ? FTMPI_COMM_MODE_SHRINK : FTMPI_COMM_MODE_BLANK),
          "FTMPI_COMM_MODE is %d", attr(FTMPI_COMM_MODE));
    CHECK(attr(FTMPI_MSG_MODE) == (cont ? FTMPI_MSG_MODE_CONT : FTMPI_MSG_MODE_RESET),
          "FTMPI_MSG_MODE is %d", attr(FTMPI_MSG_MODE));
    CHECK(attr(FTMPI_COLL_MODE) == (nonatomic ? FTMPI_COLL_MODE_NONATOMIC : FTMPI_COLL_MODE_ATOMIC),
          "FTMPI_COLL_MODE is %d", attr(FTMPI_COLL_MODE));
    CHECK(attr(FTMPI_RECOVERY_MODE) ==
              (manual ? FTMPI_RECOVERY_MODE_MANUAL : FTMPI_RECOVERY_MODE_AUTO),
          "FTMPI_RECOVERY_MODE is %d", attr(FTMPI_RECOVERY_MODE));
    CHECK(attr(FTMPI_NUM_FAILED_PROCS) == 0, "FTMPI_NUM_FAILED_PROCS is %d before a failure",
          attr(FTMPI_NUM_FAILED_PROCS));

    /* The victim (never 0, which reports), the sender of the messages
     * that cross the failure, the iteration of the kill and whether the
     * victim dies before or after its part of that iteration. */
    const int victim = 1 + (int)(seed % (unsigned)(size - 1));
    const int sender = victim == 1 ? 2 : 1;
    const int kill_iter = (int)((seed / 7u) % 4u);
    const int kill_after = (int)((seed / 29u) % 2u);
    const int one_c = 1;

    int k1, k2;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_cb, &k1, (void*)(intptr_t)1);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_cb, &k2, (void*)(intptr_t)2);
    MPI_Comm_set_attr(MPI_COMM_WORLD, k1, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, k2, NULL);

    MPI_Comm sub;
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &sub) == MPI_SUCCESS, "MPI_Comm_dup failed");
    const long sub_id = context_id(sub);
    MPI_Group world_g0, self_g0, made_g0;
    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_g0) == MPI_SUCCESS, "MPI_Comm_group(world)");
    CHECK(MPI_Comm_group(MPI_COMM_SELF, &self_g0) == MPI_SUCCESS, "MPI_Comm_group(self)");
    {
        const int first = 0;
        CHECK(MPI_Group_incl(world_g0, 1, &first, &made_g0) == MPI_SUCCESS, "MPI_Group_incl");
    }
    /* Messages that cross the failure: sent and posted before anything
     * fails (the barrier), received after the recovery. */
    int pre = 1234, late = -1;
    MPI_Request posted = MPI_REQUEST_NULL;
    if (rank == sender) {
        CHECK(MPI_Send(&pre, 1, MPI_INT, 0, 77, MPI_COMM_WORLD) == MPI_SUCCESS, "send 77");
    }
    if (rank == 0) {
        CHECK(MPI_Irecv(&late, 1, MPI_INT, sender, 78, MPI_COMM_WORLD, &posted) == MPI_SUCCESS,
              "irecv 78");
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "barrier failed before the kill");

    int failed_at = -1;
    for (int it = 0; it < kill_iter + 40; ++it) {
        if (rank == victim && it == kill_iter && !kill_after) {
            usleep(100000); /* the others leave the barrier first (NONATOMIC) */
            raise(SIGKILL);
        }
        int one = 1, sum = 0;
        int rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == victim && it == kill_iter) {
            raise(SIGKILL);
        }
        if (rc != MPI_SUCCESS) {
            failed_at = it;
            break;
        }
        CHECK(sum == size, "allreduce before the failure gave %d", sum);
        usleep(2000);
    }
    CHECK(failed_at >= kill_iter, "no failure reported (failed_at %d, kill at %d)", failed_at,
          kill_iter);

    if (manual) {
        /* Failure recognized: communication waits for the recovery. */
        CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_ERR_OTHER,
              "a barrier before the manual recovery did not fail with MPI_ERR_OTHER");
        if (seed % 2 == 0) {
            CHECK(MPIX_Ftmpi_recover() == MPI_SUCCESS, "MPIX_Ftmpi_recover failed");
        } else {
            MPI_Comm d;
            CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d) == MPI_SUCCESS,
                  "MPI_Comm_dup(MPI_COMM_WORLD) as the recovery failed");
            MPI_Comm_free(&d);
        }
    }

    /* MPI_COMM_WORLD after the recovery. */
    int nrank, nsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &nrank);
    MPI_Comm_size(MPI_COMM_WORLD, &nsize);
    const int expect_size = shrink ? size - 1 : size;
    const int expect_rank = shrink && rank > victim ? rank - 1 : rank;
    const int new_sender = shrink && sender > victim ? sender - 1 : sender;
    CHECK(nsize == expect_size, "size %d after the recovery, expected %d", nsize, expect_size);
    CHECK(nrank == expect_rank, "rank %d after the recovery, expected %d", nrank, expect_rank);
    CHECK(norder == 2 && order[0] == 1 && order[1] == 2,
          "delete callbacks: %d ran, order %d %d (expected 1 then 2)", norder, order[0], order[1]);
    CHECK(attr(FTMPI_NUM_FAILED_PROCS) == 1, "FTMPI_NUM_FAILED_PROCS is %d",
          attr(FTMPI_NUM_FAILED_PROCS));
    {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        const int code = attr(FTMPI_ERROR_FAILURE);
        CHECK(MPI_Error_string(code, text, &len) == MPI_SUCCESS, "MPI_Error_string(%d)", code);
        char want[64];
        snprintf(want, sizeof want, "MPI_COMM_WORLD: %d", victim);
        CHECK(strstr(text, want) != NULL, "FTMPI_ERROR_FAILURE says '%s'", text);
    }

    /* A communicator of before the failure is invalid; freeing it works. */
    int ec = MPI_SUCCESS, cls = MPI_SUCCESS;
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    ec = MPI_Barrier(sub);
    MPI_Error_class(ec, &cls);
    CHECK(cls == MPI_ERR_COMM, "a barrier on a communicator of before the recovery gave %d", cls);
    {
        int n = -1;
        ec = MPI_Comm_size(sub, &n);
        MPI_Error_class(ec, &cls);
        CHECK(cls == MPI_ERR_COMM, "MPI_Comm_size of a communicator of before the recovery gave %d",
              cls);
    }
    CHECK(MPI_Comm_free(&sub) == MPI_SUCCESS, "freeing an invalid communicator failed");

    /* Groups of before the recovery are invalid too (MPI_ERR_GROUP through
     * MPI_COMM_WORLD's handler, which returns); freeing them works. */
    {
        MPI_Group old[3] = {world_g0, self_g0, made_g0};
        const char* what[3] = {"MPI_COMM_WORLD's group", "MPI_COMM_SELF's group", "a group made"};
        for (int i = 0; i < 3; ++i) {
            int n = -1;
            ec = MPI_Group_size(old[i], &n);
            MPI_Error_class(ec, &cls);
            CHECK(cls == MPI_ERR_GROUP, "MPI_Group_size of %s before the recovery gave %d", what[i],
                  cls);
            CHECK(MPI_Group_free(&old[i]) == MPI_SUCCESS && old[i] == MPI_GROUP_NULL,
                  "freeing %s before the recovery failed", what[i]);
        }
        MPI_Group now;
        int n = -1, wsize = -1;
        MPI_Comm_size(MPI_COMM_WORLD, &wsize);
        CHECK(MPI_Comm_group(MPI_COMM_WORLD, &now) == MPI_SUCCESS &&
                  MPI_Group_size(now, &n) == MPI_SUCCESS && n == wsize,
              "MPI_COMM_WORLD's group after the recovery: size %d of %d", n, wsize);
        MPI_Group_free(&now);
        CHECK(MPI_Comm_group(MPI_COMM_SELF, &now) == MPI_SUCCESS &&
                  MPI_Group_size(now, &n) == MPI_SUCCESS && n == 1,
              "MPI_COMM_SELF's group after the recovery: size %d", n);
        MPI_Group_free(&now);
    }

    /* Communicators re-created in the same order get the same context id
     * everywhere (the pair; RESET changes the generation above it). */
    {
        MPI_Comm again;
        CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &again) == MPI_SUCCESS, "dup after the recovery");
        const long id = context_id(again);
        CHECK(id >= 0 && (id & 0xffff) == (sub_id & 0xffff),
              "the re-created communicator has context id %ld, the first one had %ld", id, sub_id);
        CHECK(cont ? id == sub_id : id != sub_id,
              "%s: context id %ld after the recovery, %ld before", cont ? "CONT" : "RESET", id,
              sub_id);
        long lo_id = id, hi_id = id;
        MPI_Allreduce(MPI_IN_PLACE, &lo_id, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &hi_id, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
        CHECK(lo_id == hi_id, "context ids %ld..%ld differ between ranks", lo_id, hi_id);
        int s2 = 0;
        CHECK(MPI_Allreduce(&one_c, &s2, 1, MPI_INT, MPI_SUM, again) == MPI_SUCCESS &&
                  s2 == size - 1,
              "allreduce on the re-created communicator gave %d", s2);
        MPI_Comm_free(&again);
    }

    /* Collectives over the live ranks. */
    int one = 1, sum = 0;
    CHECK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          "allreduce after the recovery failed");
    CHECK(sum == size - 1, "allreduce after the recovery gave %d, expected %d", sum, size - 1);
    int b = nrank == 0 ? 42 : 0;
    CHECK(MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS && b == 42,
          "bcast after the recovery");
    int* all = malloc(sizeof(int) * (size_t)nsize);
    for (int i = 0; i < nsize; ++i) {
        all[i] = -7;
    }
    CHECK(MPI_Gather(&nrank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
          "gather after the recovery failed");
    if (nrank == 0) {
        for (int i = 0; i < nsize; ++i) {
            const int want = !shrink && i == victim ? -7 : i;
            CHECK(all[i] == want, "gather slot %d holds %d, expected %d", i, all[i], want);
        }
    }
    free(all);

    /* The collectives whose blocks are per member, and a neighbourhood one:
     * over the live members, a hole's block neither sent nor written. */
    int* vin = malloc(sizeof(int) * (size_t)nsize);
    int* vout = malloc(sizeof(int) * (size_t)nsize);
    int* ones = malloc(sizeof(int) * (size_t)nsize);
    int* bdispl = malloc(sizeof(int) * (size_t)nsize);
    MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * (size_t)nsize);
    int live_sum = 0;
    for (int i = 0; i < nsize; ++i) {
        vin[i] = (nrank + 1) * (i + 1);
        live_sum += !shrink && i == victim ? 0 : i + 1;
    }
    int rsb = -7;
    CHECK(MPI_Reduce_scatter_block(vin, &rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          "reduce_scatter_block after the recovery failed");
    CHECK(rsb == live_sum * (nrank + 1), "reduce_scatter_block gave %d, expected %d", rsb,
          live_sum * (nrank + 1));
    for (int i = 0; i < nsize; ++i) {
        vin[i] = nrank * 100 + i;
        vout[i] = -7;
        ones[i] = 1;
        bdispl[i] = i * (int)sizeof(int);
        types[i] = MPI_INT;
    }
    CHECK(MPI_Alltoallw(vin, ones, bdispl, types, vout, ones, bdispl, types, MPI_COMM_WORLD) ==
              MPI_SUCCESS,
          "alltoallw after the recovery failed");
    for (int i = 0; i < nsize; ++i) {
        const int want = !shrink && i == victim ? -7 : i * 100 + nrank;
        CHECK(vout[i] == want, "alltoallw block %d holds %d, expected %d", i, vout[i], want);
    }
    MPI_Comm ring;
    int periodic = 1;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, &nsize, &periodic, 0, &ring) == MPI_SUCCESS,
          "cart_create after the recovery failed");
    int nb[2] = {-7, -7};
    CHECK(MPI_Neighbor_allgather(&nrank, 1, MPI_INT, nb, 1, MPI_INT, ring) == MPI_SUCCESS,
          "neighbor_allgather after the recovery failed");
    for (int k = 0; k < 2; ++k) {
        const int from = (nrank + (k == 0 ? nsize - 1 : 1)) % nsize;
        const int want = !shrink && from == victim ? -7 : from;
        CHECK(nb[k] == want, "neighbor_allgather block %d holds %d, expected %d", k, nb[k], want);
    }
    MPI_Comm_free(&ring);
    free(vin);
    free(vout);
    free(ones);
    free(bdispl);
    free(types);

    /* ATOMIC: the failure was seen at one iteration everywhere. */
    int lo = failed_at, hi = failed_at;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!nonatomic) {
        CHECK(lo == hi, "ATOMIC: the failure was reported at iterations %d to %d", lo, hi);
    }

    /* BLANK: the victim is a hole. */
    if (!shrink && nrank == 0) {
        int x = 5;
        CHECK(MPI_Send(&x, 1, MPI_INT, victim, 5, MPI_COMM_WORLD) != MPI_SUCCESS,
              "a send to the hole succeeded");
        CHECK(MPI_Recv(&x, 1, MPI_INT, victim, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
                  MPI_SUCCESS,
              "a receive from the hole succeeded");
    }

    /* Messages across the failure. */
    if (nrank == new_sender) {
        int fresh = 4321, again = 5678;
        CHECK(MPI_Send(&fresh, 1, MPI_INT, 0, 77, MPI_COMM_WORLD) == MPI_SUCCESS, "send 77 after");
        CHECK(MPI_Send(&again, 1, MPI_INT, 0, 78, MPI_COMM_WORLD) == MPI_SUCCESS, "send 78 after");
    }
    if (nrank == 0) {
        int got = -1;
        MPI_Status st;
        CHECK(MPI_Recv(&got, 1, MPI_INT, new_sender, 77, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
              "receive 77 after the recovery failed");
        CHECK(got == (cont ? 1234 : 4321), "%s: first message of tag 77 is %d",
              cont ? "CONT" : "RESET", got);
        if (cont) {
            CHECK(MPI_Recv(&got, 1, MPI_INT, new_sender, 77, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
                      got == 4321,
                  "CONT: second message of tag 77 is %d", got);
            int rc = MPI_Wait(&posted, &st);
            CHECK(rc == MPI_SUCCESS && late == 5678,
                  "CONT: the receive posted before the failure: rc %d, value %d", rc, late);
            CHECK(rc != MPI_SUCCESS || st.MPI_SOURCE == new_sender,
                  "CONT: its source is %d, expected the sender's new rank %d", st.MPI_SOURCE,
                  new_sender);
        } else {
            int rc = MPI_Wait(&posted, &st);
            CHECK(rc != MPI_SUCCESS, "RESET: the receive posted before the failure completed "
                                     "(value %d)", late);
            CHECK(MPI_Recv(&got, 1, MPI_INT, new_sender, 78, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
                      got == 5678,
                  "RESET: message of tag 78 after the recovery is %d", got);
            int flag = 1;
            MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, &st);
            CHECK(!flag, "RESET: a message of before the failure arrived after the recovery");
        }
    }

    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (nrank == 0) {
        printf("victim %d killed at iteration %d (%s), failure reported at %d..%d\n", victim,
               kill_iter, kill_after ? "after its part" : "before its part", lo, hi);
        if (total == 0) {
            printf(" No Errors\n");
        } else {
            printf(" Found %d errors\n", total);
        }
    }
    MPI_Finalize();
    return 0;
}
