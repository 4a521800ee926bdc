! ftest.f -- what the Fortran test programs share: a check that counts
! failures (and says which, with the rank) and the end of a test, where
! rank 0 prints "No Errors" when no rank failed (tests/mpi/runtests.py
! looks for that line). Fixed form with mpif.h, linked into every program.
      subroutine ftest_check(ok, what, errs)
      implicit none
      include 'mpif.h'
      logical ok
      character*(*) what
      integer errs, rank, ierr
      if (.not. ok) then
         errs = errs + 1
         call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
         write(*, '(a,i0,a,a)') 'rank ', rank, ': FAILED: ', what
      end if
      end

! The sum of every rank's failures; rank 0 prints the verdict;
! finalizes.
      subroutine ftest_finish(errs)
      implicit none
      include 'mpif.h'
      integer errs, total, rank, ierr
      call MPI_ALLREDUCE(errs, total, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      if (rank .eq. 0) then
         if (total .eq. 0) then
            write(*, '(a)') 'No Errors'
         else
            write(*, '(a,i0,a)') 'Found ', total, ' errors'
         end if
      end if
      call MPI_FINALIZE(ierr)
      end
