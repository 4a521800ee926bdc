// MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE from Fortran: the commands and
// arguments come as CHARACTER arrays. An argv is a one-dimensional array of
// CHARACTER(*) ended by an element that is all blanks (MPI-3.1 10.3.2);
// spawn_multiple's array_of_argv is two-dimensional, (count, *): element
// (i, j) is the j-th argument of command i, Fortran order (column-major).
// Each argument loses its trailing blanks, a command its leading ones too.
// MPI_ARGV_NULL, MPI_ARGVS_NULL and MPI_ERRCODES_IGNORE are common blocks
// (sentinels.cpp).
#include "mpi/fortran/fortran.h"

#include <string>
#include <vector>

namespace {

using ulmpi::fortran::trimmed;

bool blank(const char* s, std::size_t len)
{
    for (std::size_t i = 0; i < len; ++i) {
        if (s[i] != ' ') {
            return false;
        }
    }
    return true;
}

// One command's arguments: element k at base + k * stride * len, up to the
// first blank one. The strings keep the pointers' text alive.
struct Argv {
    std::vector<std::string> text;
    std::vector<char*> ptrs;

    void read(const char* base, std::size_t stride, std::size_t len)
    {
        for (std::size_t k = 0;; ++k) {
            const char* e = base + k * stride * len;
            if (len == 0 || blank(e, len)) {
                break;
            }
            text.push_back(trimmed(e, len, false));
        }
        for (std::string& s : text) {
            ptrs.push_back(s.data());
        }
        ptrs.push_back(nullptr);
    }
};

int* errcodes(MPI_Fint* e) { return e == mpi_fortran_errcodes_ignore_ ? MPI_ERRCODES_IGNORE : e; }

} // namespace

#pragma GCC visibility push(default)

extern "C" void pmpi_comm_spawn_(const char* command, const char* argv, const MPI_Fint* maxprocs,
                                 const MPI_Fint* info, const MPI_Fint* root,
                                 const MPI_Fint* comm, MPI_Fint* intercomm,
                                 MPI_Fint* array_of_errcodes, MPI_Fint* ierr,
                                 std::size_t command_len, std::size_t argv_len)
{
    try {
        const std::string cmd = trimmed(command, command_len, true);
        Argv a;
        const bool none = argv == mpi_fortran_argv_null_;
        if (!none) {
            a.read(argv, 1, argv_len);
        }
        *ierr = PMPI_Comm_spawn(cmd.c_str(), none ? MPI_ARGV_NULL : a.ptrs.data(), *maxprocs,
                                *info, *root, *comm, intercomm, errcodes(array_of_errcodes));
    } catch (...) {
        *ierr = ulmpi::fortran::failed("MPI_Comm_spawn");
    }
}
ULMPI_F_ALIASES(comm_spawn)

extern "C" void pmpi_comm_spawn_multiple_(const MPI_Fint* count, const char* array_of_commands,
                                          const char* array_of_argv,
                                          const MPI_Fint* array_of_maxprocs,
                                          const MPI_Fint* array_of_info, const MPI_Fint* root,
                                          const MPI_Fint* comm, MPI_Fint* intercomm,
                                          MPI_Fint* array_of_errcodes, MPI_Fint* ierr,
                                          std::size_t commands_len, std::size_t argv_len)
{
    try {
        const int n = *count;
        std::vector<std::string> cmds;
        std::vector<char*> cmd_ptrs;
        std::vector<Argv> argvs(n > 0 ? static_cast<std::size_t>(n) : 0);
        std::vector<char**> argv_ptrs;
        const bool none = array_of_argv == mpi_fortran_argvs_null_;
        for (int i = 0; i < n; ++i) {
            cmds.push_back(trimmed(array_of_commands + static_cast<std::size_t>(i) * commands_len,
                                   commands_len, true));
            if (!none) {
                Argv& a = argvs[static_cast<std::size_t>(i)];
                a.read(array_of_argv + static_cast<std::size_t>(i) * argv_len,
                       static_cast<std::size_t>(n), argv_len);
                argv_ptrs.push_back(a.ptrs.data());
            }
        }
        for (std::string& s : cmds) {
            cmd_ptrs.push_back(s.data());
        }
        // A count the C function refuses (n < 1) reaches it as it is.
        *ierr = PMPI_Comm_spawn_multiple(n, n > 0 ? cmd_ptrs.data() : nullptr,
                                         none || n < 1 ? MPI_ARGVS_NULL : argv_ptrs.data(),
                                         array_of_maxprocs, array_of_info, *root, *comm,
                                         intercomm, errcodes(array_of_errcodes));
    } catch (...) {
        *ierr = ulmpi::fortran::failed("MPI_Comm_spawn_multiple");
    }
}
ULMPI_F_ALIASES(comm_spawn_multiple)

#pragma GCC visibility pop
