//go:build linux

package proptest

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/signal"
)

// The signal kind: a signal.Watcher of one to three signals, made ready by
// signals the state machine sends to the test process itself, and drained
// with Next and Drain. Several sources may watch the same signal: every one
// of them must see every delivery.
//
// What the model relies on (signal/watcher.go, rules A, D and C):
//   - Readable is set while some signal is pending (delivered and not
//     taken), and nothing else is ever set.
//   - Edge: every delivery is a new edge, also while signals are pending.
//   - Taking the last pending signal (Next, or a Drain) clears Readable.
//   - A Raise waits until every live Watcher of the signal has counted the
//     delivery (Pending), and a delivery that Pending shows has set
//     Readable (rule A). So the runtime never coalesces two of them, the
//     counts are exact, and no delivery races a Next: an event the model
//     does not expect is a failure, and so is one it expects and misses.
//
// The signals are SIGUSR1, SIGUSR2 and SIGPWR: the Go runtime ignores them
// when nobody asks, so a failure cannot kill the test binary, and nothing
// else sends them (SIGWINCH would come from a terminal being resized).

func init() { registerKind(sigKind{}) }

var modelSignals = []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPWR}

// sigDeliveryWait bounds the wait for a delivery to be counted.
const sigDeliveryWait = 5 * time.Second

type sigKind struct{}

func (sigKind) name() string { return "sig" }

func (sigKind) open(t *rapid.T, w *world) impl {
	set := rapid.IntRange(1, 1<<len(modelSignals)-1).Draw(t, "signals (bit set over USR1, USR2, PWR)")
	var sigs []syscall.Signal
	var list []os.Signal
	for i, s := range modelSignals {
		if set&(1<<i) != 0 {
			sigs = append(sigs, s)
			list = append(list, s)
		}
	}
	wt, err := signal.New(list...)
	if err != nil {
		t.Fatalf("signal.New(%v): %v", sigs, err)
	}
	return &sigImpl{w: wt, sigs: sigs, pending: map[syscall.Signal]uint64{}}
}

func (sigKind) ops() []op {
	return []op{
		{"Raise", sigRaise},
		{"Raise", sigRaise}, // twice as likely as the others
		{"Next", sigNext},
		{"Drain", sigDrain},
		{"Close", sigClose},
	}
}

type sigImpl struct {
	w       *signal.Watcher
	sigs    []syscall.Signal
	pending map[syscall.Signal]uint64 // deliveries counted and not taken
}

func (im *sigImpl) evented() poll.Evented         { return im.w }
func (im *sigImpl) isFd() bool                    { return false }
func (im *sigImpl) filtered(_, _ poll.Ready) bool { return false }

func (im *sigImpl) rd() poll.Ready {
	for _, n := range im.pending {
		if n > 0 {
			return poll.Readable
		}
	}
	return 0
}

func (im *sigImpl) ready(interest poll.Ready) (sure, maybe poll.Ready) {
	return im.rd() & interest, im.rd() & interest
}

func (im *sigImpl) total() uint64 {
	var n uint64
	for _, c := range im.pending {
		n += c
	}
	return n
}

func (im *sigImpl) String() string {
	return fmt.Sprintf("signals %v, pending %v, readiness %s", im.sigs, im.pending, im.rd())
}

// sigRaise sends one of the source's signals to the process and waits until
// every live Watcher of that signal (this source's and others') has counted
// it; each of them gets a new edge.
func sigRaise(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sigImpl)
	sig := rapid.SampledFrom(im.sigs).Draw(t, "signal")
	var watchers []*src
	for _, o := range w.live() {
		if oi, ok := o.impl.(*sigImpl); ok && slices.Contains(oi.sigs, sig) {
			watchers = append(watchers, o)
		}
	}
	err := syscall.Kill(syscall.Getpid(), sig)
	w.logf("raise %v (watched by %d sources) = %v", sig, len(watchers), err)
	if err != nil {
		w.fatalf(t, "kill: %v", err)
	}
	deadline := time.Now().Add(sigDeliveryWait)
	for _, o := range watchers {
		oi := o.impl.(*sigImpl)
		want := oi.total() + 1
		for oi.w.Pending() < want {
			if time.Now().After(deadline) {
				w.fatalf(t, "%s.Pending() = %d after %v, want %d: a delivery of %v was not counted", o.label, oi.w.Pending(), sigDeliveryWait, want, sig)
			}
			runtime.Gosched() // the relay's goroutine counts it
		}
		oi.pending[sig]++
		w.notify(o, poll.Readable)
	}
}

func sigNext(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sigImpl)
	got, ok := im.w.TryRecv()
	w.logf("%s.TryRecv() = %v, %v", s.label, got, ok)
	if im.rd() == 0 {
		if ok {
			w.fatalf(t, "Next returned %v, but nothing is pending", got)
		}
		return
	}
	sig, isSig := got.(syscall.Signal)
	if !ok || !isSig || im.pending[sig] == 0 {
		w.fatalf(t, "Next = %v, %v, want one of the pending %v", got, ok, im.pending)
	}
	delete(im.pending, sig)
}

func sigDrain(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sigImpl)
	got := map[syscall.Signal]uint64{}
	for sig, n := range im.w.Drain() {
		got[sig.(syscall.Signal)] = n
	}
	w.logf("%s.Drain() = %v", s.label, got)
	want := map[syscall.Signal]uint64{}
	for sig, n := range im.pending {
		if n > 0 {
			want[sig] = n
		}
	}
	if !maps.Equal(got, want) {
		w.fatalf(t, "Drain yielded %v, want %v", got, want)
	}
	clear(im.pending)
}

func sigClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sigImpl)
	w.closeSource(t, s, "Watcher", im.w.Close, signal.ErrClosed)
	w.expectErr(t, "Register after Close", w.p.Register(im.w, w.drawToken(t, "token"), poll.Readable, poll.Level), poll.ErrClosed)
	if sig, ok := im.w.TryRecv(); ok {
		w.fatalf(t, "Next after Close returned %v", sig)
	}
}

func (im *sigImpl) check(t *rapid.T, w *world, s *src) {
	if got := im.w.Pending(); got != im.total() {
		w.fatalf(t, "%s.Pending() = %d, but the model has %d (%v)", s.label, got, im.total(), im.pending)
	}
}

func (im *sigImpl) release(t *rapid.T, w *world, s *src) {
	if err := im.w.Close(); err != nil {
		t.Fatalf("%s.Close: %v", s.label, err)
	}
	if s.registered {
		w.deregistered(s, "closed")
	}
}

func (im *sigImpl) discard() { _ = im.w.Close() }
