package netloop_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// Relay joins two Conns: here a Conn with a client and a Conn with a
// backend (an upper-casing server in a goroutine). The client's bytes go
// to the backend and the backend's back to the client, spliced from socket
// to socket on Linux; the client's CloseWrite reaches the backend as the
// end of its input, and once both directions have ended both Conns close.
func ExampleRelay() {
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	front, client, _ := socket.Pair() // a client connected to the Loop
	backend, upstream, _ := socket.Pair()
	go upper(upstream)

	nop := netloop.HandlerFunc(func(*netloop.Conn, []byte) int { return 0 }) // Data is not called during a relay
	closed := make(chan error, 2)
	onClose := closeFunc(func(_ *netloop.Conn, err error) { closed <- err })
	a, _ := netloop.Add(l, front, handler{nop, onClose}, netloop.Config{})
	b, _ := netloop.Add(l, backend, handler{nop, onClose}, netloop.Config{})
	if err := netloop.Relay(a, b); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, nil) }()

	c := blocking(client)
	_, _ = c.Write([]byte("hello through the relay"))
	_ = c.(interface{ CloseWrite() error }).CloseWrite()
	reply, _ := io.ReadAll(c)
	fmt.Printf("%s\n", reply)
	fmt.Println(<-closed, <-closed)
	cancel()
	<-done
	// Output:
	// HELLO THROUGH THE RELAY
	// <nil> <nil>
}

// handler joins a Data function and a CloseHandler.
type handler struct {
	netloop.HandlerFunc
	closeFunc
}

type closeFunc func(*netloop.Conn, error)

func (f closeFunc) Closed(c *netloop.Conn, err error) { f(c, err) }

// upper is the backend: it answers with its input upper-cased, and
// closes at its end.
func upper(s *socket.UnixConn) {
	c := blocking(s)
	defer c.Close()
	in, _ := io.ReadAll(c)
	for i, b := range in {
		if 'a' <= b && b <= 'z' {
			in[i] = b - 'a' + 'A'
		}
	}
	_, _ = c.Write(in)
}

// blocking makes a socket a blocking net.Conn for the example's plain
// reads and writes.
func blocking(s *socket.UnixConn) net.Conn {
	fd, err := syscall.Dup(s.Fd())
	if err != nil {
		panic(err)
	}
	_ = s.Close()
	f := os.NewFile(uintptr(fd), "unix")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		panic(err)
	}
	return c
}
