//go:build linux

package proptest

import (
	"fmt"
	"sort"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// The timer kind: a timer.Timer[int] registered with the Poll, whose
// timeouts the state machine sets, cancels, takes (Poll, Drain) and drops
// (Close). Each value is the number of its timeout.
//
// What the model relies on (timer/timer.go, poll/wheel.go,
// poll/timer_queue.go):
//   - A timeout set with d between the clock readings start and end fires
//     in the first Poll call that finds its tick due: never in a call that
//     ends before start+d, always in a call that starts at or after
//     end+d+resolution+tick (the wheel expires what is due first thing in a
//     call). Between the two the model does not know whether it fired, and
//     learns how many fired from Stats (which is exact between calls).
//   - The Timer is Readable exactly while expired values wait to be taken
//     (Stats().Expired > 0): it becomes Readable inside a Poll call, when a
//     timeout fires with none waiting (an edge), and stops being Readable
//     when the last waiting value is taken.
//   - Cancel returns a timeout's value iff it has not fired; taking returns
//     each fired value exactly once, never before its deadline.
//   - Set before the Timer is first registered: ErrNotRegistered.

func init() { registerKind(timerKind{}) }

type timerKind struct{}

func (timerKind) name() string { return "timer" }

func (timerKind) open(t *rapid.T, w *world) impl {
	res := rapid.SampledFrom([]time.Duration{0, 0, 3 * time.Millisecond}).Draw(t, "timer resolution")
	tm, err := timer.New[int](timer.Tick(res))
	if err != nil {
		t.Fatalf("timer.New: %v", err)
	}
	return &timerImpl{tm: tm, res: res, outs: map[int]*timerOut{}}
}

func (timerKind) ops() []op {
	return []op{
		{"Set", timerSet},
		{"Set", timerSet}, // twice as likely as the others
		{"Cancel", timerCancel},
		{"Poll", timerTake},
		{"Drain", timerDrain},
		{"Close", timerClose},
	}
}

type timerImpl struct {
	tm   *timer.Timer[int]
	res  time.Duration
	next int               // the value of the next timeout
	outs map[int]*timerOut // every timeout set, by value
	live int               // timeouts neither taken nor cancelled

	fired   uint64 // Stats().Fired, last observed
	expired int    // Stats().Expired, last observed: Readable iff > 0
}

// timerOut is one timeout.
type timerOut struct {
	id        timer.Timeout
	notBefore time.Time // no call that ends before this fires it
	mustBy    time.Time // a call that starts at or after this fires it first thing
	sure      bool      // it has surely fired (mustBy passed before a call started)
	done      bool      // taken or cancelled
	cancelled bool
}

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
	return fmt.Sprintf("timer (resolution %v), %d live, %d expired waiting, %d fired", im.res, im.live, im.expired, im.fired)
}

func timerSet(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	d := time.Duration(rapid.IntRange(0, 10).Draw(t, "timeout ms")) * time.Millisecond
	if rapid.Bool().Draw(t, "sub-tick") {
		d += time.Duration(rapid.IntRange(1, 999).Draw(t, "timeout µs")) * time.Microsecond
	}
	v := im.next
	start := time.Now()
	id, err := im.tm.Set(d, v)
	end := time.Now()
	w.logf("%s.Set(%v, %d) = %v", s.label, d, v, err)
	if !s.bound {
		w.expectErr(t, "Set on a Timer never registered", err, timer.ErrNotRegistered)
		return
	}
	w.expectErr(t, "Set", err, nil)
	im.next++
	im.live++
	im.outs[v] = &timerOut{id: id, notBefore: start.Add(d), mustBy: end.Add(d + max(im.res, w.cfgTick()) + w.cfgTick())}
}

// pickOut draws a timeout, live or done (a done one checks stale handles).
func (im *timerImpl) pickOut(t *rapid.T) (int, *timerOut) {
	if len(im.outs) == 0 {
		t.Skip("no timeout set")
	}
	vs := make([]int, 0, len(im.outs))
	for v := range im.outs {
		vs = append(vs, v)
	}
	sort.Ints(vs)
	v := rapid.SampledFrom(vs).Draw(t, "timeout")
	return v, im.outs[v]
}

func timerCancel(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	v, o := im.pickOut(t)
	got, ok := im.tm.Cancel(o.id)
	w.logf("%s.Cancel(timeout %d) = %d, %v", s.label, v, got, ok)
	switch {
	case o.done && ok:
		w.fatalf(t, "Cancel of timeout %d, already taken or cancelled, returned %d", v, got)
	case o.done:
	case ok && o.sure:
		w.fatalf(t, "Cancel of timeout %d succeeded, but it had surely fired", v)
	case ok:
		if got != v {
			w.fatalf(t, "Cancel of timeout %d returned the value %d", v, got)
		}
		o.done, o.cancelled = true, true
		im.live--
	case time.Now().Before(o.notBefore):
		w.fatalf(t, "Cancel of timeout %d failed before its deadline: it cannot have fired", v)
	default:
		o.sure = true // it fired: Cancel says so
	}
}

// took checks a value that Poll or Drain returned.
func (im *timerImpl) took(t *rapid.T, w *world, s *src, v int) {
	o := im.outs[v]
	switch {
	case o == nil:
		w.fatalf(t, "%s returned %d, which was never set", s.label, v)
	case o.done:
		w.fatalf(t, "%s returned %d, which was taken or cancelled already", s.label, v)
	case time.Now().Before(o.notBefore):
		w.fatalf(t, "%s returned %d %v before its deadline (rule 10)", s.label, v, time.Until(o.notBefore))
	}
	o.done = true
	im.live--
}

func timerTake(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	v, ok := im.tm.Poll()
	w.logf("%s.Poll() = %d, %v", s.label, v, ok)
	if !ok {
		if im.expired > 0 {
			w.fatalf(t, "%s.Poll() found nothing, but %d values had expired", s.label, im.expired)
		}
		return
	}
	im.took(t, w, s, v)
}

func timerDrain(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	var got []int
	for v := range im.tm.Drain() {
		got = append(got, v)
	}
	w.logf("%s.Drain() = %v", s.label, got)
	if len(got) != im.expired {
		w.fatalf(t, "%s.Drain() took %d values, but %d had expired", s.label, len(got), im.expired)
	}
	for _, v := range got {
		im.took(t, w, s, v)
	}
}

func timerClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	err := im.tm.Close()
	w.logf("%s.Close() = %v", s.label, err)
	w.expectErr(t, "Timer.Close", err, nil)
	if s.registered {
		w.deregistered(s, "closed")
	}
	s.gone = true
	w.expectErr(t, "second Close", im.tm.Close(), timer.ErrClosed)
	_, err = im.tm.Set(time.Millisecond, -1)
	w.expectErr(t, "Set after Close", err, timer.ErrClosed)
	if _, ok := im.tm.Poll(); ok {
		w.fatalf(t, "%s.Poll() returned a value after Close", s.label)
	}
	w.expectErr(t, "Register after Close", w.p.Register(im.tm, w.drawToken(t, "token"), poll.Readable, poll.Level), poll.ErrClosed)
}

// check reads Stats, exact between Poll calls, against the model.
func (im *timerImpl) check(t *rapid.T, w *world, s *src) {
	st := im.tm.Stats()
	if st.Pending+st.Expired != im.live {
		w.fatalf(t, "%s.Stats() = %+v: %d held, but the model has %d live timeouts", s.label, st, st.Pending+st.Expired, im.live)
	}
	if st.Fired != im.fired {
		w.fatalf(t, "%s.Stats().Fired = %d outside a Poll call, the model saw %d", s.label, st.Fired, im.fired)
	}
	if st.Expired > im.expired {
		w.fatalf(t, "%s.Stats().Expired grew outside a Poll call (%d to %d)", s.label, im.expired, st.Expired)
	}
	im.expired = st.Expired
	if got := im.tm.Len(); got != im.live {
		w.fatalf(t, "%s.Len() = %d, but the model has %d live timeouts", s.label, got, im.live)
	}
}

// ---- expiry inside Poll calls (timed)

func (im *timerImpl) beforePoll(t *rapid.T, w *world, s *src, start time.Time) {
	surely := 0
	for _, o := range im.outs {
		if !o.done && !o.sure && !start.Before(o.mustBy) {
			o.sure = true
			surely++
		}
	}
	if surely > 0 && im.expired == 0 {
		// The call's first wheel expiry fires them before anything is
		// delivered: an edge, as if just before the call.
		im.expired = surely
		w.notify(s, poll.Readable)
	}
	// A Poll call may take what is waiting for the first time only now
	// (Drain and Poll check against expired): beforePoll's count is a
	// lower bound until afterPoll reads Stats.
}

func (im *timerImpl) afterPoll(t *rapid.T, w *world, s *src, c *pollCall) {
	st := im.tm.Stats()
	surely, eligible := 0, 0
	for _, o := range im.outs {
		if o.sure && !o.done {
			surely++ // fired, not taken: waiting
		}
		if !o.cancelled && !c.end.Before(o.notBefore) {
			eligible++
		}
	}
	if st.Expired < surely {
		w.fatalf(t, "after Poll#%d %s has %d expired values waiting, but %d timeouts had surely fired (rule 10: at most one tick late)", c.idx, s.label, st.Expired, surely)
	}
	if int(st.Fired) > eligible {
		w.fatalf(t, "after Poll#%d %d of %s's timeouts have fired, but only %d were due by the call's end (rule 10: never early)", c.idx, st.Fired, s.label, eligible)
	}
	was := im.expired
	im.fired, im.expired = st.Fired, st.Expired
	if st.Expired > 0 && was == 0 && s.armedNow() && s.interest&poll.Readable != 0 {
		// Became readable during the call: the event may precede it.
		s.firedEdge, s.firedNow = poll.Readable, poll.Readable
	}
}

func (im *timerImpl) pending(s *src) (time.Time, bool, bool) {
	var by time.Time
	for _, o := range im.outs {
		if !o.done && !o.sure && (by.IsZero() || o.mustBy.Before(by)) {
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
