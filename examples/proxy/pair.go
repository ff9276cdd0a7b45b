//go:build unix

package main

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// A pair is one client and the backend connection dialed for it, both
// Conns on the client's Loop. The client is added paused: what it sends
// waits in its socket until the dial ends. A dial that fails or times out
// resets the client; one that connects starts the relay, in one of two
// ways (-mode):
//
//   - relay (the default): netloop.Relay moves the bytes, with splice(2)
//     on Linux, and keeps back pressure, half-closes and resets itself;
//     the pair is the Handler of both Conns and only counts them out.
//   - copy: each Conn's handler writes what it reads to the other Conn
//     (copy.go): the ordinary way, through the Conns' buffers.
//
// The pair's state is touched only by its Conns' handlers and the dial's
// done, all on the one Loop (one worker): no lock.
type pair struct {
	px              *proxy
	client, backend *netloop.Conn
	dialing         bool // the backend's dial has not ended
	open            int  // the pair's Conns not yet closed

	// copy mode (copy.go)
	ends                int // Conns whose input has ended
	toBackend, toClient side
}

// newPair makes the pair of a client about to be added.
func newPair(px *proxy) *pair {
	p := &pair{px: px, open: 1, dialing: true}
	p.toBackend.p, p.toClient.p = p, p
	return p
}

// clientHandler and backendHandler are the Handlers of the pair's Conns.
func (p *pair) clientHandler() netloop.Handler {
	if p.px.cfg.copy {
		return &p.toBackend
	}
	return p
}

func (p *pair) backendHandler() netloop.Handler {
	if p.px.cfg.copy {
		return &p.toClient
	}
	return p
}

// dialed is the backend dial's end, on the Loop.
func (p *pair) dialed(b *netloop.Conn, err error) {
	p.dialing = false
	if err != nil {
		p.px.logf("proxy: backend %s for %s: %v", p.px.cfg.backend, addrOf(p.client), err)
		// Abort resets (SO_LINGER 0): the client does not take the
		// backend's failure for an empty answer. Logged once, here.
		p.client.Abort(fmt.Errorf("%w: %w", netloop.ErrRelayPeer, err))
		p.ended()
		return
	}
	p.backend, p.open = b, p.open+1
	if tc, ok := b.Stream().(*socket.TCPConn); ok {
		// Small messages go on at once: the proxy adds no delay of its own.
		_ = tc.SetNoDelay(true)
	}
	if p.client.Closed() {
		b.Abort(netloop.ErrClosed)
		return
	}
	p.toBackend.peer, p.toClient.peer = b, p.client
	p.client.ResumeRead()
	if p.px.cfg.copy {
		return
	}
	if err := netloop.Relay(p.client, b); err != nil {
		p.px.logf("proxy: relay for %s: %v", addrOf(p.client), err)
		p.client.Abort(err)
		b.Abort(err)
	}
}

// Data is never called with input to consume in relay mode: the client
// is paused until the Relay takes both Conns over, and the backend is
// relayed from its first call. Anything handed here is left for the
// Relay, which sends a Conn's unconsumed input first.
func (p *pair) Data(c *netloop.Conn, in []byte) int { return 0 }

// Draining keeps the pair going during a drain (Group.Shutdown): it ends
// when its client and backend are done, or at the drain's deadline.
func (p *pair) Draining(c *netloop.Conn) {}

// Closed counts c out. The Relay closes both Conns together (in copy
// mode, side.Closed does); an error on one reaches the other as
// netloop.ErrRelayPeer, and is logged once, from the side that failed,
// unless it is a peer going away.
func (p *pair) Closed(c *netloop.Conn, err error) {
	if err != nil && !errors.Is(err, netloop.ErrRelayPeer) && !errors.Is(err, unix.ECONNRESET) &&
		!errors.Is(err, unix.EPIPE) && !errors.Is(err, netloop.ErrClosed) {
		p.px.logf("proxy: %s of %s: %v", p.sideName(c), addrOf(p.client), err)
	}
	p.open--
	p.ended()
}

// ended counts the pair out once nothing of it is left.
func (p *pair) ended() {
	if p.open == 0 && !p.dialing {
		p.px.pairDone()
	}
}

// sideName names c for the log.
func (p *pair) sideName(c *netloop.Conn) string {
	if c == p.client {
		return "client"
	}
	return "backend"
}

// addrOf is c's remote address, for the log.
func addrOf(c *netloop.Conn) string {
	if tc, ok := c.Stream().(*socket.TCPConn); ok && tc.RemoteAddr() != nil {
		return tc.RemoteAddr().String()
	}
	return "?"
}
