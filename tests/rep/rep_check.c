/*
 * rep_check.c -- a send-deterministic workload for replication (mpirun
 * --replicas, docs/replication.md): point-to-point (blocking, nonblocking,
 * MPI_ANY_SOURCE, MPI_Waitany, rendezvous-sized messages), collectives and
 * communicator creation, for a number of iterations. Every rank folds what
 * it receives into a hash; rank 0 prints "result=<hash of every rank's>"
 * and "No Errors". The result does not depend on the replication degree,
 * on the order ANY_SOURCE messages arrive in, or on a replica's death: the
 * driver (rep_run.py) compares it with a run without replication.
 *
 *   rep_check [iters] [kill=PROCESS:STEP ...]
 *
 * kill=P:S: the process whose number (rank + replica * size, from
 * MPIX_Replica_info) is P raises SIGKILL at step S (iteration * PHASES +
 * phase): a replica dies at a chosen point of the traffic. Only a process
 * mpirun started does: a replica re-created by recovery (a fork of its
 * sibling, docs/replication.md) carries on.
 * pace=US: every process sleeps US microseconds at every step (so that a
 * driver has time to kill processes from outside while the job runs).
 * flip=P:I: process P flips a bit of the side message it sends in phase 0
 * of iteration I (a silent data corruption for mpirun --replica-check; the
 * receiver does not use that message, so the result stays the same).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PHASES 8
#define BIG 65536 /* ints: 256 KiB, above every path's eager limit */
#define MAXKILL 8

static int rank, size, me_proc, nkill;
static int kill_proc[MAXKILL], kill_step[MAXKILL];
static int flip_proc = -1, flip_iter = -1;
static long pace_us;
static pid_t first_pid; /* this process's pid at the start (a re-created replica has another) */
static int errors;
static uint64_t acc = 1469598103934665603ull;

static void fold(uint64_t v)
{
    acc ^= v + 0x9e3779b97f4a7c15ull + (acc << 6) + (acc >> 2);
}

static void check(int ok, const char* what, int it)
{
    if (!ok) {
        ++errors;
        fprintf(stderr, "[%d] iteration %d: %s\n", rank, it, what);
    }
}

static void maybe_die(int step)
{
    for (int i = 0; i < nkill; ++i) {
        if (kill_proc[i] == me_proc && kill_step[i] == step && getpid() == first_pid) {
            raise(SIGKILL);
        }
    }
    if (pace_us > 0) {
        struct timespec ts = {pace_us / 1000000, (pace_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
}

static int value(int it, int r) { return it * 1000 + r * 7 + 3; }

int main(int argc, char** argv)
{
    int iters = 10;
    for (int i = 1; i < argc; ++i) {
        int p, s;
        if (sscanf(argv[i], "flip=%d:%d", &p, &s) == 2) {
            flip_proc = p;
            flip_iter = s;
        } else if (sscanf(argv[i], "pace=%d", &p) == 1) {
            pace_us = p;
        } else if (sscanf(argv[i], "kill=%d:%d", &p, &s) == 2 && nkill < MAXKILL) {
            kill_proc[nkill] = p;
            kill_step[nkill++] = s;
        } else {
            iters = atoi(argv[i]);
        }
    }
    first_pid = getpid();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int replica = 0, replicas = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (MPIX_Replica_info(&replica, &replicas) != MPI_SUCCESS || replica < 0 ||
        replica >= replicas) {
        check(0, "MPIX_Replica_info", -1);
    }
    me_proc = rank + replica * size;
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int* big_out = malloc(sizeof(int) * BIG);
    int* big_in = malloc(sizeof(int) * BIG);
    int* all = malloc(sizeof(int) * (size_t)size);
    int* all2 = malloc(sizeof(int) * (size_t)size);
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)size);

    for (int it = 0; it < iters; ++it) {
        int step = it * PHASES;
        int got, got2;

        /* 0: blocking ring */
        maybe_die(step + 0);
        MPI_Sendrecv(&(int){value(it, rank)}, 1, MPI_INT, right, 1, &got, 1, MPI_INT, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(got == value(it, left), "ring", it);
        fold((uint64_t)got);
        int side = value(it, rank) ^ 0x5a5a;
        if (me_proc == flip_proc && it == flip_iter) {
            side ^= 1 << 9;
        }
        MPI_Sendrecv(&side, 1, MPI_INT, right, 8, &got2, 1, MPI_INT, left, 8, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);

        /* 1: nonblocking both ways, blocking standard sends in a safe order */
        maybe_die(step + 1);
        MPI_Irecv(&got, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &reqs[0]);
        MPI_Irecv(&got2, 1, MPI_INT, right, 3, MPI_COMM_WORLD, &reqs[1]);
        MPI_Send(&(int){value(it, rank) + 1}, 1, MPI_INT, right, 2, MPI_COMM_WORLD);
        MPI_Send(&(int){value(it, rank) + 2}, 1, MPI_INT, left, 3, MPI_COMM_WORLD);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        check(got == value(it, left) + 1 && got2 == value(it, right) + 2, "nonblocking", it);
        fold((uint64_t)got * 3u + (uint64_t)got2);

        /* 2: MPI_ANY_SOURCE at rank 0, then a broadcast of what it saw */
        maybe_die(step + 2);
        int sum = 0;
        if (rank == 0) {
            for (int i = 1; i < size; ++i) {
                MPI_Status st;
                MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &st);
                check(got == value(it, st.MPI_SOURCE), "any_source", it);
                sum += got;
            }
        } else {
            MPI_Send(&(int){value(it, rank)}, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
        }
        MPI_Bcast(&sum, 1, MPI_INT, 0, MPI_COMM_WORLD);
        int want = 0;
        for (int r = 1; r < size; ++r) {
            want += value(it, r);
        }
        check(sum == want, "any_source sum", it);
        fold((uint64_t)sum);

        /* 3: rendezvous-sized exchange */
        maybe_die(step + 3);
        for (int i = 0; i < BIG; ++i) {
            big_out[i] = value(it, rank) ^ i;
        }
        MPI_Sendrecv(big_out, BIG, MPI_INT, right, 5, big_in, BIG, MPI_INT, left, 5,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        uint64_t h = 0;
        int bad = 0;
        for (int i = 0; i < BIG; ++i) {
            bad += big_in[i] != (value(it, left) ^ i);
            h = h * 31u + (uint32_t)big_in[i];
        }
        check(bad == 0, "big message", it);
        fold(h);

        /* 4: collectives */
        maybe_die(step + 4);
        int s = 0;
        MPI_Allreduce(&(int){value(it, rank)}, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check(s == want + value(it, 0), "allreduce", it);
        for (int r = 0; r < size; ++r) {
            all[r] = value(it, rank) * 100 + r;
        }
        MPI_Alltoall(all, 1, MPI_INT, all2, 1, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; ++r) {
            check(all2[r] == value(it, r) * 100 + rank, "alltoall", it);
            fold((uint64_t)all2[r]);
        }
        MPI_Allgather(&(int){value(it, rank)}, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; ++r) {
            check(all[r] == value(it, r), "allgather", it);
        }
        int pre = 0;
        MPI_Scan(&(int){rank + 1}, &pre, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check(pre == (rank + 1) * (rank + 2) / 2, "scan", it);
        int mx = 0;
        MPI_Reduce(&(int){value(it, rank)}, &mx, 1, MPI_INT, MPI_MAX, size - 1, MPI_COMM_WORLD);
        if (rank == size - 1) {
            check(mx == value(it, size - 1), "reduce", it);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        fold((uint64_t)s + (uint64_t)pre);

        /* 5: communicators */
        maybe_die(step + 5);
        MPI_Comm half, dup;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
        int hr, hs, hsum = 0;
        MPI_Comm_rank(half, &hr);
        MPI_Comm_size(half, &hs);
        MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
        check(hs == (size + 1 - rank % 2) / 2, "split size", it);
        MPI_Comm_dup(half, &dup);
        int root_rank = hr == 0 ? rank : -1;
        MPI_Bcast(&root_rank, 1, MPI_INT, 0, dup);
        fold((uint64_t)hsum * 17u + (uint64_t)root_rank);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&half);

        /* 6: MPI_Waitany over a message from everyone (arrival order differs
           between replicas; the sum does not) */
        maybe_die(step + 6);
        for (int r = 0; r < size; ++r) {
            MPI_Irecv(&all2[r], 1, MPI_INT, r, 6, MPI_COMM_WORLD, &reqs[r]);
        }
        for (int r = 0; r < size; ++r) {
            all[r] = value(it, rank) + r;
            MPI_Isend(&all[r], 1, MPI_INT, r, 6, MPI_COMM_WORLD, &reqs[size + r]);
        }
        uint64_t anysum = 0;
        for (int n = 0; n < size; ++n) {
            int idx;
            MPI_Waitany(size, reqs, &idx, MPI_STATUS_IGNORE);
            check(idx >= 0 && all2[idx] == value(it, idx) + rank, "waitany", it);
            anysum += (uint64_t)all2[idx];
        }
        MPI_Waitall(size, reqs + size, MPI_STATUSES_IGNORE);
        fold(anysum);

        /* 7: MPI_Iprobe / MPI_Test polling (each replica decides alone) */
        maybe_die(step + 7);
        MPI_Request rq;
        MPI_Isend(&(int){value(it, rank) + 5}, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &rq);
        int flag = 0;
        MPI_Status st;
        while (!flag) {
            MPI_Iprobe(right, 7, MPI_COMM_WORLD, &flag, &st);
        }
        MPI_Recv(&got, 1, MPI_INT, right, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(got == value(it, right) + 5, "iprobe", it);
        flag = 0;
        while (!flag) {
            MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        }
        fold((uint64_t)got);
    }

    uint64_t* accs = malloc(sizeof(uint64_t) * (size_t)size);
    MPI_Gather(&acc, 1, MPI_UINT64_T, accs, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        uint64_t all_h = 0;
        for (int r = 0; r < size; ++r) {
            all_h = all_h * 1000003u ^ accs[r];
        }
        printf("result=%016llx ranks=%d\n", (unsigned long long)all_h, size);
        if (total == 0) {
            printf(" No Errors\n");
        } else {
            printf(" Found %d errors\n", total);
        }
        fflush(stdout);
    }
    free(accs);
    free(big_out);
    free(big_in);
    free(all);
    free(all2);
    free(reqs);
    MPI_Finalize();
    return errors != 0;
}
