/*
 * Completion calls: MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testall,
 * MPI_Waitany, MPI_Testany, MPI_Waitsome, MPI_Testsome, with
 *   - MPI_REQUEST_NULL entries and arrays of nothing else (and count 0),
 *   - inactive persistent requests (they count as null; they stay allocated),
 *   - requests that cannot complete yet (the peer sends only after a token),
 *   - arrays mixing sends, receives, null and inactive entries.
 * Each rank works with a partner (rank ^ 1, or itself when it has none).
 */
#include "mpitest.h"

#define N 6

static void check_empty(const MPI_Status* st, const char* what)
{
    int cnt = -1;
    MPI_Get_count(st, MPI_BYTE, &cnt);
    MT_CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE, "%s: empty status has source %d", what,
             st->MPI_SOURCE);
    MT_CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: empty status has tag %d", what, st->MPI_TAG);
    MT_CHECK(cnt == 0, "%s: empty status has count %d", what, cnt);
}

static void poison(MPI_Status* st, int n)
{
    memset(st, 0x5a, sizeof *st * (size_t)n);
}

int main(int argc, char** argv)
{
    int partner;
    int i;
    MPI_Request reqs[N];
    MPI_Status sts[N];
    MPI_Status st;
    int idx, flag, outcount, indices[N];
    int sbuf[N], rbuf[N];

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;

    /* --- Only null requests. -------------------------------------------- */
    {
        MPI_Request r = MPI_REQUEST_NULL;
        poison(&st, 1);
        MT_OK(MPI_Wait(&r, &st));
        check_empty(&st, "MPI_Wait(MPI_REQUEST_NULL)");
        MT_CHECK(r == MPI_REQUEST_NULL, "MPI_Wait changed a null request");
        flag = 0;
        poison(&st, 1);
        MT_OK(MPI_Test(&r, &flag, &st));
        MT_CHECK(flag == 1, "MPI_Test(MPI_REQUEST_NULL): flag %d", flag);
        check_empty(&st, "MPI_Test(MPI_REQUEST_NULL)");
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));

        for (i = 0; i < N; ++i) {
            reqs[i] = MPI_REQUEST_NULL;
        }
        poison(sts, N);
        MT_OK(MPI_Waitall(N, reqs, sts));
        for (i = 0; i < N; ++i) {
            check_empty(&sts[i], "MPI_Waitall of null requests");
        }
        MT_OK(MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE));
        MT_OK(MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE));
        flag = 0;
        MT_OK(MPI_Testall(N, reqs, &flag, sts));
        MT_CHECK(flag == 1, "MPI_Testall of null requests: flag %d", flag);
        flag = 0;
        MT_OK(MPI_Testall(0, NULL, &flag, MPI_STATUSES_IGNORE));
        MT_CHECK(flag == 1, "MPI_Testall of nothing: flag %d", flag);

        idx = 12345;
        poison(&st, 1);
        MT_OK(MPI_Waitany(N, reqs, &idx, &st));
        MT_CHECK(idx == MPI_UNDEFINED, "MPI_Waitany of null requests: index %d", idx);
        check_empty(&st, "MPI_Waitany of null requests");
        idx = 12345;
        MT_OK(MPI_Waitany(0, NULL, &idx, MPI_STATUS_IGNORE));
        MT_CHECK(idx == MPI_UNDEFINED, "MPI_Waitany of nothing: index %d", idx);
        idx = 12345;
        flag = 0;
        MT_OK(MPI_Testany(N, reqs, &idx, &flag, &st));
        MT_CHECK(flag == 1 && idx == MPI_UNDEFINED, "MPI_Testany of null requests: flag %d index %d",
                 flag, idx);
        outcount = 12345;
        MT_OK(MPI_Waitsome(N, reqs, &outcount, indices, sts));
        MT_CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome of null requests: outcount %d", outcount);
        outcount = 12345;
        MT_OK(MPI_Testsome(N, reqs, &outcount, indices, sts));
        MT_CHECK(outcount == MPI_UNDEFINED, "MPI_Testsome of null requests: outcount %d", outcount);
        outcount = 12345;
        MT_OK(MPI_Waitsome(0, NULL, &outcount, NULL, MPI_STATUSES_IGNORE));
        MT_CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome of nothing: outcount %d", outcount);
    }

    /* --- Inactive persistent requests count as null. --------------------- */
    {
        MPI_Request p[2];
        MT_OK(MPI_Recv_init(rbuf, 1, MPI_INT, partner, 50, MPI_COMM_WORLD, &p[0]));
        MT_OK(MPI_Send_init(sbuf, 1, MPI_INT, partner, 50, MPI_COMM_WORLD, &p[1]));
        poison(&st, 1);
        MT_OK(MPI_Wait(&p[0], &st));
        check_empty(&st, "MPI_Wait on an inactive persistent request");
        MT_CHECK(p[0] != MPI_REQUEST_NULL, "MPI_Wait freed an inactive persistent request");
        flag = 0;
        MT_OK(MPI_Test(&p[1], &flag, &st));
        MT_CHECK(flag == 1, "MPI_Test on an inactive persistent request: flag %d", flag);
        MT_CHECK(p[1] != MPI_REQUEST_NULL, "MPI_Test freed an inactive persistent request");
        idx = 12345;
        MT_OK(MPI_Waitany(2, p, &idx, &st));
        MT_CHECK(idx == MPI_UNDEFINED, "MPI_Waitany of inactive requests: index %d", idx);
        idx = 12345;
        flag = 0;
        MT_OK(MPI_Testany(2, p, &idx, &flag, &st));
        MT_CHECK(flag == 1 && idx == MPI_UNDEFINED, "MPI_Testany of inactive: flag %d index %d",
                 flag, idx);
        outcount = 12345;
        MT_OK(MPI_Waitsome(2, p, &outcount, indices, sts));
        MT_CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome of inactive: outcount %d", outcount);
        outcount = 12345;
        MT_OK(MPI_Testsome(2, p, &outcount, indices, sts));
        MT_CHECK(outcount == MPI_UNDEFINED, "MPI_Testsome of inactive: outcount %d", outcount);
        poison(sts, 2);
        MT_OK(MPI_Waitall(2, p, sts));
        check_empty(&sts[0], "MPI_Waitall of inactive [0]");
        check_empty(&sts[1], "MPI_Waitall of inactive [1]");
        flag = 0;
        MT_OK(MPI_Testall(2, p, &flag, sts));
        MT_CHECK(flag == 1, "MPI_Testall of inactive: flag %d", flag);
        MT_CHECK(p[0] != MPI_REQUEST_NULL && p[1] != MPI_REQUEST_NULL,
                 "inactive persistent requests were freed");

        /* Started, completed, inactive again. */
        sbuf[0] = 1000 + mt_rank;
        rbuf[0] = -1;
        MT_OK(MPI_Startall(2, p));
        MT_OK(MPI_Waitall(2, p, sts));
        MT_CHECK(rbuf[0] == 1000 + partner, "persistent receive got %d", rbuf[0]);
        MT_CHECK(sts[0].MPI_SOURCE == partner && sts[0].MPI_TAG == 50,
                 "persistent receive status: source %d tag %d", sts[0].MPI_SOURCE, sts[0].MPI_TAG);
        MT_CHECK(p[0] != MPI_REQUEST_NULL && p[1] != MPI_REQUEST_NULL,
                 "completed persistent requests were freed");
        MT_OK(MPI_Wait(&p[0], &st));
        check_empty(&st, "MPI_Wait on a persistent request after its completion");
        MT_OK(MPI_Request_free(&p[0]));
        MT_OK(MPI_Request_free(&p[1]));
        MT_CHECK(p[0] == MPI_REQUEST_NULL && p[1] == MPI_REQUEST_NULL,
                 "MPI_Request_free did not set MPI_REQUEST_NULL");
    }

    /* --- Requests that cannot complete until a token goes out. ---------- */
    {
        MPI_Request r;
        MPI_Request arr[3];
        int v = -1;
        int token = 0;
        MT_OK(MPI_Irecv(&v, 1, MPI_INT, partner, 60, MPI_COMM_WORLD, &r));
        /* The partner sends tag 60 only after our token: nothing can match. */
        for (i = 0; i < 100; ++i) {
            flag = 1;
            MT_OK(MPI_Test(&r, &flag, &st));
            MT_CHECK(flag == 0, "MPI_Test completed a receive nobody sent");
            if (flag) {
                break;
            }
        }
        arr[0] = MPI_REQUEST_NULL;
        arr[1] = r;
        arr[2] = MPI_REQUEST_NULL;
        flag = 1;
        MT_OK(MPI_Testall(3, arr, &flag, sts));
        MT_CHECK(flag == 0, "MPI_Testall completed a receive nobody sent");
        flag = 1;
        idx = 12345;
        MT_OK(MPI_Testany(3, arr, &idx, &flag, &st));
        MT_CHECK(flag == 0 && idx == MPI_UNDEFINED, "MPI_Testany: flag %d index %d (expected 0, "
                 "MPI_UNDEFINED)", flag, idx);
        outcount = 12345;
        MT_OK(MPI_Testsome(3, arr, &outcount, indices, sts));
        MT_CHECK(outcount == 0, "MPI_Testsome: outcount %d, expected 0", outcount);
        MT_CHECK(arr[1] == r, "a test changed a pending request");

        MT_OK(MPI_Send(&token, 1, MPI_INT, partner, 61, MPI_COMM_WORLD));
        MT_OK(MPI_Recv(&token, 1, MPI_INT, partner, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        token = 7000 + mt_rank;
        {
            MPI_Request s;
            MT_OK(MPI_Isend(&token, 1, MPI_INT, partner, 60, MPI_COMM_WORLD, &s));
            flag = 0;
            idx = -1;
            while (!flag) {
                MT_OK(MPI_Testany(3, arr, &idx, &flag, &st));
            }
            MT_CHECK(idx == 1, "MPI_Testany index %d, expected 1", idx);
            MT_CHECK(arr[1] == MPI_REQUEST_NULL, "MPI_Testany did not free the request");
            MT_CHECK(v == 7000 + partner, "received %d, expected %d", v, 7000 + partner);
            MT_CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 60,
                     "MPI_Testany status: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
            MT_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        }
    }

    /* --- Mixed arrays: null, inactive, receives, sends. ----------------- */
    {
        MPI_Request pers;
        int round;
        MT_OK(MPI_Recv_init(rbuf + 5, 1, MPI_INT, partner, 99, MPI_COMM_WORLD, &pers));
        for (round = 0; round < 4; ++round) {
            int seen[N];
            int done = 0;
            for (i = 0; i < N; ++i) {
                sbuf[i] = round * 100 + mt_rank * 10 + i;
                rbuf[i] = -1;
                seen[i] = 0;
            }
            /* [0] null  [1] recv tag 71  [2] inactive persistent
             * [3] recv tag 72  [4] send tag 71  [5] send tag 72 */
            reqs[0] = MPI_REQUEST_NULL;
            MT_OK(MPI_Irecv(&rbuf[1], 1, MPI_INT, partner, 71, MPI_COMM_WORLD, &reqs[1]));
            reqs[2] = pers;
            MT_OK(MPI_Irecv(&rbuf[3], 1, MPI_INT, partner, 72, MPI_COMM_WORLD, &reqs[3]));
            MT_OK(MPI_Isend(&sbuf[4], 1, MPI_INT, partner, 71, MPI_COMM_WORLD, &reqs[4]));
            MT_OK(MPI_Isend(&sbuf[5], 1, MPI_INT, partner, 72, MPI_COMM_WORLD, &reqs[5]));
            poison(sts, N);
            switch (round) {
            case 0:
                MT_OK(MPI_Waitall(N, reqs, sts));
                seen[1] = seen[3] = seen[4] = seen[5] = 1;
                check_empty(&sts[0], "MPI_Waitall null entry");
                check_empty(&sts[2], "MPI_Waitall inactive entry");
                MT_CHECK(sts[1].MPI_TAG == 71 && sts[3].MPI_TAG == 72,
                         "MPI_Waitall statuses: tags %d %d", sts[1].MPI_TAG, sts[3].MPI_TAG);
                break;
            case 1:
                for (;;) {
                    idx = -7;
                    MT_OK(MPI_Waitany(N, reqs, &idx, &st));
                    if (idx == MPI_UNDEFINED) {
                        break;
                    }
                    MT_CHECK(idx == 1 || idx == 3 || idx == 4 || idx == 5,
                             "MPI_Waitany returned index %d", idx);
                    if (idx < 0 || idx >= N) {
                        break;
                    }
                    MT_CHECK(!seen[idx], "MPI_Waitany returned index %d twice", idx);
                    seen[idx] = 1;
                    if (idx == 1 || idx == 3) {
                        MT_CHECK(st.MPI_TAG == (idx == 1 ? 71 : 72) && st.MPI_SOURCE == partner,
                                 "MPI_Waitany status for %d: tag %d", idx, st.MPI_TAG);
                    }
                }
                break;
            case 2:
            case 3:
                while (done < 4) {
                    outcount = -7;
                    if (round == 2) {
                        MT_OK(MPI_Waitsome(N, reqs, &outcount, indices, sts));
                        MT_CHECK(outcount >= 1, "MPI_Waitsome outcount %d", outcount);
                    } else {
                        MT_OK(MPI_Testsome(N, reqs, &outcount, indices, sts));
                        MT_CHECK(outcount >= 0, "MPI_Testsome outcount %d", outcount);
                    }
                    if (outcount < 0 || outcount > N) {
                        break;
                    }
                    for (i = 0; i < outcount; ++i) {
                        int j = indices[i];
                        MT_CHECK(j == 1 || j == 3 || j == 4 || j == 5, "index %d", j);
                        if (j < 0 || j >= N) {
                            continue;
                        }
                        MT_CHECK(!seen[j], "index %d returned twice", j);
                        seen[j] = 1;
                        if (j == 1 || j == 3) {
                            MT_CHECK(sts[i].MPI_TAG == (j == 1 ? 71 : 72) &&
                                         sts[i].MPI_SOURCE == partner,
                                     "status %d (index %d): tag %d source %d", i, j, sts[i].MPI_TAG,
                                     sts[i].MPI_SOURCE);
                        }
                    }
                    done += outcount;
                }
                outcount = 0;
                MT_OK(MPI_Waitsome(N, reqs, &outcount, indices, sts));
                MT_CHECK(outcount == MPI_UNDEFINED, "MPI_Waitsome after all: outcount %d",
                         outcount);
                break;
            }
            for (i = 1; i < N; ++i) {
                MT_CHECK(i == 2 || seen[i], "round %d: request %d never completed", round, i);
            }
            for (i = 0; i < N; ++i) {
                if (i == 2) {
                    MT_CHECK(reqs[i] == pers, "the inactive request was changed");
                } else {
                    MT_CHECK(reqs[i] == MPI_REQUEST_NULL, "round %d: request %d not null", round, i);
                }
            }
            MT_CHECK(rbuf[1] == round * 100 + partner * 10 + 4, "round %d: got %d", round, rbuf[1]);
            MT_CHECK(rbuf[3] == round * 100 + partner * 10 + 5, "round %d: got %d", round, rbuf[3]);
        }
        MT_OK(MPI_Request_free(&pers));
    }
    return mt_finalize();
}
