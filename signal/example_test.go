//go:build unix

package signal_test

import (
	"fmt"
	"syscall"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/signal"
)

// A process sends itself SIGUSR1 and learns of it from its Poll, with no
// goroutine of its own and no channel.
func Example() {
	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()

	w, err := signal.New(syscall.SIGUSR1, syscall.SIGHUP)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	if err := p.Register(w, 1, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		panic(err)
	}

	events := poll.NewEvents(4)
	if _, err := p.Poll(events, -1); err != nil {
		panic(err)
	}
	for ev := range events.All() {
		fmt.Println("event for token", ev.Token, ev.Ready)
		for sig, ok := w.TryRecv(); ok; sig, ok = w.TryRecv() {
			fmt.Println("signal:", sig)
		}
	}
	// Output:
	// event for token 1 Readable
	// signal: user defined signal 1
}

// Drain gives each pending signal with the number of deliveries the Watcher
// saw; the runtime may coalesce a signal sent again before it was handled,
// so the count is at least one and at most what was sent.
func ExampleWatcher_Drain() {
	w, err := signal.New(syscall.SIGUSR2)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	p, _ := poll.New()
	defer p.Close()
	_ = p.Register(w, 1, poll.Readable, poll.Level)

	_ = syscall.Kill(syscall.Getpid(), syscall.SIGUSR2)
	events := poll.NewEvents(1)
	_, _ = p.Poll(events, -1)
	for sig, n := range w.Drain() {
		fmt.Println(sig, n >= 1)
	}
	// Output:
	// user defined signal 2 true
}
