//go:build linux

package proptest

import (
	"context"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// TestLoopConcurrent: a Loop served by a drawn number of workers while
// goroutines outside it send to its sources, remove them, disarm and
// rearm them and trigger them (also while their handler runs), all at
// once, by a drawn script. Checked:
//
//   - a handler never runs twice at once, never after its Removed, and
//     Removed runs exactly once for every source removed (by the script,
//     or by Close at the end);
//   - nothing is lost: once the script is over, every source still on the
//     Loop, rearmed, sees its last send; and every Trigger is followed by
//     a call that began after it was sent, also one sent while a call ran
//     on another worker (unless a Disarm, which drops Triggers, came
//     between);
//   - which worker ran what: the calls ran on at most Workers goroutines,
//     on Run's own with one worker, and Stats counts the calls the
//     handlers saw, over exactly Workers workers.
//
// A logical clock (one atomic counter) orders the sending of a Trigger
// and the beginning of a call exactly.
func TestLoopConcurrent(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkScaled(t, loopConcurrentChecks, loopConcurrent(b))
	})
}

// loopConcurrentChecks multiplies rapid's checks for TestLoopConcurrent:
// the interleavings it looks for (a Remove while the handler runs, an
// event routed while it runs) come in a small share of cases.
const loopConcurrentChecks = 2

// loopConcRun is what one check's handlers share: the logical clock, the
// calls made, and the goroutines seen making them (the first call of
// each source: telling a goroutine costs a stack trace).
type loopConcRun struct {
	clock atomic.Int64
	calls atomic.Uint64
	mu    sync.Mutex
	gs    map[uint64]bool
}

// loopConcSrc is a source of TestLoopConcurrent and its handler.
type loopConcSrc struct {
	run     *loopConcRun
	reg     *poll.Registration
	set     *poll.SetReadiness
	tok     poll.Token
	sent    atomic.Int64 // sends made
	seen    atomic.Int64 // the sends the handler had seen at its last call
	begun   atomic.Int64 // the clock when its last call began
	inside  atomic.Int32
	ncalls  int // the handler's own: its calls never overlap
	removes atomic.Int32
	bad     atomic.Pointer[string] // the first violation seen
	action  atomic.Uint32          // the eventloop.Action its handler returns
	gone    atomic.Bool            // the script removed it
	work    time.Duration          // how long a call lasts: windows for the others
	level   bool
	prio    int

	// The Triggers that must bring a call, kept by the script's
	// goroutines under mu: the clock when the latest was sent (0: none
	// owed), and whether a call was running then. A Disarm drops queued
	// Triggers, so one sent before a Disarm, or while one is in effect,
	// owes nothing.
	mu          sync.Mutex
	trigAt      int64
	trigDuring  bool
	disarmPairs int // Disarm-Rearm pairs in progress

	// A call held while the script triggers (holdTrigger): the script
	// asks (hold), the handler's next call says it has begun (entered)
	// and waits, briefly, until the Trigger has been sent (release).
	holdMu   sync.Mutex // one holder at a time
	hold     atomic.Bool
	entered  chan struct{}
	released chan struct{}
}

// holdWait bounds each side's wait in holdTrigger: a call that does not
// come (the source is disarmed, or waits behind a higher priority) or a
// script that is not scheduled costs that much, no more.
const holdWait = 500 * time.Microsecond

func (s *loopConcSrc) fail(msg string) { s.bad.CompareAndSwap(nil, &msg) }

func (s *loopConcSrc) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	if s.inside.Add(1) > 1 {
		s.fail("two calls at once")
	}
	if s.removes.Load() != 0 {
		s.fail("a call after Removed")
	}
	s.begun.Store(s.run.clock.Add(1))
	s.run.calls.Add(1)
	if s.ncalls++; s.ncalls == 1 {
		g := goid()
		s.run.mu.Lock()
		s.run.gs[g] = true
		s.run.mu.Unlock()
	}
	s.seen.Store(s.sent.Load())
	if s.hold.CompareAndSwap(true, false) {
		s.entered <- struct{}{}
		select {
		case <-s.released:
		case <-time.After(holdWait):
		}
	}
	for start := time.Now(); time.Since(start) < s.work; {
	}
	s.inside.Add(-1)
	return eventloop.Action(s.action.Load())
}

func (s *loopConcSrc) Removed(l *eventloop.Loop, t poll.Token) {
	if s.inside.Load() != 0 {
		s.fail("Removed during a call")
	}
	s.removes.Add(1)
}

// trigger sends a Trigger, noting it as owed unless a Disarm is in effect.
func (s *loopConcSrc) trigger(l *eventloop.Loop) {
	s.mu.Lock()
	if s.disarmPairs == 0 {
		s.trigAt = s.run.clock.Add(1)
		s.trigDuring = s.inside.Load() > 0
	}
	s.mu.Unlock()
	_ = l.Trigger(s.tok)
}

// holdTrigger sends to the source and, once the call that brings has
// begun (it waits for this), sends a Trigger while the call runs on its
// worker: the Trigger finds the source running.
func (s *loopConcSrc) holdTrigger(l *eventloop.Loop) {
	if s.gone.Load() {
		return
	}
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	select {
	case <-s.entered: // left by a call that came too late for an earlier hold
	default:
	}
	s.hold.Store(true)
	s.sent.Add(1)
	_ = s.set.SetReadiness(poll.Readable)
	select {
	case <-s.entered:
		s.trigger(l)
		s.released <- struct{}{}
	case <-time.After(holdWait):
		s.hold.Store(false)
		s.trigger(l)
	}
}

// disarmAndRearm is a Disarm and a Rearm, in that order: whatever the
// interleaving with other goroutines' pairs, a Rearm comes last.
func (s *loopConcSrc) disarmAndRearm(l *eventloop.Loop) {
	s.mu.Lock()
	s.disarmPairs++
	s.trigAt = 0 // a Trigger not yet served may be dropped now
	s.mu.Unlock()
	_ = l.Disarm(s.tok)
	_ = l.Rearm(s.tok)
	s.mu.Lock()
	s.disarmPairs--
	s.mu.Unlock()
}

// goid is the calling goroutine's number, from the first line of its
// stack ("goroutine N [...]"): a test's way to tell the workers apart.
func goid() uint64 {
	var buf [32]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = b[len("goroutine "):]
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

type loopConcOp struct {
	kind string
	src  int
}

func loopConcurrent(backend string) func(*rapid.T) {
	return func(t *rapid.T) {
		workers := rapid.IntRange(1, 4).Draw(t, "workers")
		n := rapid.IntRange(1, 12).Draw(t, "sources")
		capacity := rapid.SampledFrom([]int{0, 1, 4}).Draw(t, "MaxEventsPerIteration")
		l, err := eventloop.New(eventloop.Config{Poll: poll.Config{Backend: backend}, Workers: workers, MaxEventsPerIteration: capacity})
		if err != nil {
			t.Fatalf("eventloop.New: %v", err)
		}
		totals.rounds.Add(1)
		run := &loopConcRun{gs: map[uint64]bool{}}
		srcs := make([]*loopConcSrc, n)
		for i := range srcs {
			s := &loopConcSrc{run: run, entered: make(chan struct{}, 1), released: make(chan struct{}, 1)}
			s.reg, s.set = poll.NewRegistration()
			s.action.Store(uint32(rapid.SampledFrom([]eventloop.Action{eventloop.Keep, eventloop.Keep, eventloop.Again}).Draw(t, "action")))
			opts := rapid.SampledFrom([]poll.PollOpt{poll.Edge, poll.Level}).Draw(t, "opts")
			s.level = opts == poll.Level
			s.prio = rapid.IntRange(0, 2).Draw(t, "priority")
			s.work = rapid.SampledFrom([]time.Duration{0, 2 * time.Microsecond, 50 * time.Microsecond}).Draw(t, "call length")
			if s.tok, err = l.Add(s.reg, poll.Readable, opts, s, eventloop.Priority(s.prio)); err != nil {
				t.Fatalf("Add: %v", err)
			}
			if rapid.Bool().Draw(t, "ready from the start") {
				s.sent.Add(1)
				_ = s.set.SetReadiness(poll.Readable)
			}
			srcs[i] = s
		}
		defer func() {
			for _, s := range srcs {
				_ = s.reg.Close()
			}
		}()
		goroutines := rapid.IntRange(1, 4).Draw(t, "goroutines")
		kinds := []string{"send", "send", "send", "send", "trigger", "trigger in a call", "disarm and rearm", "remove", "pause"}
		cc := addConcConn(t, l, goroutines) // loop_concurrent_conn_test.go
		if cc != nil {
			kinds = append(kinds, "Conn.Async", "Conn.Async", "Conn's peer sends")
		}
		scripts := make([][]loopConcOp, goroutines)
		for g := range scripts {
			scripts[g] = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) loopConcOp {
				return loopConcOp{
					kind: rapid.SampledFrom(kinds).Draw(t, "op"),
					src:  rapid.IntRange(0, n-1).Draw(t, "source"),
				}
			}), 1, 200).Draw(t, "script")
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		var runG atomic.Uint64 // Run's goroutine: with one worker, the only one to call
		go func() {
			runG.Store(goid())
			done <- l.Run(ctx, nil)
		}()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				cancel()
				<-done
			}
		}
		defer stop()
		var wg sync.WaitGroup
		for g, script := range scripts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, op := range script {
					s := srcs[op.src]
					switch op.kind {
					case "Conn.Async":
						cc.async(g, i+1)
					case "Conn's peer sends":
						cc.send()
					case "send":
						s.sent.Add(1)
						_ = s.set.SetReadiness(poll.Readable)
					case "trigger":
						s.trigger(l)
					case "trigger in a call":
						s.holdTrigger(l)
					case "pause": // let the handlers run a while
						for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
						}
					case "disarm and rearm":
						s.disarmAndRearm(l)
					case "remove":
						if l.Remove(s.tok) == nil {
							s.gone.Store(true)
						}
					}
				}
			}()
		}
		wg.Wait()
		// Nothing lost: every source still on the Loop (armed: the last
		// of its Disarm and Rearm was a Rearm) sees its last send, and a
		// call begins after its last Trigger, with no Rearm or send now
		// that could make up for a lost event. Priority is strict with a
		// cap, so a source of higher priority that keeps asking for
		// Rearm, or stays ready under Level, may keep a lower one waiting
		// for good: every handler returns Keep from now on, and the
		// sources are waited for highest priority first, a Level one made
		// not ready once it has been seen.
		for _, s := range srcs {
			s.action.Store(uint32(eventloop.Keep))
		}
		order := append([]*loopConcSrc(nil), srcs...)
		sort.SliceStable(order, func(i, j int) bool { return order[i].prio > order[j].prio })
		for _, s := range order {
			if s.gone.Load() {
				continue // removed by the script
			}
			deadline := time.Now().Add(10 * wakeBound)
			for s.seen.Load() != s.sent.Load() || s.begun.Load() < s.trigAt {
				if time.Now().After(deadline) {
					if s.seen.Load() != s.sent.Load() {
						t.Fatalf("source %v: its handler saw %d sends of %d", s.tok, s.seen.Load(), s.sent.Load())
					}
					t.Fatalf("source %v: no call began after the Trigger sent at clock %d (a call was running then: %v; the last began at %d; %d workers)",
						s.tok, s.trigAt, s.trigDuring, s.begun.Load(), workers)
				}
				runtime.Gosched()
			}
			if s.level {
				_ = s.set.UnsetReadiness(poll.Readable)
			}
		}
		if cc != nil {
			if missing := cc.settled(10 * wakeBound); missing != "" {
				t.Fatalf("%s (%d workers)", missing, workers)
			}
		}
		stop()
		checkWorkers(t, l, run, workers, runG.Load(), cc != nil)
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if cc != nil {
			cc.check(t)
		}
		for i, s := range srcs {
			if p := s.bad.Load(); p != nil {
				t.Fatalf("source %d: %s", i, *p)
			}
			if r := s.removes.Load(); r != 1 {
				t.Fatalf("source %d: Removed ran %d times", i, r)
			}
		}
	}
}

// checkWorkers checks which workers ran the calls, once Run has returned:
// at most Workers goroutines, Run's own alone with one worker, and
// Stats.WorkerCalls one count per worker, adding up to Stats.Calls, the
// calls the handlers saw (and the Conn's, if there is one, which its
// handler does not see one by one).
func checkWorkers(t *rapid.T, l *eventloop.Loop, run *loopConcRun, workers int, runG uint64, conn bool) {
	st := l.Stats()
	var sum, busy uint64
	for _, c := range st.WorkerCalls {
		sum += c
		busy += uint64(min(c, 1))
	}
	if workers == 1 {
		for g := range run.gs {
			if g != runG {
				t.Fatalf("one worker, and a call ran on goroutine %d, not Run's (%d)", g, runG)
			}
		}
	}
	switch {
	case len(run.gs) > workers:
		t.Fatalf("calls ran on %d goroutines, %d workers", len(run.gs), workers)
	case len(st.WorkerCalls) != workers:
		t.Fatalf("Stats.WorkerCalls has %d workers, want %d", len(st.WorkerCalls), workers)
	case st.Calls < run.calls.Load() || !conn && st.Calls != run.calls.Load() || sum != st.Calls:
		t.Fatalf("Stats.Calls = %d, Stats.WorkerCalls %v (%d), the handlers saw %d calls", st.Calls, st.WorkerCalls, sum, run.calls.Load())
	case uint64(len(run.gs)) > busy:
		t.Fatalf("calls seen on %d goroutines, Stats.WorkerCalls %v", len(run.gs), st.WorkerCalls)
	}
}
