package netloop

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/socket"
)

// tlsRig is a CA, a server certificate for 127.0.0.1 and localhost, and
// the configurations that trust them.
type tlsRig struct {
	ca     *testsupport.CA
	server tls.Certificate
}

func newTLSRig(t testing.TB) *tlsRig {
	ca := testsupport.NewCA(t)
	return &tlsRig{ca: ca, server: ca.Issue(t, "localhost", "127.0.0.1")}
}

// serverConfig serves the rig's certificate, TLS 1.2 and 1.3.
func (r *tlsRig) serverConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{r.server}, MinVersion: tls.VersionTLS12}
}

// clientConfig trusts the rig's CA, with version v (0: any).
func (r *tlsRig) clientConfig(v uint16) *tls.Config {
	return &tls.Config{RootCAs: r.ca.Pool(), MinVersion: v, MaxVersion: v}
}

// serveTLS listens on 127.0.0.1 with a one-Loop Group whose Conns have
// cfg, each with the handler newH makes.
func serveTLS(t *testing.T, cfg Config, newH func() Handler) (addr string, g *Group) {
	t.Helper()
	g, err := NewGroup(GroupConfig{Loops: 1})
	require.NoError(t, err)
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = Add(l, c, newH(), cfg)
	})
	require.NoError(t, err)
	runGroup(t, g)
	return ln.Addr().String(), g
}

// tlsEcho echoes and reports, through states, what each Conn's handshake
// agreed, and through closed how each ended.
type tlsEcho struct {
	echo
	states chan tls.ConnectionState
}

func newTLSEcho() *tlsEcho {
	return &tlsEcho{echo: echo{closed: make(chan error, 1)}, states: make(chan tls.ConnectionState, 1)}
}

func (e *tlsEcho) HandshakeDone(c *Conn) {
	st, ok := c.ConnectionState()
	if ok {
		e.states <- st
	}
}

// dialTLS connects a crypto/tls client to addr.
func dialTLS(t testing.TB, addr string, cfg *tls.Config) *tls.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: waitLimit}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Go's crypto/tls client talks to a netloop TLS server, in TLS 1.2 and
// 1.3: lines come back, the handler hears the handshake's state (the
// version asked for), and the client's Close (close_notify) ends the
// Conn cleanly.
func TestTLSServerGoClient(t *testing.T) {
	rig := newTLSRig(t)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			hs := make(chan *tlsEcho, 1)
			addr, _ := serveTLS(t, Config{TLS: rig.serverConfig()}, func() Handler {
				h := newTLSEcho()
				hs <- h
				return h
			})
			c := dialTLS(t, addr, rig.clientConfig(v))
			require.Equal(t, v, c.ConnectionState().Version)
			h := <-hs
			st := <-h.states
			require.Equal(t, v, st.Version)
			br := bufio.NewReader(c)
			for i := range 50 {
				msg := fmt.Sprintf("line %d %s\n", i, make([]byte, i*97))
				_, err := io.WriteString(c, msg)
				require.NoError(t, err)
				got, err := br.ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, msg, got)
			}
			require.NoError(t, c.Close())
			require.NoError(t, waitErr(t, h.closed))
		})
	}
}

// waitErr waits for a Conn's end.
func waitErr(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLimit):
		t.Fatal("the Conn did not close")
		return nil
	}
}

// byeEcho echoes, and closes after echoing a line "bye".
type byeEcho struct{ *tlsEcho }

func (e byeEcho) Data(c *Conn, in []byte) int {
	n := e.tlsEcho.Data(c, in)
	if strings.HasSuffix(string(in[:n]), "bye\n") {
		c.Close()
	}
	return n
}
