! interop_f90.f90 -- Fortran and C in one program (`use mpi`): handles and
! a status go to C (interop_c.c), which converts them with MPI_*_f2c and
! MPI_Status_f2c / c2f, and sends from C's MPI_BOTTOM a datatype built here
! from MPI_GET_ADDRESS (absolute addresses, the same MPI_BOTTOM). Also the
! Fortran-only routines MPI_SIZEOF and MPI_TYPE_CREATE_F90_*.
program interop
  use mpi
  implicit none
  integer :: errs, ierr, rank, np, nxt, prv, t, t2, n, ni, na, nd, comb, ints(2), dummy(1)
  integer :: st(MPI_STATUS_SIZE), vals(3), blens(2), types(2), mix
  integer(kind=MPI_ADDRESS_KIND) :: disp(2), adummy(1)
  double precision :: d(4), x
  complex(kind=8) :: z(2)
  character(len=7) :: ch
  logical(kind=1) :: l1
  integer(kind=8) :: i8(2, 3)

  errs = 0
  call ftest_init(rank, np, nxt, prv)

  ! A status to hand to C: 3 INTEGERs from rank 0, tag 9.
  vals = [1, 2, 3]
  if (rank == 0) call MPI_SEND(vals, 3, MPI_INTEGER, 0, 9, MPI_COMM_SELF, ierr)
  if (rank == 0) call MPI_RECV(vals, 3, MPI_INTEGER, 0, 9, MPI_COMM_SELF, st, ierr)
  if (rank /= 0) then
    call MPI_SEND(vals, 3, MPI_INTEGER, MPI_PROC_NULL, 9, MPI_COMM_SELF, ierr)
    st = 0
    st(MPI_TAG) = 9
    call MPI_STATUS_SET_ELEMENTS(st, MPI_INTEGER, 3, ierr)
  end if

  ! A type over vals and d by absolute addresses.
  d = rank
  vals = rank
  call MPI_GET_ADDRESS(vals, disp(1), ierr)
  call MPI_GET_ADDRESS(d, disp(2), ierr)
  blens = [3, 4]
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
  call MPI_TYPE_CREATE_STRUCT(2, blens, disp, types, mix, ierr)
  call MPI_TYPE_COMMIT(mix, ierr)
  call interop_c(mix, MPI_COMM_WORLD, st, errs)
  call ftest_check(st(MPI_TAG) == 42, 'status back from C', errs)
  if (rank == 1) then
    call ftest_check(all(vals == 0) .and. all(d == 0d0), 'MPI_BOTTOM type sent from C', errs)
  end if
  call MPI_TYPE_FREE(mix, ierr)

  ! MPI_SIZEOF: one element, any rank.
  call MPI_SIZEOF(x, n, ierr)
  call ftest_check(n == 8 .and. ierr == MPI_SUCCESS, 'sizeof double', errs)
  call MPI_SIZEOF(z, n, ierr)
  call ftest_check(n == 16, 'sizeof complex(8) array', errs)
  call MPI_SIZEOF(i8, n, ierr)
  call ftest_check(n == 8, 'sizeof integer(8) matrix', errs)
  call MPI_SIZEOF(ch, n, ierr)
  call ftest_check(n == 1, 'sizeof character', errs)
  call MPI_SIZEOF(l1, n, ierr)
  call ftest_check(n == 1, 'sizeof logical(1)', errs)

  ! Parameterized types: one handle per (p, r), the envelope says how.
  call MPI_TYPE_CREATE_F90_REAL(10, MPI_UNDEFINED, t, ierr)
  call MPI_TYPE_CREATE_F90_REAL(10, MPI_UNDEFINED, t2, ierr)
  call ftest_check(ierr == MPI_SUCCESS .and. t == t2, 'f90_real cached', errs)
  call MPI_TYPE_SIZE(t, n, ierr)
  call ftest_check(n == 8, 'f90_real(10) is 8 bytes', errs)
  call MPI_TYPE_GET_ENVELOPE(t, ni, na, nd, comb, ierr)
  call ftest_check(ni == 2 .and. na == 0 .and. nd == 0 .and. comb == MPI_COMBINER_F90_REAL, &
                   'f90_real envelope', errs)
  call MPI_TYPE_GET_CONTENTS(t, 2, 0, 0, ints, adummy, dummy, ierr)
  call ftest_check(ints(1) == 10 .and. ints(2) == MPI_UNDEFINED, 'f90_real contents', errs)
  d = 1.5d0
  call MPI_ALLREDUCE(MPI_IN_PLACE, d, 4, t, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(all(d == 1.5d0 * np), 'f90_real reduction', errs)
  call MPI_TYPE_CREATE_F90_INTEGER(3, t, ierr)
  call MPI_TYPE_SIZE(t, n, ierr)
  call ftest_check(n == 2, 'f90_integer(3) is 2 bytes', errs)
  call MPI_TYPE_CREATE_F90_COMPLEX(6, 30, t, ierr)
  call MPI_TYPE_SIZE(t, n, ierr)
  call ftest_check(n == 8, 'f90_complex(6, 30) is 8 bytes', errs)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_TYPE_CREATE_F90_REAL(40, MPI_UNDEFINED, t2, ierr)
  call ftest_check(ierr /= MPI_SUCCESS, 'no 40-digit real', errs)
  call MPI_TYPE_FREE(t, ierr)
  call ftest_check(ierr /= MPI_SUCCESS, 'f90 types cannot be freed', errs)

  call ftest_finish(errs)
end program
