//go:build linux

package proptest

import (
	"sync"
	"time"
)

// What the timer model knows of a Timer's deadlines, and how it tells,
// from Stats alone, which timeouts have expired.
//
// Each timeout's deadline lies in a window [lo, hi]: the clock readings
// around its Set, plus its duration. The wheel fires a deadline at the
// start of the first tick at or after it, the deadline first rounded up
// to the Timer's window (its Tick in whole wheel ticks, or the tick), so
// it fires never before lo and, with the Poll polling, never after
// mustBy = hi + window: exact bounds, with no allowance for noise.
//
// The prefix rule. A timeout fires when the wheel's clock reaches its
// rounded deadline, and the rounding is monotone, so at any moment the
// expired timeouts are the ones with the earliest deadlines: those still
// waiting to be taken are a prefix, in deadline order, of the live ones
// (not taken, not cancelled), of length Stats().Expired. The model knows
// the deadline order of two timeouts where their windows do not overlap
// (a before b: a.hi < b.lo); a timeout has surely expired when fewer than
// Expired live timeouts can come before it or with it, surely not when
// Expired or more come surely before it. What the windows leave open (two
// deadlines within a Set's duration of each other, on both sides of a
// tick) stays open until Cancel or Poll tells.
//
// The rules a Poll call is checked with (afterPoll), all exact:
//   - never early: every expired timeout has lo before the call's end;
//   - at most one window late: a timeout with mustBy at or before the
//     call's start has expired after it (the call expires the wheel first
//     thing);
//   - and the same from inside the call: a timeout that surely fired in
//     the call shows that the call read the clock at or after that
//     timeout's lo, and every timeout with mustBy at or before that
//     moment, of this Timer or of any timed source of the Poll (looked),
//     fired in the same pass of the wheel.
//
// Values come out in deadline order (Poll, Drain): one is never taken
// while a surely earlier one waits, nor after one with a surely later
// deadline was taken.

// before reports whether a's deadline is surely earlier than b's.
func (a *timerOut) before(b *timerOut) bool { return a.hi.Before(b.lo) }

// liveOuts lists the timeouts neither taken nor cancelled, in the order
// set.
func (im *timerImpl) liveOuts() []*timerOut {
	out := make([]*timerOut, 0, len(im.outs))
	for _, o := range im.outs {
		if !o.done {
			out = append(out, o)
		}
	}
	sortOuts(out)
	return out
}

// surelyExpired reports whether o has surely expired among live, with
// expired of them expired.
func surelyExpired(o *timerOut, live []*timerOut, expired int) bool {
	if o.knownFired {
		return true
	}
	rank := 0 // how many can come before o or with it, o included
	for _, p := range live {
		if !o.before(p) {
			rank++
		}
	}
	return rank <= expired
}

// surelyPending reports whether o has surely not expired among live, with
// expired of them expired.
func surelyPending(o *timerOut, live []*timerOut, expired int) bool {
	if o.knownFired {
		return false
	}
	rank := 1 // the best place o can have
	for _, p := range live {
		if p.before(o) {
			rank++
		}
	}
	return rank > expired
}

// firedIn returns the latest lo among the timeouts that surely fired in a
// Poll call, given the expired count before it (e0, with the live set
// before the call) and after it (e1): the call read the clock at or after
// it.
func (im *timerImpl) firedIn(live []*timerOut, e0, e1 int) (time.Time, bool) {
	var at time.Time
	ok := false
	for _, o := range live {
		if surelyPending(o, live, e0) && surelyExpired(o, live, e1) {
			if !ok || o.lo.After(at) {
				at = o.lo
			}
			ok = true
		}
	}
	return at, ok
}

// lateAt returns a live timeout that must have expired by a call that
// read the clock at at (mustBy at or before at) and surely has not, with
// expired of them expired, or nil. It first checks the count: more of them
// due than expired is a late one, whichever it is.
func lateAt(live []*timerOut, expired int, at time.Time) *timerOut {
	due := 0
	var first *timerOut
	for _, o := range live {
		if !o.mustBy.After(at) {
			due++
			if first == nil {
				first = o
			}
			if surelyPending(o, live, expired) {
				return o
			}
		}
	}
	if due > expired {
		return first
	}
	return nil
}

// earlyAt reports whether more timeouts have expired than can have been
// due by at (lo at or before at).
func earlyAt(live []*timerOut, expired int, at time.Time) bool {
	due := 0
	for _, o := range live {
		if !o.lo.After(at) {
			due++
		}
	}
	return expired > due
}

// ringSim follows the capacity and head of a TimerQueue's expired ring
// (an owner's expired keys in internal/base/wheel/owner.go, on the shared
// internal/base/ring), to count the pile-ups the model makes:
// more expiring in one Poll call than the ring has room for, while its
// head is not at the start (some values were taken since it last grew).
type ringSim struct{ cap, head, n int }

// push records k keys pushed at once and reports whether they wrapped
// around a ring whose head had moved, and made it grow.
func (r *ringSim) push(k int) bool {
	pile := k > r.cap-r.n && r.head != 0
	for range k {
		if r.n == r.cap {
			r.cap, r.head = max(16, 2*r.cap), 0
		}
		r.n++
	}
	return pile
}

// pop records one key taken.
func (r *ringSim) pop() {
	r.head = (r.head + 1) % max(r.cap, 1)
	r.n--
	if r.n == 0 && r.cap > 1024 {
		*r = ringSim{}
	}
}

// deadlineSource is a timed impl whose deadlines live in the Poll's wheel
// (timers, delayed readiness), so that one of them firing in a call shows
// how far the call's clock got (world.lookedIn).
type deadlineSource interface {
	// firedAt returns the latest lo (notBefore) of its deadlines that
	// surely fired in call c; the model is as it was before the call.
	firedAt(s *src, c *pollCall) (time.Time, bool)
}

// looked caches world.lookedIn for the call being checked.
var looked struct {
	sync.Mutex
	c  *pollCall
	at time.Time
}

// lookedIn returns a moment that call c's wheel surely reached: its start,
// or the latest lo of a deadline that surely fired in it, of any source.
// The wheel fires every deadline due at the moment it reads the clock in
// one pass, so every deadline with mustBy at or before this moment has
// fired by the end of c. The first timed source whose afterPoll runs
// computes it, before any model changes.
func (w *world) lookedIn(c *pollCall) time.Time {
	looked.Lock()
	defer looked.Unlock()
	if looked.c != c {
		at := c.start
		for _, s := range w.live() {
			if d, ok := s.impl.(deadlineSource); ok {
				if x, ok := d.firedAt(s, c); ok && x.After(at) {
					at = x
				}
			}
		}
		looked.c, looked.at = c, at
	}
	return looked.at
}
