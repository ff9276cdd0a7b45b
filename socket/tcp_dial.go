//go:build unix

package socket

import (
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A connect DialTCP started, and how its failure is told.
//
// The kernel reports a failed connect once: to whichever asks first,
// ConnectError (SO_ERROR) or a Read or Write (the call's errno), and then
// answers EOF or EPIPE as for any connection that has ended. A caller that
// reads before it asks (an eventloop.Conn does, as soon as the conn is
// readable) would hear "read: connection refused", and ConnectError would
// then find no error and no peer and say the connect is still in
// progress, for ever. So a dialed conn follows its connect until it is
// seen connected (a byte read or written, EOF, or ConnectError's nil),
// and the first failure anyone sees is kept (connErr) and told as the
// dial's: "socket: dial tcp 192.0.2.1:80: connect: connection refused",
// as DialTCP says a failure the kernel knows at once. Read, Write and
// ConnectError all report it from then on.
//
// ECONNRESET and EPIPE are not connect failures: a reset during the
// handshake is ECONNREFUSED, so a conn that reads a reset was connected.
//
// Cost: a conn that was not dialed pays a nil check per Read and Write, a
// dialed one an atomic load until it is seen connected.

// dialing is a dialed conn's connect until it is seen connected.
type dialing struct {
	network, addr string      // as given to DialTCP, for the error
	pending       atomic.Bool // not yet seen connected
}

// DialTCP starts a connection to addr and returns without waiting for it.
// network is "tcp", "tcp4" or "tcp6". addr is "host:port" with host an IP
// literal ("192.0.2.1", "[2001:db8::1]", "[fe80::1%eth0]"; empty for the
// local system) and port a number.
//
// A host name or a service name would need a lookup, which can block for
// seconds, and DialTCP runs inside an event loop: it refuses one with
// ErrNeedsResolve and opens nothing. Resolve names off the loop instead,
// for example with net.DefaultResolver.LookupNetIP in another goroutine
// that hands the addresses back to the loop (through a poll.Registration or
// the channel package), then dial them in turn until one connects; see the
// example.
//
// Register the conn for Writable (and Error|Hup, to hear about failure
// directly): it becomes writable when the handshake completes and reports
// Error or Hup when it fails. Then call ConnectError to tell which; a
// spurious event (which Poll allows) shows as ErrWouldBlock from it. A
// failure the kernel knows at once, such as no route, is returned by
// DialTCP itself. A conn may also be read or written at once (an
// eventloop.Conn does): a failed connect is then what Read or Write
// returns, as the dial's error, and ConnectError reports it too.
func DialTCP(network, addr string) (*TCPConn, error) {
	c, err := dialTCP(network, addr)
	if err != nil {
		return nil, opError("dial "+network, addr, err)
	}
	c.dial = &dialing{network: network, addr: addr}
	c.dial.pending.Store(true)
	return c, nil
}

func dialTCP(network, addr string) (*TCPConn, error) {
	e, err := tcpSocket(network, addr)
	if err != nil {
		return nil, err
	}
	if err := connect(e.fd, e.sa); err != nil {
		unix.Close(e.fd)
		return nil, err
	}
	return newTCPConn(e.fd, e.addr)
}

// connect starts a non-blocking connect. EINPROGRESS is the normal answer;
// EINTR means the same for a non-blocking socket (the handshake goes on,
// and retrying would only get EALREADY), as package net treats it.
func connect(fd int, sa unix.Sockaddr) error {
	switch err := unix.Connect(fd, sa); err {
	case nil, unix.EINPROGRESS, unix.EINTR, unix.EALREADY:
		return nil
	default:
		return os.NewSyscallError("connect", err)
	}
}

// ConnectError tells how a connect started by DialTCP went, once the conn
// has reported Writable, Error or Hup: nil when it is connected, the
// failure (matching unix.ECONNREFUSED, unix.ETIMEDOUT, ...) when it failed,
// and ErrWouldBlock while it is still in progress (after a spurious event;
// under Edge the pass is ended with Drained, so the real event still comes).
// The failure is remembered, so later calls report it too, also when a
// Read or Write saw it first.
func (c *TCPConn) ConnectError() error {
	if c == nil {
		return notOpenError("connect")
	}
	if p := c.connErr.Load(); p != nil {
		return *p
	}
	if c.dial != nil && !c.dial.pending.Load() {
		// It connected. What ended the connection since (a reset that
		// Read returned) took the kernel's answer with it, so asking
		// again would say "in progress". A closed conn still says so.
		if err := c.s.RLock("connect"); err != nil {
			return err
		}
		c.s.RUnlock()
		return nil
	}
	errno, err := connectErrno(&c.s)
	if err != nil {
		return err
	}
	if errno != 0 {
		return c.connectFailed(errno)
	}
	if c.dial != nil {
		c.dial.pending.Store(false)
	}
	return nil
}

// dialed is what a Read or Write that returned n and err says while the
// conn has not been seen connected.
func (c *TCPConn) dialed(n int, err error) (int, error) {
	se, isErrno := err.(*os.SyscallError)
	if p := c.connErr.Load(); p != nil {
		if isErrno || err == io.EOF {
			return 0, *p // the kernel's answers after the failure
		}
		return n, err
	}
	switch {
	case n > 0 || err == io.EOF || isErrno && (se.Err == unix.ECONNRESET || se.Err == unix.EPIPE):
		c.dial.pending.Store(false)
	case isErrno:
		return 0, c.connectFailed(se.Err)
	}
	return n, err
}

// connectFailed keeps the connect's failure, the first one seen, and
// returns it.
func (c *TCPConn) connectFailed(errno error) error {
	err := error(os.NewSyscallError("connect", errno))
	if c.dial != nil {
		err = opError("dial "+c.dial.network, c.dial.addr, err)
	}
	c.connErr.CompareAndSwap(nil, &err)
	return *c.connErr.Load()
}
