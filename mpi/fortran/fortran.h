// The Fortran bindings (mpif.h, `use mpi`): what every entry point shares.
//
// An entry point is `pmpi_name_` (gfortran: lower case, one trailing
// underscore) taking every argument by reference, then `ierror`, then the
// hidden lengths of its CHARACTER arguments (size_t since gfortran 8). It
// calls PMPI_Name and stores the result in ierror. ULMPI_F_ALIASES adds the
// weak names mpi_name_ (the profiling interface: a tool defines mpi_name_
// and calls pmpi_name_), and mpi_name, mpi_name__, pmpi_name, pmpi_name__
// for compilers that mangle otherwise. Most entry points are generated
// (gen_bindings.py, routines.txt); the few with more to do are written by
// hand in this folder and use the same helpers.
//
// Handles are MPI_Fint, which is int like every C handle (mpi.h), so they
// pass through unchanged; a Fortran status is MPI_Fint[MPI_STATUS_SIZE],
// laid out as MPI_Status. LOGICAL is gfortran's: 4 bytes, .TRUE. = 1.
//
// Sentinels. MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE,
// MPI_ERRCODES_IGNORE, MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY, MPI_ARGV_NULL and
// MPI_ARGVS_NULL are variables in
// common blocks (sentinels.cpp defines them, exported, so that a program's
// common block and ours are one object); an argument at one of those
// addresses means the constant. Addresses are absolute, as in C, so a
// datatype built in one language from MPI_GET_ADDRESS works from MPI_BOTTOM
// in the other.
#pragma once

#include "mpi/entry.h"

#include <cstddef>
#include <string>
#include <vector>

extern "C" {
// The common blocks (sizes as mpif.h declares them).
extern MPI_Fint mpi_fortran_bottom_;
extern MPI_Fint mpi_fortran_in_place_;
extern MPI_Fint mpi_fortran_status_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint mpi_fortran_statuses_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint mpi_fortran_errcodes_ignore_[1];
extern MPI_Fint mpi_fortran_unweighted_[1];
extern MPI_Fint mpi_fortran_weights_empty_[1];
extern char mpi_fortran_argv_null_[1];
extern char mpi_fortran_argvs_null_[1];
}

#define ULMPI_F_WEAK_(alias, target) _Pragma(ULMPI_STR(weak alias = target))
#define ULMPI_F_ALIASES(n)                                                                         \
    ULMPI_F_WEAK_(mpi_##n##_, pmpi_##n##_)                                                         \
    ULMPI_F_WEAK_(mpi_##n, pmpi_##n##_)                                                            \
    ULMPI_F_WEAK_(mpi_##n##__, pmpi_##n##_)                                                        \
    ULMPI_F_WEAK_(pmpi_##n, pmpi_##n##_)                                                           \
    ULMPI_F_WEAK_(pmpi_##n##__, pmpi_##n##_)

namespace ulmpi::fortran {

static_assert(sizeof(MPI_Status) == MPI_F_STATUS_SIZE * sizeof(MPI_Fint),
              "a Fortran status is an MPI_Status");

// A procedure argument (a callback), cast to its C type at the call.
using Procedure = void (*)();

// A choice buffer: the common blocks of MPI_BOTTOM and MPI_IN_PLACE mean
// those constants.
inline void* buffer(void* p)
{
    if (p == &mpi_fortran_bottom_) {
        return MPI_BOTTOM;
    }
    return p == &mpi_fortran_in_place_ ? MPI_IN_PLACE : p;
}

inline MPI_Status* status(MPI_Fint* s)
{
    return s == mpi_fortran_status_ignore_ ? MPI_STATUS_IGNORE : reinterpret_cast<MPI_Status*>(s);
}

inline MPI_Status* statuses(MPI_Fint* s)
{
    return s == mpi_fortran_statuses_ignore_ || s == mpi_fortran_status_ignore_
               ? MPI_STATUSES_IGNORE
               : reinterpret_cast<MPI_Status*>(s);
}

inline const int* weights(const MPI_Fint* w)
{
    if (w == mpi_fortran_unweighted_) {
        return MPI_UNWEIGHTED;
    }
    return w == mpi_fortran_weights_empty_ ? MPI_WEIGHTS_EMPTY : w;
}

inline int* weights(MPI_Fint* w)
{
    return const_cast<int*>(weights(static_cast<const MPI_Fint*>(w)));
}

// CHARACTER(*) in: the text without trailing blanks (and leading ones too
// for info keys and values, as MPI-3.1 9.1 says).
std::string trimmed(const char* s, std::size_t len, bool leading);
// CHARACTER(*) out: `src` copied into the `len` characters of `dst`, blank
// padded, cut at `len`.
void copy_out(char* dst, std::size_t len, const char* src) noexcept;

// C's 0-based indexes made Fortran's 1-based; MPI_UNDEFINED stays.
inline void one_based(MPI_Fint* idx, MPI_Fint n) noexcept
{
    for (MPI_Fint i = 0; i < n; ++i) {
        if (idx[i] >= 0) {
            ++idx[i];
        }
    }
}

// MPI-1's INTEGER addresses and extents.
std::vector<MPI_Aint> widen(const MPI_Fint* v, MPI_Fint n);
// Stores `v` in `out`; MPI_ERR_ARG (through MPI_COMM_WORLD's handler) when
// it does not fit.
int narrow(MPI_Aint v, MPI_Fint* out, const char* fn) noexcept;

// The catch-all of an entry point that allocates.
int failed(const char* fn) noexcept;

} // namespace ulmpi::fortran
