//go:build unix

package socket_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/unipoll/unipoll/channel"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// A socket pair through a Poll, registered Edge. Each message fits the
// buffer, so its read comes back short: the socket was drained then, and
// the pass ends after one read; the next message is a new event.
func Example() {
	p, err := poll.New()
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
	if err := p.Register(a, 1, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}

	events := poll.NewEvents(8)
	buf := make([]byte, 4096)
	for _, msg := range []string{"hello", "world"} {
		if _, err := b.Write([]byte(msg)); err != nil {
			panic(err)
		}
		got := false
		for !got {
			if _, err := p.Poll(events, -1); err != nil {
				panic(err)
			}
			for range events.All() {
				// One pass: read until a short read or ErrWouldBlock.
				for {
					n, err := a.Read(buf)
					if errors.Is(err, socket.ErrWouldBlock) {
						break // a spurious event, or drained by a full read
					}
					if err != nil {
						panic(err)
					}
					fmt.Printf("read %q\n", buf[:n])
					got = true
					if n < len(buf) {
						break // short: drained
					}
				}
			}
		}
	}
	// Output:
	// read "hello"
	// read "world"
}

// DialTCP takes IP literals only: a name is refused, because looking it up
// can block the event loop for seconds. Here the loop asks another
// goroutine to resolve the name, hears back through a channel registered
// with the same Poll, and dials the addresses in turn until one connects.
func ExampleDialTCP() {
	ln, err := socket.ListenTCP("tcp4", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).AddrPort().Port()

	_, err = socket.DialTCP("tcp", fmt.Sprintf("localhost:%d", port))
	fmt.Println("dial by name:", errors.Is(err, socket.ErrNeedsResolve))

	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()
	const tokResolved, tokConn = 1, 2

	// Resolve off the loop; the answer comes back as a channel value.
	type answer struct {
		addrs []netip.Addr
		err   error
	}
	tx, rx := channel.New[answer]()
	defer rx.Close()
	if err := p.Register(rx, tokResolved, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}
	go func() {
		defer tx.Close()
		addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", "localhost")
		_ = tx.Send(answer{addrs, err})
	}()

	events := poll.NewEvents(8)
	var todo []netip.Addr // addresses not tried yet
	var conn *socket.TCPConn
	next := func() bool { // dials the next address; false when none is left
		for len(todo) > 0 {
			addr := netip.AddrPortFrom(todo[0], port)
			todo = todo[1:]
			c, err := socket.DialTCP("tcp", addr.String())
			if err != nil {
				continue // refused at once: try the next
			}
			if err := p.Register(c, tokConn, poll.Writable|poll.Error|poll.Hup, poll.Edge); err != nil {
				panic(err)
			}
			conn = c
			return true
		}
		return false
	}
	for {
		if _, err := p.Poll(events, -1); err != nil {
			panic(err)
		}
		for ev := range events.All() {
			switch ev.Token {
			case tokResolved:
				a, err := rx.TryRecv()
				if err != nil {
					continue // ErrEmpty: spurious; ErrDisconnected: seen already
				}
				if a.err != nil {
					panic(a.err)
				}
				todo = a.addrs
				if !next() {
					panic("no address connects")
				}
			case tokConn:
				err := conn.ConnectError()
				if errors.Is(err, socket.ErrWouldBlock) {
					continue // still connecting
				}
				if err != nil {
					_ = conn.Close()
					if !next() {
						panic("no address connects")
					}
					continue
				}
				fmt.Println("connected to", conn.RemoteAddr().(*net.TCPAddr).IP)
				_ = conn.Close()
				return
			}
		}
	}
	// Output:
	// dial by name: true
	// connected to 127.0.0.1
}
