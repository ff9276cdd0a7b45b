package eventloop_test

import (
	"context"
	"fmt"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// A Loop with one source: a socket whose handler reads what arrives, and
// a function posted from another goroutine that stops the Loop.
func Example() {
	l, err := eventloop.New(eventloop.Config{})
	if err != nil {
		panic(err)
	}
	defer l.Close()

	a, b, _ := socket.Pair()
	defer a.Close()
	defer b.Close()
	buf := make([]byte, 64)
	_, err = l.Add(a, poll.Readable, poll.Edge, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		n, _ := a.Read(buf)
		fmt.Printf("read %q\n", buf[:n])
		_ = l.Post(func(l *eventloop.Loop) {
			fmt.Println("posted function runs; stopping")
			l.Shutdown()
		})
		return eventloop.Keep
	}))
	if err != nil {
		panic(err)
	}
	go func() { _, _ = b.Write([]byte("hello")) }()
	if err := l.Run(context.Background(), nil); err != nil {
		panic(err)
	}
	// Output:
	// read "hello"
	// posted function runs; stopping
}

// What a handler returns decides what happens next: Again calls it again
// (here while a counter says there is work left, as a handler that stops
// after its share of an iteration would), Disarm stops calls until
// Loop.Rearm, and Remove takes the source off the Loop, after which its
// Removed runs.
func ExampleAction() {
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	reg, set := poll.NewRegistration()
	left := 3
	h := &counting{f: func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		left--
		fmt.Println("call, work left:", left)
		if left > 0 {
			return eventloop.Again
		}
		return eventloop.Remove
	}, done: func() { fmt.Println("removed"); _ = reg.Close(); l.Shutdown() }}
	if _, err := l.Add(reg, poll.Readable, poll.Edge, h); err != nil {
		panic(err)
	}
	_ = set.SetReadiness(poll.Readable) // one edge
	_ = l.Run(context.Background(), nil)
	// Output:
	// call, work left: 2
	// call, work left: 1
	// call, work left: 0
	// removed
}

// counting is a SourceHandler with a Removed.
type counting struct {
	f    eventloop.SourceFunc
	done func()
}

func (c *counting) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action { return c.f(l, ev) }
func (c *counting) Removed(*eventloop.Loop, poll.Token)                     { c.done() }

// Ready sources are called highest priority first.
func ExamplePriority() {
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	for _, p := range []int{0, 2, 1} {
		reg, set := poll.NewRegistration()
		defer reg.Close()
		_, _ = l.Add(reg, poll.Readable, poll.Edge, eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
			fmt.Println("priority", p)
			if p == 0 {
				l.Shutdown()
			}
			return eventloop.Keep
		}), eventloop.Priority(p))
		_ = set.SetReadiness(poll.Readable)
	}
	_ = l.Run(context.Background(), nil)
	// Output:
	// priority 2
	// priority 1
	// priority 0
}

// AfterFunc runs a function on the Loop after a delay, from a timer on the
// Poll's own wheel; cancel says whether it stopped the function in time.
func ExampleLoop_AfterFunc() {
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	cancel, _ := l.AfterFunc(time.Hour, func(*eventloop.Loop) { fmt.Println("never") })
	_, _ = l.AfterFunc(20*time.Millisecond, func(l *eventloop.Loop) {
		fmt.Println("20ms later; the hour-long one cancelled:", cancel())
		l.Shutdown()
	})
	_ = l.Run(context.Background(), nil)
	// Output:
	// 20ms later; the hour-long one cancelled: true
}

// A layer on top of the Loop makes its sources as netloop makes a Conn:
// OnToken hands the token over before the first call can come, the call
// reads into the buffer its worker lends it (ReadBuffer), and SetInterest
// changes what the source waits for.
func ExampleOnToken() {
	a, b, _ := socket.Pair()
	defer a.Close()
	defer b.Close()
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	var tok poll.Token // the source's, set before its first call
	h := eventloop.SourceFunc(func(l *eventloop.Loop, ev poll.Event) eventloop.Action {
		buf := l.ReadBuffer(tok)
		n, _ := a.Read(buf)
		fmt.Printf("read %q (token known: %v)\n", buf[:n], tok == ev.Token)
		fmt.Println("now waiting for the peer's end only:", l.SetInterest(tok, poll.Hup) == nil)
		l.Shutdown()
		return eventloop.Keep
	})
	if _, err := l.Add(a, poll.Readable, poll.Edge, h, eventloop.OnToken(func(t poll.Token) { tok = t })); err != nil {
		panic(err)
	}
	_, _ = b.Write([]byte("hi"))
	_ = l.Run(context.Background(), nil)
	// Output:
	// read "hi" (token known: true)
	// now waiting for the peer's end only: true
}

// Value keeps a layer's state once per Loop: the first call with a key
// makes it, the later ones find it.
func ExampleLoop_Value() {
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	type connsKey struct{} // unexported: no other layer can collide with it
	newCount := func() any { return new(int) }
	*l.Value(connsKey{}, newCount).(*int) += 2
	fmt.Println(*l.Value(connsKey{}, newCount).(*int))
	// Output: 2
}

// Workers says how many goroutines serve a Loop. With one, the calls of
// all its sources are made one after another, so a handler may act on
// another source's state without a lock (netloop's Relay and the proxy
// example count on it).
func ExampleLoop_Workers() {
	for _, n := range []int{0, 4} {
		l, err := eventloop.New(eventloop.Config{Workers: n})
		if err != nil {
			panic(err)
		}
		fmt.Println("Config.Workers", n, "->", l.Workers(), "goroutine(s)")
		l.Close()
	}
	// Output:
	// Config.Workers 0 -> 1 goroutine(s)
	// Config.Workers 4 -> 4 goroutine(s)
}

// SetMode switches a source between Edge and Level. A Registration that
// stays ready brings one call under Edge, and one per iteration under
// Level.
func ExampleLoop_SetMode() {
	l, err := eventloop.New(eventloop.Config{})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	reg, set := poll.NewRegistration()
	defer reg.Close()
	calls := 0
	tok, err := l.Add(reg, poll.Readable, poll.Edge, eventloop.SourceFunc(func(*eventloop.Loop, poll.Event) eventloop.Action {
		calls++
		return eventloop.Keep
	}))
	if err != nil {
		panic(err)
	}
	_ = set.SetReadiness(poll.Readable) // and it stays set
	for range 3 {
		_ = l.RunOnce(time.Millisecond, nil)
	}
	fmt.Println("Edge, three iterations:", calls, "call")
	if err := l.SetMode(tok, poll.Readable, poll.Level); err != nil {
		panic(err)
	}
	calls = 0
	for range 3 {
		_ = l.RunOnce(time.Millisecond, nil)
	}
	fmt.Println("Level, three iterations:", calls, "calls")
	// Output:
	// Edge, three iterations: 1 call
	// Level, three iterations: 3 calls
}
