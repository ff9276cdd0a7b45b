//go:build linux

package proptest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestConcurrentRegisterWakes (rules 5, 8): a consumer blocks in Poll with
// an infinite or a 5-second timeout, and another goroutine, the registrar,
// makes a quiet Registration reportable by a registration change alone:
// Register of one that is ready, or Reregister that widens its interest to
// readiness it has, re-arms a oneshot disarmed by its event while still
// ready, or reregisters an edge source reported and still ready (rule 5).
// The change must wake the blocked Poll promptly: the consumer's thread may
// not stay asleep in the selector for stallFast after the change returned
// (probe.go), and the event must come within wakeBound. The registrar then
// quiets the source again (Deregister, an interest outside its readiness,
// or nothing at all for an edge or oneshot source after its event) and
// goes on. Every event is checked: a token the registrar issued and did not
// retire before the Poll call started, readiness inside its interest.
func TestConcurrentRegisterWakes(t *testing.T) {
	forEachBackend(t, registerWakes)
}

// wakeToken is what the registrar issued: a token, the readiness its
// source has and the interest it was registered with.
type wakeToken struct {
	label    string
	interest poll.Ready
	ready    poll.Ready
	retAt    atomic.Int64 // logical clock when it was retired; 0 while current
}

func registerWakes(t *rapid.T, be string) {
	p := drawPoll(t, be)
	defer p.Close()
	timeout := rapid.SampledFrom([]time.Duration{-1, 5 * time.Second}).Draw(t, "consumer timeout")
	tl := "Poll(-1)"
	if timeout > 0 {
		tl = fmt.Sprintf("Poll(%v)", timeout)
	}
	type wreg struct {
		label      string
		reg        *poll.Registration
		set        *poll.SetReadiness
		ready      poll.Ready
		registered bool
		token      poll.Token
		interest   poll.Ready
		opts       poll.PollOpt
	}
	regs := make([]*wreg, rapid.IntRange(1, 4).Draw(t, "registrations"))
	for i := range regs {
		r := &wreg{label: fmt.Sprintf("reg%d", i)}
		r.reg, r.set = poll.NewRegistration()
		defer r.reg.Close()
		r.ready = poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "readiness"))
		if err := r.set.SetReadiness(r.ready); err != nil {
			t.Fatalf("SetReadiness: %v", err)
		}
		regs[i] = r
	}

	kick := newKicker(t, p)
	defer kick.close()
	var fails failures
	var clock atomic.Int64
	var mu sync.RWMutex
	tokens := map[poll.Token]*wakeToken{}
	// awaited is the token the registrar waits for and the channel to
	// tell it on; a new one per round, so that a late event for the
	// previous token cannot answer for the next.
	type await struct {
		tok poll.Token
		hit chan struct{}
	}
	var awaited atomic.Pointer[await]
	capacity := rapid.IntRange(1, 4).Draw(t, "capacity")
	probeCh, consumerDone := startConsumer(func() {
		ev := poll.NewEvents(capacity)
		for {
			start := clock.Add(1)
			if !consumerPoll(p, ev, timeout, true, fails.add) {
				return
			}
			seen := map[poll.Token]bool{}
			for e := range counted(ev) {
				if e.Token == kickToken {
					continue
				}
				mu.RLock()
				tk := tokens[e.Token]
				mu.RUnlock()
				switch {
				case tk == nil:
					fails.add("event %v: a token never registered (rule 7)", e)
					continue
				case seen[e.Token]:
					fails.add("two events for token %d (%s) in one Poll call (rule 1)", e.Token, tk.label)
				case e.Ready&^tk.interest != 0:
					fails.add("event %v for %s: readiness outside the interest %s (rule 6)", e, tk.label, tk.interest)
				case e.Ready&^tk.ready != 0:
					fails.add("event %v for %s: readiness it does not have (%s)", e, tk.label, tk.ready)
				}
				if r := tk.retAt.Load(); r != 0 && r < start {
					fails.add("event %v for %s after the Deregister or Reregister that retired its token returned (rule 7)", e, tk.label)
				}
				seen[e.Token] = true
				if a := awaited.Load(); a != nil && a.tok == e.Token {
					select {
					case a.hit <- struct{}{}:
					default:
					}
				}
			}
		}
	})
	probe := <-probeCh
	defer func() {
		if fails.failed() {
			kick.kick() // the bug may have broken the wake-up that Close needs
		}
		closed := make(chan struct{})
		go func() { _ = p.Close(); close(closed) }()
		if awaitWake(consumerDone, nil, time.Now(), wakeBound) != "" {
			fails.add("the consumer's Poll did not return ErrClosed within %v of Close", wakeBound)
			kick.kick()
		}
		<-closed
		fails.report(t)
	}()

	nextTok := poll.Token(1)
	issue := func(r *wreg, interest poll.Ready) poll.Token {
		tok := nextTok
		nextTok++
		mu.Lock()
		tokens[tok] = &wakeToken{label: r.label, interest: interest, ready: r.ready}
		mu.Unlock()
		return tok
	}
	retire := func(tok poll.Token) {
		mu.RLock()
		tk := tokens[tok]
		mu.RUnlock()
		tk.retAt.Store(clock.Add(1))
	}
	var worst time.Duration
	rounds := rapid.IntRange(1, 8).Draw(t, "rounds")
	for round := 1; round <= rounds; round++ {
		r := regs[rapid.IntRange(0, len(regs)-1).Draw(t, "registration")]
		// The change: an interest that holds some of the readiness.
		bits := bitsOf(r.ready)
		interest := drawInterest(t) | rapid.SampledFrom(bits).Draw(t, "ready bit in the new interest")
		opts := drawOpts(t)
		if opts.IsLevel() {
			opts |= poll.Level
		}
		if rapid.IntRange(0, 3).Draw(t, "when (0: after a drawn pause, else once the consumer sleeps)") != 0 {
			if !probe.waitAsleep(wakeBound, nil) {
				fails.add("round %d: the consumer's %s did not block within %v although nothing was ready (rule 10)", round, tl, wakeBound)
				return
			}
		} else {
			pause(rapid.IntRange(0, 5).Draw(t, "pause"))
		}
		old, was := r.token, r.registered
		tok := issue(r, interest)
		a := &await{tok: tok, hit: make(chan struct{}, 1)}
		awaited.Store(a)
		what := "Reregister"
		var err error
		if r.registered {
			err = p.Reregister(r.reg, tok, interest, opts)
		} else {
			what = "Register"
			err = p.Register(r.reg, tok, interest, opts)
		}
		changed := time.Now()
		if was {
			retire(old)
		}
		if err != nil {
			fails.add("round %d: %s(%s): %v", round, what, r.label, err)
			return
		}
		r.registered, r.token, r.interest, r.opts = true, tok, interest, opts
		if why := awaitWake(a.hit, probe, changed, wakeBound); why != "" {
			fails.add("round %d: %s(%s, %s, %s) of a Registration ready %s, from the registrar goroutine while the consumer blocked in %s: the consumer did not report it, %s (rules 5, 8)",
				round, what, r.label, interest, opts, r.ready, tl, why)
			return
		}
		if d := time.Since(changed); d > worst {
			worst = d
		}
		// Quiet it again: a level source must be; an edge or oneshot one
		// is quiet after its event, but may be made quiet anyway.
		quiet := []string{"deregister", "interest outside its readiness"}
		if !opts.IsLevel() || opts.IsOneshot() {
			quiet = append(quiet, "nothing")
		}
		all := poll.Readable | poll.Writable | poll.Error | poll.Hup | poll.Priority
		how := rapid.SampledFrom(quiet).Draw(t, "quiet")
		if how == "interest outside its readiness" && r.ready == all {
			how = "deregister" // nothing is outside, and an empty interest is refused
		}
		switch how {
		case "deregister":
			if err := p.Deregister(r.reg); err != nil {
				fails.add("Deregister(%s): %v", r.label, err)
				return
			}
			retire(r.token)
			r.registered = false
		case "interest outside its readiness":
			out := all &^ r.ready
			tok := issue(r, out)
			if err := p.Reregister(r.reg, tok, out, r.opts); err != nil {
				fails.add("Reregister(%s, %s): %v", r.label, out, err)
				return
			}
			retire(r.token)
			r.token, r.interest = tok, out
		}
		totals.rounds.Add(1)
	}
	t.Logf("slowest wake-up %v", worst)
}
