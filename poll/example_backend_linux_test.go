//go:build linux

package poll_test

import (
	"errors"
	"fmt"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
	"github.com/unipoll/unipoll/sys"
)

// Choosing io_uring for one Poll, and the default backend (epoll) where
// the kernel lacks or refuses it. The Poll's API and contract are the
// same on both.
func ExampleConfig_backend() {
	p, err := poll.NewWithConfig(poll.Config{Backend: sys.BackendUring})
	if errors.Is(err, sys.ErrBackendUnavailable) {
		p, err = poll.New() // epoll
	}
	if err != nil {
		panic(err)
	}
	defer p.Close()

	a, b, err := socket.Pair()
	if err != nil {
		panic(err)
	}
	defer a.Close()
	defer b.Close()
	if err := p.Register(a, 7, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}
	defer p.Deregister(a) // before a.Close, as on every backend
	_, _ = b.Write([]byte("hello"))
	events := poll.NewEvents(4)
	n, err := p.Poll(events, -1)
	fmt.Println(n, err, events.At(0))
	// Output: 1 <nil> Event{Token: 7, Ready: Readable}
}
