package channel_test

import (
	"errors"
	"fmt"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
)

// A channel fed from another goroutine, drained through a Poll. The
// consumer registers the Receiver with Edge, so after each event it
// receives until ErrEmpty; ErrDisconnected says every Sender is closed.
func Example() {
	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()

	tx, rx := channel.New[string]()
	defer rx.Close()
	if err := p.Register(rx, 1, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}

	go func() {
		defer tx.Close()
		for _, w := range []string{"one", "two", "three"} {
			if err := tx.Send(w); err != nil {
				panic(err)
			}
		}
	}()

	events := poll.NewEvents(8)
	for {
		if _, err := p.Poll(events, -1); err != nil {
			panic(err)
		}
		for range events.All() {
			for {
				v, err := rx.TryRecv()
				if errors.Is(err, channel.ErrEmpty) {
					break // wait for the next event
				}
				if errors.Is(err, channel.ErrDisconnected) {
					fmt.Println("disconnected")
					return
				}
				fmt.Println(v)
			}
		}
	}
	// Output:
	// one
	// two
	// three
	// disconnected
}

// Back-pressure without blocking: a producer registers its Sender for
// Writable, sends with TrySend until ErrFull, and waits for the Writable
// event that room brings.
func ExampleNewBounded() {
	p, _ := poll.New()
	defer p.Close()
	tx, rx, _ := channel.NewBounded[int](2)
	defer rx.Close()
	_ = p.Register(tx, 1, poll.Writable, poll.Edge)
	events := poll.NewEvents(1)

	n, _ := p.Poll(events, 0)
	fmt.Println("writable events:", n)
	for i := 1; ; i++ {
		if err := tx.TrySend(i); err != nil {
			fmt.Println("send", i, "->", err)
			break
		}
	}
	n, _ = p.Poll(events, 0)
	fmt.Println("writable events:", n)

	v, _ := rx.TryRecv()
	fmt.Println("received", v)
	n, _ = p.Poll(events, 0)
	fmt.Println("writable events:", n)
	// Output:
	// writable events: 1
	// send 3 -> unipoll: channel full
	// writable events: 0
	// received 1
	// writable events: 1
}

// Drain receives what is there, in order, and stops where TryRecv would
// return an error.
func ExampleReceiver_Drain() {
	tx, rx := channel.New[int]()
	defer rx.Close()
	for i := range 5 {
		_ = tx.Send(i * i)
	}
	for v := range rx.Drain() {
		fmt.Print(v, " ")
	}
	_, err := rx.TryRecv()
	fmt.Println("|", err)
	// Output: 0 1 4 9 16 | unipoll: channel empty
}
