package timer_test

import (
	"fmt"
	"time"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/timer"
)

// Three timeouts set in any order come out of one Poll loop in deadline
// order, with no goroutine and no OS timer per timeout.
func Example() {
	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()
	t, err := timer.New[string]()
	if err != nil {
		panic(err)
	}
	defer t.Close()
	if err := p.Register(t, 1, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}
	for _, s := range []struct {
		d time.Duration
		v string
	}{{30 * time.Millisecond, "third"}, {10 * time.Millisecond, "first"}, {20 * time.Millisecond, "second"}} {
		if _, err := t.Set(s.d, s.v); err != nil {
			panic(err)
		}
	}
	events := poll.NewEvents(4)
	for got := 0; got < 3; {
		if _, err := p.Poll(events, -1); err != nil {
			panic(err)
		}
		for range events.All() {
			for v := range t.Drain() { // Edge: take everything that expired
				fmt.Println(v)
				got++
			}
		}
	}
	// Output:
	// first
	// second
	// third
}

// Cancel returns the value of a timeout that has not expired; once it has
// expired, or was cancelled, the Timeout cancels nothing.
func ExampleTimer_Cancel() {
	p, _ := poll.New()
	defer p.Close()
	t, _ := timer.New[string]()
	defer t.Close()
	_ = p.Register(t, 1, poll.Readable, poll.Edge)

	retry, _ := t.Set(time.Hour, "retry the request")
	v, ok := t.Cancel(retry)
	fmt.Println(v, ok)
	_, ok = t.Cancel(retry)
	fmt.Println(ok)
	// Output:
	// retry the request true
	// false
}

// Capacity bounds what a Timer holds: past it, Set returns ErrFull.
func ExampleCapacity() {
	p, _ := poll.New()
	defer p.Close()
	t, _ := timer.New[int](timer.Capacity(1))
	defer t.Close()
	_ = p.Register(t, 1, poll.Readable, poll.Edge)
	_, err := t.Set(time.Hour, 1)
	fmt.Println(err)
	_, err = t.Set(time.Hour, 2)
	fmt.Println(err)
	// Output:
	// <nil>
	// unipoll: timer full
}
