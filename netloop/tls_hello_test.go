package netloop

import (
	"crypto/tls"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/socket"
)

// record frames payload as one TLS record of type typ.
func record(typ byte, payload []byte) []byte {
	b := []byte{typ, 3, 1, 0, 0}
	binary.BigEndian.PutUint16(b[3:], uint16(len(payload)))
	return append(b, payload...)
}

// hello is a ClientHello message (type and length, then body) of n body
// bytes.
func hello(n int) []byte {
	return append([]byte{msgClientHello, byte(n >> 16), byte(n >> 8), byte(n)}, make([]byte, n)...)
}

func TestHelloReady(t *testing.T) {
	h := hello(300)
	whole := record(recordHandshake, h)
	split := append(record(recordHandshake, h[:2]), record(recordHandshake, h[2:])...)
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"nothing", nil, false},
		{"part of a header", whole[:3], false},
		{"a header", whole[:5], false},
		{"part of the hello", whole[:100], false},
		{"the hello but its last byte", whole[:len(whole)-1], false},
		{"the hello", whole, true},
		{"the hello and more", append(whole, 23, 3, 3), true},
		{"the hello's head split across records, first record", split[:7], false},
		{"the hello's head split across records, part of the second", split[:20], false},
		{"the hello in two records", split, true},
		{"plaintext", []byte("GET / HTTP/1.1\r\n"), true},
		{"an alert first", record(21, []byte{2, 40}), true},
		{"another handshake message", record(recordHandshake, []byte{2, 0, 0, 1, 0}), true},
		{"a fragment over 2^14 bytes", []byte{recordHandshake, 3, 1, 0x40, 0x01}, true},
		{"a hello longer than one record, one record in", record(recordHandshake, hello(maxFragment))[:helloFeedLimit], true},
	} {
		require.Equal(t, c.want, helloReady(c.b), c.name)
	}
}

// poolIdle reports whether no handshake of l runs or waits for a place.
func poolIdle(l *eventloop.Loop) bool {
	hs := &stateOf(l).hs
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.running == 0 && len(hs.queue) == 0
}

// Clients that connect and send nothing, or part of a ClientHello, hold
// no place among the Loop's handshakes (and no goroutine): with one
// place and an hour's HandshakeTimeout, a real client that comes after
// a hundred of them is served at once.
func TestTLSStalledHellosHoldNoPlace(t *testing.T) {
	rig := newTLSRig(t)
	addr, g := serveTLS(t, Config{TLS: rig.serverConfig(), HandshakeTimeout: time.Hour, MaxHandshakes: 1},
		func() Handler { return newTLSEcho() })
	l := g.Loops()[0]
	const stalled = 100
	for i := range stalled {
		c := rawDial(t, addr)
		if i%2 == 1 {
			_, err := c.Write(record(recordHandshake, hello(400))[:120])
			require.NoError(t, err)
		}
	}
	testsupport.WaitFor(t, "the stalled clients on the Loop", func() bool { return Conns(l) == stalled })
	require.True(t, poolIdle(l), "a client without a whole ClientHello took a place")
	start := time.Now()
	roundTrip(t, dialTLS(t, addr, rig.clientConfig(0)), "served beside them")
	require.Less(t, time.Since(start), waitLimit)
}

// piecewise sends the first thing written to it, a ClientHello record,
// as two records, each in pieces; after each piece but the last it calls
// between with the count of bytes sent so far.
type piecewise struct {
	net.Conn
	sent    bool
	between func(sent int)
}

func (p *piecewise) Write(b []byte) (int, error) {
	if p.sent || len(b) < recordHeaderLen || b[0] != recordHandshake {
		return p.Conn.Write(b)
	}
	p.sent = true
	payload := b[recordHeaderLen:]
	one, two := record(recordHandshake, payload[:2]), record(recordHandshake, payload[2:])
	pieces := [][]byte{one[:3], one[3:], two[:4], two[4:20], two[20:]}
	sent := 0
	for i, piece := range pieces {
		if _, err := p.Conn.Write(piece); err != nil {
			return 0, err
		}
		sent += len(piece)
		if i < len(pieces)-1 {
			p.between(sent)
		}
	}
	return len(b), nil
}

// fed is what the Loop has read into c's TLS transport.
func fed(c *Conn) int {
	tr := &c.tls.tr
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.in)
}

// A ClientHello that arrives in pieces, across two records, is read by
// the Loop piece by piece without starting the handshake, which starts
// once the last piece is in and then completes.
func TestTLSHelloInPieces(t *testing.T) {
	rig := newTLSRig(t)
	g, err := NewGroup(GroupConfig{Loops: 1})
	require.NoError(t, err)
	conns := make(chan *Conn, 1)
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, s *socket.TCPConn) {
		c, err := Add(l, s, newTLSEcho(), Config{TLS: rig.serverConfig()})
		if err == nil {
			conns <- c
		}
	})
	require.NoError(t, err)
	runGroup(t, g)
	l := g.Loops()[0]
	var server *Conn
	p := &piecewise{Conn: rawDial(t, ln.Addr().String()), between: func(sent int) {
		if server == nil {
			server = <-conns
		}
		testsupport.WaitFor(t, "the Loop's read of a piece", func() bool { return fed(server) == sent })
		require.True(t, poolIdle(l), "the handshake began before the whole ClientHello")
	}}
	cfg := rig.clientConfig(0)
	cfg.ServerName = "localhost" // as tls.Dial would take it from the address
	c := tls.Client(p, cfg)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Handshake())
	require.True(t, p.sent, "the ClientHello was not sent in pieces")
	roundTrip(t, c, strings.Repeat("after the pieces ", 10))
}
