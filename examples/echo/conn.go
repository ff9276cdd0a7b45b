//go:build unix

package main

import (
	"errors"
	"io"

	"github.com/unipoll/unipoll/socket"
)

// conn is one client connection. It is registered once for Readable,
// Writable and Hup, edge-triggered, and never reregistered: each event
// starts a pass that moves bytes until the socket would block in the
// direction that matters (see service).
//
// Invariant: out holds bytes only while the socket's send buffer is full.
// The connection reads only when out is empty, so out never holds more
// than one read buffer, and a client that stops reading its echoes stops
// being read from: its own sends then block, which is the backpressure an
// echo server should give.
type conn struct {
	sock *socket.TCPConn
	out  []byte // echo not yet written, out[off:]
	off  int
	eof  bool // the peer has finished sending; close once out is flushed
}

// service moves bytes after an event and reports whether the connection is
// finished (the peer's EOF has been echoed in full, or an error occurred).
//
// A pass ends when the socket would block, and also at a short read: a
// stream socket that returns less than was asked for was drained at that
// moment, and whatever arrives later is a new edge (the socket package
// re-arms the registration where the backend needs it). That saves the
// read that would only have said EAGAIN: one read per message, not two.
// The exception is an event that reports Hup: the peer's end of stream is
// already there and makes no new edge, so the pass reads on to EOF.
func (c *conn) service(buf []byte, hup bool) (done bool, err error) {
	for {
		if c.off < len(c.out) {
			n, err := c.sock.Write(c.out[c.off:])
			c.off += n
			if errors.Is(err, socket.ErrWouldBlock) {
				return false, nil // a Writable event will bring us back
			}
			if err != nil {
				return true, err
			}
			c.out, c.off = c.out[:0], 0
		}
		if c.eof {
			return true, nil
		}
		n, err := c.sock.Read(buf)
		switch {
		case err == nil:
			// Try to echo straight from the read buffer; keep only what
			// the socket does not take.
			m, werr := c.sock.Write(buf[:n])
			if errors.Is(werr, socket.ErrWouldBlock) {
				c.out, c.off = append(c.out[:0], buf[m:n]...), 0
				return false, nil // a Writable event will bring us back
			}
			if werr != nil {
				return true, werr
			}
			if n < len(buf) && !hup {
				return false, nil // drained: a Readable event will bring us back
			}
		case errors.Is(err, socket.ErrWouldBlock):
			return false, nil // a Readable event will bring us back
		case errors.Is(err, io.EOF):
			c.eof = true // loop: flush what is left, then finish
		default:
			return true, err
		}
	}
}
