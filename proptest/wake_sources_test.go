//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestConcurrentWakeSources (rules 2-5, 8, 10): every kind of wake-up at
// once, against a consumer that always blocks forever (Poll(-1)).
// Producers on their own goroutines each own a few sources (Registrations,
// and sockets whose peer they write) and run a drawn script: SetReadiness;
// DelayReadiness with a short delay (a wheel deadline, which wakes the
// consumer to shorten its sleep, then fires in a later pass); a
// registration change that alone makes the source reportable (rule 5:
// Deregister or an interest that is never ready, readiness set, then Register or
// Reregister under a new token); a peer's write; and noise that wakes the
// consumer for nothing (a delay of readiness outside the interest, a
// Reregister of a source that is not ready, a Deregister and Register).
// Each owed event is acknowledged by the consumer, which makes the source
// quiet again first; the producer waits for it with the stall detector of
// probe.go, so two wake-ups that land in the same few microseconds (the
// second one swallowed, say, by a waker drained after its gate was reset)
// show as a poller asleep with an event owed. The run ends by a known
// wake-up: a final SetReadiness of a "done" Registration that the
// consumer's last Poll(-1) must report, or Close, or both at once.
func TestConcurrentWakeSources(t *testing.T) {
	// Its storms spin for the whole of a case: a quarter of the soak.
	forEachBackendSoak(t, 4, wakeSources)
}

// wsSource is one source of a producer.
type wsSource struct {
	source
	label string
	opts  poll.PollOpt
	// Owned by the producer; the consumer learns tokens from the map.
	tok        poll.Token
	registered bool
	// awaiting is the token whose event is owed (0: none); the consumer
	// quiets the source and acknowledges on ack.
	awaiting atomic.Uint64
	ack      chan struct{}
}

// wsOp is one drawn step of a producer's script.
type wsOp struct {
	src   int
	what  string
	pause int
	sleep bool // wait until the consumer sleeps first
	delay time.Duration
	mute  bool // change: by an interest that is never ready rather than Deregister
}

var (
	wsRegOps  = []string{"set", "delay", "change", "delay outside", "reregister idle", "deregister and register idle"}
	wsSockOps = []string{"write", "change", "reregister idle"}
)

// doneToken is the token of the Registration whose readiness ends the run;
// storms have stormToken and the next one.
const (
	doneToken  = poll.Token(1 << 40)
	stormToken = poll.Token(1 << 41)
)

func wakeSources(t *rapid.T, be string) {
	p := drawPoll(t, be)
	defer p.Close()
	capacity := rapid.IntRange(1, 4).Draw(t, "capacity")
	var mu sync.RWMutex
	tokens := map[poll.Token]*wsSource{}
	retAt := map[poll.Token]int64{}
	var clock atomic.Int64
	nextTok := poll.Token(1)
	issue := func(s *wsSource) poll.Token {
		mu.Lock()
		defer mu.Unlock()
		tok := nextTok
		nextTok++
		tokens[tok] = s
		return tok
	}
	retire := func(tok poll.Token) {
		now := clock.Add(1)
		mu.Lock()
		retAt[tok] = now
		mu.Unlock()
	}

	nprod := rapid.IntRange(2, 4).Draw(t, "producers")
	srcs := make([][]*wsSource, nprod)
	scripts := make([][]wsOp, nprod)
	for i := range srcs {
		for j, n := 0, rapid.IntRange(1, 3).Draw(t, "sources"); j < n; j++ {
			s := &wsSource{source: noSource, ack: make(chan struct{}, 1)}
			s.opts = drawOpts(t)
			if s.opts.IsLevel() {
				s.opts |= poll.Level
			}
			if rapid.IntRange(0, 3).Draw(t, "kind (0: socket, else registration)") == 0 {
				fds := socketPair(t)
				s.a, s.b = fds[0], fds[1]
				defer unix.Close(s.a)
				defer unix.Close(s.b)
				s.label = fmt.Sprintf("sock%d.%d(%s)", i, j, s.opts)
			} else {
				s.reg, s.set = poll.NewRegistration()
				defer s.reg.Close()
				s.label = fmt.Sprintf("reg%d.%d(%s)", i, j, s.opts)
			}
			s.tok = issue(s)
			if err := p.Register(s.evented(), s.tok, poll.Readable, s.opts); err != nil {
				t.Fatalf("Register %s: %v", s.label, err)
			}
			s.registered = true
			srcs[i] = append(srcs[i], s)
		}
		rounds := rapid.IntRange(1, 20).Draw(t, "rounds")
		for r := 0; r < rounds; r++ {
			op := wsOp{src: rapid.IntRange(0, len(srcs[i])-1).Draw(t, "source")}
			ops := wsRegOps
			if srcs[i][op.src].reg == nil {
				ops = wsSockOps
			}
			op.what = rapid.SampledFrom(ops).Draw(t, "op")
			op.pause = rapid.IntRange(0, 5).Draw(t, "pause")
			op.sleep = rapid.IntRange(0, 2).Draw(t, "when (0: once the consumer sleeps, else after the pause)") == 0
			switch op.what {
			case "delay", "delay outside":
				op.delay = time.Duration(rapid.IntRange(0, 2000).Draw(t, "delay µs")) * time.Microsecond
			case "change":
				op.mute = rapid.Bool().Draw(t, "by an interest that is never ready (else Deregister)")
			}
			scripts[i] = append(scripts[i], op)
		}
	}
	// Storms: goroutines that keep waking the consumer until the scripted
	// producers are done, each by one kind of wake-up, in a drawn rhythm.
	// Nothing is owed for them one by one (a storm Registration is edge
	// triggered and not acknowledged, or its delays are cancelled and
	// outside its interest), but they make two wake-ups of different kinds
	// meet in the microseconds after the consumer wakes.
	type storm struct {
		what  string
		sched []int
		reg   *poll.Registration
		set   *poll.SetReadiness
	}
	// Half the runs have one storm of each kind: the queue and the wheel
	// each wake a sleeping consumer once per sleep, so it takes both for
	// a second wake-up to land just after the first.
	var kinds []string
	switch rapid.IntRange(0, 5).Draw(t, "storms (0 none, 1 set, 2 delay, else both)") {
	case 0:
	case 1:
		kinds = []string{"set"}
	case 2:
		kinds = []string{"delay and cancel"}
	default:
		kinds = []string{"set", "delay and cancel"}
	}
	storms := make([]*storm, len(kinds))
	for i := range storms {
		st := &storm{
			what: kinds[i],
			// Spins, not sleeps: what must be hit is a fraction of a
			// microsecond, a wake-up's latency after the other storm's
			// wake-up, and a sleep is far coarser than that. Up to
			// about 50µs per step.
			sched: rapid.SliceOfN(rapid.IntRange(0, 40000), 8, 8).Draw(t, "storm rhythm (spins)"),
		}
		st.reg, st.set = poll.NewRegistration()
		defer st.reg.Close()
		if err := p.Register(st.reg, stormToken+poll.Token(i), poll.Readable, poll.Edge); err != nil {
			t.Fatalf("Register storm: %v", err)
		}
		storms[i] = st
	}
	end := rapid.SampledFrom([]string{"done", "close", "done and close"}).Draw(t, "end")
	doneReg, doneSet := poll.NewRegistration()
	defer doneReg.Close()
	if err := p.Register(doneReg, doneToken, poll.Readable, poll.Edge); err != nil {
		t.Fatalf("Register done: %v", err)
	}

	kick := newKicker(t, p)
	defer kick.close()
	var fails failures
	abort := make(chan struct{})
	var abortOnce sync.Once
	// Only the first failure counts: what fails after it is the Close
	// that it causes. Its message names no round or goroutine, so that
	// rapid can recognise it while it shrinks the case; where it happened
	// goes to the log.
	var where atomic.Pointer[string]
	fail := func(format string, args ...any) {
		select {
		case <-abort:
			return
		default:
		}
		fails.add(format, args...)
		abortOnce.Do(func() {
			close(abort)
			kick.kick()
			go p.Close() // may wait for the poller, which the kick ends
		})
	}
	var spurious atomic.Int64
	var sawDone atomic.Bool
	probeCh, consumerDone := startConsumer(func() {
		ev := poll.NewEvents(capacity)
		for {
			start := clock.Add(1)
			if !consumerPoll(p, ev, -1, true, fail) {
				return
			}
			seen := map[poll.Token]bool{}
			for e := range counted(ev) {
				if seen[e.Token] {
					fail("two events for token %d in one Poll call (rule 1)", e.Token)
				}
				seen[e.Token] = true
				switch e.Token {
				case doneToken:
					sawDone.Store(true)
					continue
				case kickToken:
					continue
				}
				if e.Token >= stormToken && e.Token < stormToken+2 {
					if e.Ready != poll.Readable {
						fail("event %v for a storm: readiness outside the interest Readable (rule 6)", e)
					}
					continue
				}
				mu.RLock()
				s, ret := tokens[e.Token], retAt[e.Token]
				mu.RUnlock()
				switch {
				case s == nil:
					fail("event %v: a token never registered (rule 7)", e)
					continue
				case e.Ready&^poll.Readable != 0:
					fail("event %v for %s: readiness outside the interest Readable (rule 6)", e, s.label)
				case ret != 0 && ret < start:
					fail("event %v for %s after the change that retired its token returned (rule 7)", e, s.label)
				}
				if s.awaiting.Load() != uint64(e.Token) {
					spurious.Add(1)
					continue
				}
				// Quiet again, re-armed, then acknowledged.
				if s.reg != nil {
					if err := s.set.UnsetReadiness(poll.Readable); err != nil {
						fail("UnsetReadiness %s: %v", s.label, err)
					}
				} else if n, _, _, err := readAll(s.a); err != nil || n == 0 {
					fail("%s: event but the drain read %d, %v", s.label, n, err)
				} else if err := poll.Fd(s.a).Drained(p, poll.Readable); err != nil {
					fail("Drained %s after EAGAIN: %v", s.label, err)
				}
				if s.opts.IsOneshot() {
					if err := p.Reregister(s.evented(), e.Token, poll.Readable, s.opts); err != nil {
						fail("Reregister %s: %v", s.label, err)
					}
				}
				s.awaiting.Store(0)
				s.ack <- struct{}{}
			}
			if sawDone.Load() {
				return
			}
		}
	})
	probe := <-probeCh

	stopStorms := make(chan struct{})
	var sg sync.WaitGroup
	for _, st := range storms {
		sg.Add(1)
		go func(st *storm) {
			defer sg.Done()
			for k := 0; ; k++ {
				select {
				case <-stopStorms:
					return
				default:
				}
				var err error
				if st.what == "set" {
					err = st.set.SetReadiness(poll.Readable)
				} else if err = st.set.DelayReadiness(poll.Writable, time.Millisecond); err == nil {
					err = st.set.UnsetReadiness(poll.Writable)
				}
				if err != nil && !errors.Is(err, poll.ErrClosed) {
					fail("storm %s: %v", st.what, err)
					return
				}
				spin(st.sched[k%len(st.sched)])
				runtime.Gosched() // the consumer must get a processor to wake up on
			}
		}(st)
	}

	tick := poll.DefaultWheelTick
	var wg sync.WaitGroup
	for i := range srcs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for r, op := range scripts[i] {
				s := srcs[i][op.src]
				if op.sleep {
					// Best effort: other producers may keep it awake.
					probe.waitAsleep(20*time.Millisecond, nil)
				} else {
					pause(op.pause)
				}
				owed, from, err := wsRun(p, s, op, issue, retire, tick)
				if err != nil {
					fail("%s on %s: %v", op.what, s.label, err)
					return
				}
				if !owed {
					continue
				}
				switch why := awaitWakeOr(s.ack, abort, probe, from, wakeBound); why {
				case "":
				case aborted:
					return
				default:
					w := fmt.Sprintf("producer %d, round %d: %s on %s, delay %v", i, r+1, op.what, s.label, op.delay)
					where.CompareAndSwap(nil, &w)
					kind := "Registration"
					if s.reg == nil {
						kind = "socket"
					}
					fail("%s on a %s: the consumer, blocked in Poll(-1), did not report it: %s (rule 8)", op.what, kind, why)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(stopStorms)
	sg.Wait()
	for _, sc := range scripts {
		totals.rounds.Add(int64(len(sc)))
	}
	totals.spurious.Add(spurious.Load())
	select {
	case <-abort:
		if w := where.Load(); w != nil {
			t.Logf("first failure at %s", *w)
		}
		if awaitWake(consumerDone, nil, time.Now(), wakeBound) != "" {
			fails.add("the consumer did not return ErrClosed within %v of Close and a kick", wakeBound)
		}
		fails.report(t)
		return
	default:
	}
	// The end: a wake-up the consumer's last Poll(-1) must answer.
	if !probe.waitAsleep(wakeBound, nil) {
		fail("after the producers, the consumer's Poll(-1) did not block within %v although nothing was owed (rule 10)", wakeBound)
	}
	from := time.Now()
	var closer sync.WaitGroup
	if end != "done" {
		closer.Add(1)
		go func() {
			defer closer.Done()
			if err := p.Close(); err != nil {
				fail("Close: %v", err)
			}
		}()
	}
	if end != "close" {
		if err := doneSet.SetReadiness(poll.Readable); err != nil && !(end == "done and close" && errors.Is(err, poll.ErrClosed)) {
			fail("SetReadiness(done): %v", err)
		}
	}
	if why := awaitWakeOr(consumerDone, abort, probe, from, wakeBound); why != "" && why != aborted {
		fail("the end (%s) did not end the consumer's Poll(-1): %s", end, why)
		if awaitWake(consumerDone, nil, time.Now(), wakeBound) != "" {
			fails.add("the consumer did not return ErrClosed within %v of Close and a kick", wakeBound)
		}
	}
	closer.Wait()
	if end == "done" && !sawDone.Load() {
		fail("the consumer ended without seeing the done Registration")
	}
	fails.report(t)
}
