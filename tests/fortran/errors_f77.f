! errors_f77.f -- error codes in Fortran (mpif.h): the last argument
! ierror under MPI_ERRORS_RETURN, error classes, MPI_ERROR_STRING into
! CHARACTER variables long and short, user classes, codes and strings,
! the MPI-1 error handler routines.
      program errors
      implicit none
      include 'mpif.h'
      integer errs, ierr, rank, np, cls, code, i, eh, n, buf(4)
      character*(MPI_MAX_ERROR_STRING) msg
      character*5 short
      errs = 0
      call MPI_INIT(ierr)
      call ftest_check(ierr .eq. MPI_SUCCESS, 'init', errs)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
      call MPI_COMM_GET_ERRHANDLER(MPI_COMM_WORLD, eh, ierr)
      call ftest_check(eh .eq. MPI_ERRORS_ARE_FATAL, 'default handler',
     &     errs)
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &     ierr)

! Bad arguments come back in ierror, with the right class.
      call MPI_SEND(buf, 1, MPI_INTEGER, np, 0, MPI_COMM_WORLD, ierr)
      call MPI_ERROR_CLASS(ierr, cls, i)
      call ftest_check(cls .eq. MPI_ERR_RANK, 'bad rank', errs)
      call MPI_SEND(buf, -1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, ierr)
      call MPI_ERROR_CLASS(ierr, cls, i)
      call ftest_check(cls .eq. MPI_ERR_COUNT, 'bad count', errs)
      call MPI_SEND(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD,
     &     ierr)
      call MPI_ERROR_CLASS(ierr, cls, i)
      call ftest_check(cls .eq. MPI_ERR_TYPE, 'bad type', errs)
      call MPI_SEND(buf, 1, MPI_INTEGER, 0, -5, MPI_COMM_WORLD, ierr)
      call MPI_ERROR_CLASS(ierr, cls, i)
      call ftest_check(cls .eq. MPI_ERR_TAG, 'bad tag', errs)
      call MPI_BARRIER(MPI_COMM_NULL, ierr)
      call MPI_ERROR_CLASS(ierr, cls, i)
      call ftest_check(cls .eq. MPI_ERR_COMM, 'null comm', errs)
      call MPI_ALLREDUCE(buf, buf(2), 1, MPI_INTEGER, MPI_OP_NULL,
     &     MPI_COMM_WORLD, ierr)
      call MPI_ERROR_CLASS(ierr, cls, i)
      call ftest_check(cls .eq. MPI_ERR_OP, 'null op', errs)
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      call ftest_check(ierr .eq. MPI_SUCCESS, 'success after errors',
     &     errs)

! MPI_ERROR_STRING: blank padded, cut to a short variable.
      call MPI_ERROR_STRING(MPI_ERR_RANK, msg, n, ierr)
      call ftest_check(ierr .eq. MPI_SUCCESS .and. n .gt. 0 .and.
     &     n .lt. MPI_MAX_ERROR_STRING, 'error_string', errs)
      call ftest_check(msg(n+1:) .eq. ' ' .and. msg(n:n) .ne. ' ',
     &     'error_string padding', errs)
      call MPI_ERROR_STRING(MPI_ERR_RANK, short, n, ierr)
      call ftest_check(short .eq. msg(1:5), 'error_string cut', errs)
      call MPI_ERROR_STRING(MPI_SUCCESS, msg, n, ierr)
      call ftest_check(n .gt. 0, 'success string', errs)
      call MPI_ERROR_STRING(-12345, msg, n, ierr)
      call ftest_check(ierr .ne. MPI_SUCCESS, 'bad code string', errs)

! User classes, codes and strings.
      call MPI_ADD_ERROR_CLASS(cls, ierr)
      call ftest_check(cls .gt. MPI_ERR_LASTCODE, 'add_error_class',
     &     errs)
      call MPI_ADD_ERROR_CODE(cls, code, ierr)
      call MPI_ADD_ERROR_STRING(code, 'my own error   ', ierr)
      call MPI_ERROR_STRING(code, msg, n, ierr)
      call ftest_check(msg .eq. 'my own error' .and. n .eq. 12,
     &     'add_error_string', errs)
      call MPI_ERROR_CLASS(code, i, ierr)
      call ftest_check(i .eq. cls, 'user code class', errs)

! MPI-1 names of the handler routines.
      call MPI_ERRHANDLER_GET(MPI_COMM_WORLD, eh, ierr)
      call ftest_check(eh .eq. MPI_ERRORS_RETURN, 'errhandler_get',
     &     errs)
      call MPI_ERRHANDLER_SET(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL,
     &     ierr)
      call MPI_COMM_GET_ERRHANDLER(MPI_COMM_WORLD, eh, ierr)
      call ftest_check(eh .eq. MPI_ERRORS_ARE_FATAL, 'errhandler_set',
     &     errs)
      call ftest_finish(errs)
      end
