//go:build linux

package proptest

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// The timer kind: a timer.Timer registered with the Poll (of int values,
// or of values it keeps in its slab: model_timer_values.go), whose
// timeouts the state machine sets (one at a time, or a burst), cancels,
// takes (Poll, Drain, or a Drain stopped early) and drops (Close), with
// the operations in model_timer_ops.go. Each value is the number of its
// timeout.
//
// The model holds the Timer's whole observable state: every timeout with
// its deadline window and whether it is pending, expired and waiting, or
// gone (taken or cancelled); the order in which the waiting ones must come
// out; and the counts of Stats and Len, which it checks exactly after
// every step (check) and every Poll call (afterPoll). Which timeouts fired
// in a call it learns from Stats with the prefix rule of
// model_timer_deadlines.go, which also has the timing rules (never early,
// at most one window late, both exact).
//
// What else the model relies on (timer/timer.go, poll/timer_queue.go,
// and the wheel in internal/base/wheel):
//   - The Timer is Readable exactly while expired values wait to be taken
//     (Stats().Expired > 0): it becomes Readable inside a Poll call, when a
//     timeout fires with none waiting (an edge), and stops being Readable
//     when the last waiting value is taken.
//   - Timeouts fire only inside Poll calls: between them Stats is exact.
//   - Cancel returns a timeout's value iff it has not fired; taking returns
//     each fired value exactly once, in deadline order.
//   - Set before the Timer is first registered: ErrNotRegistered.

func init() { registerKind(timerKind{}) }

type timerKind struct{}

func (timerKind) name() string { return "timer" }

func (timerKind) open(t *rapid.T, w *world) impl {
	res := rapid.SampledFrom([]time.Duration{0, 0, 3 * time.Millisecond}).Draw(t, "timer resolution")
	tm, err := newValueTimer(t, timer.Tick(res))
	if err != nil {
		t.Fatalf("timer.New: %v", err)
	}
	tick := w.cfgTick()
	return &timerImpl{tm: tm, res: res, win: max(tick, (res+tick-1)/tick*tick), outs: map[int]*timerOut{}}
}

func (timerKind) ops() []op {
	return []op{
		{"Set", timerSet},
		{"SetBurst", timerSetBurst},
		{"Lapse", timerLapse},
		{"Pile", timerPile},
		{"Cancel", timerCancel},
		{"Poll", timerTake},
		{"Drain", timerDrain},
		{"Close", timerClose},
	}
}

type timerImpl struct {
	tm   valueTimer        // Timer[int], or a Timer whose values stay in its slab
	res  time.Duration     // the Tick option
	win  time.Duration     // the window deadlines are rounded to: res in whole wheel ticks, at least one
	next int               // the value of the next timeout
	outs map[int]*timerOut // every timeout set, by value

	// The counts Stats and Len must show.
	live      int    // neither taken nor cancelled: Len
	expired   int    // fired and waiting: Stats().Expired; Readable iff > 0
	fired     uint64 // Stats().Fired, last observed (exact between calls)
	cancelled uint64 // Stats().Cancelled

	latest *timerOut // the value taken with the latest lo: no value taken after it is surely earlier
	ring   ringSim

	// Per Poll call (beforePoll to afterPoll).
	callLive []*timerOut
	callE0   int
}

// timerOut is one timeout.
type timerOut struct {
	v          int
	id         timer.Timeout
	d          time.Duration
	lo, hi     time.Time // the deadline lies between them
	mustBy     time.Time // hi + the window: a call that starts at or after this fires it first thing
	knownFired bool      // Cancel said it fired
	done       bool      // taken or cancelled
	cancelled  bool
}

// timerPileUps counts the Poll calls in which more timeouts expired than
// a Timer's expired ring had room for, with its head moved (ringSim).
var timerPileUps atomic.Int64

func (im *timerImpl) evented() poll.Evented { return im.tm }
func (im *timerImpl) isFd() bool            { return false }
func (im *timerImpl) filtered(_, _ poll.Ready) bool {
	return false
}

func (im *timerImpl) ready(interest poll.Ready) (sure, maybe poll.Ready) {
	if im.expired > 0 {
		return poll.Readable & interest, poll.Readable & interest
	}
	return 0, 0
}

func (im *timerImpl) String() string {
	return fmt.Sprintf("timer (resolution %v, window %v), %d live, %d expired waiting, %d fired, %d cancelled",
		im.res, im.win, im.live, im.expired, im.fired, im.cancelled)
}

func sortOuts(outs []*timerOut) {
	sort.Slice(outs, func(i, j int) bool { return outs[i].v < outs[j].v })
}

// check compares Stats and Len, exact between Poll calls, with the model.
func (im *timerImpl) check(t *rapid.T, w *world, s *src) {
	st := im.tm.Stats()
	want := timer.Stats{Pending: im.live - im.expired, Expired: im.expired, Fired: im.fired, Cancelled: im.cancelled}
	if st != want {
		w.fatalf(t, "%s.Stats() = %+v outside a Poll call, but the model has %+v", s.label, st, want)
	}
	if got := im.tm.Len(); got != im.live {
		w.fatalf(t, "%s.Len() = %d, but the model has %d live timeouts", s.label, got, im.live)
	}
	// What Cancel and the counts told must agree: no more timeouts surely
	// expired than are expired.
	live := im.liveOuts()
	n := 0
	for _, o := range live {
		if surelyExpired(o, live, im.expired) {
			n++
		}
	}
	if n > im.expired {
		w.fatalf(t, "%s: %d timeouts have surely expired (Cancel failed on them, or they come first), but Stats().Expired is %d (deadline order)", s.label, n, im.expired)
	}
}

// ---- expiry inside Poll calls (timed)

func (im *timerImpl) beforePoll(t *rapid.T, w *world, s *src, start time.Time) {
	im.callLive, im.callE0 = im.liveOuts(), im.expired
	if im.expired > 0 {
		return
	}
	due := 0
	for _, o := range im.callLive {
		if !start.Before(o.mustBy) {
			due++
		}
	}
	if due > 0 {
		// The call's first wheel expiry fires them before anything is
		// delivered: an edge, as if just before the call. (A lower bound
		// of what waits until afterPoll reads Stats.)
		im.expired = due
		w.notify(s, poll.Readable)
	}
}

// firedAt implements deadlineSource: the latest lo of the timeouts that
// surely fired in the call.
func (im *timerImpl) firedAt(s *src, c *pollCall) (time.Time, bool) {
	return im.firedIn(im.callLive, im.callE0, im.tm.Stats().Expired)
}

func (im *timerImpl) afterPoll(t *rapid.T, w *world, s *src, c *pollCall) {
	looked := w.lookedIn(c)
	st := im.tm.Stats()
	live, e0 := im.callLive, im.callE0
	if st.Fired < im.fired || st.Expired-e0 != int(st.Fired-im.fired) || st.Pending+st.Expired != im.live {
		w.fatalf(t, "after Poll#%d %s.Stats() = %+v, which does not follow from the %d live timeouts, %d expired, %d fired before the call", c.idx, s.label, st, im.live, e0, im.fired)
	}
	if earlyAt(live, st.Expired, c.end) {
		w.fatalf(t, "after Poll#%d %s has %d expired values, but only fewer deadlines had passed by the call's end (rule 10: never early)", c.idx, s.label, st.Expired)
	}
	if o := lateAt(live, st.Expired, c.start); o != nil {
		t.Logf("timeout %d (%v) was due %v before the call started", o.v, o.d, c.start.Sub(o.mustBy))
		w.fatalf(t, "after Poll#%d %s has not fired timeout %d, which was due before the call started (rule 10: at most one tick, or one Tick, late)", c.idx, s.label, o.v)
	}
	if o := lateAt(live, st.Expired, looked); o != nil {
		t.Logf("timeout %d (%v) was due %v before a deadline the call fired", o.v, o.d, looked.Sub(o.mustBy))
		w.fatalf(t, "after Poll#%d %s has not fired timeout %d, although the call fired a deadline that comes a window or more after it (rule 10: at most one tick, or one Tick, late)", c.idx, s.label, o.v)
	}
	if im.ring.push(int(st.Fired - im.fired)) {
		timerPileUps.Add(1)
	}
	was := im.expired // beforePoll's lower bound, if it made an edge
	im.fired, im.expired = st.Fired, st.Expired
	if st.Expired > 0 && was == 0 && s.armedNow() && s.interest&poll.Readable != 0 {
		// Became readable during the call: the event may precede it.
		s.firedEdge, s.firedNow = poll.Readable, poll.Readable
	}
	im.callLive = nil
}

func (im *timerImpl) pending(s *src) (time.Time, bool, bool) {
	live := im.liveOuts()
	var by time.Time
	for _, o := range live {
		if !surelyExpired(o, live, im.expired) && (by.IsZero() || o.mustBy.Before(by)) {
			by = o.mustBy
		}
	}
	if by.IsZero() {
		return by, false, false
	}
	return by, s.armedNow() && s.interest&poll.Readable != 0 && im.expired == 0, true
}

func (im *timerImpl) rearmed(*src) {}

func (im *timerImpl) release(t *rapid.T, w *world, s *src) {
	if err := im.tm.Close(); err != nil {
		t.Fatalf("%s.Close: %v", s.label, err)
	}
	if s.registered {
		w.deregistered(s, "closed")
	}
}

func (im *timerImpl) discard() { _ = im.tm.Close() }
