//go:build unix

// Package sigrelay is the process-wide relay between os/signal and the
// library's signal consumers: package signal's Watchers, and package child's
// SIGCHLD fallback. The Go runtime owns signal handlers and masks, so every
// signal reaches the program through os/signal; this package asks os/signal
// for each signal once, whatever the number of consumers, and fans every
// delivery out to all of them.
//
// Invariants (cited as R1-R5 in the code):
//
//	R1. relay.mu guards relay.sigs. A signal has an entry exactly while it
//	    has at least one subscriber; the entry's channel is registered with
//	    signal.Notify for exactly that signal while the entry is in the map.
//	R2. Each entry has one goroutine, which receives from the entry's
//	    channel and calls Deliver on every subscriber of the entry's current
//	    list. No goroutine runs per subscriber, and none runs for a signal
//	    nobody subscribes to.
//	R3. The channel has a buffer of one. os/signal never blocks on it: a
//	    delivery that finds the buffer full is dropped, and the value
//	    already in the buffer stands for it, so every delivery is followed
//	    by at least one Deliver call that starts after it. Memory does not
//	    grow with the rate of signals (counts, not queues, downstream).
//	R4. The subscriber list is copied on write under relay.mu and read
//	    without it, so a Deliver never waits for Subscribe or Unsubscribe,
//	    and a Deliver in progress may still reach a subscriber that has
//	    just been removed: subscribers must accept a late call.
//	R5. Unsubscribe of the last subscriber removes the entry, then (without
//	    relay.mu) calls signal.Stop on its channel, closes it and waits for
//	    its goroutine to return. So when Unsubscribe returns, no goroutine of
//	    this package remains for that signal, and, unless the program itself
//	    asked os/signal for it, the signal's default action is back, as
//	    signal.Stop documents. The package never calls signal.Reset or
//	    signal.Ignore: they are process-wide and would take the signal from
//	    the program's own signal.Notify channels.
package sigrelay

import (
	"os"
	ossignal "os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// Subscriber receives deliveries of a signal.
type Subscriber interface {
	// Deliver is called on the relay's goroutine for the signal, once per
	// delivery that os/signal relayed, or once for several that arrived
	// while the previous call ran (R3). It must not block for long, and
	// must not call Subscribe or Unsubscribe. It may be called once more
	// after Unsubscribe returned (R4).
	Deliver(sig syscall.Signal)
}

type entry struct {
	sig  syscall.Signal
	ch   chan os.Signal
	subs atomic.Pointer[[]Subscriber] // R4
	done chan struct{}
}

var relay struct {
	mu   sync.Mutex
	sigs map[syscall.Signal]*entry
}

// Subscribe adds s to the subscribers of sig. The caller validates sig.
func Subscribe(sig syscall.Signal, s Subscriber) {
	relay.mu.Lock()
	defer relay.mu.Unlock()
	if e := relay.sigs[sig]; e != nil {
		subs := append(slices.Clone(*e.subs.Load()), s)
		e.subs.Store(&subs)
		return
	}
	e := &entry{sig: sig, ch: make(chan os.Signal, 1), done: make(chan struct{})} // R3
	subs := []Subscriber{s}
	e.subs.Store(&subs)
	if relay.sigs == nil {
		relay.sigs = map[syscall.Signal]*entry{}
	}
	relay.sigs[sig] = e
	ossignal.Notify(e.ch, sig) // R1
	go e.run()                 // R2
}

// Unsubscribe removes s from the subscribers of sig; removing one that is
// not subscribed does nothing. When it removes the last subscriber, it
// returns only once the relay has stopped asking for sig and its goroutine
// has returned (R5).
func Unsubscribe(sig syscall.Signal, s Subscriber) {
	relay.mu.Lock()
	e := relay.sigs[sig]
	if e == nil {
		relay.mu.Unlock()
		return
	}
	old := *e.subs.Load()
	i := slices.Index(old, s)
	if i < 0 {
		relay.mu.Unlock()
		return
	}
	subs := slices.Delete(slices.Clone(old), i, i+1)
	e.subs.Store(&subs)
	last := len(subs) == 0
	if last {
		delete(relay.sigs, sig) // R1: a new Subscribe makes a new entry
	}
	relay.mu.Unlock()
	if last {
		// R5. After Stop returns, os/signal sends nothing more to ch, so
		// closing it is safe and ends run.
		ossignal.Stop(e.ch)
		close(e.ch)
		<-e.done
	}
}

// Subscribed reports how many subscribers sig has (for tests).
func Subscribed(sig syscall.Signal) int {
	relay.mu.Lock()
	defer relay.mu.Unlock()
	if e := relay.sigs[sig]; e != nil {
		return len(*e.subs.Load())
	}
	return 0
}

// Active reports how many signals have an entry, and so a goroutine (for
// tests).
func Active() int {
	relay.mu.Lock()
	defer relay.mu.Unlock()
	return len(relay.sigs)
}

func (e *entry) run() {
	defer close(e.done)
	for range e.ch {
		for _, s := range *e.subs.Load() {
			s.Deliver(e.sig)
		}
	}
}
