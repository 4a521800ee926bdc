! misc_f90.f90 -- the rest, from Fortran (`use mpi`): initialization
! queries (LOGICAL), versions and names (CHARACTER out), timers, info
! objects (blanks trimmed on the way in, padded on the way out), memory
! from MPI_ALLOC_MEM, a generalized request with Fortran callbacks,
! MPI_TYPE_MATCH_SIZE, MPI_AINT_ADD / DIFF, a distributed graph with
! MPI_UNWEIGHTED.
module greq_callbacks
  use mpi
  implicit none
  integer :: freed = 0
contains
  subroutine query_fn(extra, status, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: status(MPI_STATUS_SIZE), ierr
    call MPI_STATUS_SET_ELEMENTS(status, MPI_INTEGER, int(extra), ierr)
    call MPI_STATUS_SET_CANCELLED(status, .false., ierr)
    status(MPI_SOURCE) = 3
    status(MPI_TAG) = 4
    ierr = MPI_SUCCESS
  end subroutine
  subroutine free_fn(extra, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierr
    freed = freed + int(extra)
    ierr = MPI_SUCCESS
  end subroutine
  subroutine cancel_fn(extra, complete, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierr
    ierr = MPI_SUCCESS
    if (complete .or. extra < 0) ierr = MPI_ERR_OTHER
  end subroutine
end module

program misc
  use mpi
  use greq_callbacks
  use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer
  implicit none
  integer :: errs, ierr, rank, np, v, sv, n, nkeys, provided, req, cnt, t, dg
  integer :: indeg, outdeg, srcs(2), dsts(2)
  logical :: flag, weighted
  character(len=MPI_MAX_PROCESSOR_NAME) :: host
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
  character(len=MPI_MAX_INFO_KEY) :: key
  character(len=20) :: value
  character(len=3) :: tiny
  integer :: info, info2, st(MPI_STATUS_SIZE)
  double precision :: t0, t1
  integer(kind=MPI_ADDRESS_KIND) :: size, base, a1, a2, extra
  type(c_ptr) :: cp
  integer, pointer :: mem(:)

  errs = 0
  call MPI_INITIALIZED(flag, ierr)
  call ftest_check(.not. flag, 'initialized before init', errs)
  call MPI_INIT_THREAD(MPI_THREAD_FUNNELED, provided, ierr)
  call ftest_check(ierr == MPI_SUCCESS .and. provided >= MPI_THREAD_FUNNELED, 'init_thread', errs)
  call MPI_INITIALIZED(flag, ierr)
  call ftest_check(flag, 'initialized', errs)
  call MPI_FINALIZED(flag, ierr)
  call ftest_check(.not. flag, 'not finalized', errs)
  call MPI_IS_THREAD_MAIN(flag, ierr)
  call ftest_check(flag, 'is_thread_main', errs)
  call MPI_QUERY_THREAD(v, ierr)
  call ftest_check(v == provided, 'query_thread', errs)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)

  ! Versions, names, timers.
  call MPI_GET_VERSION(v, sv, ierr)
  call ftest_check(v == MPI_VERSION .and. sv == MPI_SUBVERSION, 'get_version', errs)
  call MPI_GET_LIBRARY_VERSION(lib, n, ierr)
  call ftest_check(n > 0 .and. index(lib, 'ulmpi') > 0 .and. lib(n + 1:) == ' ', &
                   'library version', errs)
  call MPI_GET_PROCESSOR_NAME(host, n, ierr)
  call ftest_check(n > 0 .and. host(n + 1:) == ' ', 'processor name', errs)
  t0 = MPI_WTIME()
  t1 = MPI_WTIME()
  call ftest_check(t1 >= t0, 'wtime', errs)
  t0 = MPI_WTICK()
  call ftest_check(t0 > 0d0 .and. t0 < 1d0, 'wtick', errs)

  ! Info: leading and trailing blanks of keys and values do not count.
  call MPI_INFO_CREATE(info, ierr)
  call MPI_INFO_SET(info, '  colour ', ' blue  ', ierr)
  call MPI_INFO_SET(info, 'size', '42', ierr)
  call MPI_INFO_GET_NKEYS(info, nkeys, ierr)
  call ftest_check(nkeys == 2, 'info nkeys', errs)
  call MPI_INFO_GET_NTHKEY(info, 0, key, ierr)
  call ftest_check(key == 'colour', 'info nthkey', errs)
  call MPI_INFO_GET(info, 'colour', 20, value, flag, ierr)
  call ftest_check(flag .and. value == 'blue', 'info get', errs)
  call MPI_INFO_GET_VALUELEN(info, 'colour   ', n, flag, ierr)
  call ftest_check(flag .and. n == 4, 'info valuelen', errs)
  call MPI_INFO_GET(info, 'colour', 2, value, flag, ierr)
  call ftest_check(flag .and. value == 'bl', 'info get, valuelen 2', errs)
  call MPI_INFO_GET(info, 'colour', 20, tiny, flag, ierr)
  call ftest_check(flag .and. tiny == 'blu', 'info get into a short variable', errs)
  call MPI_INFO_GET(info, 'missing', 20, value, flag, ierr)
  call ftest_check(ierr == MPI_SUCCESS .and. .not. flag, 'info get missing', errs)
  call MPI_INFO_DUP(info, info2, ierr)
  call MPI_INFO_DELETE(info, 'size', ierr)
  call MPI_INFO_GET_NKEYS(info2, nkeys, ierr)
  call ftest_check(nkeys == 2, 'info dup', errs)
  call MPI_INFO_FREE(info, ierr)
  call MPI_INFO_FREE(info2, ierr)
  call ftest_check(info == MPI_INFO_NULL, 'info free', errs)

  ! Memory from MPI_ALLOC_MEM, reached through its address.
  size = 400
  call MPI_ALLOC_MEM(size, MPI_INFO_NULL, base, ierr)
  call ftest_check(ierr == MPI_SUCCESS .and. base /= 0, 'alloc_mem', errs)
  cp = transfer(base, cp)
  call c_f_pointer(cp, mem, [100])
  mem = rank
  call MPI_ALLREDUCE(MPI_IN_PLACE, mem, 100, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ftest_check(all(mem == np * (np - 1) / 2), 'alloc_mem buffer', errs)
  call MPI_FREE_MEM(mem, ierr)
  call ftest_check(ierr == MPI_SUCCESS, 'free_mem', errs)

  ! A generalized request whose callbacks are Fortran.
  extra = 5
  call MPI_GREQUEST_START(query_fn, free_fn, cancel_fn, extra, req, ierr)
  call MPI_TEST(req, flag, st, ierr)
  call ftest_check(.not. flag, 'grequest pending', errs)
  call MPI_GREQUEST_COMPLETE(req, ierr)
  call MPI_WAIT(req, st, ierr)
  call ftest_check(ierr == MPI_SUCCESS .and. req == MPI_REQUEST_NULL, 'grequest wait', errs)
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call ftest_check(cnt == 5 .and. st(MPI_SOURCE) == 3 .and. st(MPI_TAG) == 4, 'grequest status', &
                   errs)
  call ftest_check(freed == 5, 'grequest free_fn', errs)

  ! Sizes and addresses.
  call MPI_TYPE_MATCH_SIZE(MPI_TYPECLASS_REAL, 8, t, ierr)
  call MPI_TYPE_SIZE(t, n, ierr)
  call ftest_check(n == 8, 'type_match_size', errs)
  call MPI_TYPE_MATCH_SIZE(MPI_TYPECLASS_INTEGER, 4, t, ierr)
  call MPI_TYPE_SIZE(t, n, ierr)
  call ftest_check(n == 4, 'type_match_size integer', errs)
  call MPI_GET_ADDRESS(srcs(1), a1, ierr)
  call MPI_GET_ADDRESS(srcs(2), a2, ierr)
  size = MPI_AINT_DIFF(a2, a1)
  call ftest_check(size == 4, 'aint_diff', errs)
  size = MPI_AINT_ADD(a1, 4_MPI_ADDRESS_KIND)
  call ftest_check(size == a2, 'aint_add', errs)

  ! A ring as a distributed graph, unweighted.
  srcs(1) = mod(rank + np - 1, np)
  dsts(1) = mod(rank + 1, np)
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, &
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, .false., dg, ierr)
  call ftest_check(ierr == MPI_SUCCESS, 'dist_graph_create_adjacent', errs)
  call MPI_DIST_GRAPH_NEIGHBORS_COUNT(dg, indeg, outdeg, weighted, ierr)
  call ftest_check(indeg == 1 .and. outdeg == 1 .and. .not. weighted, 'dist_graph counts', errs)
  srcs = -1
  dsts = -1
  call MPI_DIST_GRAPH_NEIGHBORS(dg, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, ierr)
  call ftest_check(srcs(1) == mod(rank + np - 1, np) .and. dsts(1) == mod(rank + 1, np), &
                   'dist_graph neighbors', errs)
  call MPI_COMM_FREE(dg, ierr)

  call MPI_FINALIZED(flag, ierr)
  call ftest_check(.not. flag, 'finalized before finalize', errs)
  call ftest_finish(errs)
end program
