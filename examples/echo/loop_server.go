//go:build unix

package main

import (
	"context"
	"errors"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// loopServer is the echo server in its EventLoop mode: the same protocol
// as server.go, with the loop doing what server.go does by hand. Each
// connection is an netloop.Conn (read buffer, bounded write queue,
// Writable handling, back pressure); the listener, its accept loop and
// its pause when descriptors run out belong to an netloop.Group. With
// one Loop it is server.go's single goroutine; with more, each Loop runs
// on its own goroutine and connections are spread among them (handed
// round robin by one listener, or, with SO_REUSEPORT, accepted by each
// Loop's own listener).
type loopServer struct {
	g    *netloop.Group
	addr net.Addr
	logf func(format string, args ...any)
}

// newLoopServer listens on addr with loops Loops. Nothing is accepted
// before Run.
func newLoopServer(addr string, loops int, reusePort bool, logf func(string, ...any)) (*loopServer, error) {
	g, err := netloop.NewGroup(netloop.GroupConfig{Loops: loops})
	if err != nil {
		return nil, err
	}
	s := &loopServer{g: g, logf: logf}
	var opts []netloop.ListenOption
	if reusePort {
		opts = append(opts, netloop.ReusePort())
	}
	ln, err := g.ListenTCP("tcp", addr, s.accept, opts...)
	if err != nil {
		return nil, errors.Join(err, g.Close())
	}
	s.addr = ln.Addr()
	return s, nil
}

// accept puts a new connection on the Loop the Group chose for it.
func (s *loopServer) accept(l *eventloop.Loop, c *socket.TCPConn) {
	// Echoes are small and answer the peer at once: no point in Nagle
	// holding them back.
	_ = c.SetNoDelay(true)
	if _, err := netloop.Add(l, c, echoProtocol{s}, netloop.Config{}); err != nil {
		s.logf("echo: add %s: %v", c.RemoteAddr(), err)
	}
}

// Addr is the address the server listens on.
func (s *loopServer) Addr() net.Addr { return s.addr }

// Backend names the Poll's OS mechanism.
func (s *loopServer) Backend() string { return s.g.Loops()[0].Poll().Backend() }

// Stop drains the connections (netloop.Group.Shutdown) and makes Run
// return; safe from any goroutine, any number of times,
// before, during or after Run.
func (s *loopServer) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), stopDrain)
	defer cancel()
	_ = s.g.Shutdown(ctx) // ErrClosed after Run: nothing left to stop
}

// stopDrain bounds Stop's drain: echoes are answered at once, so a Conn
// still open after it has a client that stopped reading.
const stopDrain = 5 * time.Second

// Run serves until Stop, then closes every connection, the listeners and
// the Loops.
func (s *loopServer) Run() error {
	err := s.g.Run(context.Background(), nil)
	return errors.Join(err, ignoreClosed(s.g.Close()))
}

// acceptPauses is how many times accepting paused for lack of
// descriptors (read by the tests after Run).
func (s *loopServer) acceptPauses() int { return int(s.g.AcceptPauses()) }

// echoProtocol sends every byte back. The Conn writes what Data queued
// in one write at the end of the read; a peer that does not read its
// echoes fills the queue, and the Conn then stops reading from it.
type echoProtocol struct{ s *loopServer }

// Data echoes in. A full queue (a peer that sent a lot without reading)
// leaves the input unconsumed: it is handed back once the queue drains.
func (p echoProtocol) Data(c *netloop.Conn, in []byte) int {
	n, err := c.Write(in)
	if err != nil {
		return 0
	}
	return n
}

// Closed logs the failures a peer does not cause by going away.
func (p echoProtocol) Closed(c *netloop.Conn, err error) {
	if err != nil && !errors.Is(err, unix.ECONNRESET) && !errors.Is(err, unix.EPIPE) {
		p.s.logf("echo: %v", err)
	}
}
