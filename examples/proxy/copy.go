//go:build unix

package main

import (
	"errors"
	"fmt"

	"github.com/unipoll/unipoll/netloop"
)

// side is the Handler of one Conn of a pair in copy mode: what it reads
// goes to peer, through peer's write queue.
//
// Invariants, each kept on the Loop:
//  1. What one Conn reads is queued on the other (Data), and a Conn whose
//     queue passes its high-water mark pauses the Conn that fills it
//     (Pressure) until it drains: memory per pair is bounded by the two
//     write queues, whichever side is slow.
//  2. The end of one Conn's input is the end of the other's output
//     (ReadClosed -> CloseWrite), so a client's half-close reaches the
//     backend and the backend's answer still comes back. When both inputs
//     have ended, both Conns close once their queues are written.
//  3. A Conn that ends with an error (a reset, an idle timeout) aborts
//     the other, which netloop closes with a reset (SO_LINGER 0): its
//     peer sees an error, never a clean end of a truncated stream.
type side struct {
	p    *pair
	peer *netloop.Conn // nil until the dial connects
}

// Data queues in on the peer. A full queue takes nothing: the input
// stays with c, which the peer's Pressure has already paused, and is
// handed back when reading resumes. Input for a peer that has closed is
// dropped: the pair is ending (its Closed aborts c).
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

// Draining keeps the pair going during a drain, as pair.Draining.
func (s *side) Draining(c *netloop.Conn) {}

// Closed ends the peer too: with a reset if c ended with an error
// (invariant 3), after its queue otherwise; then counts c out.
func (s *side) Closed(c *netloop.Conn, err error) {
	switch {
	case s.peer == nil: // the dial has not connected
	case err != nil:
		// As netloop.Relay tells it: the peer hears why, as a relay's peer.
		s.peer.Abort(fmt.Errorf("%w: %w", netloop.ErrRelayPeer, err))
	default:
		s.peer.Close()
	}
	s.p.Closed(c, err)
}
