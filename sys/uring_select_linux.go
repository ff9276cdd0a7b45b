//go:build linux

package sys

import (
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Select for the io_uring backend. See uringSelector for the modes and the
// invariants, uring_ring_linux.go for the ring.
//
// A Select reads completions straight from the CQ ring, in user space. It
// enters the kernel only to submit what is queued (Level re-arms, deferred
// Adds and Modifies), to move overflowed completions into the ring, or to
// wait. The submission and the wait are one io_uring_enter: SQEs queued
// since the last Select cost no system call of their own. While anything
// is queued, a Select submits it before it reads the ring (with a
// zero-wait enter when it must not block), so a Level registration re-armed
// by the previous Select is looked at by this one: a ready descriptor is
// reported on every Select.
//
// Timeouts keep their precision: the wait's timeout is a timespec passed
// with IORING_ENTER_EXT_ARG, not milliseconds.

func (s *uringSelector) Select(events []Event, timeout time.Duration) (int, bool, error) {
	if len(events) == 0 {
		return 0, false, ErrEmptyBuffer
	}
	if s.closed.Load() {
		return 0, false, ErrClosed
	}
	dl := newDeadline(timeout)
	for {
		if s.ring.sqPending() > 0 || s.ring.cqOverflow() {
			if err := s.enterWait(0, 0); err != nil {
				return 0, false, err
			}
		}
		out, woken, err := s.harvest(events)
		if err != nil || out > 0 || woken {
			return out, woken, err
		}
		left := dl.remaining()
		if left == 0 {
			return 0, false, nil
		}
		s.setBlocked(true)
		err = s.enterWait(1, left)
		s.setBlocked(false)
		if err != nil {
			return 0, false, err
		}
		// Loop: read what the wait brought. Stale completions, a wake-up
		// of the wait by a signal or the end of the timeout leave out at
		// 0, and the loop waits again for the time that is left, if any.
	}
}

func (s *uringSelector) setBlocked(b bool) {
	s.mu.Lock()
	s.blocked = b
	s.mu.Unlock()
}

// enterWait submits everything queued and, if min > 0, waits until the CQ
// holds a completion or timeout passes (negative: forever). With min == 0
// it only submits and lets the kernel post what is due (overflowed
// completions included). EINTR, ETIME (the timeout passed) and EBUSY (the
// CQ is full: the caller's harvest makes room) are not errors.
func (s *uringSelector) enterWait(min uint32, timeout time.Duration) error {
	s.waits.Add(1)
	flags := uint32(uringEnterGetEvents)
	var arg unsafe.Pointer
	var argSize uintptr
	if min > 0 && timeout >= 0 {
		s.ts = unix.NsecToTimespec(int64(timeout))
		s.arg = uringGeteventsArg{ts: uint64(uintptr(unsafe.Pointer(&s.ts)))}
		arg, argSize = unsafe.Pointer(&s.arg), unsafe.Sizeof(s.arg)
		flags |= uringEnterExtArg
	}
	// Exactly what is queued: an enter that submits fewer than it was
	// asked to returns at once, without waiting. (A goroutine submitting
	// concurrently may still take some first; the loop in Select then
	// comes back with the time that is left.)
	_, errno := s.ring.enter(s.ring.sqPending(), min, flags, arg, argSize)
	switch errno {
	case 0, unix.EINTR, unix.ETIME, unix.EBUSY, unix.EAGAIN:
		return nil
	}
	return os.NewSyscallError("io_uring_enter", errno)
}

// harvest turns the completions in the CQ ring into at most len(events)
// events. Completions left over stay in the ring for the next Select (a
// CQE, unlike an epoll event, is not lost for lack of room).
func (s *uringSelector) harvest(events []Event) (out int, woken bool, err error) {
	r := s.ring
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail) // invariant 4: before the CQEs
	if head == tail {
		return 0, false, nil
	}
	s.mu.Lock()
	for ; head != tail && out < len(events); head++ {
		c := r.cqes[head&r.cqMask]
		switch c.userData {
		case uringTagWaker:
			woken = true
			if c.flags&uringCQEFMore == 0 {
				err = s.queueLocked(uringSQE{opcode: uringOpPollAdd, fd: int32(s.waker.fd()),
					opFlags: uringPollEvents(Readable), len: uringPollAddMulti, userData: uringTagWaker})
			}
		case uringTagIgnore:
		default:
			var ev Event
			var ok bool
			if ev, ok, err = s.completeLocked(c); ok {
				events[out] = ev
				out++
			}
		}
		if err != nil {
			head++
			break
		}
	}
	s.mu.Unlock()
	atomic.StoreUint32(r.cqHead, head) // invariant 3: the slots go back
	if woken {
		s.gate.reset()
	}
	return out, woken, err
}

// completeLocked applies one completion of a registration's poll request
// to its entry and reports whether it is an event for the caller.
func (s *uringSelector) completeLocked(c uringCQE) (Event, bool, error) {
	fd, gen := int(uint32(c.userData)), uint32(c.userData>>32)
	e, ok := s.table[fd]
	if !ok || e.gen != gen || !e.armed {
		return Event{}, false, nil // removed or replaced since: stale
	}
	if c.flags&uringCQEFMore != 0 {
		return Event{Key: e.key, Ready: uringReady(uint32(c.res))}, c.res > 0, nil
	}
	// The request is over (see "Multishot ends" for why one may end).
	e.armed = false
	if c.res < 0 {
		if c.res != -int32(unix.ECANCELED) {
			// The kernel refused to watch it (the descriptor was closed
			// before the request reached the kernel: EBADF). Leave it
			// disarmed until Modify or Delete, silently, as the poll(2)
			// backend treats POLLNVAL.
			return Event{}, false, nil
		}
		if e.mode&Oneshot != 0 {
			// Cancelled before it fired: it has not had its one event.
			return Event{}, false, s.rearmLocked(fd, e)
		}
	}
	if e.mode&Oneshot == 0 {
		if err := s.rearmLocked(fd, e); err != nil {
			return Event{}, false, err
		}
	}
	return Event{Key: e.key, Ready: uringReady(uint32(c.res))}, c.res > 0, nil
}
