! ftest.f -- what the Fortran test programs share: the start of a test,
! a check that counts failures (and says which, with the rank) and the end
! of a test, where rank 0 prints "No Errors" when no rank failed
! (tests/mpi/runtests.py looks for that line). Fixed form with mpif.h,
! linked into every program.

! MPI_INIT; this rank, the number of ranks and the neighbours in a ring.
      subroutine ftest_init(rank, np, nxt, prv)
      implicit none
      include 'mpif.h'
      integer rank, np, nxt, prv, ierr
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
      nxt = mod(rank + 1, np)
      prv = mod(rank + np - 1, np)
      end

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
