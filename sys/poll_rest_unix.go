//go:build unix

package sys

import (
	"time"

	"golang.org/x/sys/unix"
)

// Resting: how the poll(2) backend keeps Edge's promise for a lasting
// hang-up or error, that it is reported once (Selector). It is no policy
// of its own: what to do with a lasting condition the caller did not ask
// for is package poll's (ARCHITECTURE.md, "Hang-ups and errors").
//
// poll(2) reports POLLHUP and POLLERR whatever a pollfd asks for, and both
// last. An emulated-edge entry that has reported them and has nothing else
// to say would make every poll return at once. So it rests: it is left out
// of the array. But it must not go deaf: an error can follow a hang-up (a
// peer that shut down and then reset), and that is a new edge to report.
//
// Resting entries are looked at again with one poll(2) of their own, with a
// zero timeout, over just them (restProbe): the cost of a look grows with
// the number of resting entries, not with the number registered. Looks
// back off: the first comes restFirst after an entry comes to rest, and
// each look that finds nothing new doubles the wait, up to restMax. So a
// descriptor that hangs up and stays registered costs an idle Poll a
// handful of wake-ups in its first second and one a second after that,
// instead of one every 10ms; and a new condition on it is seen within
// restMax of arriving (Traits.RestLatency adds restFirst to that, as a
// margin for the look itself). Modify, Delete and a Drained call that asks for a
// quiet condition again end a rest at once.
const (
	restFirst = 10 * time.Millisecond
	restMax   = time.Second
)

// restSchedule is guarded by pollSelector.mu.
type restSchedule struct {
	entries []*pollEntry // may hold entries that stopped resting since
	n       int          // entries that are resting
	every   time.Duration
	next    time.Time
}

// restProbe is the array of the resting entries' look; owned by the
// goroutine in Select.
type restProbe struct {
	pfds []unix.PollFd
	of   []pollSlot
}

// due reports how long until resting entries are to be looked at, and
// whether any rests.
func (r *restSchedule) due() (time.Duration, bool) {
	if r.n == 0 {
		return 0, false
	}
	return time.Until(r.next), true
}

// restLocked takes e out of the array until something new may be there.
func (s *pollSelector) restLocked(e *pollEntry) {
	r := &s.rest
	e.resting = true
	r.entries = append(r.entries, e)
	r.n++
	r.every = restFirst
	if first := time.Now().Add(restFirst); r.n == 1 || first.Before(r.next) {
		r.next = first
	}
}

// unrestLocked ends e's rest, if it rests; the caller puts it back in the
// array (dirty or patch).
func (s *pollSelector) unrestLocked(e *pollEntry) {
	if e.resting {
		e.resting = false
		s.rest.n--
	}
}

// recheckResting looks at every resting entry with one zero-timeout poll(2)
// and puts back in the array those that have something new. Called by the
// goroutine in Select, without mu.
func (s *pollSelector) recheckResting() {
	pr := &s.probe
	s.mu.Lock()
	r := &s.rest
	keep := r.entries[:0]
	for _, e := range r.entries {
		if !e.resting {
			continue
		}
		keep = append(keep, e)
		pr.pfds = append(pr.pfds, unix.PollFd{Fd: int32(e.fd)})
		e.fillEvents(&pr.pfds[len(pr.pfds)-1])
		pr.of = append(pr.of, pollSlot{e: e, gen: e.gen})
	}
	clear(r.entries[len(keep):])
	r.entries = keep
	s.mu.Unlock()

	n, err := pollWait(pr.pfds, 0)
	s.waits.Add(1)

	s.mu.Lock()
	for i := range pr.pfds {
		p, sl := &pr.pfds[i], pr.of[i]
		e := sl.e
		if err != nil || n == 0 || p.Revents == 0 || e.gen != sl.gen || !e.resting {
			continue
		}
		if p.Revents&unix.POLLNVAL != 0 || pollReady(p)&^(e.quiet|e.reported) != 0 {
			s.unrestLocked(e)
			s.patchLocked(e) // no nudge: the goroutine in Select is this one
		}
	}
	if r.n > 0 {
		r.every = min(2*r.every, restMax)
		r.next = time.Now().Add(r.every)
	}
	s.mu.Unlock()
	pr.pfds = pr.pfds[:0]
	clear(pr.of)
	pr.of = pr.of[:0]
}
