//go:build linux

package sys

import (
	"cmp"
	"os"

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
// uring_stream_end_linux.go; the sending side is in
// uring_stream_send_linux.go.

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
// the kernel), capped at what the Stream may still hold (S7).
func (s *uringSelector) armRecvLocked(st *uringStream) error {
	if s.testArmFail != nil && s.testArmFail() {
		return os.NewSyscallError("io_uring_enter", unix.EAGAIN) // roomLocked's
	}
	sqe := uringSQE{opcode: uringOpRecv, flags: uringSqeBufferSelect | uringSqeFixedFile,
		ioprio: uringRecvMultishot, fd: int32(st.slot), bufIndex: uringBufGroup, userData: st.userData(false)}
	if s.recvCap != uringCapMissing {
		sqe.optlen = uint32(st.room())
		if s.testRefuseCap {
			sqe.off = 1 // addr2, which a receive must leave at 0: EINVAL
		}
	}
	err := s.queueLocked(sqe)
	if err == nil {
		st.rx = true
		st.capped = sqe.optlen != 0
	}
	return err
}

// rearmLocked arms st's receive again, or, if the SQ has no room for it
// (the kernel takes no more until a harvest makes room), puts it in the
// unarmed list that flushResubmits and look arm from (S3). A Select that
// is running may be past its last flush, about to wait for completions
// that none of this stream's would be: it is nudged (the caller unlocks
// with unlockNudging, or is that Select's own harvest, which flushes
// next).
func (s *uringSelector) rearmLocked(st *uringStream) {
	if err := s.armRecvLocked(st); err != nil && !st.unarmed {
		st.unarmed = true
		s.unarmed = append(s.unarmed, st)
		if s.selecting {
			s.nudgeDue = true
		}
	}
}

// armUnarmedLocked arms the receives of the unarmed list; those the SQ
// has still no room for stay in it.
func (s *uringSelector) armUnarmedLocked() {
	keep := s.unarmed[:0]
	for _, st := range s.unarmed {
		if !st.rx && st.wantRecv() {
			if err := s.armRecvLocked(st); err != nil {
				keep = append(keep, st)
				continue
			}
		}
		st.unarmed = false
	}
	clear(s.unarmed[len(keep):])
	s.unarmed = keep
}

// uringCap is what the selector knows of the kernel's multishot byte cap
// (IORING_OP_RECV's optlen, Linux 6.17).
type uringCap uint8

const (
	uringCapUnknown uringCap = iota // no capped receive has completed yet
	uringCapWorks                   // one has brought bytes
	uringCapMissing                 // one was refused (EINVAL): arm without
)

// capRefusedLocked reports whether c is a capped receive the kernel
// refused because it predates the cap: a capped receive's EINVAL while no
// capped receive has brought bytes. (An older kernel reads optlen as the
// file_index a receive must leave at 0.) Several streams may have been
// armed with the cap before the first refusal was harvested: each of
// their refusals is one. It learns from c either way.
func (s *uringSelector) capRefusedLocked(st *uringStream, c uringCQE) bool {
	if !st.capped || s.recvCap == uringCapWorks {
		return false
	}
	if c.res == -int32(unix.EINVAL) {
		s.recvCap = uringCapMissing
		return true
	}
	if c.res > 0 {
		s.recvCap = uringCapWorks
	}
	return false
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
	pause := false
	if !s.capRefusedLocked(st, c) {
		// (A refused receive brought nothing: the one armed in its place
		// below carries no cap.)
		pause = st.received(c.res, uint16(c.flags>>uringCQEBufferShift), c.flags&uringCQEFBuffer != 0)
	}
	if c.flags&uringCQEFMore != 0 {
		if pause && !st.paused {
			// Until the cancel reaches the kernel (with the next enter,
			// from the polling thread) the receive goes on, and what it
			// brings goes to the heap (received); without the kernel's
			// cap, that may be megabytes (S7).
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
	if pause {
		st.setPaused(true)
	}
	if st.paused && st.low() {
		// Read brought it low: while the cancel was on its way (its
		// resumeIfPaused found the receive still in the kernel), or
		// since received, before the line above set pausedHint (it saw
		// no pause to end). A receive that reached its cap ends here.
		// Also when it ended for want of buffers: starved below, not
		// left paused with nothing held, which no Read would resume.
		st.setPaused(false)
	}
	if c.res == -int32(unix.ENOBUFS) {
		s.ranDry++
		if st.wantRecv() {
			st.starved = true
			s.starved = append(s.starved, st)
			s.starvedN.Add(1)
		}
		return
	}
	if st.wantRecv() {
		// Paused and read since, or ended by the kernel (the CQ was full,
		// its thread exited): go on with a new one.
		s.rearmLocked(st)
	}
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
	if st.wantRecv() {
		s.rearmLocked(st)
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
			s.rearmLocked(st)
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
