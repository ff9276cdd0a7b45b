//go:build linux

package proptest

import (
	"errors"
	"fmt"
	"strings"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// The world: one Poll with its sources and their model, for one rapid
// check. This file holds its state, its logging and failure messages, how
// sources are opened and picked, the notifications kinds report into the
// model (notify, jiggle, retire), and the end of a check (cleanup after a
// failure, shutdown after a success). The operations that drive it are in
// model_ops.go, the checks of each Poll call in model_oracle.go.

// world is one Poll, its sources and their model, for one rapid check.
type world struct {
	be     backend
	cfg    poll.Config
	p      *poll.Poll
	srcs   []*src
	tokens map[poll.Token]*tokenRec
	nextID int
	calls  int
	step   int
	closed bool // the Poll has been closed
	log    func(format string, args ...any)
	hist   []string // the operations so far, for failure messages
	kinds  []kind   // the kinds of source this world opens
	crowd  *crowd   // a large population of Registrations (model_crowd.go), or nil
	kick   *kicker  // ends a Poll blocked by a broken wake-up, after a failure
}

// maxLive bounds the sources alive at once; maxOpened bounds all opened in
// one check (descriptor numbers are reused, tokens are not).
const (
	maxLive   = 6
	maxOpened = 12
)

func newWorld(t *rapid.T, be backend, cfg poll.Config) *world {
	cfg.Backend = be.name
	p, err := poll.NewWithConfig(cfg)
	if err != nil {
		t.Fatalf("poll.NewWithConfig(%+v): %v", cfg, err)
	}
	if got := p.Backend(); got != be.name {
		t.Fatalf("Backend() = %q, want %q", got, be.name)
	}
	totals.checks.Add(1)
	w := &world{be: be, cfg: cfg, p: p, tokens: map[poll.Token]*tokenRec{}, log: t.Logf, kinds: kinds}
	w.kick = newKicker(t, p)
	return w
}

// logf logs one executed operation; rapid prints these for the minimal
// failing case, which makes it read as a script.
func (w *world) logf(format string, args ...any) {
	w.logTimed(fmt.Sprintf(format, args...), "")
}

// logTimed logs one operation with a timing note. The note goes to the log
// only, not into failure messages: rapid accepts a shrunk case only if it
// fails with the very same message, so messages must not vary with timing.
func (w *world) logTimed(line, timing string) {
	w.step++
	totals.ops.Add(1)
	line = fmt.Sprintf("%3d  %s", w.step, line)
	w.hist = append(w.hist, line)
	w.log("%s%s", line, timing)
}

func (w *world) live() []*src {
	var out []*src
	for _, s := range w.srcs {
		if !s.gone {
			out = append(out, s)
		}
	}
	return out
}

func (w *world) registered() []*src {
	var out []*src
	for _, s := range w.srcs {
		if s.registered && !s.gone {
			out = append(out, s)
		}
	}
	return out
}

// describe lists the model state, for failure messages.
func (w *world) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend %s, %d Poll calls; sources:", w.be.name, w.calls)
	for _, s := range w.live() {
		fmt.Fprintf(&b, "\n    %v", s)
	}
	if w.crowd != nil {
		fmt.Fprintf(&b, "\n    %v", w.crowd)
	}
	return b.String()
}

func (w *world) fatalf(t *rapid.T, format string, args ...any) {
	t.Helper()
	h := w.hist
	if len(h) > 80 {
		h = h[len(h)-80:]
	}
	t.Fatalf(format+"\n  model: %s\n  operations (last %d):\n    %s", append(args, w.describe(), len(h), strings.Join(h, "\n    "))...)
}

// expectErr fails unless err matches want (nil meaning success).
func (w *world) expectErr(t *rapid.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			w.fatalf(t, "%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		w.fatalf(t, "%s: error %v, want %v", what, err, want)
	}
}

// Sources.

// open creates a source of kind k.
func (w *world) open(t *rapid.T, k kind) *src {
	w.nextID++
	s := &src{id: w.nextID, kind: k, label: fmt.Sprintf("%s%d", k.name(), w.nextID)}
	s.impl = k.open(t, w)
	w.srcs = append(w.srcs, s)
	return s
}

// pick draws a live source, of kind k if k is not nil; it skips the action
// when there is none.
func (w *world) pick(t *rapid.T, k kind, label string) *src {
	var cand []*src
	for _, s := range w.live() {
		if k == nil || s.kind == k {
			cand = append(cand, s)
		}
	}
	if len(cand) == 0 {
		t.Skip("no such source")
	}
	return cand[rapid.IntRange(0, len(cand)-1).Draw(t, label+" (index among live)")]
}

// Notifications, reported by the kinds.

// notify records that readiness arrived on s (a new edge: data written,
// SetReadiness, a hang-up). arrived is in reported terms. If it is
// readiness the source is now surely ready for, a notification is owed
// (rule 2); otherwise one may come (rule 9).
func (w *world) notify(s *src, arrived poll.Ready) {
	if !s.armedNow() {
		return
	}
	arrived &^= s.quiet // no edge for a quiet condition until it is re-armed
	sure, maybe := s.impl.ready(s.interest)
	switch {
	case arrived&sure != 0:
		s.owed = true
	case maybe != 0:
		s.mayFire = true
	}
}

// jiggle records a wake-up of s without new readiness (a kernel wake-up
// the contract does not promise anything about): an event may come.
func (w *world) jiggle(s *src) {
	if s.armedNow() {
		s.mayFire = true
	}
}

// retire makes s's current token unreportable.
func (w *world) retire(s *src, why string) {
	if rec := w.tokens[s.token]; rec != nil && rec.retired == "" {
		rec.retired = why
	}
}

// cleanup releases whatever is left without checking anything (after a
// failure).
func (w *world) cleanup() {
	w.crowd.discard()
	for _, s := range w.srcs {
		if !s.gone {
			s.gone = true
			s.impl.discard()
		}
	}
	if !w.closed {
		w.closed = true
		w.kick.kick()
		_ = w.p.Close()
	}
	w.kick.close()
}

// shutdown releases every source and closes the Poll, checking that a
// closed Poll refuses everything with ErrClosed.
func (w *world) shutdown(t *rapid.T) {
	defer w.kick.close()
	w.crowd.discard()
	for _, s := range w.live() {
		s.impl.release(t, w, s)
		s.gone = true
	}
	if w.closed {
		return
	}
	w.closed = true
	if err := w.p.Close(); err != nil {
		t.Fatalf("Poll.Close: %v", err)
	}
	if err := w.p.Close(); !errors.Is(err, poll.ErrClosed) {
		t.Fatalf("second Poll.Close = %v, want ErrClosed", err)
	}
	if _, err := w.p.Poll(poll.NewEvents(1), 0); !errors.Is(err, poll.ErrClosed) {
		t.Fatalf("Poll after Close = %v, want ErrClosed", err)
	}
	r, _ := poll.NewRegistration()
	if err := w.p.Register(r, 1, poll.Readable, poll.Level); !errors.Is(err, poll.ErrClosed) {
		t.Fatalf("Register after Close = %v, want ErrClosed", err)
	}
	_ = r.Close()
}
