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
		if err := s.flushRearms(); err != nil {
			return 0, false, err
		}
		if s.ring.sqPending() > 0 || s.ring.cqOverflow() {
			if err := s.enterWait(0, 0); err != nil {
				return 0, false, err
			}
		}
		out, woken, again, err := s.harvest(events)
		if err != nil || out > 0 || woken {
			return out, woken, err
		}
		if again {
			continue // requests ended without an event: submit them again first
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

// flushRearms queues the requests of the registrations whose request is
// over. They wait in a list of their own, not in the SQ, until the Select
// that is about to enter the kernel: a Level registration's single-shot
// poll completes with what the descriptor has at the moment it is armed,
// and armed by some other submission (Delete's, say) it would report a
// state that the caller may have changed before this Select.
func (s *uringSelector) flushRearms() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rearms {
		if r.e.rearm && s.table[r.fd] == r.e {
			if err := s.rearmLocked(r.fd, r.e); err != nil {
				s.rearms = append(s.rearms[:0], s.rearms[i:]...)
				return err
			}
			r.e.rearm = false
		}
		s.rearms[i] = uringRearm{}
	}
	s.rearms = s.rearms[:0]
	return nil
}

// rearmLaterLocked puts e in the list flushRearms submits.
func (s *uringSelector) rearmLaterLocked(fd int, e *uringEntry) {
	if !e.rearm {
		e.rearm = true
		s.rearms = append(s.rearms, uringRearm{fd, e})
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
// again reports requests to submit again (flushRearms) before waiting.
func (s *uringSelector) harvest(events []Event) (out int, woken, again bool, err error) {
	r := s.ring
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail) // invariant 4: before the CQEs
	if head == tail {
		return 0, false, false, nil
	}
	s.mu.Lock()
	s.epoch++
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
			out = s.completeLocked(c, events, out)
		}
		if err != nil {
			head++
			break
		}
	}
	again = len(s.rearms) > 0
	s.mu.Unlock()
	atomic.StoreUint32(r.cqHead, head) // invariant 3: the slots go back
	if woken {
		s.gate.reset()
	}
	return out, woken, again, err
}

// completeLocked applies one completion of a registration's poll request
// to its entry and, if it is an event for the caller, puts it in events
// (out of them used so far): one event per registration per Select, as
// epoll gives, so a second completion for the same registration in this
// harvest adds its bits to the first's event. It returns the new out.
func (s *uringSelector) completeLocked(c uringCQE, events []Event, out int) int {
	fd, gen := int(uint32(c.userData)), uint32(c.userData>>32)
	e, ok := s.table[fd]
	if !ok || e.gen != gen || !e.armed {
		return out // removed or replaced since: stale
	}
	if c.flags&uringCQEFMore == 0 {
		// The request is over (see "Multishot ends" for why one may end).
		e.armed = false
		switch {
		case c.res < 0 && c.res != -int32(unix.ECANCELED):
			// The kernel refused to watch it (the descriptor was closed
			// before the request reached the kernel: EBADF). Leave it
			// disarmed until Modify or Delete, silently, as the poll(2)
			// backend treats POLLNVAL.
			return out
		case c.res < 0 || e.mode&Oneshot == 0:
			// Cancelled (its thread exited) before a oneshot fired, or a
			// Level or Edge registration that goes on.
			s.rearmLaterLocked(fd, e)
		}
	}
	if c.res <= 0 {
		return out
	}
	ready := uringReady(uint32(c.res))
	if e.epoch == s.epoch {
		events[e.slot].Ready |= ready
		return out
	}
	e.epoch, e.slot = s.epoch, out
	events[out] = Event{Key: e.key, Ready: ready}
	return out + 1
}
