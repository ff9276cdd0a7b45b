//go:build unix

package main

import (
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
	"github.com/unipoll/unipoll/tokens"
)

// Tokens of the server's own sources. Connections take tokens from conns,
// a tokens.Table, whose tokens are all at least tokens.MinToken.
//
// conns is a table, not a map: an event costs an index into memory that
// stays hot, where a map costs a hash and a bucket that, with thousands of
// connections, is often not in cache (a profile at 1,000 connections put
// the map lookup at 0.6% of the server's CPU, a tenth of all its
// user-space time).
const (
	tokListener poll.Token = iota
	tokStop
	tokBackoff
)

// acceptBackoff is how long accepting pauses after the process ran out of
// descriptors (or accept failed otherwise): long enough for connections to
// finish and free some, short enough that clients barely notice.
const acceptBackoff = 100 * time.Millisecond

// readBufSize is the size of the one read buffer all connections share,
// and so the most a connection ever holds unsent.
const readBufSize = 64 << 10

// server is the echo server. Everything but Stop runs on the goroutine
// that calls Run.
type server struct {
	p     *poll.Poll
	ln    *socket.TCPListener
	conns tokens.Table[*conn]
	buf   []byte
	logf  func(format string, args ...any)

	stop       *poll.Registration
	stopSet    *poll.SetReadiness
	backoff    *poll.Registration
	backoffSet *poll.SetReadiness
	backoffs   int // how many times accept paused; read by tests after Run
}

// newServer listens on addr and registers the listener and the two
// Registrations. Nothing is accepted before Run.
func newServer(addr string, logf func(string, ...any)) (*server, error) {
	p, err := poll.New()
	if err != nil {
		return nil, err
	}
	s := &server{p: p, buf: make([]byte, readBufSize), logf: logf}
	s.stop, s.stopSet = poll.NewRegistration()
	s.backoff, s.backoffSet = poll.NewRegistration()
	if err := s.setup(addr); err != nil {
		return nil, errors.Join(err, s.shutdown())
	}
	return s, nil
}

func (s *server) setup(addr string) (err error) {
	if s.ln, err = socket.ListenTCP("tcp", addr); err != nil {
		return err
	}
	if err := s.p.Register(s.ln, tokListener, poll.Readable, poll.Edge); err != nil {
		return err
	}
	if err := s.p.Register(s.stop, tokStop, poll.Readable, poll.Edge); err != nil {
		return err
	}
	return s.p.Register(s.backoff, tokBackoff, poll.Readable, poll.Edge)
}

// Addr is the address the server listens on.
func (s *server) Addr() net.Addr { return s.ln.Addr() }

// Stop makes Run return. It may be called from any goroutine, any number
// of times, before, during or after Run: it only sets the stop
// Registration's readiness, which wakes the Poll.
func (s *server) Stop() { _ = s.stopSet.SetReadiness(poll.Readable) }

// Run serves until Stop, then closes every connection, the listener and
// the Poll, and returns nil. It returns an error only if the Poll fails.
func (s *server) Run() (err error) {
	defer func() { err = errors.Join(err, s.shutdown()) }()
	events := poll.NewEvents(256)
	for {
		if _, err := s.p.Poll(events, -1); err != nil {
			return fmt.Errorf("echo: poll: %w", err)
		}
		for ev := range events.All() {
			switch ev.Token {
			case tokStop:
				return nil
			case tokListener:
				s.acceptAll()
			case tokBackoff:
				s.resumeAccept()
			default:
				s.serve(ev.Token, ev.Ready)
			}
		}
	}
}

// acceptAll accepts until the listener would block: with edge triggering
// the next event comes only with the next new connection, so anything left
// in the queue now would wait for it.
func (s *server) acceptAll() {
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, socket.ErrWouldBlock) {
			return
		}
		if err != nil {
			s.pauseAccept(err)
			return
		}
		s.add(c)
	}
}

// pauseAccept handles a failed accept, typically EMFILE or ENFILE: the
// process (or system) is out of descriptors and the connection stays in the
// queue. Retrying at once would spin, and so would staying registered: the
// queue is still non-empty, and every new connection would bring us back
// here. So the listener is deregistered, and the back-off Registration is
// made ready after acceptBackoff by the Poll's own timing wheel (no timer
// goroutine); when it fires, resumeAccept registers the listener again.
// Other accept errors take the same path: logged every acceptBackoff
// rather than in a tight loop.
func (s *server) pauseAccept(err error) {
	s.backoffs++
	if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
		s.logf("echo: out of descriptors, pausing accept for %v (%d connections open)", acceptBackoff, s.conns.Len())
	} else {
		s.logf("echo: accept: %v; pausing accept for %v", err, acceptBackoff)
	}
	if err := s.p.Deregister(s.ln); err != nil {
		s.logf("echo: deregister listener: %v", err)
	}
	if err := s.backoffSet.DelayReadiness(poll.Readable, acceptBackoff); err != nil {
		s.logf("echo: delay: %v", err)
	}
}

// resumeAccept registers the listener again after a pause. Registering a
// source that is already ready reports it at the next Poll (rule 5 of the
// contract), so connections that queued up meanwhile are accepted then
// without waiting for a new one.
func (s *server) resumeAccept() {
	_ = s.backoffSet.UnsetReadiness(poll.Readable)
	if err := s.p.Register(s.ln, tokListener, poll.Readable, poll.Edge); err != nil &&
		!errors.Is(err, poll.ErrAlreadyRegistered) {
		s.logf("echo: register listener: %v", err)
	}
}

// add registers a new connection, once, for everything it will wait for:
// Readable, Writable and Hup, edge-triggered. An edge is reported once on
// every backend (poll(2) included, which emulates edges exactly), so an
// idle connection that stays writable costs nothing, and no Reregister is
// ever needed to switch between reading and writing.
func (s *server) add(c *socket.TCPConn) {
	// Echoes are small and answer the peer at once: no point in Nagle
	// holding them back.
	_ = c.SetNoDelay(true)
	tok, err := s.conns.Insert(&conn{sock: c})
	if err != nil {
		s.logf("echo: %s: %v", c.RemoteAddr(), err)
		_ = c.Close()
		return
	}
	if err := s.p.Register(c, tok, poll.Readable|poll.Writable|poll.Hup, poll.Edge); err != nil {
		s.logf("echo: register %s: %v", c.RemoteAddr(), err)
		s.conns.Remove(tok)
		_ = c.Close()
	}
}

// serve handles an event of a connection: conn.service tries both
// directions until they would block, so which kinds are ready matters only
// for Hup (see conn.service).
func (s *server) serve(tok poll.Token, ready poll.Ready) {
	c, ok := s.conns.Get(tok)
	if !ok {
		return // closed earlier in this batch of events
	}
	done, err := c.service(s.buf, ready.IsHup())
	if err != nil && !isDisconnect(err) {
		s.logf("echo: %s: %v", c.sock.RemoteAddr(), err)
	}
	if !done {
		return
	}
	s.conns.Remove(tok)
	// Close deregisters the conn first, so the Poll never reports this
	// token again.
	if err := c.sock.Close(); err != nil {
		s.logf("echo: close %s: %v", c.sock.RemoteAddr(), err)
	}
}

// isDisconnect reports the errors a peer causes by going away abruptly:
// part of normal life, not worth a log line.
func isDisconnect(err error) bool {
	return errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE)
}

// shutdown closes every connection, the listener, the Registrations and
// the Poll. Closing a registered socket deregisters it first, so the order
// is simply sources, then the Poll.
func (s *server) shutdown() error {
	var errs []error
	for tok, c := range s.conns.All() {
		errs = append(errs, c.sock.Close())
		s.conns.Remove(tok)
	}
	if s.ln != nil {
		errs = append(errs, ignoreClosed(s.ln.Close()))
	}
	errs = append(errs, ignoreClosed(s.stop.Close()), ignoreClosed(s.backoff.Close()))
	errs = append(errs, ignoreClosed(s.p.Close()))
	return errors.Join(errs...)
}

// ignoreClosed drops the error of closing something already closed, which
// makes shutdown safe to call twice.
func ignoreClosed(err error) error {
	if errors.Is(err, socket.ErrClosed) || errors.Is(err, poll.ErrClosed) {
		return nil
	}
	return err
}
