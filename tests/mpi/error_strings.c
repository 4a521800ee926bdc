/*
 * MPI_Error_string and MPI_Error_class for every error class of MPI-3.1
 * (MPI_SUCCESS .. MPI_T_ERR_INVALID, and MPI_ERR_LASTCODE): each class is its
 * own class, each string is a non-empty C string shorter than
 * MPI_MAX_ERROR_STRING whose length is resultlen, and no two classes share a
 * string. A code that is not one is refused with MPI_ERR_ARG (under
 * MPI_ERRORS_RETURN).
 */
#include "mpitest.h"

static const struct {
    int cls;
    const char* name;
} k_classes[] = {
#define C(x) {x, #x}
    C(MPI_SUCCESS), C(MPI_ERR_BUFFER), C(MPI_ERR_COUNT), C(MPI_ERR_TYPE), C(MPI_ERR_TAG),
    C(MPI_ERR_COMM), C(MPI_ERR_RANK), C(MPI_ERR_REQUEST), C(MPI_ERR_ROOT), C(MPI_ERR_GROUP),
    C(MPI_ERR_OP), C(MPI_ERR_TOPOLOGY), C(MPI_ERR_DIMS), C(MPI_ERR_ARG), C(MPI_ERR_UNKNOWN),
    C(MPI_ERR_TRUNCATE), C(MPI_ERR_OTHER), C(MPI_ERR_INTERN), C(MPI_ERR_PENDING),
    C(MPI_ERR_IN_STATUS), C(MPI_ERR_ACCESS), C(MPI_ERR_AMODE), C(MPI_ERR_ASSERT),
    C(MPI_ERR_BAD_FILE), C(MPI_ERR_BASE), C(MPI_ERR_CONVERSION), C(MPI_ERR_DISP),
    C(MPI_ERR_DUP_DATAREP), C(MPI_ERR_FILE_EXISTS), C(MPI_ERR_FILE_IN_USE), C(MPI_ERR_FILE),
    C(MPI_ERR_INFO_KEY), C(MPI_ERR_INFO_NOKEY), C(MPI_ERR_INFO_VALUE), C(MPI_ERR_INFO),
    C(MPI_ERR_IO), C(MPI_ERR_KEYVAL), C(MPI_ERR_LOCKTYPE), C(MPI_ERR_NAME), C(MPI_ERR_NO_MEM),
    C(MPI_ERR_NOT_SAME), C(MPI_ERR_NO_SPACE), C(MPI_ERR_NO_SUCH_FILE), C(MPI_ERR_PORT),
    C(MPI_ERR_QUOTA), C(MPI_ERR_READ_ONLY), C(MPI_ERR_RMA_ATTACH), C(MPI_ERR_RMA_CONFLICT),
    C(MPI_ERR_RMA_RANGE), C(MPI_ERR_RMA_SHARED), C(MPI_ERR_RMA_SYNC), C(MPI_ERR_RMA_FLAVOR),
    C(MPI_ERR_SERVICE), C(MPI_ERR_SIZE), C(MPI_ERR_SPAWN), C(MPI_ERR_UNSUPPORTED_DATAREP),
    C(MPI_ERR_UNSUPPORTED_OPERATION), C(MPI_ERR_WIN), C(MPI_T_ERR_MEMORY),
    C(MPI_T_ERR_NOT_INITIALIZED), C(MPI_T_ERR_CANNOT_INIT), C(MPI_T_ERR_INVALID_INDEX),
    C(MPI_T_ERR_INVALID_ITEM), C(MPI_T_ERR_INVALID_HANDLE), C(MPI_T_ERR_OUT_OF_HANDLES),
    C(MPI_T_ERR_OUT_OF_SESSIONS), C(MPI_T_ERR_INVALID_SESSION), C(MPI_T_ERR_CVAR_SET_NOT_NOW),
    C(MPI_T_ERR_CVAR_SET_NEVER), C(MPI_T_ERR_PVAR_NO_STARTSTOP), C(MPI_T_ERR_PVAR_NO_WRITE),
    C(MPI_T_ERR_PVAR_NO_ATOMIC), C(MPI_T_ERR_INVALID_NAME), C(MPI_T_ERR_INVALID),
    C(MPI_ERR_LASTCODE),
#undef C
};

#define NCLASSES ((int)(sizeof k_classes / sizeof k_classes[0]))

int main(int argc, char** argv)
{
    static char strings[NCLASSES][MPI_MAX_ERROR_STRING];
    int i, j;

    mt_init(&argc, &argv);
    MT_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MT_CHECK(NCLASSES == 75, "table has %d classes", NCLASSES);
    for (i = 0; i < NCLASSES; ++i) {
        int cls = -1;
        int len = -1;
        char* s = strings[i];
        MT_CHECK(k_classes[i].cls == (i < 74 ? i : MPI_ERR_LASTCODE), "%s is %d",
                 k_classes[i].name, k_classes[i].cls);
        MT_OK(MPI_Error_class(k_classes[i].cls, &cls));
        if (k_classes[i].cls != MPI_ERR_LASTCODE) {
            MT_CHECK(cls == k_classes[i].cls, "MPI_Error_class(%s) = %d", k_classes[i].name, cls);
        }
        memset(s, 0x7f, MPI_MAX_ERROR_STRING);
        MT_OK(MPI_Error_string(k_classes[i].cls, s, &len));
        MT_CHECK(len > 0 && len < MPI_MAX_ERROR_STRING, "MPI_Error_string(%s): length %d",
                 k_classes[i].name, len);
        if (len > 0 && len < MPI_MAX_ERROR_STRING) {
            MT_CHECK(s[len] == '\0' && (int)strlen(s) == len,
                     "MPI_Error_string(%s) is not a string of length %d", k_classes[i].name, len);
        } else {
            s[0] = '\0';
        }
        if (mt_verbose && mt_rank == 0) {
            printf("%-32s %2d  %s\n", k_classes[i].name, k_classes[i].cls, s);
        }
    }
    for (i = 0; i < NCLASSES; ++i) {
        for (j = i + 1; j < NCLASSES; ++j) {
            MT_CHECK(strcmp(strings[i], strings[j]) != 0, "%s and %s have the same string \"%s\"",
                     k_classes[i].name, k_classes[j].name, strings[i]);
        }
    }
    /* MPI_SUCCESS says there was no error; the classes name something. */
    MT_CHECK(strings[0][0] != '\0', "MPI_SUCCESS has an empty string");

    /* Codes that are not codes. */
    {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        int cls = 0;
        MT_ERR(MPI_ERR_ARG, MPI_Error_class(-1, &cls));
        MT_ERR(MPI_ERR_ARG, MPI_Error_class(MPI_ERR_LASTCODE + 1000, &cls));
        MT_ERR(MPI_ERR_ARG, MPI_Error_string(-5, s, &len));
        MT_ERR(MPI_ERR_ARG, MPI_Error_string(MPI_ERR_LASTCODE + 1000, s, &len));
    }
    return mt_finalize();
}
