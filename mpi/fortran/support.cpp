// Helpers of the Fortran entry points (fortran.h): strings, MPI-1 integer
// addresses, errors.
#include "mpi/fortran/fortran.h"

#include "mpi/errors.h"

#include <algorithm>
#include <cstring>

namespace ulmpi::fortran {

std::string trimmed(const char* s, std::size_t len, bool leading)
{
    std::size_t first = 0;
    if (leading) {
        while (first < len && s[first] == ' ') {
            ++first;
        }
    }
    std::size_t end = len;
    while (end > first && s[end - 1] == ' ') {
        --end;
    }
    return std::string(s + first, end - first);
}

void copy_out(char* dst, std::size_t len, const char* src) noexcept
{
    const std::size_t n = std::min(len, std::strlen(src));
    std::memcpy(dst, src, n);
    std::memset(dst + n, ' ', len - n);
}

std::vector<MPI_Aint> widen(const MPI_Fint* v, MPI_Fint n)
{
    std::vector<MPI_Aint> out;
    if (n > 0) {
        out.assign(v, v + n);
    }
    return out;
}

int narrow(MPI_Aint v, MPI_Fint* out, const char* fn) noexcept
{
    const auto f = static_cast<MPI_Fint>(v);
    if (f != v) {
        return mpi::raise(nullptr, MPI_ERR_ARG, fn,
                          "%ld does not fit a Fortran INTEGER (use the MPI-2 routine with "
                          "INTEGER(KIND=MPI_ADDRESS_KIND))",
                          static_cast<long>(v));
    }
    *out = f;
    return MPI_SUCCESS;
}

int failed(const char* fn) noexcept { return mpi::api_exception(fn); }

} // namespace ulmpi::fortran
