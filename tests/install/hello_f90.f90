! Installation test program (free form, `use mpi`): a sum over the ranks.
program hello
  use mpi
  implicit none
  integer :: ierr, rank, size, total
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  call MPI_ALLREDUCE(rank + 1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total == size * (size + 1) / 2) then
    write (*, '(a,i0,a,i0,a,i0,a)') 'f90 rank ', rank, ' of ', size, ': sum ', total, ' ok'
  else
    write (*, '(a,i0,a)') 'f90 rank ', rank, ': WRONG'
  end if
  call MPI_FINALIZE(ierr)
end program
