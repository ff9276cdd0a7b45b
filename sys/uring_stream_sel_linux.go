//go:build linux

package sys

import (
	"cmp"
	"os"
	"time"
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
// send), never a descriptor, so a completion finds its Stream in the
// streams map also after Delete (S5): bytes received before the Delete are
// the caller's, and a send's buffer is freed only at its completion.
//
// Delete and the CQ. Bytes a receive took from the socket may wait in the
// CQ after the receive is cancelled. Were Delete to return then, a caller
// reading the descriptor itself would get later bytes before them. So
// Delete cancels the receive and returns only once its last completion
// has been harvested: by the Select running at the time (it is woken by
// that completion; Delete waits on cond), or, when no Select runs, by
// Delete itself, which takes the Select's place (selecting) for that
// long and keeps the events it harvests for the next Select (stash).
//
// Invariants (all under mu):
//   - selecting is true while a goroutine reads the CQ (a Select, or a
//     Delete or Close reaping); a Select that finds it set waits on cond.
//   - stash holds events harvested outside a Select; the next Select
//     returns them first.

// uringStreamTag marks a stream request's user_data (bits 63 and 62 both
// set: no registration's, removal's or internal tag has both).
const (
	uringStreamTag     = 3 << 62
	uringStreamSendBit = 1 << 61 // the request is the Stream's send
	uringStreamCancel  = 1 << 60 // the completion of a cancel of it
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
		if c.userData&uringStreamSendBit != 0 {
			busy = st.tx
		}
		if c.res == -int32(unix.EALREADY) && busy {
			// Queued: this harvest's Select submits it with its next
			// enter, from the polling thread.
			_ = s.cancelLocked(c.userData &^ uringStreamCancel)
		}
		return
	}
	if c.userData&uringStreamSendBit != 0 {
		s.sentLocked(st, c.res)
	} else {
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
	switch {
	case res > 0:
		st.flight = st.flight[res:]
	case res == -int32(unix.ECANCELED) && !st.closedSel:
		// Cancelled by its thread's exit, not by us: send it again.
	case res < 0:
		st.werr = unix.Errno(-res)
		st.fbase, st.flight, st.out = nil, nil, nil
	}
	if len(st.flight) == 0 && st.werr == 0 && len(st.out) > 0 && !st.closedSel {
		emptied := st.fbase[:0]
		st.fbase, st.flight, st.out = st.out, st.out, emptied
	}
	if len(st.flight) > 0 && st.werr == 0 && !st.closedSel {
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

// pushSendLocked queues the send of st.flight. Called with both mu held.
func (s *uringSelector) pushSendLocked(st *uringStream) {
	err := s.queueLocked(uringSQE{opcode: uringOpSend, flags: uringSqeFixedFile, fd: int32(st.slot),
		addr: uint64(uintptr(unsafe.Pointer(&st.flight[0]))), len: uint32(len(st.flight)),
		opFlags: unix.MSG_NOSIGNAL, userData: st.userData(true)})
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

// streamDeleteLocked is Delete for a stream's entry: it cancels the
// receive and waits until its last completion is harvested ("Delete and
// the CQ").
func (s *uringSelector) streamDeleteLocked(fd int, e *uringEntry) error {
	st := e.st
	delete(s.table, fd)
	e.due, st.entry, st.deleted = 0, nil, true
	st.mu.Lock()
	st.txOver = true
	st.mu.Unlock()
	if st.rx {
		if err := s.cancelLocked(st.userData(false)); err != nil {
			return err
		}
	}
	if err := s.submitLocked(); err != nil { // the cancel, and sends queued
		return err
	}
	// Wait for the receive's end (order), and give the sends the time to
	// go that the kernel lets them have now: as write(2) before close(2)
	// would have put them in the socket. A send that makes no progress in
	// two looks (the peer does not read) goes on in the background, the
	// slot keeping the socket open, as the kernel keeps sending a closed
	// socket's buffer.
	unsent, stalls := -1, 0
	s.reapLocked(func() bool {
		if st.rx {
			return false
		}
		if !st.tx {
			return true
		}
		st.mu.Lock()
		n := len(st.out) + len(st.flight)
		st.mu.Unlock()
		if n == unsent {
			stalls++
		}
		unsent = n
		return stalls >= 2
	}, time.Second, true)
	if !st.rx {
		st.mu.Lock()
		st.rxOver = true
		st.mu.Unlock()
	}
	s.finishIfDoneLocked(st)
	return nil
}

// reapLocked waits, up to limit, until done reports true: for the Select
// running to harvest what it waits for, or harvesting itself when none
// runs (the events go to stash). Called and returns with mu held.
func (s *uringSelector) reapLocked(done func() bool, limit time.Duration, mayNudge bool) {
	end := time.Now().Add(limit)
	for !done() && time.Now().Before(end) {
		if s.selecting {
			if !mayNudge {
				return // Close: the running Select will see ErrClosed
			}
			// The Select may be blocked with nothing to harvest: a nudge
			// makes it harvest (the waker's completion), and every
			// harvest broadcasts. harvests tells whether one came while
			// mu was released for the nudge (the nudge takes closeMu,
			// which Close takes before mu).
			h := s.harvests
			s.mu.Unlock()
			s.nudge()
			s.mu.Lock()
			if s.harvests == h && s.selecting {
				s.cond.Wait()
			}
			continue
		}
		s.selecting = true
		s.mu.Unlock()
		s.beginSelect()
		_ = s.enterWait(1, time.Millisecond)
		n, woken, _, _ := s.harvest(s.reapBuf[:])
		s.mu.Lock()
		s.stashLocked(s.reapBuf[:n], woken)
		s.selecting = false
		s.cond.Broadcast()
	}
}

// The look may run on any goroutine: a TLS handshake's goroutine, say,
// whose flight must leave while the Loop is busy. What it submits
// completes on its thread ("Threads" in uringSelector), at once when the
// send has room, else when that thread next enters the kernel or, asleep,
// is woken for it.
//
// look is a Read's or Write's look at the ring when its Stream had
// nothing to give or no room: unless a Select (or another look) reads the
// CQ, it submits what is queued, lets the kernel post what is due (on the
// polling thread, the receives' and sends' completion work runs then), and
// harvests, keeping the events for the next Select (stash). It is what a
// read(2) that finds the socket empty costs on another backend, one
// system call, and it lets a caller that reads or writes in a loop
// without polling in between (which the contract allows) make progress.
func (s *uringSelector) look() {
	s.mu.Lock()
	if s.selecting || s.closed.Load() {
		s.mu.Unlock()
		return
	}
	s.selecting = true
	s.mu.Unlock()
	s.beginSelect()
	_ = s.enterWait(0, 0)
	n, woken, _, _ := s.harvest(s.reapBuf[:])
	s.mu.Lock()
	s.stashLocked(s.reapBuf[:n], woken)
	s.selecting = false
	s.cond.Broadcast()
	s.mu.Unlock()
}

// stashLocked keeps events harvested outside a Select for the next one.
// An event for a key already kept adds its bits to the kept one, so that
// the stash holds at most one event per registration however often a
// caller that does not poll looks.
func (s *uringSelector) stashLocked(evs []Event, woken bool) {
	s.stashWoken = s.stashWoken || woken
	for _, ev := range evs {
		if i, ok := s.stashAt[ev.Key]; ok {
			s.stash[i].Ready |= ev.Ready
			continue
		}
		if s.stashAt == nil {
			s.stashAt = make(map[uint64]int)
		}
		s.stashAt[ev.Key] = len(s.stash)
		s.stash = append(s.stash, ev)
	}
}

// finishIfDoneLocked forgets a deleted Stream once no request of it is
// in the kernel, and clears its slot (S5).
func (s *uringSelector) finishIfDoneLocked(st *uringStream) {
	if !st.deleted || st.rx || st.tx || st.slotd {
		return
	}
	delete(s.streams, st.id)
	_ = s.submitLocked() // a queued shutdown names the slot: it goes first
	s.files.clear(s.ring.fd, st.slot)
	st.slotd = true
}

// closeStreamsLocked is Close's part for the streams: it cancels their
// requests, reaps them (bounded: a Select may be running), copies what
// they received out of the buffers, and unmaps the buffers only if no
// request of a Stream is left in the kernel; otherwise the mappings stay,
// since the kernel could still write into them.
func (s *uringSelector) closeStreamsLocked() {
	if s.bufs == nil {
		return
	}
	for _, st := range s.streams {
		if st.rx {
			_ = s.cancelLocked(st.userData(false))
		}
		if st.tx {
			_ = s.cancelLocked(st.userData(true))
		}
	}
	_ = s.submitLocked()
	busy := func() bool {
		for _, st := range s.streams {
			if st.rx || st.tx {
				return false
			}
		}
		return true
	}
	s.reapLocked(busy, 200*time.Millisecond, false)
	idle := busy()
	for _, st := range s.streams {
		st.mu.Lock()
		st.spillLocked()
		st.closedSel, st.rxOver = true, true
		if !st.tx {
			st.txOver = true
		}
		st.mu.Unlock()

	}
	if idle {
		s.bufs.close(s.ring.fd)
	}
}
