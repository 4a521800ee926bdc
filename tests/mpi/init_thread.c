/*
 * The environment: Initialized/Finalized before, during and after MPI,
 * Init_thread (argument: single|funneled|serialized|multiple, the level
 * required), Query_thread, Is_thread_main (also from another thread),
 * Get_version before MPI_Init, Get_library_version, Get_processor_name,
 * Wtime/Wtick, Comm_rank/Comm_size on both predefined communicators and the
 * handle conversions. With MPI_THREAD_SERIALIZED, communication from a
 * thread other than the main one (one at a time), eager and rendezvous.
 */
#include "mpitest.h"

#include <pthread.h>
#include <unistd.h>

static int g_main_flag_in_thread = -1;

static void* thread_body(void* arg)
{
    (void)arg;
    MPI_Is_thread_main(&g_main_flag_in_thread);
    return NULL;
}

/* MPI_THREAD_SERIALIZED: a Sendrecv with the partner, from whichever thread. */
static int g_thread_errors = 0;

static void exchange(int tag)
{
    int partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;
    static const int sizes[2] = {64, 300000};
    int k;
    for (k = 0; k < 2; ++k) {
        int n = sizes[k];
        unsigned char* s = malloc((size_t)n);
        unsigned char* r = malloc((size_t)n);
        mt_fill(s, (size_t)n, (unsigned)(mt_rank + tag));
        if (MPI_Sendrecv(s, n, MPI_BYTE, partner, tag, r, n, MPI_BYTE, partner, tag, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE) != MPI_SUCCESS ||
            mt_verify(r, (size_t)n, (unsigned)(partner + tag)) >= 0) {
            ++g_thread_errors;
        }
        free(s);
        free(r);
    }
}

static void* serialized_body(void* arg)
{
    (void)arg;
    exchange(21);
    return NULL;
}

int main(int argc, char** argv)
{
    int required = MPI_THREAD_SINGLE;
    int provided = -1;
    int flag = -1;
    int version = 0;
    int subversion = 0;
    int i;

    if (argc > 1) {
        if (strcmp(argv[1], "funneled") == 0) {
            required = MPI_THREAD_FUNNELED;
        } else if (strcmp(argv[1], "serialized") == 0) {
            required = MPI_THREAD_SERIALIZED;
        } else if (strcmp(argv[1], "multiple") == 0) {
            required = MPI_THREAD_MULTIPLE;
        }
    }

    /* Before MPI_Init. */
    if (MPI_Initialized(&flag) != MPI_SUCCESS || flag != 0) {
        fprintf(stderr, "MPI_Initialized before MPI_Init: flag %d\n", flag);
        ++mt_errors;
    }
    flag = -1;
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag != 0) {
        fprintf(stderr, "MPI_Finalized before MPI_Init: flag %d\n", flag);
        ++mt_errors;
    }
    if (MPI_Get_version(&version, &subversion) != MPI_SUCCESS || version != MPI_VERSION ||
        subversion != MPI_SUBVERSION) {
        fprintf(stderr, "MPI_Get_version before MPI_Init: %d.%d\n", version, subversion);
        ++mt_errors;
    }

    if (MPI_Init_thread(&argc, &argv, required, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);

    /* Thread levels. */
    MT_CHECK(provided == required, "required %d, provided %d", required, provided);
    {
        int q = -1;
        MT_OK(MPI_Query_thread(&q));
        MT_CHECK(q == provided, "MPI_Query_thread %d, MPI_Init_thread provided %d", q, provided);
    }
    flag = -1;
    MT_OK(MPI_Is_thread_main(&flag));
    MT_CHECK(flag == 1, "MPI_Is_thread_main in the main thread: %d", flag);
    if (provided >= MPI_THREAD_FUNNELED) {
        pthread_t t;
        MT_CHECK(pthread_create(&t, NULL, thread_body, NULL) == 0, "pthread_create failed");
        pthread_join(t, NULL);
        MT_CHECK(g_main_flag_in_thread == 0, "MPI_Is_thread_main in another thread: %d",
                 g_main_flag_in_thread);
    }

    if (provided >= MPI_THREAD_SERIALIZED) {
        pthread_t t;
        exchange(20);
        MT_CHECK(pthread_create(&t, NULL, serialized_body, NULL) == 0, "pthread_create failed");
        pthread_join(t, NULL);
        exchange(22);
        MT_CHECK(g_thread_errors == 0, "%d exchanges failed (main thread, other thread, main)",
                 g_thread_errors);
    }

    flag = -1;
    MT_OK(MPI_Initialized(&flag));
    MT_CHECK(flag == 1, "MPI_Initialized after MPI_Init: %d", flag);
    flag = -1;
    MT_OK(MPI_Finalized(&flag));
    MT_CHECK(flag == 0, "MPI_Finalized after MPI_Init: %d", flag);

    /* Communicators. */
    {
        int r = -1, s = -1;
        MT_CHECK(mt_rank >= 0 && mt_rank < mt_size, "rank %d size %d", mt_rank, mt_size);
        MT_OK(MPI_Comm_rank(MPI_COMM_SELF, &r));
        MT_OK(MPI_Comm_size(MPI_COMM_SELF, &s));
        MT_CHECK(r == 0 && s == 1, "MPI_COMM_SELF: rank %d size %d", r, s);
        /* mpirun's ranks: ULMPI_SIZE, or with spawn slots (after the ranks)
         * ULMPI_FIRST_SLOT. */
        const char* launched = getenv("ULMPI_FIRST_SLOT") ? getenv("ULMPI_FIRST_SLOT")
                                                          : getenv("ULMPI_SIZE");
        if (launched != NULL) {
            MT_CHECK(atoi(launched) == mt_size, "ULMPI_SIZE/ULMPI_FIRST_SLOT %s, size %d",
                     launched, mt_size);
        }
        MT_CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "Comm c2f/f2c");
        MT_CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "Type c2f/f2c");
        MT_CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL,
                 "Request c2f/f2c");
    }

    /* Versions. */
    version = subversion = 0;
    MT_OK(MPI_Get_version(&version, &subversion));
    MT_CHECK(version == 3 && subversion == 1, "MPI_Get_version: %d.%d", version, subversion);
    {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = -1;
        memset(lib, 0x7f, sizeof lib);
        MT_OK(MPI_Get_library_version(lib, &len));
        MT_CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING, "library version length %d", len);
        if (len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING) {
            MT_CHECK(lib[len] == '\0' && (int)strlen(lib) == len,
                     "library version is not a string of length %d", len);
            MT_CHECK(strstr(lib, "ulmpi") != NULL, "library version \"%s\" does not name ulmpi", lib);
        }
    }

    /* Processor name: this host. */
    {
        char name[MPI_MAX_PROCESSOR_NAME];
        char host[256];
        int len = -1;
        memset(name, 0x7f, sizeof name);
        MT_OK(MPI_Get_processor_name(name, &len));
        MT_CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "processor name length %d", len);
        if (len > 0 && len < MPI_MAX_PROCESSOR_NAME) {
            MT_CHECK(name[len] == '\0' && (int)strlen(name) == len,
                     "processor name is not a string of length %d", len);
        }
        if (gethostname(host, sizeof host) == 0) {
            host[sizeof host - 1] = '\0';
            MT_CHECK(strcmp(name, host) == 0, "processor name \"%s\", hostname \"%s\"", name, host);
        }
    }

    /* Clocks: Wtime never goes back, advances across a sleep; Wtick is a
     * positive resolution below a millisecond. */
    {
        double tick = MPI_Wtick();
        double t0 = MPI_Wtime();
        double prev = t0;
        double t1;
        MT_CHECK(tick > 0.0 && tick < 1e-3, "MPI_Wtick %g", tick);
        for (i = 0; i < 100000; ++i) {
            double t = MPI_Wtime();
            if (t < prev) {
                MT_CHECK(0, "MPI_Wtime went back from %.9f to %.9f", prev, t);
                break;
            }
            prev = t;
        }
        mt_sleep_ms(20);
        t1 = MPI_Wtime();
        MT_CHECK(t1 - t0 >= 0.019, "MPI_Wtime advanced %g s across a 20 ms sleep", t1 - t0);
    }

    /* mt_finalize without its MPI_Finalize: checks after MPI_Finalize follow. */
    {
        int total = mt_errors;
        if (mt_rank == 0) {
            for (i = 1; i < mt_size; ++i) {
                int e = 0;
                MPI_Recv(&e, 1, MPI_INT, i, MT_TAG_FINALIZE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                total += e;
            }
        } else {
            MPI_Send(&mt_errors, 1, MPI_INT, 0, MT_TAG_FINALIZE, MPI_COMM_WORLD);
        }
        MT_OK(MPI_Finalize());
        flag = -1;
        if (MPI_Finalized(&flag) != MPI_SUCCESS || flag != 1) {
            fprintf(stderr, "[%d] MPI_Finalized after MPI_Finalize: %d\n", mt_rank, flag);
            ++total;
            ++mt_errors;
        }
        flag = -1;
        if (MPI_Initialized(&flag) != MPI_SUCCESS || flag != 1) {
            fprintf(stderr, "[%d] MPI_Initialized after MPI_Finalize: %d\n", mt_rank, flag);
            ++total;
            ++mt_errors;
        }
        version = 0;
        if (MPI_Get_version(&version, &subversion) != MPI_SUCCESS || version != MPI_VERSION) {
            fprintf(stderr, "[%d] MPI_Get_version after MPI_Finalize\n", mt_rank);
            ++total;
            ++mt_errors;
        }
        if (mt_rank == 0) {
            if (total == 0) {
                printf("No Errors\n");
            } else {
                printf(" Found %d errors\n", total);
            }
        }
    }
    return mt_errors == 0 ? 0 : 1;
}
