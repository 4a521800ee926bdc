! dtype_f90.f90 -- derived datatypes from Fortran (`use mpi`): a vector for
! a row of a column-major matrix, indexed, a struct of a common block sent
! from MPI_BOTTOM with MPI_GET_ADDRESS displacements, the same with the
! MPI-1 routines (MPI_ADDRESS, MPI_TYPE_STRUCT: INTEGER displacements), a
! Fortran-order subarray, extents, names, MPI_PACK / MPI_UNPACK.
program dtype
  use mpi
  implicit none
  integer :: errs, ierr, rank, np, nxt, prv, i, j, rowtype, idxtype, structtype, oldstruct
  integer :: subtype, size, pos, resultlen
  integer :: a(4, 5), b(4, 5)
  integer :: blens(3), types(3), idisp(3), oldaddr(3)
  integer(kind=MPI_ADDRESS_KIND) :: disp(3), lb, extent
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=100) :: packbuf
  integer :: ivals(3)
  double precision :: dval
  integer :: ci
  double precision :: cd(2)
  character(len=3) :: cc
  common /blk/ cd, ci, cc

  errs = 0
  call ftest_init(rank, np, nxt, prv)

  ! A row of a 4x5 column-major matrix: 5 elements, stride 4.
  a = reshape([(rank * 100 + i, i = 1, 20)], [4, 5])
  b = -1
  call MPI_TYPE_VECTOR(5, 1, 4, MPI_INTEGER, rowtype, ierr)
  call MPI_TYPE_COMMIT(rowtype, ierr)
  call MPI_SENDRECV(a(2, 1), 1, rowtype, nxt, 1, b(3, 1), 1, rowtype, prv, 1, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call ftest_check(all(b(3, :) == [(prv * 100 + 2 + 4 * j, j = 0, 4)]), 'vector row', errs)
  call ftest_check(all(b(1, :) == -1) .and. all(b(4, :) == -1), 'vector leaves the rest', errs)
  call MPI_TYPE_GET_EXTENT(rowtype, lb, extent, ierr)
  call ftest_check(lb == 0 .and. extent == 17 * 4, 'vector extent', errs)
  call MPI_TYPE_SIZE(rowtype, size, ierr)
  call ftest_check(size == 20, 'vector size', errs)

  ! Indexed: the diagonal.
  blens = 1
  idisp = [0, 5, 10]
  call MPI_TYPE_INDEXED(3, blens, idisp, MPI_INTEGER, idxtype, ierr)
  call MPI_TYPE_COMMIT(idxtype, ierr)
  b = -1
  call MPI_SENDRECV(a, 1, idxtype, nxt, 2, b, 1, idxtype, prv, 2, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  call ftest_check(b(1, 1) == prv * 100 + 1 .and. b(2, 2) == prv * 100 + 6 .and. &
                   b(3, 3) == prv * 100 + 11 .and. b(2, 1) == -1, 'indexed diagonal', errs)

  ! A struct over a common block, absolute addresses, sent from MPI_BOTTOM.
  ci = rank
  cd = [rank * 1.5d0, -1d0]
  cc = 'r' // achar(iachar('0') + mod(rank, 10)) // '!'
  call MPI_GET_ADDRESS(ci, disp(1), ierr)
  call MPI_GET_ADDRESS(cd, disp(2), ierr)
  call MPI_GET_ADDRESS(cc, disp(3), ierr)
  call ftest_check(disp(1) - disp(2) == 16 .and. disp(3) - disp(1) == 4, 'get_address', errs)
  blens = [1, 2, 3]
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION, MPI_CHARACTER]
  call MPI_TYPE_CREATE_STRUCT(3, blens, disp, types, structtype, ierr)
  call MPI_TYPE_COMMIT(structtype, ierr)
  call MPI_SENDRECV_REPLACE(MPI_BOTTOM, 1, structtype, nxt, 3, prv, 3, MPI_COMM_WORLD, &
                            MPI_STATUS_IGNORE, ierr)
  call ftest_check(ierr == MPI_SUCCESS .and. ci == prv .and. cd(1) == prv * 1.5d0 .and. &
                   cd(2) == -1d0, 'struct from MPI_BOTTOM', errs)
  call ftest_check(cc == 'r' // achar(iachar('0') + mod(prv, 10)) // '!', 'struct character', &
                   errs)
  call MPI_TYPE_SIZE(structtype, size, ierr)
  call ftest_check(size == 4 + 16 + 3, 'struct size', errs)

  ! The same with MPI-1's INTEGER addresses, as displacements from the
  ! first member (absolute ones do not fit an INTEGER on 64-bit Linux).
  ci = rank
  cd = -2d0
  call MPI_ADDRESS(cd, oldaddr(1), ierr)
  call ftest_check(ierr == MPI_SUCCESS, 'mpi_address', errs)
  call MPI_ADDRESS(ci, oldaddr(2), ierr)
  call MPI_ADDRESS(cc, oldaddr(3), ierr)
  oldaddr = oldaddr - oldaddr(1)
  call ftest_check(all(oldaddr == [0, 16, 20]), 'mpi_address displacements', errs)
  blens = [2, 1, 3]
  types = [MPI_DOUBLE_PRECISION, MPI_INTEGER, MPI_CHARACTER]
  call MPI_TYPE_STRUCT(3, blens, oldaddr, types, oldstruct, ierr)
  call MPI_TYPE_COMMIT(oldstruct, ierr)
  call MPI_SENDRECV_REPLACE(cd, 1, oldstruct, nxt, 4, prv, 4, MPI_COMM_WORLD, &
                            MPI_STATUS_IGNORE, ierr)
  call ftest_check(ci == prv .and. cd(2) == -2d0, 'type_struct', errs)
  call MPI_TYPE_EXTENT(MPI_DOUBLE_PRECISION, i, ierr)
  call ftest_check(i == 8, 'type_extent', errs)

  ! A Fortran-order subarray: rows 2..3, columns 2..4.
  call MPI_TYPE_CREATE_SUBARRAY(2, [4, 5], [2, 3], [1, 1], MPI_ORDER_FORTRAN, MPI_INTEGER, &
                                subtype, ierr)
  call MPI_TYPE_COMMIT(subtype, ierr)
  b = -1
  call MPI_SENDRECV(a, 1, subtype, nxt, 5, b, 1, subtype, prv, 5, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  do j = 2, 4
    do i = 2, 3
      call ftest_check(b(i, j) == prv * 100 + i + 4 * (j - 1), 'subarray element', errs)
    end do
  end do
  call ftest_check(b(1, 2) == -1 .and. b(4, 4) == -1 .and. b(2, 5) == -1, &
                   'subarray leaves the rest', errs)

  ! Names.
  call MPI_TYPE_GET_NAME(MPI_DOUBLE_PRECISION, name, resultlen, ierr)
  call ftest_check(name == 'MPI_DOUBLE_PRECISION' .and. resultlen == 20, 'predefined name', errs)
  call MPI_TYPE_SET_NAME(rowtype, 'matrix row   ', ierr)
  call MPI_TYPE_GET_NAME(rowtype, name, resultlen, ierr)
  call ftest_check(name == 'matrix row' .and. resultlen == 10, 'set_name trims blanks', errs)

  ! Pack and unpack.
  ivals = [7, 8, 9]
  dval = 2.5d0
  pos = 0
  call MPI_PACK(ivals, 3, MPI_INTEGER, packbuf, 100, pos, MPI_COMM_WORLD, ierr)
  call MPI_PACK(dval, 1, MPI_DOUBLE_PRECISION, packbuf, 100, pos, MPI_COMM_WORLD, ierr)
  call ftest_check(pos == 20, 'pack position', errs)
  ivals = 0
  dval = 0
  pos = 0
  call MPI_UNPACK(packbuf, 100, pos, ivals, 3, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call MPI_UNPACK(packbuf, 100, pos, dval, 1, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call ftest_check(all(ivals == [7, 8, 9]) .and. dval == 2.5d0, 'unpack', errs)

  call MPI_TYPE_FREE(rowtype, ierr)
  call ftest_check(rowtype == MPI_DATATYPE_NULL, 'type_free', errs)
  call MPI_TYPE_FREE(idxtype, ierr)
  call MPI_TYPE_FREE(structtype, ierr)
  call MPI_TYPE_FREE(oldstruct, ierr)
  call MPI_TYPE_FREE(subtype, ierr)
  call ftest_finish(errs)
end program
