package netloop

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// A dial is a small state machine whose steps run on its Loop: the end of
// a name's resolution (posted by the goroutine that resolved it), a
// connect's event (the attempt's Ready), the attempt's timeout (a
// Loop.AfterFunc on the Poll's timing wheel) and the context's end (a
// context.AfterFunc that posts). Only Dial itself runs a step elsewhere:
// the first connect of an IP literal, on the caller's goroutine.
//
// Invariants:
//
//  1. done runs once, on the Loop, through report: whoever takes the dial
//     out of its Loop's dialSet calls it. That is the step that ends the
//     dial with an error, the Conn's first call (or its removal before
//     that) after a connect, or the sweep of a Loop that is closing
//     (dial_set.go), whichever comes first.
//  2. d.mu guards the dial's state: with several workers, a timer, a
//     posted function and an attempt's Ready may run at once. Lock order:
//     d.mu, then the dialSet's mu. done never runs under d.mu.
//  3. Once ended is set no step changes anything: the attempt on the Loop
//     is being removed, the timer and the context's watch are stopped,
//     the resolution is cancelled.
//  4. A socket on the Loop is closed by its attempt's Removed only (after
//     the Loop's last call for it), or handed to a Conn there if it
//     connected: closing it earlier could hand its descriptor number to
//     another socket while a call for the old one still runs. Removed
//     takes no lock of the dial's: Loop.Remove, which steps call with
//     d.mu held, runs it at once when no Run is active.

// Dialer opens outbound connections from a Loop: Dial's done hears, once
// and on the Loop, either a live Conn or why there is none. The zero
// Dialer has no timeout of its own (the context's deadline, or the
// system's connect timeout, minutes), resolves names with
// net.DefaultResolver and gives its Conns the default Config.
type Dialer struct {
	// Timeout bounds the whole dial: resolution and every connect
	// attempt. When a name resolves to several addresses the time left is
	// shared among the attempts as net.Dialer shares it: each gets an
	// equal part of what is left, but at least 2 s (or all that is left).
	// A context deadline that comes first bounds the dial too. 0: no
	// timeout of the Dialer's.
	Timeout time.Duration
	// Resolver looks up host and service names, off the Loop, in a
	// goroutine of the dial's. nil: net.DefaultResolver. IP literals and
	// port numbers need no lookup and start no goroutine.
	Resolver *net.Resolver
	// Config is the Conn's.
	Config Config
}

// ErrDialTimeout is the failure of a dial that did not connect in time
// (Dialer.Timeout, or the context's deadline). It also matches
// os.ErrDeadlineExceeded, as net.Dialer's timeout does, and is a
// net.Error whose Timeout is true.
var ErrDialTimeout error = dialTimeoutError{}

type dialTimeoutError struct{}

func (dialTimeoutError) Error() string        { return "unipoll: netloop: dial timed out" }
func (dialTimeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }
func (dialTimeoutError) Timeout() bool        { return true }
func (dialTimeoutError) Temporary() bool      { return true }

// Dial dials address on network with the zero Dialer but for cfg: see
// Dialer.Dial.
func Dial(ctx context.Context, l *eventloop.Loop, network, address string, h Handler, cfg Config, done func(c *Conn, err error)) error {
	d := Dialer{Config: cfg}
	return d.Dial(ctx, l, network, address, h, done)
}

// Dial connects to address on network ("tcp", "tcp4", "tcp6": "host:port";
// "unix": the socket file's path) from l, and calls done once, on l,
// with how it went. Safe from any goroutine, also from a handler of l.
//
// On success c is a live Conn with handler h: done runs at the start of
// its first call, so h hears nothing before done returns, and done may
// use c as its handler would (Write, Close, c.User). On failure c is nil
// and err says why, wrapped with what was dialed; match it with
// errors.Is:
//
//   - refused: syscall.ECONNREFUSED (unix.ECONNREFUSED).
//   - timed out (Timeout or ctx's deadline): ErrDialTimeout, which also
//     matches os.ErrDeadlineExceeded (and context.DeadlineExceeded when
//     it was ctx's).
//   - cancelled: context.Canceled, and ctx's cause if it has another.
//   - unreachable: syscall.EHOSTUNREACH, ENETUNREACH.
//   - a name that does not resolve: the resolver's *net.DNSError (use
//     errors.As).
//   - the Loop closed before the dial ended: ErrClosed.
//
// A host name is resolved off the Loop (see Dialer.Resolver), and its
// addresses are tried one after another, in the resolver's order, until
// one connects; the error is then the first address's, as with
// net.Dialer. Unlike net.Dialer, IPv4 and IPv6 are not raced against
// each other ("Happy Eyeballs"): with "tcp", a family that black-holes
// connects costs its share of Timeout before the next address is tried.
// A Unix-domain connect completes at once or fails (socket.DialUnix).
// Once connected, ctx no longer matters.
//
// With Config.TLS the Conn is a TLS client: done runs once its handshake
// is done (c.ConnectionState is then known), or hears the handshake's
// failure (a certificate that does not verify: errors.As a
// *tls.CertificateVerificationError) or ErrHandshakeTimeout, which
// Config.HandshakeTimeout bounds, not Timeout.
//
// Dial returns an error, and done is never called, when the dial cannot
// start: a nil or zero Loop, nil ctx, h or done, an unknown network, a
// malformed address, a Config out of range or one whose TLS would
// renegotiate (ErrInvalidArgument), or a closed Loop (ErrClosed).
func (dr *Dialer) Dial(ctx context.Context, l *eventloop.Loop, network, address string, h Handler, done func(c *Conn, err error)) error {
	d, host, port, err := dr.newDial(ctx, l, network, address, h, done)
	if err != nil {
		return err
	}
	if err := d.set.add(l, d); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ctx.Err() != nil {
		d.end()
		d.post(cancelError(ctx))
		return nil
	}
	if ctx.Done() != nil {
		// If ctx has already ended, this posts the cancel at once.
		d.stopCtx = context.AfterFunc(ctx, func() { _ = l.Post(d.cancelled) })
	}
	if network == "unix" {
		d.dialUnix()
		return nil
	}
	if !d.deadline.IsZero() {
		d.armTimer(d.deadline, nil)
	}
	if !isLiteral(host, port) {
		d.startResolve(dr.Resolver, host, port)
		return nil
	}
	d.addrs = []string{address}
	if err := d.next(); err != nil {
		d.end()
		d.post(err) // not on the Loop here: report there
	}
	return nil
}

// dial is one Dial in progress.
type dial struct {
	l                *eventloop.Loop
	set              *dialSet
	ctx              context.Context
	network, address string
	host             string // the address's host, a TLS client's default ServerName
	h                Handler
	cfg              *Config // interned (loopState.intern): the dial is garbage once done, a copy would be too
	done             func(*Conn, error)
	deadline         time.Time // of the whole dial; zero: none

	mu       sync.Mutex
	ended    bool     // invariant 3
	addrs    []string // "ip:port" not yet tried
	firstErr error    // the first attempt's failure
	cur      *attempt // the connect on the Loop, if any
	stop     []func() bool
	stopCtx  func() bool
	unresolv context.CancelFunc // cancels the resolution
}

// newDial checks Dial's arguments and makes the dial.
func (dr *Dialer) newDial(ctx context.Context, l *eventloop.Loop, network, address string, h Handler, done func(*Conn, error)) (d *dial, host, port string, err error) {
	if dr == nil || l == nil || l.Poll() == nil || ctx == nil || h == nil || done == nil {
		return nil, "", "", fmt.Errorf("%w: netloop: Dial needs a Dialer, a Loop, a context, a Handler and a done function", ErrInvalidArgument)
	}
	if f, ok := h.(HandlerFunc); ok && f == nil {
		return nil, "", "", fmt.Errorf("%w: netloop: Dial with a nil HandlerFunc", ErrInvalidArgument)
	}
	if dr.Timeout < 0 {
		return nil, "", "", fmt.Errorf("%w: netloop: negative Dialer.Timeout %v", ErrInvalidArgument, dr.Timeout)
	}
	cfg, err := dr.Config.withDefaults()
	if err != nil {
		return nil, "", "", err
	}
	if cfg.TLS != nil && cfg.TLS.Renegotiation != tls.RenegotiateNever {
		// The server's HelloRequest would start a handshake inside a
		// Conn's call, which crypto/tls runs as if its reads blocked.
		return nil, "", "", fmt.Errorf("%w: netloop: Dial with Config.TLS.Renegotiation %d (only tls.RenegotiateNever)", ErrInvalidArgument, cfg.TLS.Renegotiation)
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
		if host, port, err = net.SplitHostPort(address); err != nil || port == "" {
			return nil, "", "", fmt.Errorf("%w: netloop: Dial %s %q: want host:port", ErrInvalidArgument, network, address)
		}
	case "unix":
		if address == "" {
			return nil, "", "", fmt.Errorf("%w: netloop: Dial unix with no path", ErrInvalidArgument)
		}
	default:
		return nil, "", "", fmt.Errorf("%w: netloop: Dial on network %q (want tcp, tcp4, tcp6 or unix)", ErrInvalidArgument, network)
	}
	d = &dial{l: l, set: dialsOf(l), ctx: ctx, network: network, address: address, host: host, h: h, cfg: stateOf(l).intern(cfg), done: done}
	if dr.Timeout > 0 {
		d.deadline = time.Now().Add(dr.Timeout)
	}
	if t, ok := ctx.Deadline(); ok && (d.deadline.IsZero() || t.Before(d.deadline)) {
		d.deadline = t
	}
	return d, host, port, nil
}

// wrap says what was dialed.
func (d *dial) wrap(err error) error {
	return fmt.Errorf("netloop: dial %s %s: %w", d.network, d.address, err)
}

// step runs f on the Loop under d.mu unless the dial has ended; an error
// from f ends it with that error (wrapped), reported after the unlock.
func (d *dial) step(f func() error) {
	d.mu.Lock()
	var err error
	if !d.ended {
		if err = f(); err != nil {
			d.end()
		}
	}
	d.mu.Unlock()
	if err != nil {
		d.report(nil, err)
	}
}

// report calls done if this call takes the dial out of its set
// (invariant 1). A Conn nobody may have any more is closed.
func (d *dial) report(c *Conn, err error) {
	if !d.set.remove(d) {
		if c != nil {
			c.Abort(ErrClosed)
		}
		return
	}
	defer d.set.reported()
	if err != nil {
		err = d.wrap(err)
	}
	d.done(c, err)
}

// post reports err from off the Loop. If the Loop is closed, or closes
// before the function runs, the sweep reports ErrClosed instead.
func (d *dial) post(err error) {
	_ = d.l.Post(func(*eventloop.Loop) { d.report(nil, err) })
}

// end ends the dial (invariant 3). d.mu is held.
func (d *dial) end() {
	d.ended = true
	d.dropAttempt()
	for _, stop := range d.stop {
		stop()
	}
	d.stop = nil
	if d.stopCtx != nil {
		d.stopCtx()
	}
	if d.unresolv != nil {
		d.unresolv()
	}
}

// dropAttempt takes the current connect off the Loop; its Removed closes
// the socket. d.mu is held.
func (d *dial) dropAttempt() {
	if a := d.cur; a != nil {
		d.cur = nil
		_ = d.l.Remove(a.tok)
	}
}

// cancelled is the step for ctx's end.
func (d *dial) cancelled(*eventloop.Loop) {
	d.step(func() error { return cancelError(d.ctx) })
}

// cancelError is why a dial whose ctx ended failed: ErrDialTimeout for a
// deadline, ctx's error (and cause) otherwise.
func cancelError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && cause == err:
		return fmt.Errorf("%w (%w)", ErrDialTimeout, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (%w: %w)", ErrDialTimeout, err, cause)
	case cause != nil && cause != err:
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// dialUnix connects at once (a Unix-domain connect does not wait) and
// hands the conn over. d.mu is held; not on the Loop.
func (d *dial) dialUnix() {
	s, err := socket.DialUnix(d.address)
	if err != nil {
		d.end()
		d.post(err)
		return
	}
	d.end()
	if _, err := add(d.l, s, d.h, *d.cfg, d.report, d.host); err != nil {
		d.post(err)
	}
}

// dialClosedError is what a dial's Conn removed before its first call
// tells done: what removed it, or ErrClosed (its Loop closed).
func dialClosedError(err error) error {
	if err == nil {
		return ErrClosed
	}
	return err
}
