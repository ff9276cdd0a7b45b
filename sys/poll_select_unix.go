//go:build unix

package sys

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Select for the poll(2) backend: bring the pollfd array up to date with the
// table, poll, and turn results into events. See pollSelector for the
// invariants.

func (s *pollSelector) Select(events []Event, timeout time.Duration) (int, bool, error) {
	if len(events) == 0 {
		return 0, false, ErrEmptyBuffer
	}
	if s.closed.Load() {
		return 0, false, ErrClosed
	}
	dl := newDeadline(timeout)
	for {
		wait := dl.remaining()
		s.mu.Lock()
		recheck := false
		if due, ok := s.rest.due(); ok {
			if due <= 0 {
				s.mu.Unlock()
				s.recheckResting()
				s.mu.Lock()
				due, ok = s.rest.due()
			}
			if ok && (wait < 0 || wait > due) {
				wait, recheck = due, true
			}
		}
		s.refreshLocked()
		s.blocked = true
		s.mu.Unlock()

		n, err := pollWait(s.pfds, wait)
		s.waits.Add(1)

		s.mu.Lock()
		s.blocked = false
		out, wakerReady := 0, false
		if err == nil && n > 0 {
			wakerReady = s.pfds[0].Revents != 0
			out = s.collectLocked(events)
		}
		s.mu.Unlock()

		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, false, os.NewSyscallError("poll", err)
		}
		woken := false
		if wakerReady {
			s.waker.drain() // before reset: see the invariants
			s.gate.reset()
			woken = s.wakeCalled.Swap(false)
		}
		if out > 0 || woken {
			return out, woken, nil
		}
		// Nothing for the caller: a nudge, results that turned out stale,
		// quiet, disarmed or POLLNVAL, the resting entries' turn, or the
		// timeout. Poll again with the time that is left, if any.
		if n == 0 && !recheck || dl.remaining() == 0 {
			return 0, false, nil
		}
	}
}

// refreshLocked brings the pollfd array up to date with the table: a full
// rebuild after Add, Modify or Delete, else a rewrite in place of the
// patched entries.
func (s *pollSelector) refreshLocked() {
	if s.dirty {
		s.rebuildLocked()
	}
	for i, e := range s.patch {
		e.patched = false
		s.patch[i] = nil
		if j := e.idx + 1; j < len(s.slots) && s.slots[j].e == e {
			e.fill(&s.pfds[j])
		}
	}
	s.patch = s.patch[:0]
}

// rebuildLocked rebuilds the pollfd array from the table.
func (s *pollSelector) rebuildLocked() {
	n := 1 + len(s.list)
	if cap(s.pfds) < n {
		s.pfds = make([]unix.PollFd, n, n+n/4)
		s.slots = make([]pollSlot, n, cap(s.pfds))
	}
	clear(s.slots[n:cap(s.slots)]) // let deleted entries go
	s.pfds = s.pfds[:n]
	s.slots = s.slots[:n]
	s.pfds[0] = unix.PollFd{Fd: int32(s.waker.fd()), Events: unix.POLLIN}
	s.slots[0] = pollSlot{}
	for i, e := range s.list {
		e.fill(&s.pfds[i+1])
		s.slots[i+1] = pollSlot{e: e, gen: e.gen}
	}
	s.dirty = false
}

// collectLocked turns the array's results into at most len(events) events.
//
// The scan starts where the previous one stopped reporting, so that when
// more descriptors are ready than events has room for, every one gets its
// turn. Results left over are not acted on (no quiet, no disarm): the
// descriptor is still ready next time and is reported then.
func (s *pollSelector) collectLocked(events []Event) int {
	nslots := len(s.pfds) - 1
	if nslots == 0 {
		return 0
	}
	if s.start >= nslots {
		s.start = 0
	}
	out, last := 0, -1
	for j := 0; j < nslots && out < len(events); j++ {
		i := 1 + (s.start+j)%nslots
		p := &s.pfds[i]
		if p.Revents == 0 {
			continue
		}
		slot := &s.slots[i]
		e := slot.e
		if e.gen != slot.gen || !e.armed || e.resting {
			continue // changed, deleted, disarmed or resting since the array was built
		}
		if p.Revents&unix.POLLNVAL != 0 {
			// The descriptor was closed without Delete. POLLNVAL would be
			// reported on every poll, so reporting it as Error|Hup would
			// spin the caller, and the number may already belong to an
			// unrelated descriptor that this registration does not own.
			// Disarm it until Modify or Delete, silently, as epoll would
			// have dropped the registration on close.
			e.armed = false
			p.Fd = -1
			continue
		}
		ready := pollReady(p)
		if e.emulatedEdge() {
			if ready&^(e.quiet|e.reported) == 0 {
				// Nothing new: all that is there is a lasting hang-up or
				// error already reported, which poll(2) cannot be told
				// to leave out. Rest instead of spinning.
				s.restLocked(e)
				p.Fd = -1
				continue
			}
			e.quiet |= ready & (Readable | Writable | Priority)
			e.reported |= ready & (Error | Hup)
			e.fill(p)
		}
		events[out] = Event{Key: e.key, Ready: ready}
		out++
		last = j
		if e.mode&Oneshot != 0 {
			e.armed = false
			p.Fd = -1
		}
	}
	if last >= 0 {
		s.start = (s.start + last + 1) % nslots
	}
	return out
}
