//go:build linux

package proptest

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The generic operations of the state machine, the steps every kind of
// source shares: Open, Register, Reregister, Deregister, Check, Misuse, a
// kind's own operation (KindOp), and the three Poll steps, which hand the
// call to the oracle (model_oracle.go). actions collects them for rapid.

// drawToken returns a token never used before in this world. Tokens come
// in three ranges: small, high (bit 63 set) and just below the reserved
// maximum, so that every bit of the key is exercised.
func (w *world) drawToken(t *rapid.T, label string) poll.Token {
	style := rapid.IntRange(0, 2).Draw(t, label+" range")
	base := map[int]poll.Token{0: 1, 1: 1 << 63, 2: ^poll.Token(0) - 64}[style]
	tok := base + poll.Token(rapid.IntRange(0, 40).Draw(t, label))
	for w.tokens[tok] != nil || tok == ^poll.Token(0) {
		tok++
		if tok == ^poll.Token(0) {
			tok = 1
		}
	}
	return tok
}

var optsChoices = []poll.PollOpt{poll.Level, poll.Edge, poll.Level | poll.Oneshot, poll.Edge | poll.Oneshot}

func drawInterest(t *rapid.T) poll.Ready {
	return poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "interest"))
}

func drawOpts(t *rapid.T) poll.PollOpt {
	return rapid.SampledFrom(optsChoices).Draw(t, "opts")
}

// arm installs a registration in the model; rule 5 makes a ready source
// owed at once.
func (w *world) arm(s *src, tok poll.Token, interest poll.Ready, opts poll.PollOpt) {
	if opts.IsLevel() {
		opts |= poll.Level
	}
	s.registered, s.bound = true, true
	s.token, s.interest, s.opts, s.armed = tok, interest, opts, true
	s.missed.reset()
	s.quiet = 0
	sure, maybe := s.impl.ready(interest)
	s.owed = sure != 0
	s.mayFire = maybe != 0
	if rec := w.tokens[tok]; rec == nil {
		w.tokens[tok] = &tokenRec{s: s}
	}
	if tm, ok := s.impl.(timed); ok {
		tm.rearmed(s)
	}
}

// Register registers a live source (ErrAlreadyRegistered if it is).
func (w *world) Register(t *rapid.T) {
	s := w.pick(t, nil, "source")
	tok := w.drawToken(t, "token")
	interest, opts := drawInterest(t), drawOpts(t)
	err := w.p.Register(s.impl.evented(), tok, interest, opts)
	w.logf("Register(%s, token %d, %s, %s) = %v", s.label, tok, interest, opts, err)
	if s.registered {
		w.expectErr(t, "Register of a registered source", err, poll.ErrAlreadyRegistered)
		return
	}
	w.expectErr(t, "Register", err, nil)
	w.arm(s, tok, interest, opts)
}

// Reregister changes token (or keeps it), interest and mode.
func (w *world) Reregister(t *rapid.T) {
	s := w.pick(t, nil, "source")
	tok := s.token
	if !s.registered || rapid.Bool().Draw(t, "new token") {
		tok = w.drawToken(t, "token")
	}
	interest, opts := drawInterest(t), drawOpts(t)
	err := w.p.Reregister(s.impl.evented(), tok, interest, opts)
	w.logf("Reregister(%s, token %d, %s, %s) = %v", s.label, tok, interest, opts, err)
	if !s.registered {
		w.expectErr(t, "Reregister of an unregistered source", err, poll.ErrNotRegistered)
		return
	}
	w.expectErr(t, "Reregister", err, nil)
	if tok != s.token {
		w.retire(s, fmt.Sprintf("reregistered as token %d", tok))
	}
	w.arm(s, tok, interest, opts)
}

// Deregister removes a source.
func (w *world) Deregister(t *rapid.T) {
	s := w.pick(t, nil, "source")
	err := w.p.Deregister(s.impl.evented())
	w.logf("Deregister(%s) = %v", s.label, err)
	if !s.registered {
		w.expectErr(t, "Deregister of an unregistered source", err, poll.ErrNotRegistered)
		return
	}
	w.expectErr(t, "Deregister", err, nil)
	w.deregistered(s, "deregistered")
}

// deregistered updates the model after a successful Deregister or Close.
// closeSource is the common part of a source's Close op: closeFn (the
// source's Close, named what) must succeed, the source leaves its Poll if
// it was registered, it is gone from the model, and a second Close returns
// errClosed.
func (w *world) closeSource(t *rapid.T, s *src, what string, closeFn func() error, errClosed error) {
	err := closeFn()
	w.logf("%s.Close() = %v", s.label, err)
	w.expectErr(t, what+".Close", err, nil)
	if s.registered {
		w.deregistered(s, "closed")
	}
	s.gone = true
	w.expectErr(t, "second "+what+".Close", closeFn(), errClosed)
}

func (w *world) deregistered(s *src, why string) {
	w.retire(s, why)
	s.registered, s.owed, s.mayFire = false, false, false
	s.missed.reset()
	if tm, ok := s.impl.(timed); ok {
		tm.rearmed(s)
	}
}

// Check runs the invariant checks of every live source.
func (w *world) Check(t *rapid.T) {
	for _, s := range w.live() {
		if c, ok := s.impl.(checker); ok {
			c.check(t, w, s)
		}
	}
	w.crowd.check(t, w)
}

// Misuse calls the API with bad arguments; each must fail with its
// sentinel error and change nothing.
func (w *world) Misuse(t *rapid.T) {
	what := rapid.SampledFrom([]string{
		"nil Evented", "reserved token", "bad interest", "empty interest", "bad opts", "bad Events",
	}).Draw(t, "misuse")
	s := w.pick(t, nil, "source")
	e := s.impl.evented()
	var err, want error
	switch what {
	case "nil Evented":
		want = poll.ErrInvalidArgument
		switch rapid.IntRange(0, 2).Draw(t, "call") {
		case 0:
			err = w.p.Register(nil, 1, poll.Readable, poll.Level)
		case 1:
			err = w.p.Reregister(nil, 1, poll.Readable, poll.Level)
		default:
			err = w.p.Deregister(nil)
		}
	case "reserved token":
		want = poll.ErrReservedToken
		if s.registered {
			err = w.p.Reregister(e, ^poll.Token(0), poll.Readable, poll.Level)
		} else {
			err = w.p.Register(e, ^poll.Token(0), poll.Readable, poll.Level)
		}
	case "bad interest":
		want = poll.ErrInvalidInterest
		bad := poll.Readable | poll.Ready(1)<<rapid.IntRange(5, 31).Draw(t, "bit")
		if s.registered {
			err = w.p.Reregister(e, s.token, bad, poll.Level)
		} else {
			err = w.p.Register(e, 1, bad, poll.Level)
		}
	case "empty interest":
		want = poll.ErrInvalidInterest
		if s.registered {
			err = w.p.Reregister(e, s.token, 0, poll.Level)
		} else {
			err = w.p.Register(e, 1, 0, poll.Level)
		}
	case "bad opts":
		want = poll.ErrInvalidOpts
		bad := rapid.SampledFrom([]poll.PollOpt{poll.Edge | poll.Level, 1 << 3, 1 << 7, poll.Edge | poll.Level | poll.Oneshot}).Draw(t, "opts")
		if s.registered {
			err = w.p.Reregister(e, s.token, poll.Readable, bad)
		} else {
			err = w.p.Register(e, 1, poll.Readable, bad)
		}
	case "bad Events":
		want = poll.ErrInvalidArgument
		if rapid.Bool().Draw(t, "nil") {
			_, err = w.p.Poll(nil, 0)
		} else {
			_, err = w.p.Poll(&poll.Events{}, 0)
		}
	}
	w.logf("misuse %s on %s = %v", what, s.label, err)
	w.expectErr(t, "misuse "+what, err, want)
}

// Open creates a source of a drawn kind.
func (w *world) Open(t *rapid.T) {
	if len(w.live()) >= maxLive || len(w.srcs) >= maxOpened {
		t.Skip("enough sources")
	}
	names := make([]string, len(w.kinds))
	for i, k := range w.kinds {
		names[i] = k.name()
	}
	k := w.kinds[rapid.IntRange(0, len(w.kinds)-1).Draw(t, fmt.Sprintf("kind (index in %v)", names))]
	s := w.open(t, k)
	w.logf("open %s: %v", s.label, s.impl)
}

// KindOp runs a drawn operation of kind k on one of its sources.
func (w *world) KindOp(k kind) func(t *rapid.T) {
	names := make([]string, 0, len(k.ops()))
	byName := map[string]op{}
	for _, o := range k.ops() {
		names = append(names, o.name)
		byName[o.name] = o
	}
	return func(t *rapid.T) {
		s := w.pick(t, k, k.name())
		o := byName[rapid.SampledFrom(names).Draw(t, k.name()+" op")]
		o.run(t, w, s)
	}
}

// Poll checks one non-blocking call with a drawn capacity.
func (w *world) Poll(t *rapid.T) {
	w.poll(t, rapid.IntRange(1, 8).Draw(t, "capacity"), 0)
}

// PollTimeout checks one call with a small timeout, which lets time pass
// (delays come due).
func (w *world) PollTimeout(t *rapid.T) {
	capacity := rapid.IntRange(1, 8).Draw(t, "capacity")
	timeout := time.Duration(rapid.IntRange(1, 5).Draw(t, "timeout ms")) * time.Millisecond
	w.poll(t, capacity, timeout)
}

// PollBlocking calls Poll(-1) when the model knows it must return: a
// source must be reported, or a delay will make one reportable.
func (w *world) PollBlocking(t *rapid.T) {
	if !w.mustReturn() {
		t.Skip("Poll(-1) would block forever")
	}
	w.poll(t, rapid.IntRange(1, 8).Draw(t, "capacity"), -1)
}

func (w *world) mustReturn() bool {
	if w.crowd.mustReturn() {
		return true
	}
	for _, s := range w.registered() {
		if !s.armedNow() {
			continue
		}
		sure, _ := s.impl.ready(s.interest)
		if s.live(sure) != 0 && (s.opts.IsLevel() || s.owed) {
			return true
		}
		if tm, ok := s.impl.(timed); ok {
			if _, wakes, ok := tm.pending(s); ok && wakes {
				return true
			}
		}
	}
	return false
}

// actions is the state machine's action map for rapid's T.Repeat: the
// generic operations, and one action per kind that runs one of its
// operations.
func (w *world) actions() map[string]func(*rapid.T) {
	a := map[string]func(*rapid.T){
		"":              w.Check,
		"Open":          w.Open,
		"Register":      w.Register,
		"Reregister":    w.Reregister,
		"Deregister":    w.Deregister,
		"Misuse":        w.Misuse,
		"Poll":          w.Poll,
		"PollTimeout":   w.PollTimeout,
		"PollBlocking":  w.PollBlocking,
		"Lag":           w.Lag,
		"ChangeBlocked": w.ChangeBlocked,
	}
	for _, k := range w.kinds {
		a[k.name()] = w.KindOp(k)
	}
	return a
}
