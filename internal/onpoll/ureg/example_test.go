package ureg_test

import (
	"fmt"
	"log"

	"github.com/unipoll/unipoll/internal/onpoll/ureg"
	"github.com/unipoll/unipoll/poll"
)

// A Reg moves to another Poll once deregistered, carrying its readiness:
// the second Poll reports it at once (rule 5), as a Registration registered
// again with its first Poll would be.
func Example() {
	first, err := poll.New()
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()
	second, err := poll.New()
	if err != nil {
		log.Fatal(err)
	}
	defer second.Close()

	r := ureg.New()
	defer r.Close()
	events := poll.NewEvents(4)
	_ = r.Register(first, 1, poll.Readable, poll.Level)
	r.Set(poll.Readable)
	_, _ = first.Poll(events, -1)
	fmt.Println("first Poll:", events.At(0).Token, events.At(0).Ready)

	fmt.Println("register with the second while on the first:", r.Register(second, 2, poll.Readable, poll.Level))
	_ = r.Deregister(first)
	_ = r.Register(second, 2, poll.Readable, poll.Level)
	_, _ = second.Poll(events, -1)
	fmt.Println("second Poll:", events.At(0).Token, events.At(0).Ready)
	// Output:
	// first Poll: 1 Readable
	// register with the second while on the first: unipoll: registered with another Poll
	// second Poll: 2 Readable
}
