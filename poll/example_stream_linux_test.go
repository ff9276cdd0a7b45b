//go:build linux

package poll_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
	"github.com/unipoll/unipoll/sys"
)

// Completion mode: on io_uring with Config.Completion, a socket's bytes
// are received by the ring with the Poll's waits, and its writes are sent
// with them, so the socket's Read and Write are copies in user space.
// The program is the same with it or without it (here it falls back to
// epoll where the kernel refuses io_uring): the socket types read and
// write through the Stream themselves.
func ExampleConfig_completion() {
	p, err := poll.NewWithConfig(poll.Config{Backend: sys.BackendUring, Completion: true})
	if errors.Is(err, sys.ErrBackendUnavailable) {
		p, err = poll.New()
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
	if err := p.Register(a, 1, poll.Readable|poll.Writable, poll.Edge); err != nil {
		panic(err)
	}
	defer p.Deregister(a)
	_, _ = b.Write([]byte("ping"))

	events := poll.NewEvents(4)
	buf := make([]byte, 16)
	for {
		if _, err := p.Poll(events, time.Second); err != nil {
			panic(err)
		}
		n, err := a.Read(buf) // from the ring's buffers, with completion
		if errors.Is(err, socket.ErrWouldBlock) {
			continue // the event was Writable alone
		}
		fmt.Println(string(buf[:n]), err)
		break
	}
	_, err = a.Write([]byte("pong")) // queued; the next Poll sends it
	fmt.Println(err)
	for {
		if _, err := p.Poll(events, 10*time.Millisecond); err != nil {
			panic(err)
		}
		if n, err := b.Read(buf); err == nil {
			fmt.Println(string(buf[:n]))
			return
		}
	}
	// Output:
	// ping <nil>
	// <nil>
	// pong
}
