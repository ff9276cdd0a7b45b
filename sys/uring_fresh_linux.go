//go:build linux

package sys

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Fresh looks for the io_uring backend: completions that may be stale.
//
// A poll request's completion carries the mask the file had when it was
// posted. epoll, when it reports, looks at the file again (and drops an
// item with nothing left), so its events say what is there. A completion
// posted while Select was not running (the caller ran between two Selects,
// and its thread posted the completion during one of its own system calls,
// "Threads" in uringSelector) may describe readiness the caller has since
// consumed: data it read, an error it took. So a completion that was in the
// CQ before this Select began is checked against the file's state now, all
// of a harvest's at once, in one non-blocking poll(2); one posted while this
// Select was in the kernel is taken as it is (the caller, in Select, took
// nothing since). The check comes before a completion touches its entry's
// emulated-edge state, so a stale condition is neither reported nor made
// quiet.
//
// Invariants: begun is the CQ tail that Select loaded when it began, and
// fresh and the entries' fresh fields are used by the goroutine in Select
// only, under mu, within one harvest (epoch).

// beginSelect records where the completions this Select may take as they
// are begin.
func (s *uringSelector) beginSelect() { s.begun = atomic.LoadUint32(s.ring.cqTail) }

// lookStaleLocked finds the completions in the CQ slots [head, tail) that
// were posted before this Select began and belong to a registration's
// current request, and looks at their files now, one poll(2) for all. It
// leaves the result in each entry (freshEpoch, freshAt) for completeLocked.
func (s *uringSelector) lookStaleLocked(head, tail uint32) {
	s.fresh = s.fresh[:0]
	r := s.ring
	for i := head; i != tail && int32(s.begun-i) > 0; i++ {
		c := &r.cqes[i&r.cqMask]
		if c.userData&(1<<63|uringRemoveBit) != 0 || c.res <= 0 {
			continue
		}
		fd, gen := int(uint32(c.userData)), uint32(c.userData>>32)
		e, ok := s.table[fd]
		if !ok || e.gen != gen || !e.armed || e.freshEpoch == s.epoch {
			continue
		}
		e.freshEpoch, e.freshAt = s.epoch, len(s.fresh)
		p := unix.PollFd{Fd: int32(fd)}
		(&pollEntry{interest: e.interest}).fillEvents(&p)
		s.fresh = append(s.fresh, p)
	}
	if len(s.fresh) == 0 {
		return
	}
	for {
		_, err := unix.Poll(s.fresh, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			for i := range s.fresh {
				s.fresh[i].Revents = 0
			}
		}
		return
	}
}

// freshReady reports whether e's readiness was looked at in this harvest
// (lookStaleLocked), and what it was.
func (s *uringSelector) freshReady(e *uringEntry) (uint32, bool) {
	if e.freshEpoch != s.epoch {
		return 0, false
	}
	p := &s.fresh[e.freshAt]
	if p.Revents&unix.POLLNVAL != 0 {
		return 0, true
	}
	return pollReady(p), true
}
