package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
	"github.com/unipoll/unipoll/sys"
)

// completionTour shows completion mode: a Poll on io_uring with
// Config.Completion receives a socket's bytes into buffers of its own and
// sends its writes with its waits, so the socket's Read and Write are
// copies in user space and the program is unchanged. Where the kernel
// refuses io_uring, the same code runs on the default backend.
func completionTour(out io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	p, err := poll.NewWithConfig(poll.Config{Backend: sys.BackendUring, Completion: true})
	if errors.Is(err, sys.ErrBackendUnavailable) {
		say("io_uring is not available here (%v): the same code on the default backend.", err)
		p, err = poll.New()
	}
	if err != nil {
		return err
	}
	defer p.Close()
	a, b, err := socket.Pair()
	if err != nil {
		return err
	}
	defer a.Close()
	defer b.Close()
	if err := p.Register(a, 1, poll.Readable, poll.Edge); err != nil {
		return err
	}
	defer p.Deregister(a)
	where := "from its descriptor"
	if a.Completion() {
		where = "from the ring's buffers, with no system call of its own"
	}
	say("Opened a Poll on %q with Config.Completion; a socket pair's end a is registered.", p.Backend())

	if _, err := b.Write([]byte("ping")); err != nil {
		return err
	}
	events := poll.NewEvents(4)
	buf := make([]byte, 16)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := p.Poll(events, time.Second); err != nil {
			return err
		}
		n, err := a.Read(buf)
		if errors.Is(err, socket.ErrWouldBlock) {
			continue
		}
		if err != nil {
			return err
		}
		say("  a read %q %s.", buf[:n], where)
		if _, err := a.Write([]byte("pong")); err != nil {
			return err
		}
		for time.Now().Before(deadline) {
			if _, err := p.Poll(events, 10*time.Millisecond); err != nil {
				return err
			}
			if n, err := b.Read(buf); err == nil {
				say("  a wrote %q; the Poll's next wait sent it, and b read it.", buf[:n])
				return nil
			}
		}
	}
	return errors.New("completion: timed out")
}
