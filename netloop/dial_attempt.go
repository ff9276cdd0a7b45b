package netloop

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// A dial's connects, one address at a time: each is a source of the Loop
// (its socket, registered for Writable|Error|Hup) with a timeout on the
// wheel when more addresses wait. dial.go's invariants hold here too.

var _ eventloop.Remover = (*attempt)(nil)

// attempt is one connect of a dial on the Loop: the source of its socket.
type attempt struct {
	d   *dial
	s   *socket.TCPConn
	tok poll.Token
	// won: connected, so Removed hands s to a Conn. Atomic, not under
	// d.mu: Remove runs Removed at once when no Run is active, and the
	// dial calls Remove with d.mu held.
	won atomic.Bool
}

// next starts a connect to the next address that accepts one, and arms
// its timeout. d.mu is held. It returns the dial's failure when no
// address is left.
func (d *dial) next() error {
	for len(d.addrs) > 0 {
		now := time.Now()
		if !d.deadline.IsZero() && !now.Before(d.deadline) {
			return ErrDialTimeout
		}
		addr := d.addrs[0]
		d.addrs = d.addrs[1:]
		s, err := socket.DialTCP(d.network, addr)
		if err != nil {
			d.failed(err)
			if errors.Is(err, socket.ErrInvalidAddr) || errors.Is(err, socket.ErrInvalidNetwork) {
				return err
			}
			continue
		}
		a := &attempt{d: d, s: s}
		// With several workers a.Ready may run before Add returns; it
		// waits for d.mu, held here, and so sees a.tok.
		tok, err := d.l.Add(s, poll.Writable|poll.Error|poll.Hup, poll.Edge, a)
		if err != nil {
			_ = s.Close()
			if errors.Is(err, ErrClosed) {
				return err
			}
			d.failed(err)
			continue
		}
		a.tok = tok
		d.cur = a
		if !d.deadline.IsZero() && len(d.addrs) > 0 {
			d.armTimer(partialDeadline(now, d.deadline, len(d.addrs)+1), a)
		}
		return nil
	}
	return d.firstErr
}

// failed keeps the first attempt's failure. d.mu is held.
func (d *dial) failed(err error) {
	if d.firstErr == nil {
		d.firstErr = err
	}
}

// armTimer runs the timeout step at t, for attempt a (nil: the whole
// dial). d.mu is held.
func (d *dial) armTimer(t time.Time, a *attempt) {
	stop, err := d.l.AfterFunc(max(time.Until(t), 0), func(*eventloop.Loop) {
		d.step(func() error { return d.timedOut(a) })
	})
	if err == nil {
		d.stop = append(d.stop, stop)
	}
}

// timedOut is the step for a timeout: attempt a's share of the time (a
// later address goes on), or the whole dial's (a nil, or the last).
func (d *dial) timedOut(a *attempt) error {
	if a == nil {
		return ErrDialTimeout
	}
	if d.cur != a {
		return nil // it ended already
	}
	d.dropAttempt()
	d.failed(fmt.Errorf("connect to %s: %w", a.s.RemoteAddr(), ErrDialTimeout))
	return d.next()
}

// Ready is the connect's event: connected (hand the socket to a Conn),
// failed (try the next address), or a spurious event (wait on).
func (a *attempt) Ready(*eventloop.Loop, poll.Event) eventloop.Action {
	d := a.d
	d.mu.Lock()
	if d.cur != a || d.ended {
		d.mu.Unlock()
		return eventloop.Remove // superseded: Removed closes the socket
	}
	err := a.s.ConnectError()
	if errors.Is(err, socket.ErrWouldBlock) {
		d.mu.Unlock()
		return eventloop.Keep
	}
	d.cur = nil
	if err == nil {
		a.won.Store(true)
		d.end()
		d.mu.Unlock()
		return eventloop.Remove
	}
	d.failed(err)
	if err = d.next(); err != nil {
		d.end()
	}
	d.mu.Unlock()
	if err != nil {
		d.report(nil, err)
	}
	return eventloop.Remove
}

// Removed closes the socket, or makes a Conn of it if it connected: the
// Conn's first call reports it.
func (a *attempt) Removed(*eventloop.Loop, poll.Token) {
	if !a.won.Load() {
		_ = a.s.Close()
		return
	}
	if _, err := add(a.d.l, a.s, a.d.h, *a.d.cfg, a.d.report, a.d.host); err != nil {
		a.d.report(nil, err)
	}
}
