// The predefined attribute copy/delete callbacks of mpi.h. They are what
// the standard defines them to be: NULL_COPY never copies, DUP copies the
// attribute value, NULL_DELETE does nothing.
#include "mpi/entry.h"

namespace {

int null_copy(void* flag_out)
{
    *static_cast<int*>(flag_out) = 0;
    return MPI_SUCCESS;
}

int dup_copy(void* in, void* out, int* flag)
{
    *static_cast<void**>(out) = in;
    *flag = 1;
    return MPI_SUCCESS;
}

} // namespace

int MPI_COMM_NULL_COPY_FN(MPI_Comm, int, void*, void*, void*, int* flag) { return null_copy(flag); }
int MPI_COMM_NULL_DELETE_FN(MPI_Comm, int, void*, void*) { return MPI_SUCCESS; }
int MPI_COMM_DUP_FN(MPI_Comm, int, void*, void* in, void* out, int* flag) { return dup_copy(in, out, flag); }
int MPI_TYPE_NULL_COPY_FN(MPI_Datatype, int, void*, void*, void*, int* flag) { return null_copy(flag); }
int MPI_TYPE_NULL_DELETE_FN(MPI_Datatype, int, void*, void*) { return MPI_SUCCESS; }
int MPI_TYPE_DUP_FN(MPI_Datatype, int, void*, void* in, void* out, int* flag) { return dup_copy(in, out, flag); }
int MPI_WIN_NULL_COPY_FN(MPI_Win, int, void*, void*, void*, int* flag) { return null_copy(flag); }
int MPI_WIN_NULL_DELETE_FN(MPI_Win, int, void*, void*) { return MPI_SUCCESS; }
int MPI_WIN_DUP_FN(MPI_Win, int, void*, void* in, void* out, int* flag) { return dup_copy(in, out, flag); }
int MPI_NULL_COPY_FN(MPI_Comm, int, void*, void*, void*, int* flag) { return null_copy(flag); }
int MPI_NULL_DELETE_FN(MPI_Comm, int, void*, void*) { return MPI_SUCCESS; }
int MPI_DUP_FN(MPI_Comm, int, void*, void* in, void* out, int* flag) { return dup_copy(in, out, flag); }
