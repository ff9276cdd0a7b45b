//go:build unix

package main

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// errConnectTimeout ends a pair whose backend did not answer within
// -connect-timeout.
var errConnectTimeout = errors.New("proxy: connect to the backend timed out")

// A pair is one client and the backend connection dialed for it, both
// Conns on the client's Loop. That Loop has one worker, so the handlers
// of both Conns run one at a time, and each may call the other Conn's
// methods directly: no lock, no Async.
//
// Invariants, each kept on the Loop:
//  1. What one Conn reads is queued on the other (side.Data), and a Conn
//     whose queue passes its high-water mark pauses the Conn that fills
//     it (side.Pressure) until it drains: memory per pair is bounded by
//     the two write queues, whichever side is slow.
//  2. The end of one Conn's input is the end of the other's output
//     (side.ReadClosed -> CloseWrite), so a client's half-close reaches
//     the backend and the backend's answer still comes back. When both
//     inputs have ended, both Conns close once their queues are written.
//  3. A Conn that ends with an error (a reset, a failed or timed-out
//     connect, an idle timeout) resets the other (pair.reset): the peer
//     sees an error, never a clean end of a truncated stream.
type pair struct {
	px                  *proxy
	client, backend     *netloop.Conn
	ends                int         // Conns whose input has ended (invariant 2)
	open                int         // Conns not yet closed
	cancelConnect       func() bool // the connect timeout's timer
	toBackend, toClient side
}

// side is the Handler of one Conn of a pair: what it reads goes to peer.
type side struct {
	p    *pair
	peer *netloop.Conn
}

// Data queues in on the peer. A full queue takes nothing: the input
// stays with c, which the peer's Pressure has already paused, and is
// handed back when reading resumes. Input for a peer that has closed is
// dropped: the pair is ending (its Closed resets c).
func (s *side) Data(c *netloop.Conn, in []byte) int {
	if _, err := s.peer.Write(in); err != nil {
		if errors.Is(err, netloop.ErrClosed) {
			return len(in)
		}
		return 0
	}
	return len(in)
}

// Pressure pauses the peer while c has too much of its input queued
// (invariant 1).
func (s *side) Pressure(c *netloop.Conn, high bool) {
	if high {
		s.peer.PauseRead()
	} else {
		s.peer.ResumeRead()
	}
}

// ReadClosed forwards the end of c's input to the peer, and closes the
// pair once both inputs have ended (invariant 2).
func (s *side) ReadClosed(c *netloop.Conn) {
	s.peer.CloseWrite()
	s.p.ends++
	if s.p.ends == 2 {
		c.Close()
		s.peer.Close()
	}
}

// Draining keeps the pair going during a drain (Group.Shutdown): it ends
// when its client and backend are done, or at the drain's deadline.
func (s *side) Draining(c *netloop.Conn) {}

// Closed ends the peer too: with a reset if c ended with an error
// (invariant 3), after its queue otherwise.
func (s *side) Closed(c *netloop.Conn, err error) {
	p := s.p
	switch {
	case s.peer == nil: // the client's Add failed (proxy.accept)
	case err != nil:
		if s.peer == p.client && !errors.Is(err, unix.ECONNRESET) && !errors.Is(err, unix.EPIPE) {
			p.px.logf("proxy: backend %s for %s: %v", p.px.cfg.backend, addrOf(p.client), err)
		}
		reset(s.peer, err)
	default:
		s.peer.Close()
	}
	p.open--
	if p.open == 0 {
		p.cancelConnect()
		p.px.pairDone()
	}
}

// reset closes c at once with err, its queued output dropped, and makes
// its peer see a reset (SO_LINGER 0) rather than a clean end of stream.
func reset(c *netloop.Conn, err error) {
	if c.Closed() {
		return
	}
	if tc, ok := c.Stream().(*socket.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Abort(err)
}

// connectDue runs -connect-timeout after the dial: a backend Conn whose
// connect is still in progress is reset, and with it the client.
func (p *pair) connectDue(*eventloop.Loop) {
	if p.backend.Closed() {
		return
	}
	tc := p.backend.Stream().(*socket.TCPConn)
	if errors.Is(tc.ConnectError(), socket.ErrWouldBlock) {
		reset(p.backend, errConnectTimeout)
	}
}

// addrOf is c's remote address, for the log.
func addrOf(c *netloop.Conn) string {
	if tc, ok := c.Stream().(*socket.TCPConn); ok && tc.RemoteAddr() != nil {
		return tc.RemoteAddr().String()
	}
	return "?"
}
