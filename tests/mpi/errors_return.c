/*
 * With MPI_ERRORS_RETURN, a wrong call returns an error of the right class
 * and does nothing; the process goes on communicating normally afterwards.
 *   MPI_ERR_RANK     destination/source outside the communicator, MPI_ROOT (not
 *                    an intercommunicator), MPI_ANY_SOURCE as a destination, on
 *                    MPI_COMM_WORLD and MPI_COMM_SELF
 *   MPI_ERR_TAG      negative tags other than MPI_ANY_TAG (receives), MPI_ANY_TAG
 *                    on a send
 *   MPI_ERR_COUNT    negative counts
 *   MPI_ERR_TYPE     MPI_DATATYPE_NULL, garbage handles, MPI_LB/MPI_UB
 *   MPI_ERR_COMM     MPI_COMM_NULL and garbage communicator handles
 *   MPI_ERR_BUFFER   NULL buffer with count > 0
 *   MPI_ERR_REQUEST  garbage requests, MPI_REQUEST_NULL where a request is
 *                    needed, MPI_Start of a non-persistent or active request
 *   MPI_ERR_TRUNCATE a message longer than the receive buffer, eager and
 *                    rendezvous (single copy and streamed), through Recv,
 *                    Wait, Test, Waitany, Sendrecv; MPI_ERR_IN_STATUS with the
 *                    class in the status through Waitall and Waitsome
 * Each kind through every call that takes the argument.
 */
#include "mpitest.h"

#define BAD_COMM 12345
#define BAD_COMM2 0x44000999
#define BAD_TYPE 0x4c00ffff
#define BAD_REQ 0x6c00fff0

int main(int argc, char** argv)
{
    int partner;
    int buf[64];
    MPI_Request r, rs[4];
    MPI_Status st, sts[4];
    int flag, idx, outcount, indices[4];
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_Errhandler eh;

    mt_init(&argc, &argv);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    memset(buf, 0, sizeof buf);
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MT_OK(MPI_Errhandler_set(MPI_COMM_SELF, MPI_ERRORS_RETURN)); /* the MPI-1 name */
    MT_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    MT_CHECK(eh == MPI_ERRORS_RETURN, "MPI_Comm_get_errhandler gave 0x%x", (unsigned)eh);
    MT_OK(MPI_Errhandler_get(MPI_COMM_SELF, &eh));
    MT_CHECK(eh == MPI_ERRORS_RETURN, "MPI_Errhandler_get gave 0x%x", (unsigned)eh);

    /* MPI_ERR_RANK */
    {
        int bad[4] = {mt_size, -5, MPI_ROOT, MPI_ANY_SOURCE};
        int i;
        for (i = 0; i < 4; ++i) {
            int b = bad[i];
            MT_ERR(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, b, 0, world));
            MT_ERR(MPI_ERR_RANK, MPI_Ssend(buf, 1, MPI_INT, b, 0, world));
            MT_ERR(MPI_ERR_RANK, MPI_Bsend(buf, 1, MPI_INT, b, 0, world));
            MT_ERR(MPI_ERR_RANK, MPI_Rsend(buf, 1, MPI_INT, b, 0, world));
            MT_ERR(MPI_ERR_RANK, MPI_Isend(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Issend(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Ibsend(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Irsend(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Send_init(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Bsend_init(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Ssend_init(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Rsend_init(buf, 1, MPI_INT, b, 0, world, &r));
            MT_ERR(MPI_ERR_RANK, MPI_Sendrecv(buf, 1, MPI_INT, b, 0, buf + 1, 1, MPI_INT, mt_rank, 0,
                                              world, &st));
            MT_ERR(MPI_ERR_RANK, MPI_Sendrecv_replace(buf, 1, MPI_INT, b, 0, mt_rank, 0, world, &st));
            if (b != MPI_ANY_SOURCE) {
                MT_ERR(MPI_ERR_RANK, MPI_Recv(buf, 1, MPI_INT, b, 0, world, &st));
                MT_ERR(MPI_ERR_RANK, MPI_Irecv(buf, 1, MPI_INT, b, 0, world, &r));
                MT_ERR(MPI_ERR_RANK, MPI_Recv_init(buf, 1, MPI_INT, b, 0, world, &r));
                MT_ERR(MPI_ERR_RANK, MPI_Probe(b, 0, world, &st));
                MT_ERR(MPI_ERR_RANK, MPI_Iprobe(b, 0, world, &flag, &st));
                MT_ERR(MPI_ERR_RANK, MPI_Sendrecv(buf, 1, MPI_INT, mt_rank, 0, buf + 1, 1, MPI_INT,
                                                  b, 0, world, &st));
                MT_ERR(MPI_ERR_RANK, MPI_Sendrecv_replace(buf, 1, MPI_INT, mt_rank, 0, b, 0, world,
                                                          &st));
            }
        }
        MT_ERR(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, 1, 0, MPI_COMM_SELF));
        MT_ERR(MPI_ERR_RANK, MPI_Recv(buf, 1, MPI_INT, 1, 0, MPI_COMM_SELF, &st));
        MT_ERR(MPI_ERR_RANK, MPI_Isend(buf, 1, MPI_INT, -3, 0, MPI_COMM_SELF, &r));
    }

    /* MPI_ERR_TAG */
    {
        int bad[3] = {MPI_ANY_TAG, -2, -1000};
        int i;
        for (i = 0; i < 3; ++i) {
            int t = bad[i];
            MT_ERR(MPI_ERR_TAG, MPI_Send(buf, 1, MPI_INT, partner, t, world));
            MT_ERR(MPI_ERR_TAG, MPI_Ssend(buf, 1, MPI_INT, partner, t, world));
            MT_ERR(MPI_ERR_TAG, MPI_Bsend(buf, 1, MPI_INT, partner, t, world));
            MT_ERR(MPI_ERR_TAG, MPI_Rsend(buf, 1, MPI_INT, partner, t, world));
            MT_ERR(MPI_ERR_TAG, MPI_Isend(buf, 1, MPI_INT, partner, t, world, &r));
            MT_ERR(MPI_ERR_TAG, MPI_Issend(buf, 1, MPI_INT, partner, t, world, &r));
            MT_ERR(MPI_ERR_TAG, MPI_Ibsend(buf, 1, MPI_INT, partner, t, world, &r));
            MT_ERR(MPI_ERR_TAG, MPI_Irsend(buf, 1, MPI_INT, partner, t, world, &r));
            MT_ERR(MPI_ERR_TAG, MPI_Send_init(buf, 1, MPI_INT, partner, t, world, &r));
            MT_ERR(MPI_ERR_TAG, MPI_Sendrecv(buf, 1, MPI_INT, partner, t, buf + 1, 1, MPI_INT,
                                             partner, 0, world, &st));
            if (t != MPI_ANY_TAG) {
                MT_ERR(MPI_ERR_TAG, MPI_Recv(buf, 1, MPI_INT, partner, t, world, &st));
                MT_ERR(MPI_ERR_TAG, MPI_Irecv(buf, 1, MPI_INT, partner, t, world, &r));
                MT_ERR(MPI_ERR_TAG, MPI_Recv_init(buf, 1, MPI_INT, partner, t, world, &r));
                MT_ERR(MPI_ERR_TAG, MPI_Probe(partner, t, world, &st));
                MT_ERR(MPI_ERR_TAG, MPI_Iprobe(MPI_ANY_SOURCE, t, world, &flag, &st));
                MT_ERR(MPI_ERR_TAG, MPI_Sendrecv(buf, 1, MPI_INT, partner, 0, buf + 1, 1, MPI_INT,
                                                 partner, t, world, &st));
                MT_ERR(MPI_ERR_TAG, MPI_Sendrecv_replace(buf, 1, MPI_INT, partner, 0, partner, t,
                                                         world, &st));
            }
        }
    }

    /* MPI_ERR_COUNT */
    MT_ERR(MPI_ERR_COUNT, MPI_Send(buf, -1, MPI_INT, partner, 0, world));
    MT_ERR(MPI_ERR_COUNT, MPI_Ssend(buf, -1, MPI_INT, partner, 0, world));
    MT_ERR(MPI_ERR_COUNT, MPI_Bsend(buf, -1, MPI_INT, partner, 0, world));
    MT_ERR(MPI_ERR_COUNT, MPI_Rsend(buf, -5, MPI_INT, partner, 0, world));
    MT_ERR(MPI_ERR_COUNT, MPI_Recv(buf, -1, MPI_INT, partner, 0, world, &st));
    MT_ERR(MPI_ERR_COUNT, MPI_Isend(buf, -1, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_COUNT, MPI_Irecv(buf, -1, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_COUNT, MPI_Send_init(buf, -1, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_COUNT, MPI_Recv_init(buf, -1, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_COUNT, MPI_Sendrecv(buf, -1, MPI_INT, partner, 0, buf, 1, MPI_INT, partner, 0,
                                       world, &st));
    MT_ERR(MPI_ERR_COUNT, MPI_Sendrecv(buf, 1, MPI_INT, partner, 0, buf, -1, MPI_INT, partner, 0,
                                       world, &st));
    MT_ERR(MPI_ERR_COUNT, MPI_Sendrecv_replace(buf, -1, MPI_INT, partner, 0, partner, 0, world, &st));

    /* MPI_ERR_TYPE */
    {
        MPI_Datatype bad[5] = {MPI_DATATYPE_NULL, BAD_TYPE, 12345, MPI_LB, MPI_UB};
        int i, n;
        for (i = 0; i < 5; ++i) {
            MPI_Datatype t = bad[i];
            MT_ERR(MPI_ERR_TYPE, MPI_Send(buf, 1, t, partner, 0, world));
            MT_ERR(MPI_ERR_TYPE, MPI_Recv(buf, 1, t, partner, 0, world, &st));
            MT_ERR(MPI_ERR_TYPE, MPI_Isend(buf, 1, t, partner, 0, world, &r));
            MT_ERR(MPI_ERR_TYPE, MPI_Irecv(buf, 1, t, partner, 0, world, &r));
            MT_ERR(MPI_ERR_TYPE, MPI_Bsend(buf, 1, t, partner, 0, world));
            MT_ERR(MPI_ERR_TYPE, MPI_Ssend_init(buf, 1, t, partner, 0, world, &r));
            MT_ERR(MPI_ERR_TYPE, MPI_Recv_init(buf, 1, t, partner, 0, world, &r));
            MT_ERR(MPI_ERR_TYPE, MPI_Sendrecv(buf, 1, t, partner, 0, buf, 1, MPI_INT, partner, 0,
                                              world, &st));
            MT_ERR(MPI_ERR_TYPE, MPI_Sendrecv(buf, 1, MPI_INT, partner, 0, buf, 1, t, partner, 0,
                                              world, &st));
            MT_ERR(MPI_ERR_TYPE, MPI_Sendrecv_replace(buf, 1, t, partner, 0, partner, 0, world, &st));
            if (i < 3) {
                MT_ERR(MPI_ERR_TYPE, MPI_Type_size(t, &n));
            }
        }
        /* MPI_Get_count / MPI_Get_elements need a real status. */
        MT_OK(MPI_Sendrecv(buf, 1, MPI_INT, mt_rank, 9, buf + 1, 1, MPI_INT, mt_rank, 9, world, &st));
        MT_ERR(MPI_ERR_TYPE, MPI_Get_count(&st, MPI_DATATYPE_NULL, &n));
        MT_ERR(MPI_ERR_TYPE, MPI_Get_elements(&st, BAD_TYPE, &n));
    }

    /* MPI_ERR_COMM (the handler of MPI_COMM_WORLD applies) */
    {
        MPI_Comm bad[3] = {MPI_COMM_NULL, BAD_COMM, BAD_COMM2};
        int i, n;
        for (i = 0; i < 3; ++i) {
            MPI_Comm c = bad[i];
            MT_ERR(MPI_ERR_COMM, MPI_Send(buf, 1, MPI_INT, 0, 0, c));
            MT_ERR(MPI_ERR_COMM, MPI_Recv(buf, 1, MPI_INT, 0, 0, c, &st));
            MT_ERR(MPI_ERR_COMM, MPI_Ssend(buf, 1, MPI_INT, 0, 0, c));
            MT_ERR(MPI_ERR_COMM, MPI_Bsend(buf, 1, MPI_INT, 0, 0, c));
            MT_ERR(MPI_ERR_COMM, MPI_Rsend(buf, 1, MPI_INT, 0, 0, c));
            MT_ERR(MPI_ERR_COMM, MPI_Isend(buf, 1, MPI_INT, 0, 0, c, &r));
            MT_ERR(MPI_ERR_COMM, MPI_Irecv(buf, 1, MPI_INT, 0, 0, c, &r));
            MT_ERR(MPI_ERR_COMM, MPI_Issend(buf, 1, MPI_INT, 0, 0, c, &r));
            MT_ERR(MPI_ERR_COMM, MPI_Ibsend(buf, 1, MPI_INT, 0, 0, c, &r));
            MT_ERR(MPI_ERR_COMM, MPI_Irsend(buf, 1, MPI_INT, 0, 0, c, &r));
            MT_ERR(MPI_ERR_COMM, MPI_Send_init(buf, 1, MPI_INT, 0, 0, c, &r));
            MT_ERR(MPI_ERR_COMM, MPI_Recv_init(buf, 1, MPI_INT, 0, 0, c, &r));
            MT_ERR(MPI_ERR_COMM, MPI_Sendrecv(buf, 1, MPI_INT, 0, 0, buf, 1, MPI_INT, 0, 0, c, &st));
            MT_ERR(MPI_ERR_COMM, MPI_Sendrecv_replace(buf, 1, MPI_INT, 0, 0, 0, 0, c, &st));
            MT_ERR(MPI_ERR_COMM, MPI_Probe(0, 0, c, &st));
            MT_ERR(MPI_ERR_COMM, MPI_Iprobe(0, 0, c, &flag, &st));
            MT_ERR(MPI_ERR_COMM, MPI_Comm_rank(c, &n));
            MT_ERR(MPI_ERR_COMM, MPI_Comm_size(c, &n));
            MT_ERR(MPI_ERR_COMM, MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
            MT_ERR(MPI_ERR_COMM, MPI_Comm_get_errhandler(c, &eh));
        }
    }

    /* MPI_ERR_BUFFER: NULL with data to move. */
    MT_ERR(MPI_ERR_BUFFER, MPI_Send(NULL, 5, MPI_INT, partner, 0, world));
    MT_ERR(MPI_ERR_BUFFER, MPI_Ssend(NULL, 1, MPI_BYTE, partner, 0, world));
    MT_ERR(MPI_ERR_BUFFER, MPI_Rsend(NULL, 1, MPI_DOUBLE, partner, 0, world));
    MT_ERR(MPI_ERR_BUFFER, MPI_Recv(NULL, 5, MPI_INT, partner, 0, world, &st));
    MT_ERR(MPI_ERR_BUFFER, MPI_Isend(NULL, 5, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_BUFFER, MPI_Irecv(NULL, 5, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_BUFFER, MPI_Send_init(NULL, 5, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_BUFFER, MPI_Recv_init(NULL, 5, MPI_INT, partner, 0, world, &r));
    MT_ERR(MPI_ERR_BUFFER, MPI_Sendrecv(NULL, 5, MPI_INT, partner, 0, buf, 5, MPI_INT, partner, 0,
                                        world, &st));
    MT_ERR(MPI_ERR_BUFFER, MPI_Sendrecv(buf, 5, MPI_INT, partner, 0, NULL, 5, MPI_INT, partner, 0,
                                        world, &st));
    MT_ERR(MPI_ERR_BUFFER, MPI_Sendrecv_replace(NULL, 5, MPI_INT, partner, 0, partner, 0, world, &st));

    /* MPI_ERR_REQUEST */
    {
        MPI_Request bad = BAD_REQ;
        MPI_Request null = MPI_REQUEST_NULL;
        MPI_Request arr[3];
        MPI_Request pers;
        MT_ERR(MPI_ERR_REQUEST, MPI_Wait(&bad, &st));
        MT_ERR(MPI_ERR_REQUEST, MPI_Test(&bad, &flag, &st));
        MT_ERR(MPI_ERR_REQUEST, MPI_Request_free(&bad));
        MT_ERR(MPI_ERR_REQUEST, MPI_Cancel(&bad));
        MT_ERR(MPI_ERR_REQUEST, MPI_Start(&bad));
        MT_ERR(MPI_ERR_REQUEST, MPI_Request_free(&null));
        MT_ERR(MPI_ERR_REQUEST, MPI_Cancel(&null));
        MT_ERR(MPI_ERR_REQUEST, MPI_Start(&null));
        arr[0] = MPI_REQUEST_NULL;
        arr[1] = BAD_REQ;
        arr[2] = MPI_REQUEST_NULL;
        MT_ERR(MPI_ERR_REQUEST, MPI_Waitall(3, arr, sts));
        MT_ERR(MPI_ERR_REQUEST, MPI_Testall(3, arr, &flag, sts));
        MT_ERR(MPI_ERR_REQUEST, MPI_Waitany(3, arr, &idx, &st));
        MT_ERR(MPI_ERR_REQUEST, MPI_Testany(3, arr, &idx, &flag, &st));
        MT_ERR(MPI_ERR_REQUEST, MPI_Waitsome(3, arr, &outcount, indices, sts));
        MT_ERR(MPI_ERR_REQUEST, MPI_Testsome(3, arr, &outcount, indices, sts));
        MT_ERR(MPI_ERR_REQUEST, MPI_Startall(3, arr));
        /* Start of a non-persistent request, and of an active persistent one. */
        MT_OK(MPI_Irecv(buf, 1, MPI_INT, mt_rank, 77, world, &r));
        MT_ERR(MPI_ERR_REQUEST, MPI_Start(&r));
        MT_OK(MPI_Recv_init(buf + 1, 1, MPI_INT, mt_rank, 78, world, &pers));
        MT_OK(MPI_Start(&pers));
        MT_ERR(MPI_ERR_REQUEST, MPI_Start(&pers));
        buf[10] = 5;
        MT_OK(MPI_Send(&buf[10], 1, MPI_INT, mt_rank, 77, world));
        MT_OK(MPI_Send(&buf[10], 1, MPI_INT, mt_rank, 78, world));
        MT_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MT_OK(MPI_Wait(&pers, MPI_STATUS_IGNORE));
        MT_OK(MPI_Request_free(&pers));
        MT_CHECK(buf[0] == 5 && buf[1] == 5, "requests after a failed MPI_Start: %d %d", buf[0],
                 buf[1]);
    }

    /* MPI_ERR_ARG: a bad error handler. */
    MT_ERR(MPI_ERR_ARG, MPI_Comm_set_errhandler(world, 0x54000fff));

    /* MPI_ERR_TRUNCATE: the partner sends, we receive into too little. */
    {
        static const int sizes[] = {1, 100, 4096, 4097, 16383, 16384, 100000, 1000000};
        int si, how;
        unsigned char* sb = malloc(1000000);
        unsigned char* rb = malloc(1000000);
        mt_fill(sb, 1000000, 17);
        for (si = 0; si < 8; ++si) {
            int n = sizes[si];
            int cap = n / 2;
            for (how = 0; how < 7; ++how) {
                MPI_Request s;
                int rc;
                MT_OK(MPI_Isend(sb, n, MPI_BYTE, partner, 100 + how, world, &s));
                memset(rb, 0, (size_t)n);
                switch (how) {
                case 0:
                    MT_ERR(MPI_ERR_TRUNCATE, MPI_Recv(rb, cap, MPI_BYTE, partner, 100, world, &st));
                    break;
                case 1:
                    MT_OK(MPI_Irecv(rb, cap, MPI_BYTE, partner, 101, world, &r));
                    MT_ERR(MPI_ERR_TRUNCATE, MPI_Wait(&r, &st));
                    MT_CHECK(r == MPI_REQUEST_NULL, "a truncated request was not freed");
                    break;
                case 2:
                    MT_OK(MPI_Irecv(rb, cap, MPI_BYTE, partner, 102, world, &r));
                    flag = 0;
                    rc = MPI_SUCCESS;
                    while (!flag && rc == MPI_SUCCESS) {
                        rc = MPI_Test(&r, &flag, &st);
                    }
                    MT_ERR(MPI_ERR_TRUNCATE, rc);
                    break;
                case 3:
                    rs[0] = MPI_REQUEST_NULL;
                    MT_OK(MPI_Irecv(rb, cap, MPI_BYTE, partner, 103, world, &rs[1]));
                    MT_ERR(MPI_ERR_TRUNCATE, MPI_Waitany(2, rs, &idx, &st));
                    MT_CHECK(idx == 1, "MPI_Waitany index %d", idx);
                    break;
                case 4:
                    rs[0] = MPI_REQUEST_NULL;
                    MT_OK(MPI_Irecv(rb, cap, MPI_BYTE, partner, 104, world, &rs[1]));
                    sts[1].MPI_ERROR = -1;
                    MT_ERR(MPI_ERR_IN_STATUS, MPI_Waitall(2, rs, sts));
                    {
                        int cls = -1;
                        MPI_Error_class(sts[1].MPI_ERROR, &cls);
                        MT_CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Waitall: status error %d, "
                                 "expected MPI_ERR_TRUNCATE", sts[1].MPI_ERROR);
                    }
                    break;
                case 5:
                    MT_OK(MPI_Irecv(rb, cap, MPI_BYTE, partner, 105, world, &rs[0]));
                    sts[0].MPI_ERROR = -1;
                    MT_ERR(MPI_ERR_IN_STATUS, MPI_Waitsome(1, rs, &outcount, indices, sts));
                    MT_CHECK(outcount == 1 && indices[0] == 0, "MPI_Waitsome outcount %d",
                             outcount);
                    {
                        int cls = -1;
                        MPI_Error_class(sts[0].MPI_ERROR, &cls);
                        MT_CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Waitsome: status error %d, "
                                 "expected MPI_ERR_TRUNCATE", sts[0].MPI_ERROR);
                    }
                    break;
                default:
                    MT_ERR(MPI_ERR_TRUNCATE, MPI_Sendrecv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, rb,
                                                          cap, MPI_BYTE, partner, 106, world, &st));
                    break;
                }
                /* The sender is not affected. */
                MT_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
                /* What fit arrived (implementations fill the buffer up to its size). */
                MT_VERIFY(rb, cap, 17, "truncated message of %d bytes, how %d", n, how);
            }
        }
        free(sb);
        free(rb);
    }

    /* Still fine after all that. */
    {
        int a = 40 + mt_rank, b = -1;
        MT_OK(MPI_Sendrecv(&a, 1, MPI_INT, partner, 5, &b, 1, MPI_INT, partner, 5, world, &st));
        MT_CHECK(b == 40 + partner, "after the errors: got %d", b);
    }
    return mt_finalize();
}
