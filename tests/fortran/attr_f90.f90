! attr_f90.f90 -- Fortran callbacks (`use mpi`): attribute copy and delete
! procedures with their extra_state (MPI-2 and MPI-1 forms), the predefined
! MPI_COMM_DUP_FN / MPI_COMM_NULL_COPY_FN / MPI_NULL_COPY_FN, predefined
! attributes read as integers, datatype attributes, a user reduction
! operation and a communicator error handler written in Fortran.
module attr_callbacks
  use mpi
  implicit none
  integer :: copies = 0, deletes = 0, last_deleted = -1, handled = 0, handled_code = 0
contains
  subroutine copy_fn(oldcomm, keyval, extra, valin, valout, flag, ierr)
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    copies = copies + 1
    valout = valin + extra   ! extra_state is 1000
    flag = .true.
    ierr = MPI_SUCCESS
    if (oldcomm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID) ierr = MPI_ERR_OTHER
  end subroutine

  subroutine delete_fn(comm, keyval, val, extra, ierr)
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    last_deleted = int(val)
    ierr = MPI_SUCCESS
    if (extra /= 1000) ierr = MPI_ERR_OTHER
  end subroutine

  ! MPI-1 form: every argument a default INTEGER.
  subroutine copy77(oldcomm, keyval, extra, valin, valout, flag, ierr)
    integer :: oldcomm, keyval, extra, valin, valout, ierr
    logical :: flag
    valout = valin * extra   ! extra_state is 3
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine

  subroutine delete77(comm, keyval, val, extra, ierr)
    integer :: comm, keyval, val, extra, ierr
    deletes = deletes + 1
    last_deleted = val
    ierr = MPI_SUCCESS
  end subroutine

  ! A user operation: element-wise a*b + a + b (commutative) on INTEGERs.
  subroutine myop(invec, inoutvec, len, datatype)
    integer :: len, datatype
    integer :: invec(len), inoutvec(len)
    integer :: i
    do i = 1, len
      inoutvec(i) = invec(i) * inoutvec(i) + invec(i) + inoutvec(i)
    end do
    if (datatype /= MPI_INTEGER) inoutvec(1) = -999
  end subroutine

  subroutine handler(comm, code)
    integer :: comm, code
    handled = handled + 1
    handled_code = code
    if (comm == MPI_COMM_NULL) handled = -100
  end subroutine
end module

program attr
  use mpi
  use attr_callbacks
  implicit none
  integer :: errs, ierr, rank, np, key, key2, key77, tkey, dup, dup2, t, op, eh, i, res
  integer :: ival
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  logical :: flag, commute

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)

  ! Predefined attributes come back as integers.
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  call ftest_check(flag .and. val >= 32767, 'tag_ub', errs)
  call MPI_ATTR_GET(MPI_COMM_WORLD, MPI_TAG_UB, ival, flag, ierr)
  call ftest_check(flag .and. ival == val, 'tag_ub through attr_get', errs)
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, val, flag, ierr)
  call ftest_check(.not. flag .or. val == 0 .or. val == 1, 'wtime_is_global', errs)

  ! Fortran copy/delete callbacks with extra_state.
  extra = 1000
  call MPI_COMM_CREATE_KEYVAL(copy_fn, delete_fn, key, extra, ierr)
  call ftest_check(ierr == MPI_SUCCESS, 'create_keyval', errs)
  val = 5
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key, val, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call ftest_check(copies == 1, 'copy callback ran', errs)
  call MPI_COMM_GET_ATTR(dup, key, val, flag, ierr)
  call ftest_check(flag .and. val == 1005, 'copied value', errs)
  call MPI_COMM_FREE(dup, ierr)
  call ftest_check(deletes == 1 .and. last_deleted == 1005, 'delete callback ran', errs)
  val = 6
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key, val, ierr)
  call ftest_check(deletes == 2 .and. last_deleted == 5, 'replaced value deleted', errs)
  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key, ierr)
  call ftest_check(deletes == 3 .and. last_deleted == 6, 'delete_attr', errs)
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, key, val, flag, ierr)
  call ftest_check(.not. flag, 'deleted attribute gone', errs)
  call MPI_COMM_FREE_KEYVAL(key, ierr)
  call ftest_check(key == MPI_KEYVAL_INVALID, 'free_keyval', errs)

  ! The predefined copy procedures.
  extra = 0
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key, extra, ierr)
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key2, extra, ierr)
  val = -42
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key, val, ierr)
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key2, val, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_COMM_GET_ATTR(dup, key, val, flag, ierr)
  call ftest_check(flag .and. val == -42, 'MPI_COMM_DUP_FN', errs)
  call MPI_COMM_GET_ATTR(dup, key2, val, flag, ierr)
  call ftest_check(.not. flag, 'MPI_COMM_NULL_COPY_FN', errs)
  call MPI_COMM_FREE(dup, ierr)
  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key, ierr)
  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key2, ierr)
  call MPI_COMM_FREE_KEYVAL(key, ierr)
  call MPI_COMM_FREE_KEYVAL(key2, ierr)

  ! MPI-1: INTEGER values and extra_state.
  deletes = 0
  call MPI_KEYVAL_CREATE(copy77, delete77, key77, 3, ierr)
  call MPI_ATTR_PUT(MPI_COMM_WORLD, key77, -7, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_ATTR_GET(dup, key77, ival, flag, ierr)
  call ftest_check(flag .and. ival == -21, 'MPI-1 copy', errs)
  call MPI_COMM_DUP(dup, dup2, ierr)
  call MPI_ATTR_GET(dup2, key77, ival, flag, ierr)
  call ftest_check(flag .and. ival == -63, 'MPI-1 copy twice', errs)
  call MPI_COMM_FREE(dup2, ierr)
  call ftest_check(deletes == 1 .and. last_deleted == -63, 'MPI-1 delete', errs)
  call MPI_ATTR_DELETE(dup, key77, ierr)
  call MPI_COMM_FREE(dup, ierr)
  call MPI_ATTR_DELETE(MPI_COMM_WORLD, key77, ierr)
  call ftest_check(deletes == 3 .and. last_deleted == -7, 'MPI-1 delete world', errs)
  call MPI_KEYVAL_FREE(key77, ierr)
  call MPI_KEYVAL_CREATE(MPI_DUP_FN, MPI_NULL_DELETE_FN, key77, 0, ierr)
  call MPI_ATTR_PUT(MPI_COMM_WORLD, key77, 12345, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_ATTR_GET(dup, key77, ival, flag, ierr)
  call ftest_check(flag .and. ival == 12345, 'MPI_DUP_FN', errs)
  call MPI_COMM_GET_ATTR(dup, key77, val, flag, ierr)
  call ftest_check(flag .and. val == 12345, 'MPI-1 value read by the MPI-2 routine', errs)
  call MPI_COMM_FREE(dup, ierr)
  call MPI_ATTR_DELETE(MPI_COMM_WORLD, key77, ierr)
  call MPI_KEYVAL_FREE(key77, ierr)

  ! Datatype attributes (handles are INTEGERs for every kind of object, so
  ! the delete procedure of communicators serves).
  deletes = 0
  extra = 1000
  call MPI_TYPE_CREATE_KEYVAL(MPI_TYPE_DUP_FN, delete_fn, tkey, extra, ierr)
  call MPI_TYPE_CONTIGUOUS(2, MPI_INTEGER, t, ierr)
  val = 77
  call MPI_TYPE_SET_ATTR(t, tkey, val, ierr)
  call MPI_TYPE_GET_ATTR(t, tkey, val, flag, ierr)
  call ftest_check(flag .and. val == 77, 'type attribute', errs)
  call MPI_TYPE_FREE(t, ierr)
  call ftest_check(deletes == 1 .and. last_deleted == 77, 'type delete callback', errs)
  call MPI_TYPE_FREE_KEYVAL(tkey, ierr)

  ! A user reduction operation.
  call MPI_OP_CREATE(myop, .true., op, ierr)
  call MPI_OP_COMMUTATIVE(op, commute, ierr)
  call ftest_check(commute, 'op_commutative', errs)
  call MPI_ALLREDUCE(1, res, 1, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  ! f(a, b) = (a + 1)(b + 1) - 1, so the result is 2**np - 1.
  call ftest_check(res == 2**np - 1, 'user op', errs)
  call MPI_OP_FREE(op, ierr)
  call ftest_check(op == MPI_OP_NULL, 'op_free', errs)

  ! A Fortran error handler.
  call MPI_COMM_CREATE_ERRHANDLER(handler, eh, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_COMM_SET_ERRHANDLER(dup, eh, ierr)
  call MPI_SEND(i, 1, MPI_INTEGER, np + 5, 0, dup, ierr)
  call ftest_check(ierr /= MPI_SUCCESS, 'error returned after the handler', errs)
  call MPI_ERROR_CLASS(ierr, i, res)
  call ftest_check(i == MPI_ERR_RANK, 'error class', errs)
  call ftest_check(handled == 1 .and. handled_code /= MPI_SUCCESS, 'handler called', errs)
  call MPI_COMM_CALL_ERRHANDLER(dup, MPI_ERR_OTHER, ierr)
  call ftest_check(handled == 2 .and. handled_code == MPI_ERR_OTHER, 'call_errhandler', errs)
  call MPI_ERRHANDLER_FREE(eh, ierr)
  call MPI_COMM_FREE(dup, ierr)

  call ftest_finish(errs)
end program
