! fatal_f77.f -- an error under the default MPI_ERRORS_ARE_FATAL from
! Fortran ends the job with a message naming the call (the testlist
! checks the exit status and the message).
      program fatal
      implicit none
      include 'mpif.h'
      integer ierr, np, buf
      call MPI_INIT(ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
      call MPI_SEND(buf, 1, MPI_INTEGER, np, 0, MPI_COMM_WORLD, ierr)
      write(*, '(a)') 'not reached'
      call MPI_FINALIZE(ierr)
      end
