package netloop

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
)

// A client's renegotiation is refused, as crypto/tls refuses it: openssl
// s_client's "R" command, in TLS 1.2 (1.3 has none), sends a new
// ClientHello on the established connection; the server's Conn closes
// with crypto/tls's error, no second handshake happens (s_client never
// hears a second ServerHello, but the unexpected_message alert
// crypto/tls wrote), and the server goes on serving new clients.
func TestTLSOpenSSLRenegotiationRefused(t *testing.T) {
	rig := newTLSRig(t)
	caFile, _, _ := rig.ca.WritePEM(t, rig.server)
	hs := make(chan *tlsEcho, 2)
	addr, _ := serveTLS(t, Config{TLS: rig.serverConfig()}, func() Handler {
		h := newTLSEcho()
		hs <- h
		return h
	})
	o := startOpenSSL(t, addr, caFile, "-tls1_2", "-servername", "localhost")
	h := <-hs
	require.Equal(t, uint16(tls.VersionTLS12), (<-h.states).Version)
	o.send(t, "before\n", "\nbefore\n")
	o.send(t, "R\n", "RENEGOTIATING")
	err := waitErr(t, h.closed)
	require.Error(t, err, "the Conn closes on the renegotiation's ClientHello")
	require.ErrorContains(t, err, "unexpected handshake message")
	if !testsupport.Eventually(waitLimit, func() bool { return strings.Count(o.output(), "], ClientHello") == 2 }) {
		t.Fatalf("s_client did not print its second ClientHello:\n%s", o.output())
	}
	// The server's Conn is closed: no ServerHello can follow.
	require.Equal(t, 1, strings.Count(o.output(), "], ServerHello\n"), "a second handshake was answered:\n%s", o.output())
	if !testsupport.Eventually(waitLimit, func() bool { return strings.Contains(o.output(), "fatal unexpected_message") }) {
		t.Fatalf("s_client did not hear the server's alert:\n%s", o.output())
	}

	c := dialTLS(t, addr, rig.clientConfig(0))
	roundTrip(t, c, "still served")
	<-hs
}

// Dial refuses a client configuration that would renegotiate: a
// renegotiation is a handshake inside Read, which a Conn's call cannot
// wait for. The error says so up front, matching ErrInvalidArgument, and
// done is never called.
func TestTLSDialRenegotiationRefused(t *testing.T) {
	rig := newTLSRig(t)
	l := newLoop(t, eventloop.Config{})
	for _, r := range []tls.RenegotiationSupport{tls.RenegotiateOnceAsClient, tls.RenegotiateFreelyAsClient} {
		cc := rig.clientConfig(tls.VersionTLS12)
		cc.Renegotiation = r
		err := Dial(context.Background(), l, "tcp", "127.0.0.1:1", newCollect(), Config{TLS: cc}, func(*Conn, error) {
			t.Errorf("done called for a refused Dial (Renegotiation %d)", r)
		})
		require.ErrorIs(t, err, ErrInvalidArgument, "Renegotiation %d", r)
		require.ErrorContains(t, err, "Renegotiation")
	}
	// RenegotiateNever, the zero value, is accepted: the dial starts (and
	// fails later, to done, since nothing listens there).
	done := make(chan error, 1)
	start(t, l, nil)
	cc := rig.clientConfig(0)
	cc.Renegotiation = tls.RenegotiateNever
	require.NoError(t, Dial(context.Background(), l, "tcp", "127.0.0.1:1", newCollect(), Config{TLS: cc}, func(_ *Conn, err error) { done <- err }))
	require.Error(t, waitErr(t, done))
}
