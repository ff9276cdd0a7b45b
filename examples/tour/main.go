// Command tour shows unipoll's one Poll at work: a socket pair, a user-space
// Registration set from another goroutine, and a delayed readiness, all
// coming back from the same Poll call.
//
//	go run ./examples/tour
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// Tokens name the sources in the events Poll returns.
const (
	tokSocket poll.Token = iota + 1
	tokWorker
	tokAlarm
)

func main() {
	if err := tour(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func tour(out io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	p, err := poll.New()
	if err != nil {
		return err
	}
	defer p.Close()
	say("Opened a Poll on the %q backend.", p.Backend())

	// 1. A socket pair: the kernel tells us when our end is readable.
	a, b, err := socket.Pair()
	if err != nil {
		return err
	}
	defer a.Close()
	defer b.Close()
	if err := p.Register(a, tokSocket, poll.Readable, poll.Edge); err != nil {
		return err
	}
	say("Registered one end of a socket pair as token %d (readable, edge-triggered).", tokSocket)

	// 2. A Registration: readiness set by our own code, from any goroutine.
	worker, workerReady := poll.NewRegistration()
	defer worker.Close()
	if err := p.Register(worker, tokWorker, poll.Readable, poll.Edge); err != nil {
		return err
	}
	say("Registered a user-space Registration as token %d.", tokWorker)

	// 3. Delayed readiness: the Poll's timing wheel fires it, no timer goroutine.
	alarm, alarmReady := poll.NewRegistration()
	defer alarm.Close()
	if err := p.Register(alarm, tokAlarm, poll.Readable, poll.Oneshot); err != nil {
		return err
	}
	start := time.Now()
	if err := alarmReady.DelayReadiness(poll.Readable, 50*time.Millisecond); err != nil {
		return err
	}
	say("Asked for token %d to become ready in 50ms.", tokAlarm)

	go func() {
		_, _ = b.Write([]byte("hello through the kernel"))
		_ = workerReady.SetReadiness(poll.Readable)
	}()
	say("A goroutine writes to the other end of the pair and sets the Registration ready.\n")

	events := poll.NewEvents(8)
	buf := make([]byte, 64)
	seen := map[poll.Token]bool{}
	deadline := time.Now().Add(3 * time.Second)
	for len(seen) < 3 {
		if time.Now().After(deadline) {
			return errors.New("timed out waiting for events")
		}
		n, err := p.Poll(events, time.Second)
		if err != nil {
			return err
		}
		say("Poll returned %d event(s) after %v:", n, time.Since(start).Round(time.Millisecond))
		for ev := range events.All() {
			seen[ev.Token] = true
			switch ev.Token {
			case tokSocket:
				m, err := a.Read(buf)
				if err != nil && !errors.Is(err, socket.ErrWouldBlock) {
					return err
				}
				say("  token %d (socket) is %s: read %q", ev.Token, ev.Ready, buf[:m])
			case tokWorker:
				say("  token %d (Registration) is %s: set by another goroutine", ev.Token, ev.Ready)
			case tokAlarm:
				say("  token %d (delayed) is %s: fired by the timing wheel", ev.Token, ev.Ready)
			}
		}
	}
	st := p.Stats()
	say("\nOne Poll, three kinds of source. Stats: %d polls, %d OS events, %d user events, %d waker writes.",
		st.Polls, st.OSEvents, st.UserEvents, st.WakerWrites)
	return nil
}
