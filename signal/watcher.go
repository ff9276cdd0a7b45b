//go:build unix

package signal

import (
	"fmt"
	"iter"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/unipoll/unipoll/internal/onpoll/ureg"
	"github.com/unipoll/unipoll/internal/sigrelay"
	"github.com/unipoll/unipoll/poll"
)

// Readiness accounting. A Watcher has one count per signal it watches and a
// Registration whose one bit that matters is R (Readable). Both change only
// under the Watcher's mutex, so that whoever holds it sees them agree:
//
//	A. R is set exactly when some count is not zero, at every moment the
//	   mutex is free. Pending, TryRecv and Drain take the mutex, so a count
//	   they see has had its R set (the state machine of proptest relies on
//	   it: a delivery seen in Pending is one a Poll call must report).
//	D. A delivery (on the relay's goroutine, sigrelay R2) adds one to the
//	   signal's count and sets R. Every delivery sets R, so in edge mode
//	   every delivery is a new edge (poll: "each call that sets a bit of the
//	   interest is a new edge"), also while signals are pending.
//	C. The consumer (TryRecv, Drain) takes a count and sets it to zero; when
//	   it takes the last non-zero count, it clears R.
//	B. Memory is bounded: a count is a number, whatever the rate of
//	   signals, and the relay keeps at most one delivery queued per signal
//	   (sigrelay R3).
//
// No readiness is lost: a count left non-zero has R set (A), and R stays
// set until a consumer takes that count; a Poll call started after the
// delivery reports the Watcher. The relay's goroutine waits for the mutex
// only while a consumer holds it, which is never for long (no call out of
// the package is made with it held: Drain yields without it).

// Watcher delivers signals through a Poll. It is a poll.Evented: registered
// with Readable interest, it is reported while signals it watches have
// arrived and not been taken with TryRecv or Drain:
//
//   - Level: on every Poll call while a signal is pending.
//   - Edge: once for each delivery; a consumer takes signals until TryRecv
//     returns false before it polls again.
//   - Oneshot: once, then disarmed until Reregister.
//
// The Go runtime coalesces a signal that arrives again before the previous
// one was handed to os/signal, and so may the relay (one queued delivery
// per signal), so a count tells how many deliveries this Watcher saw, never
// more than were sent, and at least one after the last.
//
// A Watcher is registered with one Poll at a time; once it is deregistered
// (or its Poll is closed) it may be registered with another. Every Watcher
// that watches a signal sees every delivery of it, whatever Poll it is
// registered with, and Watchers need no goroutine of their own: one relay
// goroutine per watched signal serves them all.
//
// The zero Watcher is not usable: its methods return an error wrapping
// ErrInvalidArgument (TryRecv reports nothing, Pending returns 0).
type Watcher struct{ s *state }

// state is what the relay holds; it is the sigrelay.Subscriber, so that
// Deliver is not part of Watcher's API.
type state struct {
	sigs []syscall.Signal // sorted, distinct; never changes
	r    *ureg.Reg

	mu     sync.Mutex // guards the fields below (rule A)
	counts []uint64   // counts[i] for sigs[i]: deliveries not yet taken
	cursor int        // where the next scan starts, so that no signal starves
	closed bool
}

var _ poll.Evented = (*Watcher)(nil)

// New returns a Watcher for sigs, which must be catchable signals
// (syscall.Signal values, not SIGKILL or SIGSTOP). A signal listed twice
// counts once.
//
// From the moment New returns until the last Watcher of a signal is closed,
// the signal no longer takes its default action in a Go program (for
// SIGINT, SIGTERM or SIGHUP, ending it; for SIGUSR1, SIGUSR2 or SIGWINCH,
// nothing): it is delivered to the Watchers, through os/signal. SIGURG is
// also the runtime's preemption signal: a Watcher of it counts those too.
// When no Watcher watches it any more, the library stops asking os/signal
// for it, and, unless the program itself asked for it with signal.Notify,
// the default action comes back, as signal.Stop documents. The library
// never calls signal.Reset or signal.Ignore, which would take the signal
// from the program's own channels too.
func New(sigs ...os.Signal) (*Watcher, error) {
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%w: signal.New needs at least one signal", ErrInvalidArgument)
	}
	list := make([]syscall.Signal, 0, len(sigs))
	for _, sig := range sigs {
		n, err := catchable(sig)
		if err != nil {
			return nil, err
		}
		list = append(list, n)
	}
	slices.Sort(list)
	list = slices.Compact(list)
	s := &state{sigs: list, counts: make([]uint64, len(list)), r: ureg.New()}
	for _, sig := range list {
		sigrelay.Subscribe(sig, s)
	}
	return &Watcher{s}, nil
}

// catchable checks one signal of New's list.
func catchable(sig os.Signal) (syscall.Signal, error) {
	if sig == nil {
		return 0, fmt.Errorf("%w: nil signal", ErrInvalidArgument)
	}
	n, ok := sig.(syscall.Signal)
	if !ok {
		return 0, fmt.Errorf("%w: signal %v of type %T is not a syscall.Signal", ErrInvalidArgument, sig, sig)
	}
	if n <= 0 || n >= maxSignal {
		return 0, fmt.Errorf("%w: signal number %d out of range", ErrInvalidArgument, int(n))
	}
	if n == syscall.SIGKILL || n == syscall.SIGSTOP {
		return 0, uncatchable(n)
	}
	return n, nil
}

// maxSignal bounds signal numbers as os/signal does (65 on every system).
const maxSignal = 65

// Deliver implements sigrelay.Subscriber (rule D). A late delivery to a
// closed Watcher (sigrelay R4) does nothing.
func (s *state) Deliver(sig syscall.Signal) {
	i, ok := slices.BinarySearch(s.sigs, sig)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.counts[i]++
		s.r.Set(poll.Readable)
	}
}

func (w *Watcher) state() (*state, error) {
	if w == nil || w.s == nil {
		return nil, errZeroWatcher
	}
	return w.s, nil
}

// TryRecv returns a signal that has arrived since it was last returned, and
// true; or nil and false if none is pending. A signal delivered several
// times since then is returned once (Drain gives the count). When several
// signals are pending, TryRecv returns them in turn, so that a storm of one
// signal cannot hide another.
func (w *Watcher) TryRecv() (os.Signal, bool) {
	s, err := w.state()
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	sig, _, ok := s.take(len(s.sigs))
	return sig, ok
}

// Drain returns an iterator over the signals pending now, each with the
// number of deliveries this Watcher saw since it was last taken. It visits
// each watched signal once per call, so it ends even during a storm; a
// signal that arrives during the loop may be left for the next TryRecv or
// Drain (and its event). If the loop stops early, the signals it has not
// reached stay pending.
func (w *Watcher) Drain() iter.Seq2[os.Signal, uint64] {
	return func(yield func(os.Signal, uint64) bool) {
		s, err := w.state()
		if err != nil {
			return
		}
		s.mu.Lock()
		start := s.cursor
		s.mu.Unlock()
		n := len(s.sigs)
		for k := range n {
			i := (start + k) % n
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				return
			}
			c := s.takeAt(i)
			s.mu.Unlock()
			if c > 0 && !yield(s.sigs[i], c) {
				return
			}
		}
	}
}

// take scans at most limit signals from the cursor for one whose count is
// not zero and takes it. Called with mu held.
func (s *state) take(limit int) (os.Signal, uint64, bool) {
	for k := range limit {
		i := (s.cursor + k) % len(s.sigs)
		if c := s.takeAt(i); c > 0 {
			return s.sigs[i], c, true
		}
	}
	return nil, 0, false
}

// takeAt takes the count of sigs[i] and, if it was not zero, moves the
// cursor past i and clears R if nothing else is pending (rule C). Called
// with mu held.
func (s *state) takeAt(i int) uint64 {
	c := s.counts[i]
	if c == 0 {
		return 0
	}
	s.counts[i] = 0
	s.cursor = (i + 1) % len(s.sigs)
	if !slices.ContainsFunc(s.counts, func(c uint64) bool { return c > 0 }) {
		s.r.Unset(poll.Readable)
	}
	return c
}

// Pending returns the number of deliveries counted and not yet taken by
// TryRecv or Drain, over every signal the Watcher watches. 0 for a zero or
// closed Watcher.
func (w *Watcher) Pending() uint64 {
	s, err := w.state()
	if err != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	var total uint64
	for _, c := range s.counts {
		total += c
	}
	return total
}

// Signals returns the signals the Watcher watches, in increasing order.
func (w *Watcher) Signals() []os.Signal {
	s, err := w.state()
	if err != nil {
		return nil
	}
	out := make([]os.Signal, len(s.sigs))
	for i, sig := range s.sigs {
		out[i] = sig
	}
	return out
}

// Close stops the Watcher: it no longer counts deliveries, a Poll call
// started after Close returns never reports it, and signals no other Watcher
// watches get their default action back (see New). Closing twice returns
// ErrClosed.
func (w *Watcher) Close() error {
	s, err := w.state()
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	// A delivery still on its way (sigrelay R4) finds closed set.
	for _, sig := range s.sigs {
		sigrelay.Unsubscribe(sig, s)
	}
	return s.r.Close()
}

// Register implements poll.Evented. A Watcher with signals pending is
// reported by the next Poll call.
func (w *Watcher) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	s, err := w.state()
	if err != nil {
		return err
	}
	return s.r.Register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (w *Watcher) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	s, err := w.state()
	if err != nil {
		return err
	}
	return s.r.Reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented. Pending signals stay pending.
func (w *Watcher) Deregister(p *poll.Poll) error {
	s, err := w.state()
	if err != nil {
		return err
	}
	return s.r.Deregister(p)
}
