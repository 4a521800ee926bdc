! comm_f77.f -- communicators and groups from fixed-form Fortran with
! mpif.h: MPI_COMM_SPLIT / DUP / COMPARE, names (CHARACTER in and out),
! groups (incl, excl, range_incl, translate_ranks), a periodic Cartesian
! grid (LOGICAL arrays), and an intercommunicator.
      program comm
      implicit none
      include 'mpif.h'
      integer errs, ierr, rank, np, i, half, sub, subrank, subsize
      integer dup, res, wgroup, g1, g2, ranks(64), ranks2(64), n
      integer ranges(3, 1), cart, dims(2), coords(2), src, dst
      integer cdims(2), ccoords(2), rowcomm, inter, merged, remote
      logical periods(2), cperiods(2), remain(2), flag
      character*(MPI_MAX_OBJECT_NAME) name
      integer resultlen
      errs = 0
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)

! Split into even and odd ranks, ordered by decreasing rank.
      call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), -rank, sub,
     &     ierr)
      call MPI_COMM_RANK(sub, subrank, ierr)
      call MPI_COMM_SIZE(sub, subsize, ierr)
      half = (np + 1 - mod(rank, 2)) / 2
      call ftest_check(subsize .eq. half, 'split size', errs)
      call ftest_check(subrank .eq. (np - 1 - rank) / 2, 'split rank',
     &     errs)
      call MPI_COMM_COMPARE(sub, MPI_COMM_WORLD, res, ierr)
      if (np .gt. 1) then
         call ftest_check(res .eq. MPI_UNEQUAL, 'compare unequal', errs)
      end if
      call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
      call MPI_COMM_COMPARE(dup, MPI_COMM_WORLD, res, ierr)
      call ftest_check(res .eq. MPI_CONGRUENT, 'compare congruent',
     &     errs)

! Names: set with trailing blanks, read back blank padded.
      call MPI_COMM_GET_NAME(MPI_COMM_WORLD, name, resultlen, ierr)
      call ftest_check(name .eq. 'MPI_COMM_WORLD' .and. resultlen .eq.
     &     14, 'world name', errs)
      call MPI_COMM_SET_NAME(dup, 'my dup   ', ierr)
      call MPI_COMM_GET_NAME(dup, name, resultlen, ierr)
      call ftest_check(name .eq. 'my dup' .and. resultlen .eq. 6,
     &     'dup name', errs)
      call ftest_check(name(7:7) .eq. ' ' .and.
     &     name(MPI_MAX_OBJECT_NAME:MPI_MAX_OBJECT_NAME) .eq. ' ',
     &     'name blank padded', errs)

! Groups.
      call MPI_COMM_GROUP(MPI_COMM_WORLD, wgroup, ierr)
      n = 0
      do i = 0, np - 1, 2
         n = n + 1
         ranks(n) = i
      end do
      call MPI_GROUP_INCL(wgroup, n, ranks, g1, ierr)
      ranges(1, 1) = 0
      ranges(2, 1) = np - 1
      ranges(3, 1) = 2
      call MPI_GROUP_RANGE_INCL(wgroup, 1, ranges, g2, ierr)
      call MPI_GROUP_COMPARE(g1, g2, res, ierr)
      call ftest_check(res .eq. MPI_IDENT, 'range_incl = incl', errs)
      call MPI_GROUP_TRANSLATE_RANKS(g1, n, (/ (i, i = 0, 63) /),
     &     wgroup, ranks2, ierr)
      do i = 1, n
         call ftest_check(ranks2(i) .eq. 2 * (i - 1), 'translate',
     &        errs)
      end do
      call MPI_GROUP_FREE(g2, ierr)
      call ftest_check(g2 .eq. MPI_GROUP_NULL, 'group_free', errs)
      call MPI_GROUP_EXCL(wgroup, n, ranks, g2, ierr)
      call MPI_GROUP_SIZE(g2, i, ierr)
      call ftest_check(i .eq. np - n, 'excl size', errs)
      call MPI_GROUP_FREE(g1, ierr)
      call MPI_GROUP_FREE(g2, ierr)
      call MPI_GROUP_FREE(wgroup, ierr)

! A periodic 2-D grid; shifts and a sub-grid of rows.
      dims(1) = 0
      dims(2) = 0
      call MPI_DIMS_CREATE(np, 2, dims, ierr)
      call ftest_check(dims(1) * dims(2) .eq. np, 'dims_create', errs)
      periods(1) = .true.
      periods(2) = .false.
      call MPI_CART_CREATE(MPI_COMM_WORLD, 2, dims, periods, .false.,
     &     cart, ierr)
      call MPI_CART_GET(cart, 2, cdims, cperiods, ccoords, ierr)
      call ftest_check(cperiods(1) .and. .not. cperiods(2),
     &     'cart_get periods', errs)
      call MPI_CART_COORDS(cart, rank, 2, coords, ierr)
      call ftest_check(coords(1) .eq. ccoords(1) .and. coords(2) .eq.
     &     ccoords(2), 'cart_coords', errs)
      call MPI_CART_SHIFT(cart, 0, 1, src, dst, ierr)
      call MPI_CART_RANK(cart, (/ mod(coords(1) + 1, dims(1)),
     &     coords(2) /), i, ierr)
      call ftest_check(dst .eq. i, 'cart_shift periodic', errs)
      call MPI_CART_SHIFT(cart, 1, 1, src, dst, ierr)
      if (coords(2) .eq. dims(2) - 1) then
         call ftest_check(dst .eq. MPI_PROC_NULL, 'cart_shift edge',
     &        errs)
      end if
      remain(1) = .false.
      remain(2) = .true.
      call MPI_CART_SUB(cart, remain, rowcomm, ierr)
      call MPI_COMM_SIZE(rowcomm, i, ierr)
      call ftest_check(i .eq. dims(2), 'cart_sub size', errs)
      call MPI_TOPO_TEST(cart, i, ierr)
      call ftest_check(i .eq. MPI_CART, 'topo_test', errs)

! An intercommunicator between the two halves of the split; a leader
! is rank 0 of its half, the highest world rank of its parity.
      if (np .ge. 2) then
         if (mod(np - 1, 2) .ne. mod(rank, 2)) then
            i = np - 1
         else
            i = np - 2
         end if
         call MPI_INTERCOMM_CREATE(sub, 0, MPI_COMM_WORLD, i, 77,
     &        inter, ierr)
         call MPI_COMM_TEST_INTER(inter, flag, ierr)
         call ftest_check(flag, 'test_inter', errs)
         call MPI_COMM_REMOTE_SIZE(inter, remote, ierr)
         call ftest_check(remote .eq. np - subsize, 'remote size',
     &        errs)
         call MPI_INTERCOMM_MERGE(inter, mod(rank, 2) .eq. 1, merged,
     &        ierr)
         call MPI_COMM_SIZE(merged, i, ierr)
         call ftest_check(i .eq. np, 'merge size', errs)
         call MPI_COMM_RANK(merged, i, ierr)
         if (mod(rank, 2) .eq. 0) then
            call ftest_check(i .lt. half, 'merge: low group first',
     &           errs)
         end if
         call MPI_COMM_FREE(merged, ierr)
         call MPI_COMM_FREE(inter, ierr)
      end if
      call MPI_COMM_TEST_INTER(sub, flag, ierr)
      call ftest_check(.not. flag, 'intra is not inter', errs)

      call MPI_COMM_FREE(rowcomm, ierr)
      call MPI_COMM_FREE(cart, ierr)
      call MPI_COMM_FREE(dup, ierr)
      call ftest_check(dup .eq. MPI_COMM_NULL, 'comm_free', errs)
      call MPI_COMM_FREE(sub, ierr)
      call ftest_finish(errs)
      end
