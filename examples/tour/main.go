// Command tour shows unipoll's one Poll at work: every kind of source the
// library has (a socket pair, a TCP listener whose connection takes its
// token from a tokens.Table and its socket options, a user-space Registration set from another
// goroutine, a delayed readiness, a channel fed from another goroutine, a
// timer, a signal the process sends itself, a child process's exit and its
// output) registered with the same Poll and coming back from the same Poll
// call; then the same kinds of work through an eventloop.Loop, a handler
// per source, with a netloop Conn that netloop.Shutdown drains at the end
// (loop.go); and last a socket on a Poll in completion mode, whose bytes
// io_uring receives and sends itself (completion.go).
//
//	go run ./examples/tour
//
// Each kind of source is one stop of the tour, in a file of its own
// (stop_*.go): a stop registers its sources, starts what feeds them, and
// handles their events. The loop below is all the dispatching there is.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/unipoll/unipoll/poll"
)

// stop is one kind of source on the tour.
type stop interface {
	// name says what the source is, in the tour's output.
	name() string
	// start registers the stop's source with p under tok and starts what
	// makes it ready.
	start(p *poll.Poll, tok poll.Token, say sayFunc) error
	// handle deals with one event of the source, and reports whether the
	// stop has seen all it came for.
	handle(ev poll.Event, say sayFunc) (done bool, err error)
	// close releases the stop's sources.
	close() error
}

type sayFunc func(format string, args ...any)

// stops are the tour, in order; a stop's token is its index plus one.
func stops() []stop {
	kid := &childStop{}
	return []stop{
		&socketStop{},
		&tcpStop{},
		&registrationStop{},
		&delayStop{delay: 50 * time.Millisecond},
		&channelStop{values: []string{"one", "two", "three"}},
		&timerStop{},
		&signalStop{},
		kid,
		&childOutputStop{kid: kid}, // after kid, whose start makes the pipe
	}
}

func main() {
	if err := tour(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
	fmt.Println("\nThe same through an eventloop.Loop, a handler per source:")
	if err := loopTour(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
	fmt.Println("\nCompletion mode (io_uring does a socket's I/O itself):")
	if err := completionTour(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func tour(out io.Writer) (err error) {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	p, err := poll.New()
	if err != nil {
		return err
	}
	defer p.Close()
	say("Opened a Poll on the %q backend.", p.Backend())

	all := stops()
	for i, s := range all {
		if err := s.start(p, poll.Token(i+1), say); err != nil {
			return fmt.Errorf("%s: %w", s.name(), err)
		}
		defer func() { err = errors.Join(err, s.close()) }()
	}
	say("")

	start := time.Now()
	done := make([]bool, len(all))
	left := len(all)
	events := poll.NewEvents(8)
	deadline := time.Now().Add(5 * time.Second)
	for left > 0 {
		if time.Now().After(deadline) {
			return errors.New("timed out waiting for events")
		}
		n, err := p.Poll(events, time.Second)
		if err != nil {
			return err
		}
		say("Poll returned %d event(s) after %v:", n, time.Since(start).Round(time.Millisecond))
		for ev := range events.All() {
			i := int(ev.Token) - 1
			finished, err := all[i].handle(ev, func(format string, args ...any) {
				say("  token %d (%s) is %s: "+format, append([]any{ev.Token, all[i].name(), ev.Ready}, args...)...)
			})
			if err != nil {
				return fmt.Errorf("%s: %w", all[i].name(), err)
			}
			if finished && !done[i] {
				done[i] = true
				left--
			}
		}
	}
	st := p.Stats()
	// SharedTokens is counted with -tags unipoll_debug: every stop has a
	// token of its own, so it stays 0.
	say("\nOne Poll, %d kinds of source. Stats: %d polls, %d OS events, %d user events, %d waker writes, %d registrations under a shared token.",
		len(all), st.Polls, st.OSEvents, st.UserEvents, st.WakerWrites, st.SharedTokens)
	return nil
}
