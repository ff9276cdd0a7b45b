//go:build linux

package sys

import (
	"cmp"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Streams on the io_uring backend (completion mode, Options.Completion):
// the selector's side of uringStream. See uringStream for the Stream's
// invariants and uringBufs for the buffers'.
//
// Readiness. A stream's entry has no poll request: its conditions are the
// Stream's state (uringStream.condLocked), and every completion that
// changes it, and every Add, Modify and Drained, announces the entry
// (announceLocked), which puts what it reports in the due list; the
// harvest reports due entries after it has applied the completions. The
// modes are the contract's:
//   - Edge: a condition is reported when it appears and is then quiet
//     until Drained (the caller's EAGAIN, or a short read); Drained of a
//     condition that is there again makes it due at once.
//   - Level: reported by every Select while it holds: a reported entry is
//     announced again by the next Select (flushResubmits).
//   - Oneshot: reported once, then nothing until Modify.
//
// Keys. A stream's requests carry uringStreamTag | id (bit 61 set for a
// send, bit 59 for its poll for room), never a descriptor, so a completion finds its Stream in the
// streams map also after Delete (S5): bytes received before the Delete are
// the caller's, and a send's buffer is freed only at its completion.
//
// Delete, Close and the CQ's readers other than Select are in
// uring_stream_end_linux.go.

// uringStreamTag marks a stream request's user_data (bits 63 and 62 both
// set: no registration's, removal's or internal tag has both).
const (
	uringStreamTag     = 3 << 62
	uringStreamSendBit = 1 << 61 // the request is the Stream's send
	uringStreamCancel  = 1 << 60 // the completion of a cancel of it
	uringStreamRoomBit = 1 << 59 // the request is the Stream's poll for room (S6)
)

// AddStream implements StreamSelector.
func (s *uringSelector) AddStream(fd int, key uint64, interest uint32, mode Mode) (Stream, error) {
	if !s.completion {
		return nil, s.Add(fd, key, interest, mode)
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := checkKey(key); err != nil {
		return nil, os.NewSyscallError("io_uring(add)", err)
	}
	if fd < 0 {
		return nil, os.NewSyscallError("io_uring(add)", unix.EBADF)
	}
	var stat unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &stat) }); err != nil {
		return nil, os.NewSyscallError("io_uring(add)", err)
	}
	if stat.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, s.Add(fd, key, interest, mode) // only a socket receives
	}
	s.mu.Lock()
	defer s.unlockNudging()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if _, ok := s.table[fd]; ok {
		return nil, os.NewSyscallError("io_uring(add)", unix.EEXIST)
	}
	if s.bufs == nil && !s.noStreams {
		b, err := newUringBufs(s.ring.fd, cmp.Or(s.bufCount, uringBufCount))
		if err == nil {
			s.files, err = newUringFiles(s.ring.fd)
			if err != nil {
				b.close(s.ring.fd)
			}
		}
		if err != nil {
			// A kernel without provided buffer rings or sparse file
			// tables (before 5.19): plain readiness, as without
			// Completion.
			s.noStreams = true
		} else {
			s.bufs = b
		}
	}
	if s.noStreams {
		return nil, s.addLocked(fd, key, interest, mode)
	}
	slot, ok, err := s.files.take(s.ring.fd, fd)
	if err != nil {
		return nil, os.NewSyscallError("io_uring(add)", err)
	}
	if !ok {
		return nil, s.addLocked(fd, key, interest, mode) // the table is full
	}
	fail := func(err error) (Stream, error) {
		s.files.clear(s.ring.fd, slot)
		return nil, err
	}
	s.nextStream++
	st := &uringStream{s: s, id: s.nextStream, fd: fd, slot: slot}
	e := &uringEntry{key: key, interest: interest, mode: mode, st: st}
	s.newGenLocked(e)
	st.entry = e
	if err := s.armRecvLocked(st); err != nil {
		return fail(err)
	}
	s.table[fd] = e
	s.streams[st.id] = st
	s.announceLocked(fd, e)
	return st, s.submitIfBlockedLocked()
}

// roomData is the user_data of st's poll for room (S6).
func (st *uringStream) roomData() uint64 {
	return uringStreamTag | uringStreamRoomBit | uint64(st.id)
}

func (st *uringStream) userData(send bool) uint64 {
	if send {
		return uringStreamTag | uringStreamSendBit | uint64(st.id)
	}
	return uringStreamTag | uint64(st.id)
}

// armRecvLocked queues st's multishot receive (S3: only when none is in
// the kernel).
func (s *uringSelector) armRecvLocked(st *uringStream) error {
	err := s.queueLocked(uringSQE{opcode: uringOpRecv, flags: uringSqeBufferSelect | uringSqeFixedFile,
		ioprio: uringRecvMultishot, fd: int32(st.slot), bufIndex: uringBufGroup, userData: st.userData(false)})
	if err == nil {
		st.rx = true
	}
	return err
}

// cancelLocked queues the cancellation of the stream request with
// user_data ud. Its own completion carries ud with uringStreamCancel, so
// that a cancel the kernel answers with -EALREADY (the request was busy
// completing, and goes on) is made again (streamCompleteLocked).
func (s *uringSelector) cancelLocked(ud uint64) error {
	return s.queueLocked(uringSQE{opcode: uringOpAsyncCancel, fd: -1, addr: ud, userData: ud | uringStreamCancel})
}

// wantRecv reports whether st should have a receive in the kernel.
func (st *uringStream) wantRecv() bool {
	if st.deleted || st.paused || st.starved || st.s.closed.Load() {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return !st.eof && st.rerr == 0
}

// streamCompleteLocked applies a completion of a stream's request.
func (s *uringSelector) streamCompleteLocked(c uringCQE) {
	st := s.streams[uint32(c.userData)]
	if st == nil {
		if c.flags&uringCQEFBuffer != 0 {
			s.bufs.put(uint16(c.flags >> uringCQEBufferShift))
			s.bufs.lent.Add(1) // put counted a buffer no Stream held
		}
		return
	}
	if c.userData&uringStreamCancel != 0 {
		busy := st.rx
		switch {
		case c.userData&uringStreamRoomBit != 0:
			busy = st.roomArmed
		case c.userData&uringStreamSendBit != 0:
			busy = st.tx
		}
		if c.res == -int32(unix.EALREADY) && busy {
			// Queued: this harvest's Select submits it with its next
			// enter, from the polling thread.
			_ = s.cancelLocked(c.userData &^ uringStreamCancel)
		}
		return
	}
	switch {
	case c.userData&uringStreamRoomBit != 0:
		s.roomDoneLocked(st, c)
	case c.userData&uringStreamSendBit != 0:
		s.sentLocked(st, c.res)
	default:
		s.recvDoneLocked(st, c)
	}
	if e := st.entry; e != nil {
		s.announceLocked(st.fd, e)
	}
	s.finishIfDoneLocked(st)
	if len(s.starved) > 0 && int(s.bufs.lent.Load()) < s.bufs.count {
		// The harvest gave buffers back (received spills while they
		// are scarce): the receives that ran dry go on.
		s.rearmStarvedLocked()
	}
}

func (s *uringSelector) recvDoneLocked(st *uringStream, c uringCQE) {
	pause := st.received(c.res, uint16(c.flags>>uringCQEBufferShift), c.flags&uringCQEFBuffer != 0)
	if c.flags&uringCQEFMore != 0 {
		if pause && !st.paused {
			// Until the cancel reaches the kernel (with the next enter,
			// from the polling thread) the receive goes on, and what it
			// brings goes to the heap (received).
			st.setPaused(true)
			_ = s.cancelLocked(st.userData(false))
		}
		return
	}
	st.rx = false
	if st.deleted {
		st.mu.Lock()
		st.rxOver = true
		st.mu.Unlock()
	}
	s.cond.Broadcast() // a Delete may wait for it
	if c.res == -int32(unix.ENOBUFS) {
		s.ranDry++
		if st.wantRecv() {
			st.starved = true
			s.starved = append(s.starved, st)
			s.starvedN.Add(1)
		}
		return
	}
	switch {
	case pause:
		st.setPaused(true)
	case st.paused && st.low():
		// Read brought it low while the cancel was on its way, and its
		// resumeIfPaused found the receive still in the kernel.
		st.setPaused(false)
	}
	if st.wantRecv() {
		// Paused and read since, or ended by the kernel (the CQ was full,
		// its thread exited): go on with a new one.
		_ = s.armRecvLocked(st)
	}
}

// sentLocked applies a send's completion (S4).
func (s *uringSelector) sentLocked(st *uringStream, res int32) {
	st.mu.Lock()
	defer st.mu.Unlock()
	// Close cancels before it marks the Streams closedSel, and its reap
	// may harvest the cancels: closed says so from the start.
	closing := st.closedSel || s.closed.Load()
	switch {
	case res > 0:
		st.flight = st.flight[res:]
	case res == -int32(unix.EAGAIN) && !closing:
		// No room (S6): flight waits for the room poll.
		st.wantRoom = true
		if st.roomArmed {
			return
		}
		if err := s.armRoomLocked(st); err == nil {
			return
		}
		st.wantRoom = false
		st.werr = unix.ENOBUFS
		st.fbase, st.flight, st.out = nil, nil, nil
	case res == -int32(unix.ECANCELED) && !closing:
		// Cancelled by its thread's exit, not by us: send it again.
	case res < 0:
		st.werr = unix.Errno(-res)
		if st.werr == unix.EAGAIN {
			st.werr = unix.ECANCELED // closing: as a cancelled send
		}
		st.fbase, st.flight, st.out = nil, nil, nil
	}
	if closing && st.werr == 0 && len(st.flight)+len(st.out) > 0 {
		// Close ends the sending side with bytes not sent: they are
		// dropped, and the Stream says so (a Write after it must not
		// reach the socket behind them, nor Flushed say they left).
		st.werr = unix.ECANCELED
		st.fbase, st.flight, st.out = nil, nil, nil
	}
	if len(st.flight) == 0 && st.werr == 0 && len(st.out) > 0 && !closing {
		emptied := st.fbase[:0]
		st.fbase, st.flight, st.out = st.out, st.out, emptied
	}
	if len(st.flight) > 0 && st.werr == 0 && !closing {
		s.pushSendLocked(st)
		return
	}
	st.tx = false
	if st.wantFlushed && len(st.out) == 0 {
		// Flushed is waiting for this: the announcement that follows
		// (streamCompleteLocked) reports Writable again.
		st.wantFlushed = false
		if e := st.entry; e != nil {
			e.quiet &^= Writable
			e.fired = false
		}
	}
	if cap(st.out) == 0 {
		st.out = st.fbase[:0] // reused: a steady stream allocates nothing
	} else {
		st.spare = st.fbase[:0]
	}
	st.fbase, st.flight = nil, nil
	if st.shutWr && !st.slotd {
		// CloseWrite waited for the queue. By the slot: the caller may
		// have closed its descriptor since.
		_ = s.queueLocked(uringSQE{opcode: uringOpShutdown, flags: uringSqeFixedFile, fd: int32(st.slot),
			len: unix.SHUT_WR, userData: uringTagIgnore})
	}
	if st.deleted {
		st.txOver = true
	}
}

// armRoomLocked queues st's multishot poll for room (S6). Called with
// uringSelector.mu held.
func (s *uringSelector) armRoomLocked(st *uringStream) error {
	err := s.queueLocked(uringSQE{opcode: uringOpPollAdd, flags: uringSqeFixedFile, fd: int32(st.slot),
		opFlags: uringPollEvents(Writable), len: uringPollAddMulti, userData: st.roomData()})
	if err == nil {
		st.roomArmed = true
	}
	return err
}

// uringRoomReady is what a room poll's report must hold to send again:
// room, or an error or hang-up that the send will report. POLLRDHUP
// alone (the peer shut its sending side) is not room.
const uringRoomReady = unix.POLLOUT | unix.POLLERR | unix.POLLHUP

// roomDoneLocked applies a report of st's poll for room (S6).
func (s *uringSelector) roomDoneLocked(st *uringStream, c uringCQE) {
	more := c.flags&uringCQEFMore != 0
	if !more {
		st.roomArmed = false
	}
	if !st.wantRoom {
		return // a report from before the send went on, or of its cancel
	}
	switch {
	case c.res >= 0 && c.res&uringRoomReady != 0:
		st.wantRoom = false
		if more {
			// Until the next EAGAIN: every wake-up of the socket would
			// report meanwhile.
			_ = s.cancelLocked(st.roomData())
		}
		s.sentLocked(st, 0) // send the rest
	case more:
		// A half-close alone: wait on for the next wake-up.
	case s.closed.Load() || c.res < 0 && c.res != -int32(unix.ECANCELED):
		// Close cancelled it, or it failed: the sending side ends.
		st.wantRoom = false
		res := c.res
		if res >= 0 {
			res = -int32(unix.ECANCELED)
		}
		s.sentLocked(st, res)
	default:
		// Ended without room: by our cancel, racing a new EAGAIN, by its
		// thread's exit, or by the kernel. Wait again.
		if err := s.armRoomLocked(st); err != nil {
			st.wantRoom = false
			s.sentLocked(st, -int32(unix.ENOBUFS))
		}
	}
}

// pushSendLocked queues the send of st.flight. Called with both mu held.
func (s *uringSelector) pushSendLocked(st *uringStream) {
	err := s.queueLocked(uringSQE{opcode: uringOpSend, flags: uringSqeFixedFile, fd: int32(st.slot),
		addr: uint64(uintptr(unsafe.Pointer(&st.flight[0]))), len: uint32(len(st.flight)),
		opFlags: unix.MSG_NOSIGNAL | unix.MSG_DONTWAIT, userData: st.userData(true)})
	if err != nil {
		st.werr = unix.ENOBUFS
		st.fbase, st.flight, st.out, st.tx = nil, nil, nil, false
		return
	}
	st.tx = true
}

// startSend hands st's queue to the kernel if no send is in flight.
func (s *uringSelector) startSend(st *uringStream) {
	s.mu.Lock()
	defer s.unlockNudging()
	if s.closed.Load() || st.tx {
		return
	}
	st.mu.Lock()
	if len(st.out) > 0 && st.werr == 0 && !st.closedSel {
		st.fbase, st.flight, st.out, st.spare = st.out, st.out, st.spare, nil
		s.pushSendLocked(st)
	}
	st.mu.Unlock()
	_ = s.submitIfBlockedLocked()
}

// resumeIfPaused arms st's receive again once Read brought it under half
// its hold.
func (s *uringSelector) resumeIfPaused(st *uringStream) {
	s.mu.Lock()
	defer s.unlockNudging()
	if !st.paused || st.rx || s.closed.Load() {
		return
	}
	st.setPaused(false)
	if st.wantRecv() && s.armRecvLocked(st) == nil {
		_ = s.submitIfBlockedLocked()
	}
}

// buffersBack arms the receives that ran out of buffers, now that a Read
// gave some back.
func (s *uringSelector) buffersBack() {
	if s.starvedN.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.unlockNudging()
	s.rearmStarvedLocked()
	_ = s.submitIfBlockedLocked()
}

// rearmStarvedLocked arms the receives that ENOBUFS ended.
func (s *uringSelector) rearmStarvedLocked() {
	for _, st := range s.starved {
		st.starved = false
		if !st.rx && st.wantRecv() {
			_ = s.armRecvLocked(st)
		}
	}
	clear(s.starved)
	s.starved = s.starved[:0]
	s.starvedN.Store(0)
}

// announceLocked puts what the stream's entry reports now, by its mode,
// in the due list (see "Readiness" above).
func (s *uringSelector) announceLocked(fd int, e *uringEntry) {
	e.st.mu.Lock()
	ready := e.st.condLocked() & (e.interest | Error | Hup)
	e.st.mu.Unlock()
	if e.interest&(Readable|Hup) == 0 {
		ready &^= Hup
	}
	if ready == 0 {
		return
	}
	switch {
	case e.mode&Oneshot != 0:
		if e.fired {
			return
		}
		e.fired = true
	case e.mode&Edge != 0:
		if ready&^(e.quiet|e.reported) == 0 {
			return
		}
		e.quiet |= ready & (Readable | Writable | Priority)
		e.reported |= ready & (Error | Hup)
	}
	if e.due == 0 {
		s.due = append(s.due, uringResubmit{fd, e})
	}
	e.due |= ready
	s.streamDue = true
	if s.blocked {
		s.nudgeDue = true
	}
}

// streamDrainedLocked is Drained for a stream's entry.
func (s *uringSelector) streamDrainedLocked(fd int, e *uringEntry, ready uint32) {
	if e.mode&(Edge|Oneshot) != Edge {
		return
	}
	bits := e.quiet & ready
	e.quiet &^= bits
	if bits != 0 {
		s.announceLocked(fd, e)
	}
}

// streamModifyLocked is Modify for a stream's entry: its first look
// reports what is there under the new interest.
func (s *uringSelector) streamModifyLocked(fd int, e *uringEntry, key uint64, interest uint32, mode Mode) {
	e.key, e.interest, e.mode = key, interest, mode
	e.quiet, e.reported, e.due, e.fired = 0, 0, 0, false
	s.announceLocked(fd, e)
}
