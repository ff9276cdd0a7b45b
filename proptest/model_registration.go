//go:build linux

package proptest

import (
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The Registration kind: user-space readiness set with SetReadiness,
// UnsetReadiness and DelayReadiness, and dropped with Close.
//
// What the model relies on (registration.go, readiness_queue.go):
//   - The event carries readiness&interest at delivery.
//   - Edge: each SetReadiness that sets a bit of the interest is a new
//     edge, even if the bit was set (owed). One that sets only bits outside
//     the interest while the source is ready may still queue it (a
//     spurious event, allowed).
//   - Level: reported on every call while readiness&interest != 0.
//   - Oneshot: interest cleared by delivery, until Reregister.
//   - A pending notification whose readiness is unset before it is
//     delivered is discarded (rule 6).
//   - DelayReadiness(r, d) sets r in the first Poll call that finds it due:
//     never in a call that ends before start+d, always in a call that
//     starts after end+d+tick (start and end of the DelayReadiness call).
//     Between the two the model reads Readiness() after each call to see
//     whether it fired; when r was already set that cannot be seen, and an
//     event it may cause is allowed rather than required. A call that
//     fired another deadline of the wheel whose earliest moment is at or
//     after end+d+tick (a timer's, another delay's) must have fired it
//     too: the wheel fires everything due in the pass that reads the
//     clock (world.lookedIn).

// strictUserEdges: a SetReadiness (or a delay firing) that adds only bits
// outside the interest must not produce an event; only interest bits make an
// edge (registration.go). Set it to false to tolerate such events as
// spurious (rule 9).
const strictUserEdges = true

func init() { registerKind(regKind{}) }

type regKind struct{}

func (regKind) name() string { return "reg" }

func (regKind) open(t *rapid.T, w *world) impl {
	r, sr := poll.NewRegistration()
	return &regImpl{r: r, sr: sr}
}

func (regKind) ops() []op {
	return []op{
		{"SetReadiness", regSet},
		{"UnsetReadiness", regUnset},
		{"DelayReadiness", regDelayOp},
		{"Close", regClose},
	}
}

type regImpl struct {
	r     *poll.Registration
	sr    *poll.SetReadiness
	rd    poll.Ready // the readiness, as the model knows it
	delay *regDelay
}

// regDelay is a pending DelayReadiness.
type regDelay struct {
	bits      poll.Ready
	d         time.Duration
	notBefore time.Time // no call that ends before this may fire it
	mustBy    time.Time // a call that starts at or after this fires it first thing
	// When bits are already set, firing cannot be observed:
	maybeFired bool // a call that could fire it has run
	seen       bool // since then the source was reported
	tainted    bool // since then its registration changed
}

func (im *regImpl) evented() poll.Evented { return im.r }
func (im *regImpl) isFd() bool            { return false }

func (im *regImpl) ready(interest poll.Ready) (sure, maybe poll.Ready) {
	return im.rd & interest, im.rd & interest
}

func (im *regImpl) filtered(_, _ poll.Ready) bool { return false }

func (im *regImpl) String() string {
	s := "readiness " + im.rd.String()
	if d := im.delay; d != nil {
		s += ", delayed " + d.bits.String() + " after " + d.d.String()
		if d.maybeFired {
			s += " (may have fired)"
		}
	}
	return s
}

func drawReady(t *rapid.T, label string) poll.Ready {
	return poll.Ready(rapid.Uint32Range(0, 31).Draw(t, label))
}

func regSet(t *rapid.T, w *world, s *src) {
	im := s.impl.(*regImpl)
	bits := drawReady(t, "readiness")
	err := im.sr.SetReadiness(bits)
	w.logf("%s.SetReadiness(%s) = %v", s.label, bits, err)
	w.expectErr(t, "SetReadiness", err, nil)
	im.rd |= bits
	im.edge(w, s, bits)
}

// edge records that bits were set (by SetReadiness or a firing delay).
func (im *regImpl) edge(w *world, s *src, bits poll.Ready) {
	if strictUserEdges && bits&s.interest == 0 {
		return
	}
	w.notify(s, bits)
}

func regUnset(t *rapid.T, w *world, s *src) {
	im := s.impl.(*regImpl)
	bits := drawReady(t, "readiness")
	err := im.sr.UnsetReadiness(bits)
	w.logf("%s.UnsetReadiness(%s) = %v", s.label, bits, err)
	w.expectErr(t, "UnsetReadiness", err, nil)
	im.rd &^= bits
	if d := im.delay; d != nil {
		d.bits &^= bits
		if d.bits == 0 {
			im.delay = nil
		}
	}
}

func regDelayOp(t *rapid.T, w *world, s *src) {
	im := s.impl.(*regImpl)
	bits := drawReady(t, "readiness")
	d := time.Duration(rapid.IntRange(0, 10).Draw(t, "delay ms")) * time.Millisecond
	if rapid.Bool().Draw(t, "sub-tick") {
		d += time.Duration(rapid.IntRange(1, 999).Draw(t, "delay µs")) * time.Microsecond
	}
	start := time.Now()
	err := im.sr.DelayReadiness(bits, d)
	end := time.Now()
	w.logf("%s.DelayReadiness(%s, %v) = %v", s.label, bits, d, err)
	if !s.bound {
		w.expectErr(t, "DelayReadiness of a Registration never registered", err, poll.ErrNotRegistered)
		return
	}
	w.expectErr(t, "DelayReadiness", err, nil)
	if d == 0 {
		im.rd |= bits
		im.edge(w, s, bits)
		return
	}
	if old := im.delay; old != nil && old.maybeFired {
		w.jiggle(s) // it may have fired with its event still queued
	}
	im.delay = &regDelay{bits: bits, d: d, notBefore: start.Add(d), mustBy: end.Add(d + w.cfgTick())}
}

func regClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*regImpl)
	w.closeSource(t, s, "Registration", im.r.Close, poll.ErrClosed)
	im.delay = nil
	// Everything else on a closed Registration is refused too.
	w.expectErr(t, "SetReadiness after Close", im.sr.SetReadiness(poll.Readable), poll.ErrClosed)
	w.expectErr(t, "UnsetReadiness after Close", im.sr.UnsetReadiness(poll.Readable), poll.ErrClosed)
	w.expectErr(t, "DelayReadiness after Close", im.sr.DelayReadiness(poll.Readable, time.Millisecond), poll.ErrClosed)
	w.expectErr(t, "Register after Close", w.p.Register(im.r, w.drawToken(t, "token"), poll.Readable, poll.Level), poll.ErrClosed)
	w.expectErr(t, "Reregister after Close", w.p.Reregister(im.r, 1, poll.Readable, poll.Level), poll.ErrClosed)
	w.expectErr(t, "Deregister after Close", w.p.Deregister(im.r), poll.ErrClosed)
}

func (im *regImpl) release(t *rapid.T, w *world, s *src) {
	if err := im.r.Close(); err != nil {
		t.Fatalf("%s.Close: %v", s.label, err)
	}
	if s.registered {
		w.deregistered(s, "closed")
	}
	im.delay = nil
}

func (im *regImpl) check(t *rapid.T, w *world, s *src) {
	if got := im.sr.Readiness(); got != im.rd {
		w.fatalf(t, "%s.Readiness() = %s, but the model has %s", s.label, got, im.rd)
	}
}

// ---- delayed readiness (timed)

func (im *regImpl) beforePoll(t *rapid.T, w *world, s *src, start time.Time) {
	d := im.delay
	if d == nil || start.Before(d.mustBy) {
		return
	}
	// Due: the call's first wheel expiry fires it before anything is
	// delivered, exactly like a SetReadiness just before the call.
	im.delay = nil
	fresh := d.bits &^ im.rd
	im.rd |= d.bits
	switch {
	case fresh != 0 || !d.maybeFired || (!d.seen && !d.tainted):
		im.edge(w, s, d.bits)
	case !strictUserEdges || d.bits&s.interest != 0:
		w.jiggle(s)
	}
}

// firedAt implements deadlineSource: the pending delay, if the call
// surely fired it (its bits, not set before, are set now).
func (im *regImpl) firedAt(s *src, c *pollCall) (time.Time, bool) {
	d := im.delay
	if d == nil {
		return time.Time{}, false
	}
	fresh := d.bits &^ im.rd
	return d.notBefore, fresh != 0 && im.sr.Readiness()&fresh == fresh
}

func (im *regImpl) afterPoll(t *rapid.T, w *world, s *src, c *pollCall) {
	looked := w.lookedIn(c)
	cur := im.sr.Readiness()
	if d := im.delay; d != nil {
		fresh := d.bits &^ im.rd
		switch got := cur & fresh; {
		case fresh == 0:
			// Undecidable: the bits are set either way.
			if !c.end.Before(d.notBefore) {
				d.maybeFired = true
				s.callMay = !strictUserEdges || d.bits&s.interest != 0
				if _, ok := c.got[s.token]; ok && s.registered {
					d.seen = true
				}
			}
		case got == fresh:
			if c.end.Before(d.notBefore) {
				t.Logf("the call ended %v before the delay was up", d.notBefore.Sub(c.end))
				w.fatalf(t, "Poll#%d fired %s.DelayReadiness(%s, %v) early, before the delay was up (rule 10)",
					c.idx, s.label, d.bits, d.d)
			}
			im.delay = nil
			im.rd |= d.bits
			if s.armedNow() && (!strictUserEdges || d.bits&s.interest != 0) {
				s.firedEdge = d.bits
				s.firedNow = fresh
			}
		case got != 0:
			w.fatalf(t, "Poll#%d set only %s of %s.DelayReadiness(%s)", c.idx, got, s.label, d.bits)
		case !d.mustBy.After(looked):
			// Another deadline fired in the call that shows the wheel's
			// clock past this one's last tick (model_timer_deadlines.go).
			t.Logf("the delay was due %v before a deadline the call fired", looked.Sub(d.mustBy))
			w.fatalf(t, "Poll#%d did not fire %s.DelayReadiness(%s, %v), although it fired a deadline that comes a tick or more after it (rule 10: at most one tick late)",
				c.idx, s.label, d.bits, d.d)
		}
	}
	if cur != im.rd {
		w.fatalf(t, "after Poll#%d %s.Readiness() = %s, but the model has %s", c.idx, s.label, cur, im.rd)
	}
}

func (im *regImpl) pending(s *src) (time.Time, bool, bool) {
	d := im.delay
	if d == nil {
		return time.Time{}, false, false
	}
	wakes := s.armedNow() && d.bits&s.interest != 0 && !d.maybeFired
	return d.mustBy, wakes, true
}

func (im *regImpl) rearmed(s *src) {
	if d := im.delay; d != nil && d.maybeFired {
		d.tainted = true
	}
}

// cfgTick is the wheel tick of the Poll under test.
func (w *world) cfgTick() time.Duration {
	if w.cfg.WheelTick == 0 {
		return poll.DefaultWheelTick
	}
	return w.cfg.WheelTick
}

func (im *regImpl) discard() { _ = im.r.Close() }
