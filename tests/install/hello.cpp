// Installation test program (C++): mpi.h must work from C++ (extern "C"),
// and a C++ program links libstdc++ its own way next to libmpi's.
#include <mpi.h>

#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    std::vector<int> mine(1000);
    std::iota(mine.begin(), mine.end(), rank * 1000);
    std::vector<int> theirs(mine.size(), -1);
    int next = (rank + 1) % size;
    int prev = (rank + size - 1) % size;
    MPI_Request reqs[2];
    MPI_Irecv(theirs.data(), static_cast<int>(theirs.size()), MPI_INT, prev, 3, MPI_COMM_WORLD,
              &reqs[0]);
    MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_INT, next, 3, MPI_COMM_WORLD,
              &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);

    long want = 0;
    for (int i = 0; i < 1000; ++i) {
        want += prev * 1000 + i;
    }
    long sum = std::accumulate(theirs.begin(), theirs.end(), 0L);
    std::ostringstream line;
    line << "c++ rank " << rank << " of " << size << ": sum " << sum << ' '
         << (sum == want ? "ok" : "WRONG") << '\n';
    std::cout << line.str() << std::flush;
    MPI_Finalize();
    return sum == want ? 0 : 1;
}
