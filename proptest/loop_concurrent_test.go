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
// rearm them and trigger them, all at once, by a drawn script. Checked:
// a handler never runs twice at once, never after its Removed, and
// Removed runs exactly once for every source removed (by the script, or
// by Close at the end); and nothing is lost: once the script is over,
// every source still on the Loop, rearmed, sees its last send.
func TestLoopConcurrent(t *testing.T) {
	for _, b := range backendsUnderTest() {
		t.Run(b, func(t *testing.T) {
			checkScaled(t, loopConcurrentChecks, loopConcurrent(b))
		})
	}
}

// loopConcurrentChecks multiplies rapid's checks for TestLoopConcurrent:
// the interleavings it looks for (a Remove while the handler runs, an
// event routed while it runs) come in a small share of cases.
const loopConcurrentChecks = 2

// loopConcSrc is a source of TestLoopConcurrent and its handler.
type loopConcSrc struct {
	reg     *poll.Registration
	set     *poll.SetReadiness
	tok     poll.Token
	sent    atomic.Int64 // sends made
	seen    atomic.Int64 // the sends the handler had seen at its last call
	inside  atomic.Int32
	removes atomic.Int32
	bad     atomic.Pointer[string] // the first violation seen
	action  atomic.Uint32          // the eventloop.Action its handler returns
	gone    atomic.Bool            // the script removed it
	work    time.Duration          // how long a call lasts: windows for the others
	level   bool
	prio    int
}

func (s *loopConcSrc) fail(msg string) { s.bad.CompareAndSwap(nil, &msg) }

func (s *loopConcSrc) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	if s.inside.Add(1) > 1 {
		s.fail("two calls at once")
	}
	if s.removes.Load() != 0 {
		s.fail("a call after Removed")
	}
	s.seen.Store(s.sent.Load())
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
		srcs := make([]*loopConcSrc, n)
		for i := range srcs {
			s := &loopConcSrc{}
			s.reg, s.set = poll.NewRegistration()
			s.action.Store(uint32(rapid.SampledFrom([]eventloop.Action{eventloop.Keep, eventloop.Keep, eventloop.Rearm}).Draw(t, "action")))
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
		scripts := make([][]loopConcOp, goroutines)
		for g := range scripts {
			scripts[g] = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) loopConcOp {
				return loopConcOp{
					kind: rapid.SampledFrom([]string{"send", "send", "send", "send", "trigger", "disarm and rearm", "remove", "pause"}).Draw(t, "op"),
					src:  rapid.IntRange(0, n-1).Draw(t, "source"),
				}
			}), 1, 200).Draw(t, "script")
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Run(ctx, nil) }()
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
		for _, script := range scripts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, op := range script {
					s := srcs[op.src]
					switch op.kind {
					case "send":
						s.sent.Add(1)
						_ = s.set.SetReadiness(poll.Readable)
					case "trigger":
						_ = l.Trigger(s.tok)
					case "pause": // let the handlers run a while
						for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
						}
					case "disarm and rearm":
						// In pairs, by one goroutine: whatever the
						// interleaving, a Rearm comes last.
						_ = l.Disarm(s.tok)
						_ = l.Rearm(s.tok)
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
		// of its Disarm and Rearm was a Rearm) sees its last send, with no
		// Rearm or send now that could make up for a lost event. Priority
		// is strict with a cap, so a source of higher priority that keeps
		// asking for Rearm, or stays ready under Level, may keep a lower
		// one waiting for good: every handler returns Keep from now on,
		// and the sources are waited for highest priority first, a Level
		// one made not ready once it has been seen.
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
			for s.seen.Load() != s.sent.Load() {
				if time.Now().After(deadline) {
					t.Fatalf("source %v: its handler saw %d sends of %d", s.tok, s.seen.Load(), s.sent.Load())
				}
				runtime.Gosched()
			}
			if s.level {
				_ = s.set.UnsetReadiness(poll.Readable)
			}
		}
		stop()
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
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
