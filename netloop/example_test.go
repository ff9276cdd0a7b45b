package netloop_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// echo is a Handler: every byte back.
type echo struct{}

func (echo) Data(c *netloop.Conn, in []byte) int {
	n, _ := c.Write(in) // queued; written once at the end of the read
	return n
}

// A Conn is a buffered stream on the Loop: the handler sees the input and
// queues its output; the Conn reads, writes, waits for room and applies
// back pressure.
func ExampleAdd() {
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	server, client, _ := socket.Pair()
	defer client.Close()
	if _, err := netloop.Add(l, server, echo{}, netloop.Config{}); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, nil) }()

	_, _ = client.Write([]byte("ping"))
	events, _ := poll.New()
	defer events.Close()
	_ = events.Register(client, 1, poll.Readable, poll.Edge)
	ev := poll.NewEvents(1)
	_, _ = events.Poll(ev, 5*time.Second)
	buf := make([]byte, 16)
	n, _ := client.Read(buf)
	fmt.Printf("%s\n", buf[:n])
	cancel()
	<-done
	// Output:
	// ping
}

// A Group of Loops serving one listener: each connection is handed to a
// Loop in turn and lives there as a Conn.
func ExampleGroup_ListenTCP() {
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: 2})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		if _, err := netloop.Add(l, c, echo{}, netloop.Config{}); err != nil {
			fmt.Println("add:", err) // c is closed: its client sees the end
		}
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, nil) }()

	for i := range 2 {
		c, _ := net.Dial("tcp", ln.Addr().String())
		fmt.Fprintf(c, "hello %d", i)
		buf := make([]byte, 7)
		_, _ = io.ReadFull(c, buf)
		fmt.Printf("%s\n", buf)
		c.Close()
	}
	cancel()
	<-done
	// Output:
	// hello 0
	// hello 1
}
