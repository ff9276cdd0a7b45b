package netloop

import (
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// acceptBackoff is how long a listener pauses after accept failed (out of
// descriptors, typically): long enough for connections to finish and free
// some, short enough that clients barely notice.
const acceptBackoff = 100 * time.Millisecond

// acceptor is a listening socket of package socket: *socket.TCPListener,
// *socket.UnixListener.
type acceptor[C any] interface {
	poll.Evented
	Accept() (C, error)
	Addr() net.Addr
	Fd() int
	Close() error
}

// streamListener is one listening socket on one Loop, the Loop's source
// for it. Its Ready runs on the Loop; close runs on any goroutine, and
// only sets closed, removes the source and closes the socket, which are
// safe there (eventloop.Loop.Remove, and the socket's methods, are).
type streamListener[C interface{ Close() error }] struct {
	g      *Group
	l      *eventloop.Loop
	ln     acceptor[C]
	accept func(*eventloop.Loop, C)
	tok    poll.Token
	own    bool // ReusePort: every Loop has its own listener; no hand-off
	closed atomic.Bool

	// The pause after a failed accept: the listener is disarmed, and this
	// Registration, made ready by the Poll's timing wheel after
	// acceptBackoff, re-arms it.
	backoff    *poll.Registration
	backoffSet *poll.SetReadiness
	backoffTok poll.Token
}

// serveStream puts a listener on l. On error the listener is closed.
func serveStream[C interface{ Close() error }](g *Group, l *eventloop.Loop, ln acceptor[C],
	accept func(*eventloop.Loop, C), own bool) (*streamListener[C], error) {
	s := &streamListener[C]{g: g, l: l, ln: ln, accept: accept, own: own}
	s.backoff, s.backoffSet = poll.NewRegistration()
	tok, err := l.Add(ln, poll.Readable, poll.Edge, s)
	if err != nil {
		return nil, errors.Join(err, ln.Close(), s.backoff.Close())
	}
	s.tok = tok
	if s.backoffTok, err = l.Add(s.backoff, poll.Readable, poll.Edge, eventloop.SourceFunc(s.resume)); err != nil {
		return nil, errors.Join(err, l.Remove(tok))
	}
	return s, nil
}

// Ready accepts until the listener would block: under Edge the next event
// comes only with a new connection.
func (s *streamListener[C]) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, socket.ErrWouldBlock) {
			return eventloop.Keep
		}
		if err != nil {
			if s.closed.Load() {
				return eventloop.Keep // closed under this call: its removal is under way
			}
			return s.pause(err)
		}
		s.handOff(c)
	}
}

// handOff gives a connection to the Loop the Group picks.
func (s *streamListener[C]) handOff(c C) {
	g := s.g
	if len(g.loops) == 1 || s.own {
		s.accept(s.l, c)
		return
	}
	i := g.pick()
	to := g.loops[i]
	if to == s.l {
		s.accept(to, c)
		g.pending[i].Add(-1)
		return
	}
	if err := to.Post(func(l *eventloop.Loop) {
		defer g.pending[i].Add(-1) // after accept has added it: a drain sees it pending, then added
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
func (s *streamListener[C]) pause(err error) eventloop.Action {
	s.g.pauses.Add(1)
	msg := "netloop: accept failed"
	if outOfDescriptors(err) {
		msg = "netloop: out of descriptors, accept paused"
	}
	logIfSet(s.g.log, slog.LevelWarn, msg, "err", err, "local", s.ln.Addr(), "backoff", acceptBackoff)
	if err := s.backoffSet.DelayReadiness(poll.Readable, acceptBackoff); err != nil {
		return eventloop.Keep
	}
	return eventloop.Disarm
}

// outOfDescriptors reports an accept that failed for want of descriptors
// or kernel memory, which the back-off waits out.
func outOfDescriptors(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) ||
		errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM)
}

// resume is the backoff Registration's handler.
func (s *streamListener[C]) resume(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	_ = s.backoffSet.UnsetReadiness(poll.Readable)
	_ = l.Rearm(s.tok) // fails only if the listener was removed
	return eventloop.Keep
}

// Removed closes the listener and its backoff Registration.
func (s *streamListener[C]) Removed(l *eventloop.Loop, t poll.Token) {
	_ = s.ln.Close()
	_ = l.Remove(s.backoffTok)
	_ = s.backoff.Close()
}

// close closes the socket now, so that clients are refused at once, not
// when the Loop gets to the removal; Removed's Close then finds it closed.
//
// Closing the descriptor is not enough with a poll(2) backend: the kernel
// holds a reference to every file a poll waits on, so the socket listens
// on until that poll returns (the removal nudges it, but the caller's
// next connect can come first). On Linux, shutting a listening socket
// down takes it out of the listening state at once, whoever holds the
// file; elsewhere shutdown fails (ENOTCONN) and changes nothing. It comes
// before Remove, while nothing else closes the descriptor.
func (s *streamListener[C]) close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if fd := s.ln.Fd(); fd >= 0 {
		_ = unix.Shutdown(fd, unix.SHUT_RD)
	}
	err := s.l.Remove(s.tok)
	if errors.Is(err, eventloop.ErrUnknownToken) || errors.Is(err, ErrClosed) {
		err = nil // removed with its Loop's Close
	}
	return errors.Join(err, ignoreClosed(s.ln.Close()))
}
