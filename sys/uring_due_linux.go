//go:build linux

package sys

import "golang.org/x/sys/unix"

// The due list: conditions that Drained made due again (emulated Edge, and
// streams' announcements), which a harvest reports after its completions,
// and the check that keeps a Select from waiting while one is listed.

// blockUnlessDue marks the Select blocked, about to wait, unless a
// condition became due since its last look: a Drained on another
// goroutine (or a stream's completion harvested by a look) nudges only a
// blocked Select, and one that came between that look and this would
// otherwise wait out the timeout with the condition in the due list.
func (s *uringSelector) blockUnlessDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.due) > 0 {
		return false
	}
	s.blocked = true
	return true
}

// anyDue reports whether Drained made conditions due. Called without mu by
// the goroutine in Select; a racing Drained nudges it (it is blocked), or
// blockUnlessDue sees it, or its next harvest does.
func (s *uringSelector) anyDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.due) > 0
}

// dueLocked reports the conditions that Drained made due (they become quiet
// again, as a reported condition does) in events after the out used, and
// returns the new out. Entries it has no room for stay due, in order.
func (s *uringSelector) dueLocked(events []Event, out int) int {
	keep := s.due[:0]
	for _, d := range s.due {
		e := d.e
		if e.due == 0 {
			continue // reported since, Modified or Deleted (invariants in uringSelector)
		}
		if out == len(events) {
			keep = append(keep, d)
			continue
		}
		if e.st == nil {
			e.quiet |= e.due
		} else if e.mode&(Level|Oneshot) == Level {
			s.resubmitLaterLocked(d.fd, e) // looked at again by the next Select
		}
		out = s.reportLocked(e, e.due, events, out)
		e.due = 0
	}
	clear(s.due[len(keep):])
	s.due = keep
	return out
}

// pollNow is fd's readiness for interest now (plus hang-ups and errors),
// from a zero-timeout poll(2); 0 if it has none or poll fails.
func pollNow(fd int, interest uint32) uint32 {
	p := [1]unix.PollFd{{Fd: int32(fd)}}
	(&pollEntry{interest: interest}).fillEvents(&p[0])
	for {
		n, err := unix.Poll(p[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 || p[0].Revents&unix.POLLNVAL != 0 {
			return 0
		}
		return pollReady(&p[0])
	}
}
