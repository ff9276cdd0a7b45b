package netloop

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// rawDial connects a plain TCP client.
func rawDial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readsEnd reads c until it ends (EOF or a reset): the server closed it.
func readsEnd(t testing.TB, c net.Conn) {
	t.Helper()
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server did not close: %v", err)
}

// Bad input instead of a ClientHello, or in place of a record: each
// closes its own Conn with the handshake's error (crypto/tls's words for
// it), and the server goes on serving.
func TestTLSBadInput(t *testing.T) {
	rig := newTLSRig(t)
	addr, hs := serveEcho(t, rig.serverConfig())
	for _, tc := range []struct{ name, in, want string }{
		{"plaintext HTTP", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "first record does not look like a TLS handshake"},
		{"garbage", "\x00\x01\x02\x03\x04\x05\x06\x07", "first record does not look like a TLS handshake"},
		{"SSLv2 hello", "\x80\x2e\x01\x03\x01\x00\x15", "unsupported SSLv2 handshake"},
		{"oversized record", "\x16\x03\x01\xff\xff" + string(make([]byte, 64)), "oversized record"},
		{"truncated record", "\x16\x03\x01\x01\x00" + string(make([]byte, 16)), "unexpected EOF"},
		{"an alert", "\x15\x03\x01\x00\x02\x02\x28", "remote error"},
		{"not a ClientHello", "\x16\x03\x01\x00\x04\x02\x00\x00\x00", "local error: tls: "}, // its words differ between Go releases,
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawDial(t, addr)
			_, err := io.WriteString(c, tc.in)
			require.NoError(t, err)
			require.NoError(t, c.(*net.TCPConn).CloseWrite())
			readsEnd(t, c)
			err = waitErr(t, (<-hs).closed)
			require.ErrorContains(t, err, "tls handshake")
			require.ErrorContains(t, err, tc.want)
			roundTrip(t, dialTLS(t, addr, rig.clientConfig(0)), "still served")
			<-hs
		})
	}
}

// A peer that ends without close_notify: at a record boundary crypto/tls
// takes the FIN for the end of input (the Conn closes cleanly), inside a
// record it is io.ErrUnexpectedEOF.
func TestTLSPeerEndsWithoutCloseNotify(t *testing.T) {
	rig := newTLSRig(t)
	addr, hs := serveEcho(t, rig.serverConfig())

	c := dialTLS(t, addr, rig.clientConfig(0))
	roundTrip(t, c, "boundary")
	require.NoError(t, c.NetConn().(*net.TCPConn).CloseWrite()) // a FIN, no close_notify
	require.NoError(t, waitErr(t, (<-hs).closed))

	c = dialTLS(t, addr, rig.clientConfig(0))
	roundTrip(t, c, "inside a record")
	_, err := c.NetConn().Write([]byte("\x17\x03\x03\x00\x40half a record"))
	require.NoError(t, err)
	require.NoError(t, c.NetConn().(*net.TCPConn).CloseWrite())
	require.ErrorIs(t, waitErr(t, (<-hs).closed), io.ErrUnexpectedEOF)
}

// A client that stops mid-handshake (here: connects and sends nothing, or
// half a ClientHello) is closed at HandshakeTimeout with
// ErrHandshakeTimeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	rig := newTLSRig(t)
	const limit = 300 * time.Millisecond
	ch := make(chan *tlsEcho, 4)
	addr, _ := serveTLS(t, Config{TLS: rig.serverConfig(), HandshakeTimeout: limit}, func() Handler {
		h := newTLSEcho()
		ch <- h
		return h
	})
	for _, first := range []string{"", "\x16\x03\x01\x01\x00\x01\x00"} {
		start := time.Now()
		c := rawDial(t, addr)
		_, err := io.WriteString(c, first)
		require.NoError(t, err)
		readsEnd(t, c)
		require.ErrorIs(t, waitErr(t, (<-ch).closed), ErrHandshakeTimeout)
		require.GreaterOrEqual(t, time.Since(start), limit)
	}
}

// Many half-open handshakes with a small MaxHandshakes: half send part
// of a ClientHello (they take no place, tls_hello.go), half a whole one
// and then nothing (their handshakes take the places and the rest wait in
// the queue, without a goroutine). The goroutines stay within the limit,
// every one is closed at its timeout, also those that never left the
// queue, and the server then serves a real client, with no goroutine
// left over.
func TestTLSHalfOpenFlood(t *testing.T) {
	rig := newTLSRig(t)
	const (
		clients = 200
		max     = 2
		limit   = time.Second
	)
	closed := make(chan error, clients+1)
	addr, g := serveTLS(t, Config{TLS: rig.serverConfig(), HandshakeTimeout: limit, MaxHandshakes: max}, func() Handler {
		h := newTLSEcho()
		h.closed = closed
		return h
	})
	l := g.Loops()[0]
	base := runtime.NumGoroutine()
	conns := make([]net.Conn, clients)
	whole := clientHello(t, rig.clientConfig(0))
	for i := range conns {
		conns[i] = rawDial(t, addr)
		var err error
		if i%2 == 0 {
			_, err = conns[i].Write(whole)
		} else {
			_, err = io.WriteString(conns[i], "\x16\x03\x01\x01\x00half") // a header, and 4 of its 256 bytes
		}
		require.NoError(t, err)
	}
	testsupport.WaitFor(t, "all clients on the Loop", func() bool { return Conns(l) == clients })
	// The Group's, the test's and the clients' goroutines are counted in
	// base; the handshakes add at most max (and a margin for the runtime's
	// own, such as a timer's).
	require.LessOrEqual(t, runtime.NumGoroutine(), base+max+4)
	for range clients {
		require.ErrorIs(t, waitErr(t, closed), ErrHandshakeTimeout)
	}
	for _, c := range conns {
		readsEnd(t, c)
	}
	roundTrip(t, dialTLS(t, addr, rig.clientConfig(0)), "still served")
	testsupport.WaitFor(t, "the handshake goroutines gone", func() bool { return runtime.NumGoroutine() <= base })
}

// The peer's close_notify alone, with no FIN after it (tls.Conn's
// CloseWrite), is the end of input: the Conn (with no EOFHandler) closes,
// sending its own close_notify, which the peer reads as the end.
func TestTLSPeerCloseNotify(t *testing.T) {
	rig := newTLSRig(t)
	addr, hs := serveEcho(t, rig.serverConfig())
	c := dialTLS(t, addr, rig.clientConfig(0))
	roundTrip(t, c, "before the end")
	require.NoError(t, c.CloseWrite()) // close_notify; the socket stays open
	require.NoError(t, waitErr(t, (<-hs).closed))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n)
	require.ErrorIs(t, err, io.EOF)
}

// clientHello is the ClientHello record a crypto/tls client with cfg
// sends first.
func clientHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	cfg = cfg.Clone()
	cfg.ServerName = "localhost"
	a, b := net.Pipe()
	defer func() { _, _ = a.Close(), b.Close() }()
	go func() { _ = tls.Client(a, cfg).Handshake() }() // ends at the pipe's close
	rec := make([]byte, recordHeaderLen)
	_, err := io.ReadFull(b, rec)
	require.NoError(t, err)
	rec = append(rec, make([]byte, binary.BigEndian.Uint16(rec[3:5]))...)
	_, err = io.ReadFull(b, rec[recordHeaderLen:])
	require.NoError(t, err)
	require.True(t, helloReady(rec), "not a whole ClientHello")
	return rec
}
