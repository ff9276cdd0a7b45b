//go:build linux

package proptest

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestDelayBehind (rule 10): a consumer that falls behind the wheel.
// Registrations get delays spread over several rotations of a small wheel
// (1ms ticks, 4 to 16 slots, so entries of different rotations share
// slots); then the consumer does not poll at all for one to three whole
// rotations and more, and comes back with a Poll that does not block.
// Every delay due by then (its deadline plus one tick before the call)
// must fire in that first call: its readiness is set whether or not its
// event fits, and its event is reported in that call if the buffer has
// room, else in the next calls, before any call with room to spare. A
// delay not yet due when the call ended must not have fired.
func TestDelayBehind(t *testing.T) {
	forEachBackendSoak(t, 10, delayBehind)
}

func delayBehind(t *rapid.T, be string) {
	const tick = time.Millisecond
	slots := rapid.SampledFrom([]int{4, 8, 16}).Draw(t, "slots")
	rotation := tick * time.Duration(slots)
	p, err := poll.NewWithConfig(poll.Config{Backend: be, WheelTick: tick, WheelSlots: slots})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	defer p.Close()
	type delayed struct {
		label      string
		set        *poll.SetReadiness
		opts       poll.PollOpt
		d          time.Duration
		start, end time.Time // of the DelayReadiness call
		seen       bool
	}
	n := rapid.IntRange(2, 8).Draw(t, "registrations")
	ds := make([]*delayed, n)
	for i := range ds {
		r, s := poll.NewRegistration()
		defer r.Close()
		x := &delayed{set: s, opts: drawOpts(t)}
		x.d = time.Duration(rapid.IntRange(0, 3*slots).Draw(t, "delay (ticks)"))*tick +
			time.Duration(rapid.IntRange(0, 999).Draw(t, "delay µs"))*time.Microsecond
		x.label = fmt.Sprintf("registration %d (%s, DelayReadiness(Readable, %v))", i, x.opts, x.d)
		if err := p.Register(r, poll.Token(i), poll.Readable, x.opts); err != nil {
			t.Fatalf("Register: %v", err)
		}
		x.start = time.Now()
		if err := s.DelayReadiness(poll.Readable, x.d); err != nil {
			t.Fatalf("DelayReadiness: %v", err)
		}
		x.end = time.Now()
		ds[i] = x
	}
	lag := time.Duration(rapid.IntRange(1, 3).Draw(t, "lag (rotations)"))*rotation +
		time.Duration(rapid.IntRange(1, slots).Draw(t, "lag (more ticks)"))*tick
	// The consumer is away: time passes with no Poll call at all.
	passTime(ds[n-1].end.Add(lag))
	capacity := rapid.IntRange(1, n+1).Draw(t, "capacity")
	ev := poll.NewEvents(capacity)
	var pending []*delayed // due, event not seen yet
	for call := 1; ; call++ {
		start := time.Now()
		if _, err := p.Poll(ev, 0); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		end := time.Now()
		totals.polls.Add(1)
		seen := map[poll.Token]bool{}
		for e := range ev.All() {
			totals.events.Add(1)
			if seen[e.Token] {
				t.Fatalf("Poll#%d after the lag reported token %d twice (rule 1)", call, e.Token)
			}
			seen[e.Token] = true
			x := ds[e.Token]
			if x.start.Add(x.d).After(end) {
				t.Fatalf("Poll#%d after a lag of %v (%d slots of %v) reported %s, which was not due yet (rule 10)", call, lag, slots, tick, x.label)
			}
			if x.seen && !x.opts.IsLevel() {
				t.Fatalf("Poll#%d after the lag reported %s a second time (rules 2, 4)", call, x.label)
			}
			x.seen = true
		}
		if call == 1 {
			for _, x := range ds {
				fired := x.set.Readiness()&poll.Readable != 0
				switch {
				case !x.end.Add(x.d + tick).After(start):
					if !fired {
						t.Logf("it was due %v before the call started", start.Sub(x.end.Add(x.d)))
						t.Fatalf("%s was due before the first Poll after a lag of %v (a wheel of %d slots of %v, a rotation is %v), but that call did not fire it (rule 10: at most one tick late)",
							x.label, lag, slots, tick, rotation)
					}
					if !x.seen {
						pending = append(pending, x)
					}
				case x.start.Add(x.d).After(end):
					if fired {
						t.Fatalf("%s fired in the first Poll after a lag of %v, before it was due (rule 10)", x.label, lag)
					}
				}
			}
		} else {
			left := pending[:0]
			for _, x := range pending {
				if !x.seen {
					left = append(left, x)
				}
			}
			pending = left
		}
		if len(pending) == 0 {
			break
		}
		if ev.Len() < capacity {
			t.Fatalf("Poll#%d after a lag of %v had room (%d of %d) but did not report %s, which fired (rules 8, 10)", call, lag, ev.Len(), capacity, pending[0].label)
		}
		if call > 2*n+2 {
			t.Fatalf("%s fired but was not reported by %d calls after the lag (rule 11)", pending[0].label, call)
		}
	}
	totals.rounds.Add(int64(n))
}
