//go:build unix

package socket

import (
	"errors"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
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
// A connect that succeeded is remembered, also when nobody saw it before
// the connection ended: the conn reported Writable, and the peer closed
// or reset the connection before ConnectError was asked. What Linux tells
// then, and what ConnectError makes of it (connectErrno):
//
//   - the peer closed (FIN): SO_ERROR 0 and a peer name (CLOSE_WAIT):
//     connected.
//   - the peer reset: SO_ERROR ECONNRESET (EPIPE if its FIN came first),
//     once, and the socket is CLOSE. A reset during the handshake is
//     ECONNREFUSED, so these two mean it was connected. SO_ERROR took the
//     kernel's only report of the reset, after which a Read would say EOF,
//     a clean end: the reset is kept (state dialEnded) and the next Read
//     or Write that meets the end returns it instead.
//   - SO_ERROR 0 and no peer name (ENOTCONN) is either a handshake still
//     going on (SYN_SENT) or a connection that ended since (CLOSE: its
//     reset's report taken by someone else, or both sides closed). A
//     recv(MSG_PEEK) tells them apart without taking anything: EAGAIN
//     while connecting; data, or 0 for the end, once it was connected; a
//     connect failure's errno if one arrived in between.
//
// ECONNRESET and EPIPE are not connect failures for Read and Write
// either: a conn that reads a reset was connected.
//
// Cost: a conn that was not dialed pays a nil check per Read and Write, a
// dialed one an atomic load until it is seen connected.

// dialing is a dialed conn's connect until it is seen connected.
type dialing struct {
	network, addr string         // as given to DialTCP, for the error
	state         atomic.Uint32  // dialPending, dialConnected or dialEnded
	reset         atomic.Uintptr // dialEnded's reset (a unix.Errno); stored before state is
}

// The states of a dialed conn's connect.
const (
	dialPending   = iota // not yet seen connected
	dialConnected        // seen connected: Read and Write take the fast path
	dialEnded            // seen connected by a ConnectError that took the reset that ended it
)

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
	return newTCPConn(e.fd, e.addr.AddrPort())
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
// A connect that succeeded is nil for good, also when the peer has closed
// or reset the connection since: Read then reports that end. The failure
// is remembered too, so later calls report it, also when a Read or Write
// saw it first.
func (c *TCPConn) ConnectError() error {
	if c == nil {
		return notOpenError("connect")
	}
	if p := c.connErr.Load(); p != nil {
		return *p
	}
	if c.dial != nil && c.dial.state.Load() != dialPending {
		// It connected. What ended the connection since (a reset that
		// Read returned) took the kernel's answer with it, so asking
		// again would say "in progress". A closed conn still says so.
		if err := c.s.RLock("connect"); err != nil {
			return err
		}
		c.s.RUnlock()
		return nil
	}
	failed, ended, err := connectErrno(&c.s)
	switch {
	case err != nil:
		return err
	case failed != 0:
		return c.connectFailed(failed)
	case c.dial == nil:
		return nil
	case ended != 0:
		c.dial.reset.Store(uintptr(ended))
		c.dial.state.CompareAndSwap(dialPending, dialEnded)
	default:
		c.dial.state.CompareAndSwap(dialPending, dialConnected)
	}
	// A Read or Write on another goroutine may have met the failure
	// between our look and now, and kept it.
	if p := c.connErr.Load(); p != nil {
		return *p
	}
	return nil
}

// connectErrno tells how a non-blocking connect went (see the comment at
// the top of this file): failed is the errno of its failure; ended the
// errno of the reset that ended it after it connected (the kernel tells it
// once, and this took it); both 0 once connected. err is ErrWouldBlock
// while the handshake is still going on: the event that brought the caller
// here was spurious and the real one is still to come, so under Edge it
// ends the Writable pass like any other that would block.
func connectErrno(s *sock) (failed, ended unix.Errno, err error) {
	if err := s.RLock("connect"); err != nil {
		return 0, 0, err
	}
	defer s.RUnlock()
	soerr, err := unix.GetsockoptInt(s.Fd(), unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return 0, 0, os.NewSyscallError("getsockopt(SO_ERROR)", err)
	}
	if soerr != 0 {
		failed, ended = splitConnectErrno(unix.Errno(soerr))
		return failed, ended, nil
	}
	switch err := peerName(s.Fd()); err {
	case nil:
		return 0, 0, nil
	case unix.ENOTCONN:
	default:
		return 0, 0, os.NewSyscallError("getpeername", err)
	}
	// Connecting, or connected and ended since: peek to tell which.
	var one [1]byte
	for {
		_, _, err := unix.Recvfrom(s.Fd(), one[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch err {
		case nil:
			return 0, 0, nil // data or the end: it was connected
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.ENOTCONN:
			if s.Edge() {
				if rerr := s.Drained("connect", poll.Writable); rerr != nil {
					return 0, 0, rerr
				}
			}
			return 0, 0, ErrWouldBlock
		default:
			failed, ended = splitConnectErrno(err.(unix.Errno))
			return failed, ended, nil
		}
	}
}

// splitConnectErrno sorts an error the kernel reported for a dialed
// socket: a reset (ECONNRESET, or EPIPE once the peer's FIN had come) can
// only end a connection that was made; anything else failed the connect.
func splitConnectErrno(e unix.Errno) (failed, ended unix.Errno) {
	if e == unix.ECONNRESET || e == unix.EPIPE {
		return 0, e
	}
	return e, 0
}

// dialed is what a Read or Write (op) that returned n and err says while
// the conn has not been seen connected, or has a reset to tell.
func (c *TCPConn) dialed(op string, n int, err error) (int, error) {
	se, isErrno := err.(*os.SyscallError)
	if p := c.connErr.Load(); p != nil {
		if isErrno || err == io.EOF {
			return 0, *p // the kernel's answers after the failure
		}
		return n, err
	}
	switch {
	case c.dial.state.Load() == dialEnded:
		// ConnectError took the reset; the kernel says EOF or EPIPE now.
		if (err == io.EOF || isErrno && se.Err == unix.EPIPE) && c.dial.state.CompareAndSwap(dialEnded, dialConnected) {
			return 0, os.NewSyscallError(op, unix.Errno(c.dial.reset.Load()))
		}
		if err != nil && !errors.Is(err, ErrWouldBlock) {
			c.dial.state.CompareAndSwap(dialEnded, dialConnected)
		}
	case n > 0 || err == io.EOF || isErrno && (se.Err == unix.ECONNRESET || se.Err == unix.EPIPE):
		c.dial.state.CompareAndSwap(dialPending, dialConnected)
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
