package netloop_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// tcpPair is a loopback TCP connection: the server end for a Conn, the
// client end from package net.
func tcpPair() (*socket.TCPConn, net.Conn) {
	ln, err := socket.ListenTCP("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	p, _ := poll.New()
	defer p.Close()
	_ = p.Register(ln, 1, poll.Readable, poll.Level)
	_, _ = p.Poll(poll.NewEvents(1), 5*time.Second) // the connection is there to accept
	server, err := ln.Accept()
	if err != nil {
		panic(err)
	}
	return server, client
}

// closeHandler hands the Conn's end to a channel, with its counters.
type closeHandler struct {
	echo
	closed chan closedAs
}

type closedAs struct {
	err   error
	stats netloop.ConnStats
}

func (h closeHandler) Closed(c *netloop.Conn, err error) { h.closed <- closedAs{err, c.Stats()} }

// A client that stops reading: the WriteTimeout closes its Conn with
// output still queued, so the Conn resets the connection and the client's
// read fails with ECONNRESET, where a clean end of stream would have
// passed the truncated data for all of it. The Logger hears the timeout
// (its time and addresses are left out here).
func ExampleConfig_writeTimeout() {
	server, client := tcpPair()
	defer client.Close()
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "local" || a.Key == "remote" {
				return slog.Attr{}
			}
			return a
		},
	}))
	h := closeHandler{closed: make(chan closedAs, 1)}
	c, err := netloop.Add(l, server, h, netloop.Config{WriteTimeout: 100 * time.Millisecond, MaxWriteQueue: 64 << 20, Logger: logger})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, nil) }()

	// More than the two kernels' buffers hold: most of it stays queued.
	_ = c.Async(func(c *netloop.Conn) { _, _ = c.Write(make([]byte, 32<<20)) })
	fmt.Println("closed:", (<-h.closed).err)
	_, err = io.Copy(io.Discard, client)
	fmt.Println("the client's read fails with ECONNRESET:", errors.Is(err, syscall.ECONNRESET))
	cancel()
	<-done
	// Output:
	// level=DEBUG msg="netloop: conn timed out" err="unipoll: netloop: write timeout" timeout=100ms
	// closed: unipoll: netloop: write timeout
	// the client's read fails with ECONNRESET: true
}

// A timeout set from another goroutine on a Conn made without one. The
// Conn had answered everything, so nothing is lost and it closes with a
// FIN: the client reads the reply, then a clean end of stream. Its
// counters are final in the CloseHandler.
func ExampleConn_SetReadTimeout() {
	server, client := tcpPair()
	defer client.Close()
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	h := closeHandler{closed: make(chan closedAs, 1)}
	c, err := netloop.Add(l, server, h, netloop.Config{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, nil) }()

	_, _ = client.Write([]byte("ping"))
	reply := make([]byte, 4)
	_, _ = io.ReadFull(client, reply)
	fmt.Printf("%s\n", reply)
	if err := c.SetReadTimeout(50 * time.Millisecond); err != nil { // from this goroutine, not the Loop's
		panic(err)
	}
	end := <-h.closed
	fmt.Printf("closed: %v (read %d bytes, wrote %d)\n", end.err, end.stats.BytesRead, end.stats.BytesWritten)
	rest, err := io.ReadAll(client)
	fmt.Printf("then %d bytes and a clean end: %v\n", len(rest), err == nil)
	cancel()
	<-done
	// Output:
	// ping
	// closed: unipoll: netloop: read timeout (read 4 bytes, wrote 4)
	// then 0 bytes and a clean end: true
}

// Socket options reach the Conn's socket from any goroutine; a Stream
// without the option says so with socket.ErrUnsupportedOption.
func ExampleConn_SetNoDelay() {
	l, _ := eventloop.New(eventloop.Config{})
	defer l.Close()
	server, client := tcpPair()
	defer client.Close()
	tcp, _ := netloop.Add(l, server, echo{}, netloop.Config{})
	fmt.Println("tcp:", tcp.SetNoDelay(true), tcp.SetKeepAlive(true))

	a, b, _ := socket.Pair()
	defer b.Close()
	unixConn, _ := netloop.Add(l, a, echo{}, netloop.Config{})
	fmt.Println("unix:", errors.Is(unixConn.SetNoDelay(true), socket.ErrUnsupportedOption))
	// Output:
	// tcp: <nil> <nil>
	// unix: true
}
