//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// Concurrency properties (run them with -race). Producers run on their own
// goroutines; the consumer polls on another. rapid draws the shape of each
// run: how many producers and sources, their modes, how many rounds, and
// the pauses that decide the interleaving.
//
// Timestamps come from one atomic counter (a logical clock) read before a
// Poll call starts and after an operation returns, so "Poll started after
// Deregister returned" is decided exactly, not by wall time.

// ackTimeout is how long a producer waits for its readiness to be observed
// before it declares a lost wake-up.
const ackTimeout = 2 * time.Second

// failures collects failures from any goroutine; the test goroutine
// reports them.
type failures struct {
	mu   sync.Mutex
	msgs []string
}

func (f *failures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) < 20 {
		f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	}
}

// failed reports whether a failure was recorded.
func (f *failures) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs) > 0
}

func (f *failures) report(t *rapid.T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) > 0 {
		t.Fatalf("%d failure(s):\n  %s", len(f.msgs), strings.Join(f.msgs, "\n  "))
	}
}

// pause is one step of a drawn schedule.
func pause(k int) {
	switch k {
	case 0:
	case 1:
		runtime.Gosched()
	case 2:
		time.Sleep(20 * time.Microsecond)
	default:
		time.Sleep(time.Duration(k-2) * 150 * time.Microsecond)
	}
}

func drawSchedule(t *rapid.T, n int, label string) []int {
	return rapid.SliceOfN(rapid.IntRange(0, 5), n, n).Draw(t, label)
}

// spinChoices are the Config.SpinWait values drawn: the default, no spin
// (the consumer goes to sleep at once: every wake-up goes through the
// waker), and a long one.
var spinChoices = []time.Duration{0, -1, 200 * time.Microsecond}

func newPoll(t *rapid.T, be string) *poll.Poll {
	spin := rapid.SampledFrom(spinChoices).Draw(t, "spin wait (0 default, -1 none)")
	p, err := poll.NewWithConfig(poll.Config{Backend: be, SpinWait: spin})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	return p
}

func forEachBackend(t *testing.T, prop func(be string) func(*rapid.T)) {
	forEachBackendSoak(t, 1, prop)
}

// forEachBackendSoak is forEachBackend for properties whose soak is divided
// by soakDiv (see checkScaledSoak).
func forEachBackendSoak(t *testing.T, soakDiv int, prop func(be string) func(*rapid.T)) {
	for _, b := range backendsUnderTest() {
		t.Run(b, func(t *testing.T) { checkScaledSoak(t, 1, soakDiv, prop(b)) })
	}
}

// waitGroupTimeout waits for wg; false if it took longer than d.
func waitGroupTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// ---- No lost wake-ups (rule 8), with an acknowledgement protocol

// ackSource is one source owned by a producer.
type ackSource struct {
	label    string
	token    poll.Token
	opts     poll.PollOpt
	reg      *poll.Registration
	set      *poll.SetReadiness
	a, b     int // socket pair: a registered, b written by the producer
	awaiting atomic.Int64
	ack      chan struct{}
}

func (s *ackSource) evented() poll.Evented {
	if s.reg != nil {
		return s.reg
	}
	return poll.Fd(s.a)
}

// TestConcurrentNoLostWakeup: producers make their sources ready, each time
// waiting until the consumer has observed it and acknowledged; the consumer
// blocks in Poll (mostly forever). Every readiness made after the
// acknowledgement must be observed by a later Poll: a blocked Poll must
// wake up (rule 8). The consumer puts the source back to not-ready before
// it acknowledges (unset, drain, reregister a oneshot), so every event is
// attributed exactly: an event nobody waits for is counted as spurious.
func TestConcurrentNoLostWakeup(t *testing.T) {
	forEachBackend(t, func(be string) func(*rapid.T) {
		return func(t *rapid.T) { noLostWakeup(t, be) }
	})
}

func noLostWakeup(t *rapid.T, be string) {
	totals.checks.Add(1)
	p := newPoll(t, be)
	defer p.Close()
	producers := rapid.IntRange(1, 4).Draw(t, "producers")
	rounds := rapid.IntRange(1, 30).Draw(t, "rounds")
	capacity := rapid.IntRange(1, 8).Draw(t, "capacity")
	blocking := rapid.IntRange(0, 3).Draw(t, "consumer timeout (0: 20ms, else forever)") != 0
	var fails failures
	byToken := map[poll.Token]*ackSource{}
	var srcs [][]*ackSource
	for i := 0; i < producers; i++ {
		var mine []*ackSource
		for j := rapid.IntRange(1, 2).Draw(t, "sources"); j > 0; j-- {
			s := &ackSource{token: poll.Token(len(byToken) + 1), ack: make(chan struct{}, 1), a: -1, b: -1}
			s.opts = drawOpts(t)
			if rapid.IntRange(0, 3).Draw(t, "kind (0: socket, else registration)") == 0 {
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatalf("socketpair: %v", err)
				}
				s.a, s.b = fds[0], fds[1]
				defer unix.Close(s.a)
				defer unix.Close(s.b)
				s.label = fmt.Sprintf("sock(token %d, %s)", s.token, s.opts)
			} else {
				s.reg, s.set = poll.NewRegistration()
				defer s.reg.Close()
				s.label = fmt.Sprintf("reg(token %d, %s)", s.token, s.opts)
			}
			if err := p.Register(s.evented(), s.token, poll.Readable, s.opts); err != nil {
				t.Fatalf("Register %s: %v", s.label, err)
			}
			byToken[s.token] = s
			mine = append(mine, s)
		}
		srcs = append(srcs, mine)
	}
	schedules := make([][]int, producers)
	for i := range schedules {
		schedules[i] = drawSchedule(t, rounds, fmt.Sprintf("schedule of producer %d", i))
	}

	var spurious atomic.Int64
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		ev := poll.NewEvents(capacity)
		timeout := time.Duration(-1)
		if !blocking {
			timeout = 20 * time.Millisecond
		}
		for {
			_, err := p.Poll(ev, timeout)
			if errors.Is(err, poll.ErrClosed) {
				return
			}
			if err != nil {
				fails.add("Poll: %v", err)
				return
			}
			totals.polls.Add(1)
			seen := map[poll.Token]bool{}
			for e := range ev.All() {
				totals.events.Add(1)
				s := byToken[e.Token]
				switch {
				case s == nil:
					fails.add("event for token %d, never registered", e.Token)
					continue
				case seen[e.Token]:
					fails.add("two events for %s in one Poll call (rule 1)", s.label)
				case e.Ready&^poll.Readable != 0:
					fails.add("event for %s with %s, interest Readable (rule 6)", s.label, e.Ready)
				}
				seen[e.Token] = true
				if s.awaiting.Load() == 0 {
					spurious.Add(1)
					continue
				}
				// Make it not ready again, then acknowledge.
				if s.reg != nil {
					if s.opts.IsLevel() || s.opts.IsOneshot() {
						_ = s.set.UnsetReadiness(poll.Readable)
					}
				} else if n, _, _, err := readAll(s.a); err != nil || n == 0 {
					fails.add("%s: event but drain read %d, %v", s.label, n, err)
				} else if err := poll.Fd(s.a).Drained(p, poll.Readable); err != nil {
					fails.add("Drained %s after EAGAIN: %v", s.label, err)
				}
				if s.opts.IsOneshot() {
					if err := p.Reregister(s.evented(), s.token, poll.Readable, s.opts); err != nil {
						fails.add("Reregister %s: %v", s.label, err)
					}
				}
				s.awaiting.Store(0)
				s.ack <- struct{}{}
			}
		}
	}()

	var wg sync.WaitGroup
	for i := range srcs {
		wg.Add(1)
		go func(mine []*ackSource, sched []int) {
			defer wg.Done()
			for r, k := range sched {
				for _, s := range mine {
					pause(k)
					s.awaiting.Store(int64(r + 1))
					if s.reg != nil {
						if err := s.set.SetReadiness(poll.Readable); err != nil {
							fails.add("SetReadiness %s: %v", s.label, err)
							return
						}
					} else if _, err := unix.Write(s.b, []byte{1}); err != nil {
						fails.add("write %s: %v", s.label, err)
						return
					}
					select {
					case <-s.ack:
					case <-time.After(ackTimeout):
						fails.add("lost wake-up: %s made ready in round %d was not observed by any Poll within %v (consumer blocking=%v, capacity %d) (rule 8)",
							s.label, r+1, ackTimeout, blocking, capacity)
						_ = p.Close()
						return
					}
				}
			}
		}(srcs[i], schedules[i])
	}
	wg.Wait()
	totals.rounds.Add(int64(producers * rounds))
	if err := p.Close(); err != nil && !errors.Is(err, poll.ErrClosed) {
		fails.add("Close: %v", err)
	}
	select {
	case <-consumerDone:
	case <-time.After(ackTimeout):
		fails.add("Poll did not return ErrClosed within %v of Close", ackTimeout)
	}
	totals.spurious.Add(spurious.Load())
	fails.report(t)
}

// ---- No lost readiness bits under concurrent SetReadiness (rules 2, 3, 8)

// TestConcurrentNoLostReadiness: producers set readiness bits one at a time,
// in a drawn order and rhythm, never clearing any, while the consumer polls
// in a tight loop (re-arming oneshot sources). Each bit of the interest
// must end up in an event, and Readiness() must keep every bit: a
// SetReadiness racing with the consumer's delivery must be neither
// overwritten nor left unqueued. Bits outside the interest must never be
// reported.
func TestConcurrentNoLostReadiness(t *testing.T) {
	for _, b := range backendsUnderTest() {
		t.Run(b, func(t *testing.T) {
			// A lost set shows only when it lands in a window of a few
			// instructions: many cases.
			checkScaled(t, 5, func(t *rapid.T) { noLostReadiness(t, b) })
		})
	}
}

func noLostReadiness(t *rapid.T, be string) {
	totals.checks.Add(1)
	p := newPoll(t, be)
	defer p.Close()
	const interest = poll.Readable | poll.Writable | poll.Error | poll.Hup
	const all = interest | poll.Priority
	n := rapid.IntRange(1, 8).Draw(t, "registrations")
	capacity := rapid.IntRange(1, 4).Draw(t, "capacity")
	type regState struct {
		reg   *poll.Registration
		set   *poll.SetReadiness
		opts  poll.PollOpt
		order []poll.Ready
		sched []int
		seen  atomic.Uint32 // union of the bits reported after the last set
		done  atomic.Bool   // every bit set
	}
	regs := make([]*regState, n)
	for i := range regs {
		r := &regState{opts: drawOpts(t)}
		r.reg, r.set = poll.NewRegistration()
		defer r.reg.Close()
		if err := p.Register(r.reg, poll.Token(i+1), interest, r.opts); err != nil {
			t.Fatalf("Register: %v", err)
		}
		perm := rapid.Permutation([]poll.Ready{poll.Readable, poll.Writable, poll.Error, poll.Hup, poll.Priority}).Draw(t, fmt.Sprintf("order %d", i))
		r.order = perm
		r.sched = drawSchedule(t, len(perm), fmt.Sprintf("schedule %d", i))
		regs[i] = r
	}
	var fails failures
	stop := make(chan struct{})
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		ev := poll.NewEvents(capacity)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := p.Poll(ev, 0); err != nil {
				fails.add("Poll: %v", err)
				return
			}
			totals.polls.Add(1)
			for e := range ev.All() {
				totals.events.Add(1)
				i := int(e.Token) - 1
				if i < 0 || i >= n {
					fails.add("event for unknown token %d", e.Token)
					continue
				}
				r := regs[i]
				if e.Ready&^interest != 0 {
					fails.add("token %d reported %s, outside interest %s (rule 6)", e.Token, e.Ready, poll.Ready(interest))
				}
				if r.done.Load() {
					r.seen.Or(uint32(e.Ready))
				}
				if r.opts.IsOneshot() {
					if err := p.Reregister(r.reg, e.Token, interest, r.opts); err != nil {
						fails.add("Reregister: %v", err)
					}
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for _, r := range regs {
		wg.Add(1)
		go func(r *regState) {
			defer wg.Done()
			last := 0 // the last bit of the interest to be set
			for i, bit := range r.order {
				if bit&interest != 0 {
					last = i
				}
			}
			for i, bit := range r.order {
				pause(r.sched[i])
				if i == last {
					r.done.Store(true) // events from now on must add up to all bits
				}
				if err := r.set.SetReadiness(bit); err != nil {
					fails.add("SetReadiness: %v", err)
				}
			}
		}(r)
	}
	wg.Wait()
	totals.rounds.Add(int64(n))
	for i, r := range regs {
		if got := r.set.Readiness(); got != all {
			fails.add("registration %d (%s): Readiness() = %s after setting %s: a concurrent set was overwritten", i+1, r.opts, got, poll.Ready(all))
		}
	}
	// Every bit of the interest must be reported after the last set: for
	// edge, the last set is an edge whose event carries all of them; for
	// level and re-armed oneshot, every call reports all of them.
	testsupport.Eventually(ackTimeout, func() bool {
		for _, r := range regs {
			if poll.Ready(r.seen.Load())&interest != interest {
				return false
			}
		}
		return true
	})
	close(stop)
	<-consumerDone
	for i, r := range regs {
		if got := poll.Ready(r.seen.Load()); got&interest != interest {
			fails.add("registration %d (%s), bits set in order %v with pauses %v: after the last set, events reported only %s of %s within %v (Readiness %s): a lost notification (rules 2, 3, 8)",
				i+1, r.opts, r.order, r.sched, got, poll.Ready(interest), ackTimeout, r.set.Readiness())
		}
	}
	fails.report(t)
}

// ---- No stale events after Deregister, Close or Reregister (rule 7)

type retireSource struct {
	label string
	reg   *poll.Registration
	set   *poll.SetReadiness
	a, b  int
	// Owned by the retirer goroutine:
	registered bool
	closed     bool
	token      poll.Token
}

func (s *retireSource) evented() poll.Evented {
	if s.reg != nil {
		return s.reg
	}
	return poll.Fd(s.a)
}

// tokenInfo is what a token was registered with; it never changes.
type tokenInfo struct {
	src      *retireSource
	interest poll.Ready
	prev     poll.Ready   // interest of the token it replaced, if any
	regAt    atomic.Int64 // clock when Register/Reregister with it returned
	retAt    atomic.Int64 // clock when Deregister/Close/Reregister away from it returned
}

// TestConcurrentRetire: sources are kept ready (level readiness, and
// producers that keep setting it), while a retirer goroutine deregisters,
// registers again, reregisters with new tokens, interests and modes, and
// closes them, and the consumer polls. No event may carry a token never
// registered; no Poll call that started after Deregister, Close or a
// token-changing Reregister returned may report the old token; every event
// of a Poll that started after Register or Reregister returned carries
// readiness inside that registration's interest. At the end every source
// left registered, level-triggered and ready must be reported. A token
// always carries readiness within the interest it was registered with,
// even from a Poll call that overlaps the Reregister installing it.
func TestConcurrentRetire(t *testing.T) {
	forEachBackend(t, func(be string) func(*rapid.T) {
		return func(t *rapid.T) { retire(t, be) }
	})
}

func retire(t *rapid.T, be string) {
	totals.checks.Add(1)
	p := newPoll(t, be)
	defer p.Close()
	var clock atomic.Int64
	var mu sync.RWMutex // guards tokens (the map; the infos are immutable or atomic)
	tokens := map[poll.Token]*tokenInfo{}
	lookup := func(tok poll.Token) *tokenInfo {
		mu.RLock()
		defer mu.RUnlock()
		return tokens[tok]
	}
	nextTok := poll.Token(1)
	issue := func(s *retireSource, interest, prev poll.Ready) (poll.Token, *tokenInfo) {
		mu.Lock()
		defer mu.Unlock()
		tok := nextTok
		nextTok++
		ti := &tokenInfo{src: s, interest: interest, prev: prev}
		tokens[tok] = ti
		return tok, ti
	}
	interests := []poll.Ready{poll.Readable, poll.Writable, poll.Readable | poll.Writable, poll.Readable | poll.Hup}
	nsrc := rapid.IntRange(1, 5).Draw(t, "sources")
	srcs := make([]*retireSource, nsrc)
	for i := range srcs {
		s := &retireSource{a: -1, b: -1}
		if rapid.Bool().Draw(t, "socket") {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatalf("socketpair: %v", err)
			}
			s.a, s.b = fds[0], fds[1]
			defer unix.Close(s.a)
			defer unix.Close(s.b)
			_, _ = unix.Write(s.b, []byte{1}) // readable (and writable) for good
			s.label = fmt.Sprintf("sock%d", i)
		} else {
			s.reg, s.set = poll.NewRegistration()
			defer s.reg.Close()
			_ = s.set.SetReadiness(poll.Readable | poll.Writable | poll.Hup)
			s.label = fmt.Sprintf("reg%d", i)
		}
		interest := rapid.SampledFrom(interests).Draw(t, "interest")
		tok, ti := issue(s, interest, 0)
		if err := p.Register(s.evented(), tok, interest, poll.Level); err != nil {
			t.Fatalf("Register: %v", err)
		}
		ti.regAt.Store(clock.Add(1))
		s.registered, s.token = true, tok
		srcs[i] = s
	}
	type retireOp struct {
		src, what, pause int
		interest         poll.Ready
		opts             poll.PollOpt
	}
	nops := rapid.IntRange(1, 20).Draw(t, "operations")
	ops := make([]retireOp, nops)
	for i := range ops {
		ops[i] = retireOp{
			src:      rapid.IntRange(0, nsrc-1).Draw(t, "op source"),
			what:     rapid.IntRange(0, 3).Draw(t, "op (0 deregister, 1 register, 2 reregister, 3 close)"),
			pause:    rapid.IntRange(0, 5).Draw(t, "op pause"),
			interest: rapid.SampledFrom(interests).Draw(t, "op interest"),
			opts:     drawOpts(t),
		}
	}
	capacity := rapid.IntRange(1, 8).Draw(t, "capacity")

	var fails failures
	stop := make(chan struct{})
	var bg sync.WaitGroup
	// Producers keep the registrations' readiness coming (edge sources
	// need new edges to keep being reported).
	for _, s := range srcs {
		if s.reg == nil {
			continue
		}
		bg.Add(1)
		go func(s *retireSource) {
			defer bg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.set.SetReadiness(poll.Readable | poll.Writable | poll.Hup); err != nil && !errors.Is(err, poll.ErrClosed) {
					fails.add("SetReadiness: %v", err)
					return
				}
				time.Sleep(50 * time.Microsecond)
			}
		}(s)
	}
	// The consumer.
	bg.Add(1)
	go func() {
		defer bg.Done()
		ev := poll.NewEvents(capacity)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := clock.Add(1)
			if _, err := p.Poll(ev, time.Millisecond); err != nil {
				fails.add("Poll: %v", err)
				return
			}
			totals.polls.Add(1)
			seen := map[poll.Token]bool{}
			for e := range ev.All() {
				totals.events.Add(1)
				ti := lookup(e.Token)
				if ti == nil {
					fails.add("event %v: token never registered (rule 7)", e)
					continue
				}
				if seen[e.Token] {
					fails.add("two events for token %d in one call (rule 1)", e.Token)
				}
				seen[e.Token] = true
				if r := ti.retAt.Load(); r != 0 && r < start {
					fails.add("stale event %v for %s: the token was retired (Deregister, Close or Reregister returned) at clock %d, before this Poll started at %d (rule 7)",
						e, ti.src.label, r, start)
				}
				// A token names one registration, with one interest: an
				// event carrying it must respect that interest, also while
				// the Reregister that installs it is in flight.
				if e.Ready&^ti.interest != 0 {
					inflight := ""
					if ra := ti.regAt.Load(); ra == 0 || ra > start {
						inflight = fmt.Sprintf(" (its Reregister was in flight; the previous interest was %s)", ti.prev)
					}
					fails.add("event %v for %s: readiness outside the interest %s of token %d%s (rule 6)", e, ti.src.label, ti.interest, e.Token, inflight)
				}
			}
		}
	}()
	// The retirer (this goroutine).
	for _, op := range ops {
		pause(op.pause)
		s := srcs[op.src]
		if s.closed {
			continue
		}
		old := lookup(s.token)
		switch op.what {
		case 0: // Deregister
			if !s.registered {
				continue
			}
			if err := p.Deregister(s.evented()); err != nil {
				fails.add("Deregister %s: %v", s.label, err)
			}
			old.retAt.Store(clock.Add(1))
			s.registered = false
		case 1: // Register (with a new token)
			if s.registered {
				continue
			}
			tok, ti := issue(s, op.interest, 0)
			if err := p.Register(s.evented(), tok, op.interest, op.opts); err != nil {
				fails.add("Register %s: %v", s.label, err)
			}
			ti.regAt.Store(clock.Add(1))
			s.registered, s.token = true, tok
		case 2: // Reregister with a new token, interest and mode
			if !s.registered {
				continue
			}
			tok, ti := issue(s, op.interest, old.interest)
			if err := p.Reregister(s.evented(), tok, op.interest, op.opts); err != nil {
				fails.add("Reregister %s: %v", s.label, err)
			}
			now := clock.Add(1)
			ti.regAt.Store(now)
			old.retAt.Store(now)
			s.token = tok
		case 3: // Close (registrations only)
			if s.reg == nil {
				continue
			}
			if err := s.reg.Close(); err != nil {
				fails.add("Close %s: %v", s.label, err)
			}
			if s.registered {
				old.retAt.Store(clock.Add(1))
			}
			s.registered, s.closed = false, true
		}
	}
	// Let the consumer see the final state for a while, then stop it.
	time.Sleep(2 * time.Millisecond)
	close(stop)
	bg.Wait()
	totals.rounds.Add(int64(nops))
	// Liveness after the churn: every source still registered level
	// triggered and ready must be reported by a few calls; make the last
	// registration of each Level and ready first.
	want := map[poll.Token]string{}
	for _, s := range srcs {
		if !s.registered {
			continue
		}
		interest := lookup(s.token).interest
		if err := p.Reregister(s.evented(), s.token, interest, poll.Level); err != nil {
			fails.add("final Reregister %s: %v", s.label, err)
		}
		want[s.token] = s.label
	}
	ev := poll.NewEvents(8)
	for i := 0; i < 4 && len(want) > 0; i++ {
		if _, err := p.Poll(ev, 0); err != nil {
			fails.add("final Poll: %v", err)
		}
		for e := range ev.All() {
			delete(want, e.Token)
		}
	}
	for tok, label := range want {
		fails.add("after the churn, %s (token %d, Level, ready) was not reported (rules 3, 5)", label, tok)
	}
	fails.report(t)
}

// ---- Poll.Close during activity

// TestConcurrentClose closes the Poll at a drawn moment while producers set
// readiness, a registrar registers and deregisters, and one or two
// consumers poll (blocked or not). Nothing may panic or hang: Close returns
// nil once and ErrClosed after; every Poll returns ErrClosed promptly; every
// call after Close fails with ErrClosed, SetReadiness of a bound
// Registration included.
func TestConcurrentClose(t *testing.T) {
	forEachBackend(t, func(be string) func(*rapid.T) {
		return func(t *rapid.T) { closeDuringActivity(t, be) }
	})
}

func closeDuringActivity(t *rapid.T, be string) {
	totals.checks.Add(1)
	p := newPoll(t, be)
	nreg := rapid.IntRange(0, 4).Draw(t, "registrations")
	nsock := rapid.IntRange(0, 2).Draw(t, "sockets")
	consumers := rapid.IntRange(1, 2).Draw(t, "consumers")
	blocking := rapid.Bool().Draw(t, "consumers block forever")
	closeAfter := time.Duration(rapid.IntRange(0, 3000).Draw(t, "close after µs")) * time.Microsecond
	closers := rapid.IntRange(1, 2).Draw(t, "closers")
	var fails failures
	var sets []*poll.SetReadiness
	var regs []*poll.Registration
	for i := 0; i < nreg; i++ {
		r, s := poll.NewRegistration()
		defer r.Close()
		if err := p.Register(r, poll.Token(i+1), poll.Readable, drawOpts(t)); err != nil {
			t.Fatalf("Register: %v", err)
		}
		regs, sets = append(regs, r), append(sets, s)
	}
	var peers []int
	for i := 0; i < nsock; i++ {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socketpair: %v", err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if err := p.Register(poll.Fd(fds[0]), poll.Token(100+i), poll.Readable, drawOpts(t)); err != nil {
			t.Fatalf("Register fd: %v", err)
		}
		peers = append(peers, fds[1])
	}
	var closed atomic.Bool
	ok := func(err error, what string) {
		if err != nil && !errors.Is(err, poll.ErrClosed) && !errors.Is(err, poll.ErrNotRegistered) {
			fails.add("%s: %v", what, err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, s := range sets {
		wg.Add(1)
		go func(s *poll.SetReadiness) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ok(s.SetReadiness(poll.Readable), "SetReadiness")
				if i%3 == 0 {
					ok(s.UnsetReadiness(poll.Readable), "UnsetReadiness")
				}
				if i%5 == 0 {
					ok(s.DelayReadiness(poll.Readable, time.Duration(i%3)*time.Millisecond), "DelayReadiness")
				}
				runtime.Gosched()
			}
		}(s)
	}
	for _, fd := range peers {
		wg.Add(1)
		go func(fd int) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = unix.Write(fd, []byte{1})
				time.Sleep(100 * time.Microsecond)
			}
		}(fd)
	}
	wg.Add(1)
	go func() { // registrar
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r, _ := poll.NewRegistration()
			ok(p.Register(r, poll.Token(1000+i), poll.Readable, poll.Edge), "Register")
			ok(p.Reregister(r, poll.Token(1000+i), poll.Writable, poll.Level), "Reregister")
			ok(p.Deregister(r), "Deregister")
			_ = r.Close()
			runtime.Gosched()
		}
	}()
	var cwg sync.WaitGroup
	for i := 0; i < consumers; i++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			ev := poll.NewEvents(4)
			timeout := time.Duration(-1)
			if !blocking {
				timeout = time.Millisecond
			}
			for {
				_, err := p.Poll(ev, timeout)
				if errors.Is(err, poll.ErrClosed) {
					if !closed.Load() {
						fails.add("Poll returned ErrClosed before Close was called")
					}
					return
				}
				if err != nil {
					fails.add("Poll: %v", err)
					return
				}
				totals.polls.Add(1)
			}
		}()
	}
	time.Sleep(closeAfter)
	var nils atomic.Int32
	var clwg sync.WaitGroup
	for i := 0; i < closers; i++ {
		clwg.Add(1)
		go func() {
			defer clwg.Done()
			closed.Store(true)
			switch err := p.Close(); {
			case err == nil:
				nils.Add(1)
			case !errors.Is(err, poll.ErrClosed):
				fails.add("Close: %v", err)
			}
		}()
	}
	if !waitGroupTimeout(&clwg, ackTimeout) {
		fails.add("Close did not return within %v", ackTimeout)
	}
	if !waitGroupTimeout(&cwg, ackTimeout) {
		fails.add("a consumer's Poll did not return ErrClosed within %v of Close", ackTimeout)
	}
	close(stop)
	if !waitGroupTimeout(&wg, ackTimeout) {
		fails.add("producers or registrar hung after Close")
	}
	if n := nils.Load(); n != 1 {
		fails.add("Close returned nil %d times, want once", n)
	}
	// Everything after Close fails cleanly.
	if _, err := p.Poll(poll.NewEvents(1), 0); !errors.Is(err, poll.ErrClosed) {
		fails.add("Poll after Close = %v", err)
	}
	r, s := poll.NewRegistration()
	if err := p.Register(r, 1, poll.Readable, poll.Level); !errors.Is(err, poll.ErrClosed) {
		fails.add("Register after Close = %v", err)
	}
	_ = s.SetReadiness(poll.Readable)
	_ = r.Close()
	for _, r := range regs {
		if err := p.Reregister(r, 1, poll.Readable, poll.Level); !errors.Is(err, poll.ErrClosed) {
			fails.add("Reregister after Close = %v", err)
		}
		if err := p.Deregister(r); !errors.Is(err, poll.ErrClosed) {
			fails.add("Deregister after Close = %v", err)
		}
	}
	for _, s := range sets {
		if err := s.DelayReadiness(poll.Writable, time.Millisecond); !errors.Is(err, poll.ErrClosed) {
			fails.add("DelayReadiness after Close = %v", err)
		}
		if err := s.SetReadiness(poll.Writable); !errors.Is(err, poll.ErrClosed) {
			fails.add("SetReadiness of a bound Registration after Close = %v, want ErrClosed", err)
		}
	}
	totals.rounds.Add(1)
	fails.report(t)
}

// ---- Descriptor numbers reused (rule 7)

// TestConcurrentFdReuse: a goroutine cycles descriptors the way an accept
// loop does: a ready socket is registered, then deregistered and closed,
// and a fresh socket, which usually gets the same number, is registered in
// its place and never made ready. The consumer polls all along. The fresh
// socket must never be reported: the only event it could get is a stale
// kernel event of the number's previous owner (which the generation in the
// kernel key exists to recognise), and its token must carry it nowhere.
func TestConcurrentFdReuse(t *testing.T) {
	forEachBackendSoak(t, 4, func(be string) func(*rapid.T) {
		return func(t *rapid.T) { fdReuse(t, be) }
	})
}

func fdReuse(t *rapid.T, be string) {
	totals.checks.Add(1)
	p := newPoll(t, be)
	defer p.Close()
	cycles := rapid.IntRange(1, 40).Draw(t, "cycles")
	sched := drawSchedule(t, 2*cycles, "pauses")
	opts := drawOpts(t)
	capacity := rapid.IntRange(1, 4).Draw(t, "capacity")
	var fails failures
	// quiet[tok] is set for tokens of sockets never made ready; ready ones
	// get their token retired when deregistered.
	var mu sync.RWMutex
	quiet := map[poll.Token]bool{}
	retiredAt := map[poll.Token]int64{}
	var clock atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ev := poll.NewEvents(capacity)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := clock.Add(1)
			if _, err := p.Poll(ev, 0); err != nil {
				fails.add("Poll: %v", err)
				return
			}
			totals.polls.Add(1)
			for e := range ev.All() {
				totals.events.Add(1)
				mu.RLock()
				q, r := quiet[e.Token], retiredAt[e.Token]
				mu.RUnlock()
				if q {
					fails.add("%v for a socket that was never ready: a stale kernel event of the descriptor number's previous owner (rule 7; %s)", e, opts)
				}
				if r != 0 && r < start {
					fails.add("%v after its Deregister returned (rule 7)", e)
				}
			}
		}
	}()
	open := func() (int, int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socketpair: %v", err)
		}
		return fds[0], fds[1]
	}
	tok := poll.Token(0)
	for i := 0; i < cycles; i++ {
		// A ready socket...
		a, b := open()
		_, _ = unix.Write(b, []byte("x"))
		tok++
		if err := p.Register(poll.Fd(a), tok, poll.Readable|poll.Writable, opts); err != nil {
			fails.add("Register: %v", err)
		}
		pause(sched[2*i])
		if err := p.Deregister(poll.Fd(a)); err != nil {
			fails.add("Deregister: %v", err)
		}
		mu.Lock()
		retiredAt[tok] = clock.Add(1)
		mu.Unlock()
		unix.Close(a)
		unix.Close(b)
		// ...replaced by a quiet one, usually with the same number.
		a, b = open()
		tok++
		mu.Lock()
		quiet[tok] = true
		mu.Unlock()
		if err := p.Register(poll.Fd(a), tok, poll.Readable, opts); err != nil {
			fails.add("Register: %v", err)
		}
		pause(sched[2*i+1])
		if err := p.Deregister(poll.Fd(a)); err != nil {
			fails.add("Deregister: %v", err)
		}
		unix.Close(a)
		unix.Close(b)
	}
	close(stop)
	<-done
	totals.rounds.Add(int64(cycles))
	fails.report(t)
}
