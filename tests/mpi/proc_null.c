/*
 * MPI_PROC_NULL as peer of every point-to-point call: sends complete at
 * once and move nothing, receives complete at once with the status
 * (MPI_SOURCE = MPI_PROC_NULL, MPI_TAG = MPI_ANY_TAG, count 0) and an
 * untouched buffer. Through blocking, nonblocking, persistent, combined
 * and probe calls and every completion call; on MPI_COMM_WORLD and
 * MPI_COMM_SELF.
 */
#include "mpitest.h"

static void check_null_status(const MPI_Status* st, const char* what)
{
    int c = -1, e = -1;
    MPI_Count ex = -1;
    MT_CHECK(st->MPI_SOURCE == MPI_PROC_NULL, "%s: source %d, expected MPI_PROC_NULL", what,
             st->MPI_SOURCE);
    MT_CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: tag %d, expected MPI_ANY_TAG", what, st->MPI_TAG);
    MT_OK(MPI_Get_count(st, MPI_INT, &c));
    MT_OK(MPI_Get_elements(st, MPI_DOUBLE, &e));
    MT_OK(MPI_Get_elements_x(st, MPI_BYTE, &ex));
    MT_CHECK(c == 0 && e == 0 && ex == 0, "%s: count %d elements %d/%lld, expected 0", what, c, e,
             (long long)ex);
    {
        int flag = 1;
        MT_OK(MPI_Test_cancelled(st, &flag));
        MT_CHECK(flag == 0, "%s: the status says cancelled", what);
    }
}

static void poison(MPI_Status* st, int n) { memset(st, 0x5a, sizeof *st * (size_t)n); }

#define CHECK_UNTOUCHED(what)                                                                   \
    do {                                                                                        \
        int k_;                                                                                 \
        for (k_ = 0; k_ < 4; ++k_) {                                                            \
            MT_CHECK(buf[k_] == -7, "%s wrote the buffer", what);                               \
        }                                                                                       \
    } while (0)

int main(int argc, char** argv)
{
    int buf[4] = {-7, -7, -7, -7};
    int src[4] = {1, 2, 3, 4};
    MPI_Status st, sts[8];
    MPI_Request r[8];
    int flag, idx, outcount, indices[8];
    int c;
    void* bbuf = malloc(1000);
    MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};

    mt_init(&argc, &argv);
    MT_OK(MPI_Buffer_attach(bbuf, 1000));

    for (c = 0; c < 2; ++c) {
        MPI_Comm comm = comms[c];
        /* Blocking. */
        MT_OK(MPI_Send(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm));
        MT_OK(MPI_Bsend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm));
        MT_OK(MPI_Ssend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm));
        MT_OK(MPI_Rsend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm));
        poison(&st, 1);
        MT_OK(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &st));
        check_null_status(&st, "MPI_Recv");
        poison(&st, 1);
        MT_OK(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, comm, &st));
        check_null_status(&st, "MPI_Recv(MPI_ANY_TAG)");
        MT_OK(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, MPI_STATUS_IGNORE));
        CHECK_UNTOUCHED("MPI_Recv");

        /* Combined. */
        poison(&st, 1);
        MT_OK(MPI_Sendrecv(src, 4, MPI_INT, MPI_PROC_NULL, 1, buf, 4, MPI_INT, MPI_PROC_NULL, 1,
                           comm, &st));
        check_null_status(&st, "MPI_Sendrecv");
        CHECK_UNTOUCHED("MPI_Sendrecv");
        poison(&st, 1);
        MT_OK(MPI_Sendrecv_replace(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1, comm, &st));
        check_null_status(&st, "MPI_Sendrecv_replace");
        CHECK_UNTOUCHED("MPI_Sendrecv_replace");

        /* Probes. */
        poison(&st, 1);
        MT_OK(MPI_Probe(MPI_PROC_NULL, 1, comm, &st));
        check_null_status(&st, "MPI_Probe");
        poison(&st, 1);
        flag = 0;
        MT_OK(MPI_Iprobe(MPI_PROC_NULL, MPI_ANY_TAG, comm, &flag, &st));
        MT_CHECK(flag == 1, "MPI_Iprobe(MPI_PROC_NULL) flag %d", flag);
        check_null_status(&st, "MPI_Iprobe");

        /* Nonblocking, completed by each completion call in turn. */
        MT_OK(MPI_Isend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[0]));
        MT_OK(MPI_Ibsend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[1]));
        MT_OK(MPI_Issend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[2]));
        MT_OK(MPI_Irsend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[3]));
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[4]));
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, comm, &r[5]));
        poison(sts, 6);
        flag = 0;
        MT_OK(MPI_Testall(6, r, &flag, sts));
        MT_CHECK(flag == 1, "MPI_Testall of MPI_PROC_NULL requests: flag %d", flag);
        check_null_status(&sts[4], "MPI_Irecv + MPI_Testall");
        check_null_status(&sts[5], "MPI_Irecv(MPI_ANY_TAG) + MPI_Testall");
        for (idx = 0; idx < 6; ++idx) {
            MT_CHECK(r[idx] == MPI_REQUEST_NULL, "request %d not freed", idx);
        }
        CHECK_UNTOUCHED("MPI_Irecv");

        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[0]));
        poison(&st, 1);
        MT_OK(MPI_Wait(&r[0], &st));
        check_null_status(&st, "MPI_Irecv + MPI_Wait");
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[0]));
        poison(&st, 1);
        flag = 0;
        MT_OK(MPI_Test(&r[0], &flag, &st));
        MT_CHECK(flag == 1, "MPI_Test of an MPI_PROC_NULL receive: flag %d", flag);
        check_null_status(&st, "MPI_Irecv + MPI_Test");

        r[0] = MPI_REQUEST_NULL;
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[1]));
        poison(&st, 1);
        MT_OK(MPI_Waitany(2, r, &idx, &st));
        MT_CHECK(idx == 1, "MPI_Waitany index %d", idx);
        check_null_status(&st, "MPI_Irecv + MPI_Waitany");
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[1]));
        poison(&st, 1);
        flag = 0;
        MT_OK(MPI_Testany(2, r, &idx, &flag, &st));
        MT_CHECK(flag == 1 && idx == 1, "MPI_Testany flag %d index %d", flag, idx);
        check_null_status(&st, "MPI_Irecv + MPI_Testany");
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[1]));
        MT_OK(MPI_Isend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[2]));
        poison(sts, 3);
        MT_OK(MPI_Waitsome(3, r, &outcount, indices, sts));
        MT_CHECK(outcount == 2, "MPI_Waitsome outcount %d", outcount);
        if (outcount == 2) {
            int k = indices[0] == 1 ? 0 : 1;
            MT_CHECK(indices[k] == 1 && indices[1 - k] == 2, "MPI_Waitsome indices %d %d",
                     indices[0], indices[1]);
            check_null_status(&sts[k], "MPI_Irecv + MPI_Waitsome");
        }
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[1]));
        poison(sts, 3);
        MT_OK(MPI_Testsome(3, r, &outcount, indices, sts));
        MT_CHECK(outcount == 1 && indices[0] == 1, "MPI_Testsome outcount %d index %d", outcount,
                 indices[0]);
        check_null_status(&sts[0], "MPI_Irecv + MPI_Testsome");
        MT_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[1]));
        MT_OK(MPI_Request_free(&r[1]));
        MT_OK(MPI_Issend(src, 4, MPI_INT, MPI_PROC_NULL, 1, comm, &r[1]));
        MT_OK(MPI_Cancel(&r[1]));
        MT_OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        CHECK_UNTOUCHED("nonblocking receives");
    }
    {
        void* b;
        int s;
        MT_OK(MPI_Buffer_detach(&b, &s));
    }
    free(bbuf);
    return mt_finalize();
}
