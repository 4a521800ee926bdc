! coll_f90.f90 -- collectives from free-form Fortran with `use mpi`, on
! the Fortran datatypes: INTEGER, REAL, DOUBLE PRECISION, COMPLEX, DOUBLE
! COMPLEX, LOGICAL (gfortran's .TRUE./.FALSE.), CHARACTER, the sized kinds,
! the pair types with MPI_MAXLOC/MPI_MINLOC, and MPI_IN_PLACE.
program coll
  use mpi
  implicit none
  integer :: errs, ierr, rank, np, i, root, req
  integer :: ibuf(4), ires(4)
  integer, allocatable :: iall(:), counts(:), displs(:)
  real :: r, rres
  double precision :: d(3), dres(3)
  complex :: z, zres
  double complex :: zz, zzres
  logical :: l(3), lres(3)
  integer(kind=8) :: i8, i8res
  integer(kind=2) :: i2, i2res
  real(kind=8) :: r8, r8res
  integer :: pair(2), pres(2)
  double precision :: dpair(2), dpres(2)
  character(len=4) :: word
  character(len=4), allocatable :: words(:)

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  allocate(iall(np * 4), counts(np), displs(np), words(np))

  ! Broadcast from every root in turn.
  do root = 0, np - 1
    ibuf = -1
    if (rank == root) ibuf = [(root * 10 + i, i = 1, 4)]
    call MPI_BCAST(ibuf, 4, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call ftest_check(all(ibuf == [(root * 10 + i, i = 1, 4)]), 'bcast', errs)
  end do

  ! Sums and products over the numeric types.
  ibuf = rank + 1
  call MPI_ALLREDUCE(ibuf, ires, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(ierr == MPI_SUCCESS .and. all(ires == np * (np + 1) / 2), 'integer sum', errs)
  r = 1.5
  call MPI_ALLREDUCE(r, rres, 1, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(rres == 1.5 * np, 'real sum', errs)
  d = [1d0, 2d0, 3d0] * (rank + 1)
  call MPI_REDUCE(d, dres, 3, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) call ftest_check(all(dres == [1d0, 2d0, 3d0] * np), 'double max', errs)
  z = cmplx(0.0, 1.0)
  call MPI_ALLREDUCE(z, zres, 1, MPI_COMPLEX, MPI_PROD, MPI_COMM_WORLD, ierr)
  call ftest_check(abs(zres - cmplx(0.0, 1.0)**np) < 1e-5, 'complex prod', errs)
  zz = dcmplx(rank, -rank)
  call MPI_ALLREDUCE(zz, zzres, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(zzres == dcmplx(np * (np - 1) / 2, -np * (np - 1) / 2), &
                   'double complex sum', errs)
  i8 = 2_8**40 + rank
  call MPI_ALLREDUCE(i8, i8res, 1, MPI_INTEGER8, MPI_MIN, MPI_COMM_WORLD, ierr)
  call ftest_check(i8res == 2_8**40, 'integer8 min', errs)
  i2 = int(rank + 1, 2)
  call MPI_ALLREDUCE(i2, i2res, 1, MPI_INTEGER2, MPI_MAX, MPI_COMM_WORLD, ierr)
  call ftest_check(i2res == np, 'integer2 max', errs)
  r8 = 0.25d0
  call MPI_ALLREDUCE(r8, r8res, 1, MPI_REAL8, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(r8res == 0.25d0 * np, 'real8 sum', errs)

  ! LOGICAL: gfortran's values in, gfortran's values out.
  l = [.true., rank == 0, rank == np - 1]
  call MPI_ALLREDUCE(l, lres, 3, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call ftest_check(lres(1) .and. (lres(2) .eqv. (np == 1)) .and. (lres(3) .eqv. (np == 1)), &
                   'logical land', errs)
  call MPI_ALLREDUCE(l, lres, 3, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call ftest_check(all(lres), 'logical lor', errs)
  call MPI_ALLREDUCE(l, lres, 3, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD, ierr)
  call ftest_check((lres(1) .eqv. (mod(np, 2) == 1)) .and. lres(2) .and. lres(3), &
                   'logical lxor', errs)
  call ftest_check(transfer(lres(2), 1) == transfer(.true., 1), 'logical .true. bits', errs)

  ! MPI_IN_PLACE.
  ibuf = rank
  call MPI_ALLREDUCE(MPI_IN_PLACE, ibuf, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(all(ibuf == np * (np - 1) / 2), 'allreduce in place', errs)
  iall = -1
  iall(rank * 4 + 1:rank * 4 + 4) = rank
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, iall, 4, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call ftest_check(all(iall == [((i - 1) / 4, i = 1, np * 4)]), 'allgather in place', errs)

  ! MAXLOC / MINLOC on the Fortran pair types.
  pair = [mod(rank * 7, np), rank]
  call MPI_ALLREDUCE(pair, pres, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call ftest_check(pres(1) == maxval([(mod(i * 7, np), i = 0, np - 1)]), '2integer maxloc', errs)
  dpair = [dble(rank), dble(rank)]
  call MPI_ALLREDUCE(dpair, dpres, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call ftest_check(dpres(1) == 0d0 .and. dpres(2) == 0d0, '2double_precision minloc', errs)

  ! Gather / scatter, with v forms, and CHARACTER.
  word = achar(iachar('a') + rank) // 'xyz'
  call MPI_GATHER(word, 4, MPI_CHARACTER, words, 4, MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, np
      call ftest_check(words(i) == achar(iachar('a') + i - 1) // 'xyz', 'character gather', errs)
    end do
  end if
  counts = [(i, i = 1, np)]
  displs = [(i * (i - 1) / 2, i = 1, np)]
  ibuf = rank
  call MPI_GATHERV(ibuf, rank + 1, MPI_INTEGER, iall, counts, displs, MPI_INTEGER, np - 1, &
                   MPI_COMM_WORLD, ierr)
  if (rank == np - 1) then
    do i = 1, np
      call ftest_check(all(iall(displs(i) + 1:displs(i) + i) == i - 1), 'gatherv', errs)
    end do
  end if
  if (rank == 0) iall(1:np) = [(100 + i, i = 1, np)]
  call MPI_SCATTER(iall, 1, MPI_INTEGER, i, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call ftest_check(i == 101 + rank, 'scatter', errs)

  ! Alltoall, reduce_scatter_block, scan, exscan.
  iall(1:np) = [(rank * 100 + i, i = 0, np - 1)]
  call MPI_ALLTOALL(iall, 1, MPI_INTEGER, iall(np + 1), 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call ftest_check(all(iall(np + 1:2 * np) == [(i * 100 + rank, i = 0, np - 1)]), 'alltoall', errs)
  iall(1:np) = 1
  call MPI_REDUCE_SCATTER_BLOCK(iall, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(i == np, 'reduce_scatter_block', errs)
  call MPI_SCAN(rank + 1, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(i == (rank + 1) * (rank + 2) / 2, 'scan', errs)

  ! A nonblocking collective.
  r8 = rank
  call MPI_IALLREDUCE(r8, r8res, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call MPI_F_SYNC_REG(r8res)
  call ftest_check(r8res == np * (np - 1) / 2, 'iallreduce', errs)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)

  deallocate(iall, counts, displs, words)
  call ftest_finish(errs)
end program
