package netloop

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// PacketFunc receives one datagram that a Group's UDP socket received,
// with its sender, on the socket's Loop. data is valid only during the
// call. Reply with pc.WriteTo(reply, from): it sends at once, or returns
// socket.ErrWouldBlock when the socket's send buffer is full, and the
// reply is then dropped, as the network may drop any datagram. Do not
// close pc: the Listener owns it.
type PacketFunc func(l *eventloop.Loop, pc *socket.UDPConn, data []byte, from net.Addr)

// Bounds of a UDP socket's reading.
const (
	// maxDatagram holds the largest UDP payload (65,507 bytes over IPv4,
	// 65,527 over IPv6), so no datagram is cut short.
	maxDatagram = 64 << 10
	// packetsPerCall bounds the datagrams one call reads, so that a flood
	// on one socket leaves the Loop's other sources their turn.
	packetsPerCall = 64
)

// ListenUDP binds a UDP socket to addr ("host:port" with an IP literal;
// port 0 picks a free one) and hands every datagram it receives to h, on
// the socket's Loop: the first Loop, or with ReusePort every Loop, each
// with a socket of its own, among which the kernel spreads the senders.
// network is "udp", "udp4" or "udp6"; another is refused with an error
// matching ErrInvalidArgument. Close the Listener to stop receiving;
// Group.Shutdown and Close close it too (a datagram socket has no
// connections to drain).
func (g *Group) ListenUDP(network, addr string, h PacketFunc, opts ...ListenOption) (*Listener, error) {
	if g == nil || len(g.loops) == 0 {
		return nil, errZeroGroup
	}
	if h == nil {
		return nil, fmt.Errorf("%w: netloop: ListenUDP needs a PacketFunc", ErrInvalidArgument)
	}
	c := newListenConfig(opts)
	ln := &Listener{g: g}
	loops := g.loops[:1]
	var sopts []socket.ListenOption
	if c.reusePort {
		loops = g.loops
		sopts = append(sopts, socket.WithReusePort())
	}
	for _, l := range loops {
		a := addr
		if ln.addr != nil { // port 0 picked one: the others take the same
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, errors.Join(err, ln.closeParts())
			}
			a = net.JoinHostPort(host, strconv.Itoa(ln.addr.(*net.UDPAddr).Port))
		}
		pc, err := socket.ListenUDP(network, a, sopts...)
		if err != nil {
			return nil, errors.Join(invalidNetwork(err), ln.closeParts())
		}
		p := &packetListener{g: g, l: l, pc: pc, h: h}
		if p.tok, err = l.Add(pc, poll.Readable, poll.Edge, p); err != nil {
			return nil, errors.Join(err, pc.Close(), ln.closeParts())
		}
		ln.parts = append(ln.parts, p)
		if ln.addr == nil {
			ln.addr = pc.LocalAddr()
		}
	}
	return g.keep(ln)
}

// packetListener is one UDP socket on one Loop, the Loop's source for it;
// see streamListener for who calls what where.
type packetListener struct {
	g      *Group
	l      *eventloop.Loop
	pc     *socket.UDPConn
	h      PacketFunc
	tok    poll.Token
	buf    []byte // made at the first datagram; the source's calls never overlap
	closed atomic.Bool
}

// Ready reads datagrams until none waits (under Edge the next event comes
// only with a new one), or packetsPerCall were read.
func (p *packetListener) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	if p.buf == nil {
		p.buf = make([]byte, maxDatagram)
	}
	for range packetsPerCall {
		n, from, err := p.pc.ReadFrom(p.buf)
		if errors.Is(err, socket.ErrWouldBlock) || err != nil && p.closed.Load() {
			return eventloop.Keep
		}
		if err != nil {
			// An error queued on the socket (an ICMP report) is taken by
			// this read; the datagrams behind it are still to be read.
			logIfSet(p.g.log, slog.LevelWarn, "netloop: receive failed", "err", err, "local", p.pc.LocalAddr())
			continue
		}
		p.h(l, p.pc, p.buf[:n], from)
	}
	return eventloop.Again
}

// Removed closes the socket.
func (p *packetListener) Removed(*eventloop.Loop, poll.Token) { _ = p.pc.Close() }

// close closes the socket now; Removed's Close then finds it closed.
func (p *packetListener) close() error {
	if p.closed.Swap(true) {
		return nil
	}
	err := p.l.Remove(p.tok)
	if errors.Is(err, eventloop.ErrUnknownToken) || errors.Is(err, ErrClosed) {
		err = nil // removed with its Loop's Close
	}
	return errors.Join(err, ignoreClosed(p.pc.Close()))
}
