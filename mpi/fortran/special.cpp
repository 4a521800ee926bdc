// Fortran entry points that do more than convert their arguments:
// MPI_INIT(_THREAD) (no argc/argv in Fortran), MPI-1's MPI_ADDRESS (an
// INTEGER), MPI_ALLOC_MEM (the address as an integer, for Cray pointers),
// MPI_BUFFER_DETACH (the buffer's address is not written into the Fortran
// buffer), MPI_INFO_GET (the value's length comes from both valuelen and
// the CHARACTER's length).
#include "mpi/fortran/fortran.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#pragma GCC visibility push(default)

extern "C" void pmpi_init_(MPI_Fint* ierr)
{
    *ierr = PMPI_Init(nullptr, nullptr);
}
ULMPI_F_ALIASES(init)

extern "C" void pmpi_init_thread_(const MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr)
{
    *ierr = PMPI_Init_thread(nullptr, nullptr, *required, provided);
}
ULMPI_F_ALIASES(init_thread)

// MPI-1's INTEGER address: the low 32 bits of the address, as Open MPI
// gives them. On 64-bit Linux no address fits (PIE programs live above
// 4 GiB), but the difference of two such values is the true displacement
// when the objects are less than 2 GiB apart, which is how MPI-1 programs
// build their struct types; from MPI_BOTTOM only MPI_GET_ADDRESS works.
extern "C" void pmpi_address_(void* location, MPI_Fint* address, MPI_Fint* ierr)
{
    MPI_Aint a = 0;
    *ierr = PMPI_Address(location, &a);
    if (*ierr == MPI_SUCCESS) {
        *address = static_cast<MPI_Fint>(static_cast<std::uint32_t>(a));
    }
}
ULMPI_F_ALIASES(address)

extern "C" void pmpi_alloc_mem_(const MPI_Aint* size, const MPI_Fint* info, MPI_Aint* baseptr,
                                MPI_Fint* ierr)
{
    void* p = nullptr;
    *ierr = PMPI_Alloc_mem(*size, *info, &p);
    if (*ierr == MPI_SUCCESS) {
        *baseptr = reinterpret_cast<MPI_Aint>(p);
    }
}
ULMPI_F_ALIASES(alloc_mem)

extern "C" void pmpi_buffer_detach_(void* buffer_addr, MPI_Fint* size, MPI_Fint* ierr)
{
    (void)buffer_addr; // Fortran cannot use the address; the buffer is the program's own
    void* detached = nullptr;
    *ierr = PMPI_Buffer_detach(&detached, size);
}
ULMPI_F_ALIASES(buffer_detach)

extern "C" void pmpi_info_get_(const MPI_Fint* info, const char* key, const MPI_Fint* valuelen,
                               char* value, MPI_Fint* flag, MPI_Fint* ierr, std::size_t key_len,
                               std::size_t value_len) try
{
    const std::string k = ulmpi::fortran::trimmed(key, key_len, true);
    // At most valuelen characters, and no more than the CHARACTER holds.
    const MPI_Fint n =
        std::max<MPI_Fint>(0, std::min<MPI_Fint>(*valuelen, static_cast<MPI_Fint>(value_len)));
    std::vector<char> v(static_cast<std::size_t>(n) + 1, '\0');
    // A negative valuelen goes to C as it is, which reports it.
    *ierr = PMPI_Info_get(*info, k.c_str(), *valuelen < 0 ? *valuelen : n, v.data(), flag);
    if (*ierr == MPI_SUCCESS) {
        *flag = *flag != 0;
        if (*flag) {
            ulmpi::fortran::copy_out(value, value_len, v.data());
        }
    }
}
catch (...) {
    *ierr = ulmpi::fortran::failed("MPI_Info_get");
}
ULMPI_F_ALIASES(info_get)

// MPI_F_SYNC_REG(buf): nothing to do; being an external call that takes
// buf is the point (the compiler must assume buf changed and reload it
// from memory, e.g. after a nonblocking receive into it completed).
extern "C" void pmpi_f_sync_reg_(void* buf)
{
    (void)buf;
}
ULMPI_F_ALIASES(f_sync_reg)

#pragma GCC visibility pop
