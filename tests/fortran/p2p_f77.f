! p2p_f77.f -- point-to-point from fixed-form Fortran with mpif.h:
! blocking and nonblocking, status fields and counts, MPI_ANY_SOURCE,
! CHARACTER data, 1-based indexes of MPI_WAITANY / MPI_WAITSOME /
! MPI_TESTSOME, MPI_STATUS(ES)_IGNORE, MPI_PROC_NULL, persistent and
! buffered sends, probes with LOGICAL flags.
      program p2p
      implicit none
      include 'mpif.h'
      integer errs, ierr, rank, np, i, k, nxt, prv, cnt, idx, outcnt
      integer st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4)
      integer req(4), ind(4), ibuf(10), ibuf2(10), got(64), comm
      integer bsize, bufint(1000)
      double precision dbuf(5)
      character*12 cbuf, cbuf2
      logical flag, seen
      errs = 0
      call ftest_init(rank, np, nxt, prv)

! A ring with MPI_SENDRECV: the status names the sender and the tag.
      do i = 1, 10
         ibuf(i) = rank * 100 + i
      end do
      call MPI_SENDRECV(ibuf, 10, MPI_INTEGER, nxt, 5, ibuf2, 10,
     &     MPI_INTEGER, prv, 5, MPI_COMM_WORLD, st, ierr)
      call ftest_check(ierr .eq. MPI_SUCCESS, 'sendrecv ierror', errs)
      call ftest_check(st(MPI_SOURCE) .eq. prv, 'sendrecv source',
     &     errs)
      call ftest_check(st(MPI_TAG) .eq. 5, 'sendrecv tag', errs)
      call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
      call ftest_check(cnt .eq. 10, 'sendrecv count', errs)
      do i = 1, 10
         call ftest_check(ibuf2(i) .eq. prv * 100 + i, 'ring data',
     &        errs)
      end do

! A short message into a long buffer: MPI_GET_COUNT and
! MPI_GET_ELEMENTS say 3.
      call MPI_SENDRECV(ibuf, 3, MPI_INTEGER, nxt, 6, ibuf2, 10,
     &     MPI_INTEGER, prv, 6, MPI_COMM_WORLD, st, ierr)
      call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
      call ftest_check(cnt .eq. 3, 'short count', errs)
      call MPI_GET_ELEMENTS(st, MPI_INTEGER, cnt, ierr)
      call ftest_check(cnt .eq. 3, 'short elements', errs)

! Every rank sends to rank 0 with tag = its rank; rank 0 receives
! them all with MPI_ANY_SOURCE / MPI_ANY_TAG (on a communicator of
! their own: later messages on MPI_COMM_WORLD would match too).
      call MPI_COMM_DUP(MPI_COMM_WORLD, comm, ierr)
      do i = 1, 5
         dbuf(i) = rank + i * 0.5d0
      end do
      call MPI_ISEND(dbuf, 5, MPI_DOUBLE_PRECISION, 0, rank, comm,
     &     req(1), ierr)
      if (rank .eq. 0) then
         do i = 1, np
            got(i) = 0
         end do
         do k = 1, np
            call MPI_RECV(dbuf, 5, MPI_DOUBLE_PRECISION,
     &           MPI_ANY_SOURCE, MPI_ANY_TAG, comm, st, ierr)
            call ftest_check(st(MPI_SOURCE) .eq. st(MPI_TAG),
     &           'any source: source = tag', errs)
            call ftest_check(dbuf(2) .eq. st(MPI_SOURCE) + 1.0d0,
     &           'any source data', errs)
            got(st(MPI_SOURCE) + 1) = got(st(MPI_SOURCE) + 1) + 1
         end do
         do i = 1, np
            call ftest_check(got(i) .eq. 1, 'one message a rank', errs)
         end do
      end if
      call MPI_WAIT(req(1), MPI_STATUS_IGNORE, ierr)
      call ftest_check(req(1) .eq. MPI_REQUEST_NULL, 'request null',
     &     errs)
      call MPI_COMM_FREE(comm, ierr)

! CHARACTER data with MPI_CHARACTER.
      cbuf = 'hello world!'
      cbuf2 = ' '
      call MPI_SENDRECV(cbuf, 12, MPI_CHARACTER, nxt, 7, cbuf2, 12,
     &     MPI_CHARACTER, prv, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE,
     &     ierr)
      call ftest_check(cbuf2 .eq. 'hello world!', 'character data',
     &     errs)

! Nonblocking both ways, MPI_WAITALL with statuses.
      call MPI_IRECV(ibuf2(1), 1, MPI_INTEGER, prv, 8, MPI_COMM_WORLD,
     &     req(1), ierr)
      call MPI_IRECV(ibuf2(2), 1, MPI_INTEGER, nxt, 9, MPI_COMM_WORLD,
     &     req(2), ierr)
      call MPI_ISEND(rank, 1, MPI_INTEGER, nxt, 8, MPI_COMM_WORLD,
     &     req(3), ierr)
      call MPI_ISEND(rank, 1, MPI_INTEGER, prv, 9, MPI_COMM_WORLD,
     &     req(4), ierr)
      call MPI_WAITALL(4, req, sts, ierr)
      call ftest_check(ierr .eq. MPI_SUCCESS, 'waitall', errs)
      call ftest_check(sts(MPI_SOURCE, 1) .eq. prv, 'waitall src 1',
     &     errs)
      call ftest_check(sts(MPI_SOURCE, 2) .eq. nxt, 'waitall src 2',
     &     errs)
      call ftest_check(sts(MPI_TAG, 2) .eq. 9, 'waitall tag 2', errs)
      call ftest_check(ibuf2(1) .eq. prv .and. ibuf2(2) .eq. nxt,
     &     'waitall data', errs)

! MPI_WAITANY gives 1-based indexes, then MPI_UNDEFINED.
      call MPI_IRECV(ibuf2, 1, MPI_INTEGER, prv, 10, MPI_COMM_WORLD,
     &     req(1), ierr)
      req(2) = MPI_REQUEST_NULL
      call MPI_SEND(rank, 1, MPI_INTEGER, nxt, 10, MPI_COMM_WORLD,
     &     ierr)
      call MPI_WAITANY(2, req, idx, st, ierr)
      call ftest_check(idx .eq. 1, 'waitany index', errs)
      call ftest_check(st(MPI_SOURCE) .eq. prv, 'waitany source',
     &     errs)
      call MPI_WAITANY(2, req, idx, st, ierr)
      call ftest_check(idx .eq. MPI_UNDEFINED, 'waitany undefined',
     &     errs)

! MPI_WAITSOME / MPI_TESTSOME: 1-based indices, MPI_STATUSES_IGNORE.
      req(1) = MPI_REQUEST_NULL
      call MPI_IRECV(ibuf2, 1, MPI_INTEGER, prv, 11, MPI_COMM_WORLD,
     &     req(2), ierr)
      call MPI_SEND(rank, 1, MPI_INTEGER, nxt, 11, MPI_COMM_WORLD,
     &     ierr)
      call MPI_WAITSOME(2, req, outcnt, ind, MPI_STATUSES_IGNORE, ierr)
      call ftest_check(outcnt .eq. 1 .and. ind(1) .eq. 2,
     &     'waitsome index', errs)
      call MPI_TESTSOME(2, req, outcnt, ind, sts, ierr)
      call ftest_check(outcnt .eq. MPI_UNDEFINED, 'testsome undefined',
     &     errs)
      call MPI_IRECV(ibuf2, 1, MPI_INTEGER, prv, 12, MPI_COMM_WORLD,
     &     req(2), ierr)
      call MPI_SEND(rank, 1, MPI_INTEGER, nxt, 12, MPI_COMM_WORLD,
     &     ierr)
      outcnt = 0
      do while (outcnt .eq. 0)
         call MPI_TESTSOME(2, req, outcnt, ind, sts, ierr)
      end do
      call ftest_check(outcnt .eq. 1 .and. ind(1) .eq. 2,
     &     'testsome index', errs)
      call ftest_check(sts(MPI_TAG, 1) .eq. 12, 'testsome tag', errs)

! MPI_TEST and MPI_IPROBE answer LOGICAL flags; MPI_PROBE then
! MPI_RECV.
      call MPI_ISEND(ibuf, 4, MPI_INTEGER, nxt, 13, MPI_COMM_WORLD,
     &     req(1), ierr)
      flag = .false.
      do while (.not. flag)
         call MPI_IPROBE(prv, 13, MPI_COMM_WORLD, flag, st, ierr)
      end do
      call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
      call ftest_check(cnt .eq. 4, 'iprobe count', errs)
      call MPI_PROBE(MPI_ANY_SOURCE, 13, MPI_COMM_WORLD, st, ierr)
      call ftest_check(st(MPI_SOURCE) .eq. prv, 'probe source', errs)
      call MPI_RECV(ibuf2, 10, MPI_INTEGER, st(MPI_SOURCE), 13,
     &     MPI_COMM_WORLD, st, ierr)
      flag = .false.
      do while (.not. flag)
         call MPI_TEST(req(1), flag, st, ierr)
      end do
      call ftest_check(req(1) .eq. MPI_REQUEST_NULL, 'test done', errs)
      call MPI_TEST_CANCELLED(st, seen, ierr)
      call ftest_check(.not. seen, 'not cancelled', errs)

! MPI_PROC_NULL: an empty status at once.
      call MPI_RECV(ibuf2, 10, MPI_INTEGER, MPI_PROC_NULL, 1,
     &     MPI_COMM_WORLD, st, ierr)
      call ftest_check(st(MPI_SOURCE) .eq. MPI_PROC_NULL,
     &     'proc null source', errs)
      call ftest_check(st(MPI_TAG) .eq. MPI_ANY_TAG, 'proc null tag',
     &     errs)
      call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
      call ftest_check(cnt .eq. 0, 'proc null count', errs)

! Persistent requests, MPI_STARTALL.
      call MPI_RECV_INIT(ibuf2, 10, MPI_INTEGER, prv, 14,
     &     MPI_COMM_WORLD, req(1), ierr)
      call MPI_SEND_INIT(ibuf, 10, MPI_INTEGER, nxt, 14,
     &     MPI_COMM_WORLD, req(2), ierr)
      do k = 1, 3
         do i = 1, 10
            ibuf(i) = rank * 1000 + k * 10 + i
         end do
         call MPI_STARTALL(2, req, ierr)
         call MPI_WAITALL(2, req, sts, ierr)
         call ftest_check(ibuf2(10) .eq. prv * 1000 + k * 10 + 10,
     &        'persistent data', errs)
      end do
      call MPI_REQUEST_FREE(req(1), ierr)
      call MPI_REQUEST_FREE(req(2), ierr)
      call ftest_check(req(1) .eq. MPI_REQUEST_NULL, 'request_free',
     &     errs)

! Buffered and synchronous sends.
      call MPI_PACK_SIZE(10, MPI_INTEGER, MPI_COMM_WORLD, bsize, ierr)
      bsize = bsize + MPI_BSEND_OVERHEAD
      call MPI_BUFFER_ATTACH(bufint, bsize, ierr)
      call ftest_check(ierr .eq. MPI_SUCCESS, 'buffer_attach', errs)
      call MPI_BSEND(ibuf, 10, MPI_INTEGER, nxt, 15, MPI_COMM_WORLD,
     &     ierr)
      call MPI_RECV(ibuf2, 10, MPI_INTEGER, prv, 15, MPI_COMM_WORLD,
     &     st, ierr)
      call MPI_BUFFER_DETACH(bufint, bsize, ierr)
      call ftest_check(ierr .eq. MPI_SUCCESS, 'buffer_detach', errs)
      call ftest_check(bsize .ge. 40, 'detached size', errs)
      call MPI_IRECV(ibuf2, 10, MPI_INTEGER, prv, 16, MPI_COMM_WORLD,
     &     req(1), ierr)
      call MPI_SSEND(ibuf, 10, MPI_INTEGER, nxt, 16, MPI_COMM_WORLD,
     &     ierr)
      call MPI_WAIT(req(1), st, ierr)
      call ftest_check(st(MPI_TAG) .eq. 16, 'ssend tag', errs)

      call ftest_finish(errs)
      end
