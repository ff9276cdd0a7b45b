//go:build linux

package proptest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// TestTimerStateMachine is the state machine with timers as the only kind
// of source (model_timer.go): Set, SetBurst, Cancel, Poll, Drain (to the
// end or stopped early) and Close between Register, Reregister,
// Deregister, Lag and Poll calls in every mode, every result and the
// Timer's Stats after every step checked against the model. Timer
// operations are drawn three times as often as in TestStateMachine (which
// mixes timers with the other kinds), so that bursts pile up in the
// expired list after some values were taken, and more expire in one call
// than it has room for (issue 22, hole 3): the count is logged.
func TestTimerStateMachine(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		before := timerPileUps.Load()
		checkScaled(t, stateMachineChecks, stateMachineWeighted(backendOf(b), []kind{timerKind{}}, 2))
		t.Logf("%d Poll calls expired more timeouts than the expired list had room for, after values were taken from it", timerPileUps.Load()-before)
	})
}

// TestTimerPileUp (issue 22, hole 3): one registered Timer, and steps
// whose outcome does not depend on timing, so that a failure shrinks to
// the few steps that make it: Pile (a burst that expires in one Poll
// call, behind what waits), Poll (take one value) and Drain (all, or
// stopped early). The expired list is taken from in part and then takes
// in more than the room it has left, in every order; every value must
// come out in deadline order, and Stats must match the model after every
// step.
func TestTimerPileUp(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		before := timerPileUps.Load()
		checkFraction(t, pileUpShare, timerPileUp(backendOf(b)))
		t.Logf("%d Poll calls expired more timeouts than the expired list had room for, after values were taken from it", timerPileUps.Load()-before)
	})
}

// pileUpShare divides the configured number of checks for
// TestTimerPileUp: each of its cases waits for a few milliseconds at
// every Pile, and twenty cases make a hundred pile-ups.
const pileUpShare = 5

func timerPileUp(be backend) func(*rapid.T) {
	return func(t *rapid.T) {
		w := newWorld(t, be, poll.Config{WheelSlots: rapid.SampledFrom(wheelSlotChoices).Draw(t, "wheel slots")})
		w.kinds = []kind{timerKind{}}
		defer w.cleanup()
		s := w.open(t, timerKind{})
		w.logf("open %s: %v", s.label, s.impl)
		tok, opts := w.drawToken(t, "token"), drawOpts(t)
		err := w.p.Register(s.impl.evented(), tok, poll.Readable, opts)
		w.logf("Register(%s, token %d, %s, %s) = %v", s.label, tok, poll.Readable, opts, err)
		w.expectErr(t, "Register", err, nil)
		w.arm(s, tok, poll.Readable, opts)
		t.Repeat(map[string]func(*rapid.T){
			"":      w.Check,
			"Pile":  func(t *rapid.T) { timerPile(t, w, s) },
			"Poll":  func(t *rapid.T) { timerTake(t, w, s) },
			"Drain": func(t *rapid.T) { timerDrain(t, w, s) },
		})
		w.settle(t)
		w.shutdown(t)
	}
}

// TestTimerCancelRacingExpiry: a drawn number of goroutines set timeouts of
// a drawn length (0 to 2ms, so that they expire while the others work)
// concurrently, others cancel them as soon as they are set, and one
// consumer takes what expires through a Poll in a drawn mode. Every
// timeout ends up exactly once either cancelled (Cancel returned its
// value) or expired (the consumer took it), none is taken before its
// deadline, and a Poll call that waits blockLimit with values waiting is a
// lost readiness.
func TestTimerCancelRacingExpiry(t *testing.T) {
	forEachBackend(t, timerRace)
}

func timerRace(t *rapid.T, be string) {
	setters := rapid.IntRange(1, 4).Draw(t, "setters")
	cancellers := rapid.IntRange(0, 2).Draw(t, "cancellers")
	per := rapid.IntRange(1, 200).Draw(t, "timeouts per setter")
	maxUs := rapid.IntRange(0, 2000).Draw(t, "longest timeout µs")
	res := rapid.SampledFrom([]time.Duration{0, 2 * time.Millisecond}).Draw(t, "resolution")
	opts := rapid.SampledFrom(optsChoices).Draw(t, "consumer opts")
	totals.rounds.Add(1)

	p := drawPoll(t, be)
	defer p.Close()
	tm, err := timer.New[int](timer.Tick(res))
	if err != nil {
		t.Fatalf("timer.New: %v", err)
	}
	defer tm.Close()
	if err := p.Register(tm, 1, poll.Readable, opts); err != nil {
		t.Fatalf("Register: %v", err)
	}

	n := setters * per
	var (
		cancelled = make([]atomic.Int32, n)
		taken     = make([]atomic.Int32, n)
		notBefore = make([]atomic.Int64, n) // the earliest the timeout may expire (UnixNano)
		toCancel  = make(chan timer.Timeout, n)
		fails     failures
		setWG     sync.WaitGroup
		wg        sync.WaitGroup
	)
	for g := range setters {
		setWG.Add(1)
		go func() {
			defer setWG.Done()
			for i := range per {
				v := g*per + i
				d := time.Duration((v*7919)%(maxUs+1)) * time.Microsecond
				notBefore[v].Store(time.Now().Add(d).UnixNano())
				to, err := tm.Set(d, v)
				if err != nil {
					fails.add("Set(%v, %d): %v", d, v, err)
					return
				}
				toCancel <- to
			}
		}()
	}
	// When setters and cancellers are done, a Registration wakes the
	// consumer, which may be blocked with nothing left to expire.
	doneReg, doneSet := poll.NewRegistration()
	defer doneReg.Close()
	if err := p.Register(doneReg, 2, poll.Readable, poll.Level); err != nil {
		t.Fatalf("Register: %v", err)
	}
	var setDone atomic.Bool
	go func() { setWG.Wait(); close(toCancel) }()
	for range cancellers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for to := range toCancel {
				if v, ok := tm.Cancel(to); ok {
					cancelled[v].Add(1)
				}
			}
		}()
	}
	if cancellers == 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range toCancel {
			}
		}()
	}
	go func() {
		setWG.Wait()
		wg.Wait()
		setDone.Store(true)
		_ = doneSet.SetReadiness(poll.Readable)
	}()

	ev := poll.NewEvents(4)
	deadline := time.Now().Add(10 * time.Second)
	// Until setters and cancellers are done and nothing is left in the
	// Poll's wheel or waiting: a timeout that a Cancel wrongly left in the
	// wheel fires late and is counted twice.
	held := func() bool {
		st := tm.Stats()
		return tm.Len() > 0 || st.Pending > 0 || st.Expired > 0 || p.Stats().TimersPending > 0
	}
	for !setDone.Load() || held() {
		if time.Now().After(deadline) {
			fails.add("%d timeouts still held after 10s (%+v)", tm.Len(), tm.Stats())
			break
		}
		start := time.Now()
		if _, err := p.Poll(ev, blockLimit); err != nil {
			fails.add("Poll: %v", err)
			break
		}
		totals.polls.Add(1)
		timerEvent := false
		for e := range ev.All() {
			timerEvent = timerEvent || e.Token == 1
		}
		if !timerEvent {
			if time.Since(start) >= blockLimit && tm.Stats().Expired > 0 {
				fails.add("Poll(%v) reported nothing while expired values waited: a lost readiness (rule 8)", blockLimit)
				break
			}
			continue
		}
		totals.events.Add(1)
		for v := range tm.Drain() {
			if now := time.Now().UnixNano(); now < notBefore[v].Load() {
				fails.add("timeout %d taken %v before its deadline", v, time.Duration(notBefore[v].Load()-now))
			}
			taken[v].Add(1)
		}
		if opts.IsOneshot() {
			if err := p.Reregister(tm, 1, poll.Readable, opts); err != nil {
				fails.add("Reregister: %v", err)
			}
		}
	}
	wg.Wait()
	setWG.Wait()
	for v := range n {
		if c, k := cancelled[v].Load(), taken[v].Load(); c+k != 1 {
			fails.add("timeout %d: cancelled %d times and taken %d times", v, c, k)
			break
		}
	}
	fails.report(t)
}
