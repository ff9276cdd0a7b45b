//go:build linux

package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The sending side of a stream on the io_uring backend (completion
// mode): a send's completion, the wait for room (S6 in uringStream), and
// handing the queue to the kernel. See uring_stream_sel_linux.go for the
// rest of the selector's side.

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
