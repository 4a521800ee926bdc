! spawn_f90.f90 -- MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE from Fortran
! (`use mpi`): CHARACTER arrays of arguments ended by a blank element,
! blanks trimmed, a (count, *) array for spawn_multiple, MPI_ARGV_NULL,
! MPI_ERRCODES_IGNORE, MPI_COMM_GET_PARENT. The job's ranks spawn copies of
! this program; each child reports what it was given to the parents' root,
! which checks it.
program spawn
  use mpi
  implicit none
  integer :: ierr, parent, rank, np, errs, inter, i, code, nremote
  integer :: errcodes(2), maxprocs(2), infos(2)
  integer :: status(MPI_STATUS_SIZE)
  character(len=64) :: argv(3), arg1, arg2
  character(len=4096) :: self, commands(2)
  character(len=16) :: argvs(2, 3)

  call MPI_INIT(ierr)
  call MPI_COMM_GET_PARENT(parent, ierr)
  if (parent /= MPI_COMM_NULL) then
     ! A child: a code for what it was given, to the parents' root.
     call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
     arg1 = ''
     arg2 = ''
     if (command_argument_count() >= 1) call get_command_argument(1, arg1)
     if (command_argument_count() >= 2) call get_command_argument(2, arg2)
     code = -1
     if (command_argument_count() == 0) then
        code = 300
     else if (arg1 == 'child' .and. command_argument_count() == 2) then
        code = 100
        if (arg2 == 'two words') code = 110
     else if (arg1 == 'multi' .and. command_argument_count() == 2) then
        if (arg2 == 'a') code = 201
        if (arg2 == 'b') code = 202
     end if
     call MPI_SEND(code, 1, MPI_INTEGER, 0, rank, parent, ierr)
     call MPI_COMM_DISCONNECT(parent, ierr)
     call MPI_FINALIZE(ierr)
     stop
  end if

  errs = 0
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  call get_command_argument(0, self, status=i)
  call ftest_check(i == 0, 'the program''s path fits in 4096 characters', errs)

  ! Two children; the arguments end at the blank element, trailing blanks go.
  argv(1) = 'child'
  argv(2) = 'two words'
  argv(3) = ' '
  errcodes = -1
  call MPI_COMM_SPAWN(self, argv, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errcodes, ierr)
  call ftest_check(ierr == MPI_SUCCESS, 'MPI_COMM_SPAWN', errs)
  call ftest_check(all(errcodes == MPI_SUCCESS), 'MPI_COMM_SPAWN: errcodes', errs)
  call MPI_COMM_REMOTE_SIZE(inter, nremote, ierr)
  call ftest_check(nremote == 2, 'MPI_COMM_SPAWN: remote size', errs)
  if (rank == 0) then
     do i = 0, nremote - 1
        call MPI_RECV(code, 1, MPI_INTEGER, i, i, inter, status, ierr)
        call ftest_check(code == 110, 'MPI_COMM_SPAWN: a child''s arguments', errs)
     end do
  end if
  call MPI_COMM_DISCONNECT(inter, ierr)

  ! Two commands with one process each: argvs(i, j) is argument j of command i.
  commands(1) = self
  commands(2) = '  ' // self
  argvs(1, 1) = 'multi'
  argvs(1, 2) = 'a'
  argvs(1, 3) = ' '
  argvs(2, 1) = 'multi'
  argvs(2, 2) = 'b'
  argvs(2, 3) = ' '
  maxprocs = 1
  infos = MPI_INFO_NULL
  call MPI_COMM_SPAWN_MULTIPLE(2, commands, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, inter, &
       MPI_ERRCODES_IGNORE, ierr)
  call ftest_check(ierr == MPI_SUCCESS, 'MPI_COMM_SPAWN_MULTIPLE', errs)
  if (rank == 0) then
     do i = 0, 1
        call MPI_RECV(code, 1, MPI_INTEGER, i, i, inter, status, ierr)
        call ftest_check(code == 201 + i, 'MPI_COMM_SPAWN_MULTIPLE: a child''s arguments', errs)
     end do
  end if
  call MPI_COMM_DISCONNECT(inter, ierr)

  ! No arguments at all.
  call MPI_COMM_SPAWN(self, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, &
       MPI_ERRCODES_IGNORE, ierr)
  call ftest_check(ierr == MPI_SUCCESS, 'MPI_COMM_SPAWN with MPI_ARGV_NULL', errs)
  if (rank == 0) then
     call MPI_RECV(code, 1, MPI_INTEGER, 0, 0, inter, status, ierr)
     call ftest_check(code == 300, 'MPI_ARGV_NULL: the child''s arguments', errs)
  end if
  call MPI_COMM_DISCONNECT(inter, ierr)

  call ftest_finish(errs)
end program
