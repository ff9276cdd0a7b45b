package netloop_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// Dial from a Loop: done runs on the Loop, once, with a live Conn (whose
// handler hears nothing before done returns) or the reason there is none.
// Here a greeting server is dialed by name ("localhost", resolved off the
// Loop), then its port again once nothing listens there.
func ExampleDial() {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte("hello"))
			_ = c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	l, err := eventloop.New(eventloop.Config{})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- l.Run(ctx, nil) }()
	defer func() { stop(); <-ran }()

	heard := make(chan string, 1)
	greeting := netloop.HandlerFunc(func(c *netloop.Conn, in []byte) int {
		heard <- fmt.Sprintf("read %q", in)
		return len(in)
	})
	d := netloop.Dialer{Timeout: 5 * time.Second}
	err = d.Dial(ctx, l, "tcp4", fmt.Sprintf("localhost:%d", port), greeting, func(c *netloop.Conn, err error) {
		if err != nil {
			fmt.Println("dial failed:", err)
			return
		}
		fmt.Println("connected to", c.Stream().(*socket.TCPConn).RemoteAddr().(*net.TCPAddr).IP)
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(<-heard)

	_ = ln.Close()
	err = d.Dial(ctx, l, "tcp4", fmt.Sprintf("127.0.0.1:%d", port), greeting, func(c *netloop.Conn, err error) {
		heard <- fmt.Sprint("refused: ", errors.Is(err, syscall.ECONNREFUSED))
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(<-heard)
	// Output:
	// connected to 127.0.0.1
	// read "hello"
	// refused: true
}
