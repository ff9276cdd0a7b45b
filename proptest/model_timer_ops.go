//go:build linux

package proptest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// The operations of the timer kind (model_timer.go) on one Timer: Set, a
// burst of Sets (SetBurst), time passing until every timeout is due
// (Lapse), a burst that expires in one Poll call behind what waits
// (Pile), Cancel, Poll, Drain (to the end or stopped early) and Close.
// Each checks what the Timer returns against the model and updates it.

// set makes one timeout of d and adds it to the model; it reports whether
// the Timer took it.
func (im *timerImpl) set(t *rapid.T, w *world, s *src, d time.Duration) bool {
	v := im.next
	start := time.Now()
	id, err := im.tm.Set(d, v)
	end := time.Now()
	w.logf("%s.Set(%v, %d) = %v", s.label, d, v, err)
	if !s.bound {
		w.expectErr(t, "Set on a Timer never registered", err, timer.ErrNotRegistered)
		return false
	}
	w.expectErr(t, "Set", err, nil)
	im.next++
	im.live++
	im.outs[v] = &timerOut{v: v, id: id, d: d, lo: start.Add(d), hi: end.Add(d), mustBy: end.Add(d + im.win)}
	return true
}

func drawTimeout(t *rapid.T, label string) time.Duration {
	d := time.Duration(rapid.IntRange(0, 10).Draw(t, label+" ms")) * time.Millisecond
	if rapid.Bool().Draw(t, label+" sub-tick") {
		d += time.Duration(rapid.IntRange(1, 999).Draw(t, label+" µs")) * time.Microsecond
	}
	return d
}

func timerSet(t *rapid.T, w *world, s *src) {
	s.impl.(*timerImpl).set(t, w, s, drawTimeout(t, "timeout"))
}

// timerSetBurst sets up to 24 timeouts in a row, their durations a drawn
// step apart (negative: deadlines in the reverse order of the Sets), so
// that many expire in one Poll call and pile up in the expired list.
func timerSetBurst(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	n := rapid.IntRange(2, 24).Draw(t, "burst")
	d := drawTimeout(t, "first timeout")
	step := time.Duration(rapid.IntRange(-300, 300).Draw(t, "step µs")) * time.Microsecond
	for i := range n {
		if !im.set(t, w, s, max(d+time.Duration(i)*step, 0)) {
			return
		}
	}
}

// timerLapse lets time pass without polling until every timeout of the
// Timer is due, so that the next Poll call, whatever it is, fires all of
// them first thing: a burst then piles up in one call, the same way each
// time rapid replays the case.
func timerLapse(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	var by time.Time
	for _, o := range im.liveOuts() {
		if o.mustBy.After(by) {
			by = o.mustBy
		}
	}
	if !time.Now().Before(by) {
		t.Skip("every timeout is due")
	}
	start := time.Now()
	passTime(by)
	w.logTimed(fmt.Sprintf("time passes until every timeout of %s is due", s.label), fmt.Sprintf(" (%v)", time.Since(start).Round(time.Microsecond)))
}

// timerPile sets a burst of up to 24 timeouts of at most 2ms, lets time
// pass until all are due, and makes one Poll call, which fires them all:
// they join the expired list in one go, behind what waits there. The
// step does the same each time rapid replays it, so a failure it leads to
// shrinks.
func timerPile(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	if !s.bound {
		t.Skip("never registered")
	}
	n := rapid.IntRange(1, 24).Draw(t, "pile")
	d := time.Duration(rapid.IntRange(0, 2000).Draw(t, "pile first timeout µs")) * time.Microsecond
	step := time.Duration(rapid.IntRange(-100, 100).Draw(t, "pile step µs")) * time.Microsecond
	for i := range n {
		im.set(t, w, s, max(d+time.Duration(i)*step, 0))
	}
	var by time.Time
	for _, o := range im.liveOuts() {
		if o.mustBy.After(by) {
			by = o.mustBy
		}
	}
	passTime(by)
	w.poll(t, 8, 0)
	if im.expired != im.live {
		w.fatalf(t, "%s: a Poll call after every deadline had passed left %d of %d timeouts pending (rule 10)", s.label, im.live-im.expired, im.live)
	}
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
	live := im.liveOuts()
	got, ok := im.tm.Cancel(o.id)
	w.logf("%s.Cancel(timeout %d) = %d, %v", s.label, v, got, ok)
	switch {
	case o.done && ok:
		w.fatalf(t, "Cancel of timeout %d, already taken or cancelled, returned %d", v, got)
	case o.done:
	case ok && surelyExpired(o, live, im.expired):
		w.fatalf(t, "Cancel of timeout %d succeeded, but it had expired (%d of %d live timeouts are expired, and no more than that can come before it)", v, im.expired, len(live))
	case ok:
		if got != v {
			w.fatalf(t, "Cancel of timeout %d returned the value %d", v, got)
		}
		o.done, o.cancelled = true, true
		im.live--
		im.cancelled++
	case surelyPending(o, live, im.expired):
		w.fatalf(t, "Cancel of timeout %d failed, but it cannot have expired: %d live timeouts are expired, and at least that many have earlier deadlines (rule 10, or deadline order)", v, im.expired)
	default:
		o.knownFired = true // Cancel says so
	}
}

// took checks a value that Poll or Drain returned and takes it out of the
// model.
func (im *timerImpl) took(t *rapid.T, w *world, s *src, v int) {
	o := im.outs[v]
	switch {
	case o == nil:
		w.fatalf(t, "%s returned %d, which was never set", s.label, v)
	case o.done:
		w.fatalf(t, "%s returned %d, which was taken or cancelled already", s.label, v)
	case im.expired == 0:
		w.fatalf(t, "%s returned %d, but no value was waiting (Stats().Expired was 0)", s.label, v)
	}
	live := im.liveOuts()
	if surelyPending(o, live, im.expired) {
		w.fatalf(t, "%s returned %d, which cannot have expired: %d live timeouts are expired, and at least that many have earlier deadlines", s.label, v, im.expired)
	}
	for _, p := range live {
		if p != o && p.before(o) && surelyExpired(p, live, im.expired) {
			w.fatalStable(t, fmt.Sprintf("%s returned %d before %d, which has expired too and has an earlier deadline", s.label, v, p.v),
				"%s returned a value before another that has expired too and has an earlier deadline (deadline order)", s.label)
		}
	}
	if p := im.latest; p != nil && o.before(p) {
		w.fatalStable(t, fmt.Sprintf("%s returned %d after %d, whose deadline is later", s.label, v, p.v),
			"%s returned a value after another whose deadline is later (deadline order)", s.label)
	}
	if time.Now().Before(o.lo) {
		w.fatalf(t, "%s returned %d before its deadline (rule 10)", s.label, v)
	}
	o.done, o.knownFired = true, true
	if im.latest == nil || o.lo.After(im.latest.lo) {
		im.latest = o
	}
	im.live--
	im.expired--
	im.ring.pop()
}

func timerTake(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	v, ok := im.tm.TryRecv()
	w.logf("%s.TryRecv() = %d, %v", s.label, v, ok)
	if !ok {
		if im.expired > 0 {
			w.fatalf(t, "%s.TryRecv() found nothing, but %d values had expired", s.label, im.expired)
		}
		return
	}
	im.took(t, w, s, v)
}

// timerDrain takes every expired value, or stops after a drawn number of
// them (the values after it stay for the next Poll or Drain).
func timerDrain(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	stop := 0
	if rapid.Bool().Draw(t, "stop early") {
		stop = rapid.IntRange(1, 16).Draw(t, "stop after")
	}
	var got []int
	for v := range im.tm.Drain() {
		got = append(got, v)
		if len(got) == stop {
			break
		}
	}
	if stop > 0 {
		w.logf("%s.Drain() stopped after %d = %v", s.label, stop, got)
	} else {
		w.logf("%s.Drain() = %v", s.label, got)
	}
	want := im.expired
	if stop > 0 {
		want = min(want, stop)
	}
	if len(got) != want {
		w.fatalf(t, "%s.Drain() (stopped after %d) took %d values, but %d had expired", s.label, stop, len(got), im.expired)
	}
	for _, v := range got {
		im.took(t, w, s, v)
	}
}

func timerClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*timerImpl)
	w.closeSource(t, s, "Timer", im.tm.Close, timer.ErrClosed)
	_, err := im.tm.Set(time.Millisecond, -1)
	w.expectErr(t, "Set after Close", err, timer.ErrClosed)
	if _, ok := im.tm.TryRecv(); ok {
		w.fatalf(t, "%s.TryRecv() returned a value after Close", s.label)
	}
	w.expectErr(t, "Register after Close", w.p.Register(im.tm, w.drawToken(t, "token"), poll.Readable, poll.Level), poll.ErrClosed)
}

// fatalStable is fatalf with a message that does not change when rapid
// shrinks the case: the values, the model and the operations, which do,
// go to the log. rapid replays each smaller case twice and gives up
// shrinking when the two messages differ, and the history in fatalf's
// message holds Poll results that vary with timing.
func (w *world) fatalStable(t *rapid.T, detail, format string, args ...any) {
	t.Helper()
	t.Logf("%s\n  model: %s\n  operations:\n    %s", detail, w.describe(), strings.Join(w.hist, "\n    "))
	t.Fatalf(format, args...)
}
