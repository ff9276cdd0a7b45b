package netloop

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// AcceptFunc receives a connection a Group's listener accepted, on the
// Loop it is to live on (typically it calls Add). It owns the connection.
type AcceptFunc func(l *eventloop.Loop, c *socket.TCPConn)

// ListenOption configures Group.ListenTCP.
type ListenOption func(*listenConfig)

type listenConfig struct {
	reusePort bool
}

// ReusePort gives every Loop its own listener on the address, with
// SO_REUSEPORT: the kernel spreads incoming connections among them, and
// each is accepted on the Loop it arrived at, with no hand-off. Without
// it, one listener on the first Loop accepts and hands connections to
// the Loops by the Group's Balance.
func ReusePort() ListenOption {
	return func(c *listenConfig) { c.reusePort = true }
}

// acceptBackoff is how long a listener pauses after accept failed (out of
// descriptors, typically): long enough for connections to finish and free
// some, short enough that clients barely notice.
const acceptBackoff = 100 * time.Millisecond

// listener is one listening socket on one Loop.
type listener struct {
	g      *Group
	l      *eventloop.Loop
	ln     *socket.TCPListener
	accept AcceptFunc
	tok    poll.Token
	own    bool // ReusePort: every Loop has its own listener; no hand-off

	// The pause after a failed accept: the listener is disarmed, and this
	// Registration, made ready by the Poll's timing wheel after
	// acceptBackoff, re-arms it.
	backoff    *poll.Registration
	backoffSet *poll.SetReadiness
}

// ListenTCP listens on addr ("host:port"; port 0 picks a free one) and
// hands every connection accepted there to accept, on the Loop chosen by
// the Group's Balance (or, with ReusePort, on the Loop whose listener the
// kernel chose). It returns the address listened on. The listeners are
// closed with the Group.
func (g *Group) ListenTCP(network, addr string, accept AcceptFunc, opts ...ListenOption) (net.Addr, error) {
	if g == nil || len(g.loops) == 0 {
		return nil, errZeroGroup
	}
	if accept == nil {
		return nil, fmt.Errorf("%w: netloop: ListenTCP needs an AcceptFunc", ErrInvalidArgument)
	}
	var c listenConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if !c.reusePort {
		ln, err := socket.ListenTCP(network, addr)
		if err != nil {
			return nil, err
		}
		if err := g.serve(g.loops[0], ln, accept, false); err != nil {
			return nil, err
		}
		return ln.Addr(), nil
	}
	var bound net.Addr
	for _, l := range g.loops {
		a := addr
		if bound != nil { // port 0 picked one: the others take the same
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			a = net.JoinHostPort(host, strconv.Itoa(bound.(*net.TCPAddr).Port))
		}
		ln, err := socket.ListenTCP(network, a, socket.WithReusePort())
		if err != nil {
			return nil, err
		}
		if err := g.serve(l, ln, accept, true); err != nil {
			return nil, err
		}
		if bound == nil {
			bound = ln.Addr()
		}
	}
	return bound, nil
}

// serve puts a listener on l. On error the listener is closed.
func (g *Group) serve(l *eventloop.Loop, ln *socket.TCPListener, accept AcceptFunc, own bool) error {
	s := &listener{g: g, l: l, ln: ln, accept: accept, own: own}
	s.backoff, s.backoffSet = poll.NewRegistration()
	tok, err := l.Add(ln, poll.Readable, poll.Edge, s)
	if err != nil {
		_ = ln.Close()
		_ = s.backoff.Close()
		return err
	}
	s.tok = tok
	if _, err := l.Add(s.backoff, poll.Readable, poll.Edge, eventloop.SourceFunc(s.resume)); err != nil {
		return errors.Join(err, l.Remove(tok))
	}
	return nil
}

// Ready accepts until the listener would block: under Edge the next event
// comes only with a new connection.
func (s *listener) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, socket.ErrWouldBlock) {
			return eventloop.Keep
		}
		if err != nil {
			return s.pause()
		}
		s.handOff(c)
	}
}

// handOff gives a connection to the Loop the Group picks.
func (s *listener) handOff(c *socket.TCPConn) {
	g := s.g
	if len(g.loops) == 1 || s.own {
		s.accept(s.l, c)
		return
	}
	i := g.pick()
	to := g.loops[i]
	if to == s.l {
		g.pending[i].Add(-1)
		s.accept(to, c)
		return
	}
	if err := to.Post(func(l *eventloop.Loop) {
		g.pending[i].Add(-1)
		s.accept(l, c)
	}); err != nil {
		g.pending[i].Add(-1)
		_ = c.Close()
	}
}

// pause handles a failed accept, typically EMFILE or ENFILE: the
// connection stays queued, so retrying at once, or staying armed, would
// spin. The listener is disarmed and re-armed after acceptBackoff by the
// Poll's own timing wheel; re-arming reports it at once if connections
// queued up meanwhile.
func (s *listener) pause() eventloop.Action {
	s.g.pauses.Add(1)
	if err := s.backoffSet.DelayReadiness(poll.Readable, acceptBackoff); err != nil {
		return eventloop.Keep
	}
	return eventloop.Disarm
}

// resume is the backoff Registration's handler.
func (s *listener) resume(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	_ = s.backoffSet.UnsetReadiness(poll.Readable)
	_ = l.Rearm(s.tok) // fails only if the listener was removed
	return eventloop.Keep
}

// Removed closes the listener and its backoff Registration.
func (s *listener) Removed(l *eventloop.Loop, t poll.Token) {
	_ = s.ln.Close()
	_ = s.backoff.Close()
}
