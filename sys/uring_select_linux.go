//go:build linux

package sys

import (
	"os"
	"runtime"
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
// Adds and Modifies), to move overflowed completions into the ring, to
// wait, or, for a zero timeout that finds the ring empty, to look once;
// and it calls poll(2) once for the completions that waited in the ring
// while the caller ran (uring_fresh_linux.go). The submission and the wait
// are one io_uring_enter: SQEs queued since the last Select cost no system
// call of their own. While anything
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
	// Only one goroutine reads the CQ: a Delete may be reaping its
	// stream's receive (uring_stream_sel_linux.go); its events come first.
	s.mu.Lock()
	for s.selecting {
		s.cond.Wait()
	}
	if len(s.stash) > 0 || s.stashWoken {
		n := copy(events, s.stash)
		s.stash = append(s.stash[:0], s.stash[n:]...)
		clear(s.stashAt)
		for i, ev := range s.stash {
			s.stashAt[ev.Key] = i
		}
		woken := s.stashWoken
		s.stashWoken = false
		s.mu.Unlock()
		return n, woken, nil
	}
	s.selecting = true
	s.mu.Unlock()
	n, woken, err := s.selectCQ(events, timeout)
	s.mu.Lock()
	s.selecting = false
	s.cond.Broadcast()
	s.mu.Unlock()
	return n, woken, err
}

// selectCQ is Select once the goroutine is the CQ's reader.
func (s *uringSelector) selectCQ(events []Event, timeout time.Duration) (int, bool, error) {
	if !s.pinned {
		runtime.LockOSThread() // see "Threads" in uringSelector
		s.pinned = true
	}
	s.beginSelect()
	dl := newDeadline(timeout)
	resubmitted, rearmed, entered := false, false, false
	for {
		unarmed, err := s.flushResubmits()
		if err != nil {
			return 0, false, err
		}
		if !unarmed {
			rearmed = false // armed all: a later failure may try once more
		}
		if s.ring.sqPending() > 0 || s.ring.cqOverflow() {
			entered = true
			if err := s.enterWait(0, 0); err != nil {
				return 0, false, err
			}
		}
		out, woken, again, err := s.harvest(events)
		if err != nil || out > 0 || woken {
			return out, woken, err
		}
		if s.wakeCalled.Swap(false) {
			// A Wake wrote, but its completion runs on the thread that
			// submitted the waker's poll, maybe not yet. The flag says it
			// all the same, so the next Select returns at once, as the
			// contract wants; the completion, when it comes, only resets
			// the gate (the flag is clear by then, unless a later Wake set
			// it again).
			return 0, true, nil
		}
		if again && !resubmitted {
			// Requests ended without an event: submit them again and look
			// once more before waiting (the wait would submit them too,
			// but a look first keeps a zero timeout exact).
			resubmitted = true
			continue
		}
		unarmed, err = s.flushResubmits()
		if err != nil {
			return 0, false, err
		}
		if s.anyDue() {
			continue // a Level stream announced by the flush
		}
		if unarmed && !rearmed {
			// A receive found the SQ full still: submit, and arm it
			// before any wait, which nothing else might end (S3).
			rearmed, entered = true, true
			if err := s.enterWait(0, 0); err != nil {
				return 0, false, err
			}
			continue
		}
		left := dl.remaining()
		if left == 0 {
			if entered {
				return 0, false, nil
			}
			// A look that finds the ring empty enters the kernel once
			// before it says so, as epoll's look does: a completion whose
			// work is pending on this thread (the event came a moment ago,
			// and the kernel's interrupt has not reached the thread yet)
			// is posted on the way out of that call.
			entered = true
			if err := s.enterWait(0, 0); err != nil {
				return 0, false, err
			}
			continue
		}
		if s.testBeforeWait != nil {
			s.testBeforeWait()
		}
		if !s.blockUnlessDue() {
			continue // a Drained since anyDue made a condition due
		}
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

// flushResubmits queues the requests of the registrations whose request is
// over. They wait in a list of their own, not in the SQ, until the Select
// that is about to enter the kernel: a Level registration's single-shot
// poll completes with what the descriptor has at the moment it is armed,
// and armed by some other submission (Delete's, say) it would report a
// state that the caller may have changed before this Select. It also arms
// the streams' receives that found no room in the SQ (S3), and reports
// whether some found none again.
func (s *uringSelector) flushResubmits() (unarmed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unarmed) > 0 {
		s.armUnarmedLocked()
		unarmed = len(s.unarmed) > 0
	}
	for i, r := range s.resubmits {
		if r.e.st != nil {
			if r.e.resubmit && s.table[r.fd] == r.e {
				r.e.resubmit = false
				s.announceLocked(r.fd, r.e)
			}
			s.resubmits[i] = uringResubmit{}
			continue
		}
		if r.e.resubmit && s.table[r.fd] == r.e {
			if err := s.pollLocked(r.fd, r.e); err != nil {
				s.resubmits = append(s.resubmits[:0], s.resubmits[i:]...)
				return unarmed, err
			}
			r.e.resubmit = false
		}
		s.resubmits[i] = uringResubmit{}
	}
	s.resubmits = s.resubmits[:0]
	return unarmed, nil
}

// resubmitLaterLocked puts e in the list flushResubmits submits.
func (s *uringSelector) resubmitLaterLocked(fd int, e *uringEntry) {
	if !e.resubmit {
		e.resubmit = true
		s.resubmits = append(s.resubmits, uringResubmit{fd, e})
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
// again reports requests to submit again (flushResubmits) before waiting.
func (s *uringSelector) harvest(events []Event) (out int, woken, again bool, err error) {
	r := s.ring
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail) // invariant 4: before the CQEs
	if head == tail && !s.anyDue() {
		return 0, false, false, nil
	}
	s.mu.Lock()
	s.epoch++
	s.lookStaleLocked(head, tail)
	// Due conditions and completions take turns at going first, so that
	// neither starves the other when there is more than events holds.
	dueFirst := s.epoch%2 == 0
	if dueFirst {
		out = s.dueLocked(events, 0)
	}
	fired := false
	for ; head != tail && out < len(events); head++ {
		c := r.cqes[head&r.cqMask]
		switch c.userData {
		case uringTagWaker:
			fired = true
			if c.flags&uringCQEFMore == 0 {
				err = s.queueLocked(uringSQE{opcode: uringOpPollAdd, fd: int32(s.waker.fd()),
					opFlags: uringPollEvents(Readable), len: uringPollAddMulti, userData: uringTagWaker})
			}
		case uringTagIgnore:
		default:
			if c.userData&uringStreamTag == uringStreamTag {
				s.streamCompleteLocked(c)
				break
			}
			if c.userData&uringRemoveBit != 0 {
				// -EALREADY: the request was busy completing (its
				// completion work ran on its thread at that moment) and
				// stays armed, holding its file; remove it again.
				if c.res == -int32(unix.EALREADY) {
					if err = s.queueLocked(uringRemoval(c.userData &^ uringRemoveBit)); err == nil {
						err = s.submitLocked()
					}
				}
				break
			}
			out = s.completeLocked(c, events, out)
		}
		if err != nil {
			head++
			break
		}
	}
	if !dueFirst || s.streamDue {
		out = s.dueLocked(events, out)
	}
	s.streamDue = false
	again = len(s.resubmits) > 0
	s.harvests++
	s.cond.Broadcast() // a Delete may be waiting for this harvest (reapLocked)
	s.mu.Unlock()
	atomic.StoreUint32(r.cqHead, head) // invariant 3: the slots go back
	if fired {
		// The gate first, then the flag (the poll(2) backend's order): a
		// Wake whose begin found the gate pending set the flag before
		// this reset, and is reported now; a later one writes again.
		s.gate.reset()
		woken = s.wakeCalled.Swap(false)
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
			s.resubmitLaterLocked(fd, e)
		}
	}
	if c.res <= 0 {
		return out
	}
	ready, fresh := s.freshReady(e)
	if fresh {
		ready &= e.interest | Error | Hup
	} else if ready = uringReady(uint32(c.res), e.interest); e.interest&(Readable|Writable|Priority)&^e.quiet&^ready != 0 || ready&(Error|Priority) != 0 {
		// The mask is what a wake-up announced, maybe not all that is
		// there (a read wake-up does not say the socket is writable too),
		// an error it announced may have been taken since (a read
		// returns it once), and a socket's read wake-up announces
		// POLLPRI with POLLIN whether or not urgent data came. Where that matters, look at the whole state
		// now, as epoll does when it reports: one poll(2), non-blocking.
		// In a steady state (what was reported stays quiet until the
		// caller's EAGAIN) this is rare.
		ready = pollNow(fd, e.interest)
	}
	if ready == 0 {
		// Nothing there now, or nothing asked for: no event. A
		// single-shot request that ended so is armed again, multishot
		// (see "Unasked conditions" in uringSelector); a oneshot one did
		// not fire.
		if c.flags&uringCQEFMore == 0 && !e.emulatedEdge() {
			e.multi = true
			if e.mode&Oneshot != 0 {
				s.resubmitLaterLocked(fd, e)
			}
		}
		return out
	}
	if e.multi && !e.emulatedEdge() {
		// Its event came: back to single-shot requests (Level), or none
		// (Oneshot, until Modify).
		e.multi = false
		if c.flags&uringCQEFMore != 0 && s.roomLocked(1) == nil {
			s.disarmLocked(fd, e)
			s.newGenLocked(e) // the removed request's last completion is stale
			if e.mode&Oneshot == 0 {
				s.resubmitLaterLocked(fd, e)
			}
		}
	}
	if e.emulatedEdge() {
		if ready&^(e.quiet|e.reported) == 0 {
			// Nothing new: hold what was announced again while quiet,
			// for the caller's Drained.
			e.held |= ready & e.quiet
			return out
		}
		e.quiet |= ready & (Readable | Writable | Priority)
		e.reported |= ready & (Error | Hup)
	}
	return s.reportLocked(e, ready, events, out)
}

// reportLocked puts e's event in events, or adds ready to the event it
// already has in this harvest, and returns the new out.
func (s *uringSelector) reportLocked(e *uringEntry, ready uint32, events []Event, out int) int {
	if e.epoch == s.epoch {
		events[e.slot].Ready |= ready
		return out
	}
	e.epoch, e.slot = s.epoch, out
	events[out] = Event{Key: e.key, Ready: ready}
	return out + 1
}
