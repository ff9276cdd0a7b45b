package netloop

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// AcceptFunc receives a connection a Group's TCP listener accepted, on
// the Loop it is to live on (typically it calls Add). It owns the
// connection.
type AcceptFunc func(l *eventloop.Loop, c *socket.TCPConn)

// ListenOption configures Group.ListenTCP and Group.ListenUDP.
type ListenOption func(*listenConfig)

type listenConfig struct {
	reusePort bool
}

// ReusePort gives every Loop its own socket on the address, with
// SO_REUSEPORT: the kernel spreads incoming connections (or, for UDP, the
// senders) among them, and each is served on the Loop it arrived at, with
// no hand-off. Without it, one socket on the first Loop serves the
// address, and a TCP listener hands connections to the Loops by the
// Group's Balance.
func ReusePort() ListenOption {
	return func(c *listenConfig) { c.reusePort = true }
}

func newListenConfig(opts []ListenOption) listenConfig {
	var c listenConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// Listener is a Group's sockets on one address: a listener (TCP, Unix) or
// a bound datagram socket (UDP), one on the first Loop, or with ReusePort
// one per Loop. Close it on its own, or with the Group (Group.Shutdown
// closes every Listener first; Group.Close closes everything). Its
// methods are safe from any goroutine.
type Listener struct {
	g      *Group
	addr   net.Addr
	parts  []listenPart
	closed atomic.Bool
}

// listenPart is one socket of a Listener, on one Loop.
type listenPart interface {
	// close closes the socket at once (from then on a TCP or Unix client
	// is refused) and takes it off its Loop.
	close() error
}

// Addr is the address listened on: with port 0, the port picked.
func (ln *Listener) Addr() net.Addr {
	if ln == nil {
		return nil
	}
	return ln.addr
}

// Close closes the Listener's sockets at once, on every Loop: connecting
// clients are refused from then on (datagrams are no longer received).
// Connections accepted before stay open, and those being handed to their
// Loop still arrive. Closing twice returns an error matching ErrClosed.
func (ln *Listener) Close() error {
	if ln == nil || ln.g == nil {
		return fmt.Errorf("%w: nil or zero netloop.Listener (Group.ListenTCP, ListenUnix and ListenUDP make them)", ErrInvalidArgument)
	}
	if ln.closed.Swap(true) {
		return fmt.Errorf("netloop: close listener %v: %w", ln.addr, ErrClosed)
	}
	ln.g.forget(ln)
	return ln.closeParts()
}

func (ln *Listener) closeParts() error {
	var errs []error
	for _, p := range ln.parts {
		errs = append(errs, p.close())
	}
	return errors.Join(errs...)
}

// ListenTCP listens on addr ("host:port" with an IP literal; port 0 picks
// a free one) and hands every connection accepted there to accept, on the
// Loop chosen by the Group's Balance (or, with ReusePort, on the Loop
// whose listener the kernel chose). network is "tcp", "tcp4" or "tcp6";
// another is refused with an error matching ErrInvalidArgument. Close
// the Listener to stop listening; Group.Shutdown and Close close it too.
func (g *Group) ListenTCP(network, addr string, accept AcceptFunc, opts ...ListenOption) (*Listener, error) {
	if g == nil || len(g.loops) == 0 {
		return nil, errZeroGroup
	}
	if accept == nil {
		return nil, fmt.Errorf("%w: netloop: ListenTCP needs an AcceptFunc", ErrInvalidArgument)
	}
	c := newListenConfig(opts)
	ln := &Listener{g: g}
	loops := g.loops[:1]
	if c.reusePort {
		loops = g.loops
	}
	for _, l := range loops {
		a := addr
		if ln.addr != nil { // port 0 picked one: the others take the same
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, errors.Join(err, ln.closeParts())
			}
			a = net.JoinHostPort(host, strconv.Itoa(ln.addr.(*net.TCPAddr).Port))
		}
		var sopts []socket.ListenOption
		if c.reusePort {
			sopts = append(sopts, socket.WithReusePort())
		}
		s, err := socket.ListenTCP(network, a, sopts...)
		if err != nil {
			return nil, errors.Join(invalidNetwork(err), ln.closeParts())
		}
		p, err := serveStream(g, l, s, accept, c.reusePort)
		if err != nil {
			return nil, errors.Join(err, ln.closeParts())
		}
		ln.parts = append(ln.parts, p)
		if ln.addr == nil {
			ln.addr = s.Addr()
		}
	}
	return g.keep(ln)
}

// invalidNetwork makes socket's refusal of a network name match
// ErrInvalidArgument too.
func invalidNetwork(err error) error {
	if errors.Is(err, socket.ErrInvalidNetwork) {
		return fmt.Errorf("%w: netloop: %w", ErrInvalidArgument, err)
	}
	return err
}
