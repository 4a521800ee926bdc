! Installation test program (fixed form, mpif.h): every rank passes its
! rank to the next one around a ring; rank 0 names the library.
      program hello
      implicit none
      include 'mpif.h'
      integer ierr, rank, size, got, n
      character*(MPI_MAX_LIBRARY_VERSION_STRING) version
      got = -1
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
      call MPI_SENDRECV(rank, 1, MPI_INTEGER, mod(rank + 1, size), 7,
     &     got, 1, MPI_INTEGER, mod(rank + size - 1, size), 7,
     &     MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      if (rank .eq. 0) then
         call MPI_GET_LIBRARY_VERSION(version, n, ierr)
         write(*, '(a,a)') 'library: ', version(1:n)
      end if
      if (got .eq. mod(rank + size - 1, size)) then
         write(*, '(a,i0,a,i0,a,i0,a)') 'f77 rank ', rank, ' of ', size,
     &        ': got ', got, ' ok'
      else
         write(*, '(a,i0,a)') 'f77 rank ', rank, ': WRONG'
      end if
      call MPI_FINALIZE(ierr)
      end
