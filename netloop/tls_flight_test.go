package netloop

import (
	"crypto/tls"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// A server's handshake flight leaves from the handshake's goroutine, not
// when the Loop next runs: with the Loop held busy from the moment the
// ClientHello has been read (GetConfigForClient runs in the handshake
// right after), a TLS 1.3 client still receives the whole flight and
// finishes its handshake, which needs nothing more from the server. Once
// the Loop is released, the Conn is established and echoes.
func TestTLSServerFlightWithoutLoop(t *testing.T) {
	rig := newTLSRig(t)
	cfg := rig.serverConfig()
	held, release := make(chan struct{}), make(chan struct{})
	loops := make(chan *eventloop.Loop, 1)
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		l := <-loops
		if err := l.Post(func(*eventloop.Loop) {
			close(held)
			<-release
		}); err != nil {
			return nil, err // the client's handshake fails, and so does the test
		}
		<-held
		return nil, nil // cfg as it is
	}
	hs := make(chan *tlsEcho, 1)
	addr, g := serveTLS(t, Config{TLS: cfg}, func() Handler {
		h := newTLSEcho()
		hs <- h
		return h
	})
	loops <- g.Loops()[0]
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	c := dialWhileHeld(t, rig, addr, held, "the server's flight")
	close(release)
	released = true
	requireEcho(t, c, "after the flight")
	st := <-(<-hs).states
	require.Equal(t, uint16(tls.VersionTLS13), st.Version)
}

// dialWhileHeld completes a TLS 1.3 client handshake with addr while the
// server's Loop is held (held is closed by then), failing the test if it
// does not finish within waitLimit: what (in the server) must not have
// waited for the Loop. Each of also (the server's accept, say) must yield
// nil first. The test's cleanup closes the Conn.
func dialWhileHeld(t *testing.T, rig *tlsRig, addr string, held chan struct{}, what string, also ...chan error) *tls.Conn {
	t.Helper()
	done := make(chan error, 1)
	var c *tls.Conn
	go func() {
		var err error
		c, err = tls.Dial("tcp", addr, rig.clientConfig(tls.VersionTLS13))
		done <- err
	}()
	for _, ch := range also {
		require.NoError(t, <-ch)
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatalf("the client's handshake did not finish while the Loop was busy: %s waited for it", what)
	}
	t.Cleanup(func() { _ = c.Close() })
	select {
	case <-held:
	default:
		t.Fatal("the Loop was not held during the handshake")
	}
	return c
}

// requireEcho writes msg on c and reads it back.
func requireEcho(t *testing.T, c *tls.Conn, msg string) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	_, err := c.Write([]byte(msg))
	require.NoError(t, err)
	buf := make([]byte, len(msg))
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, msg, string(buf))
}
