package netloop

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// serveEcho serves TLS with cfg and hands each Conn's handler to the test.
func serveEcho(t *testing.T, cfg *tls.Config) (addr string, hs <-chan *tlsEcho) {
	t.Helper()
	ch := make(chan *tlsEcho, 16)
	addr, _ = serveTLS(t, Config{TLS: cfg}, func() Handler {
		h := newTLSEcho()
		ch <- h
		return h
	})
	return addr, ch
}

// roundTrip writes msg and reads it back.
func roundTrip(t *testing.T, c io.ReadWriter, msg string) {
	t.Helper()
	_, err := io.WriteString(c, msg)
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
}

// SNI: GetCertificate picks the certificate by the name the client asks
// for, and each client gets the one for its name.
func TestTLSSNI(t *testing.T) {
	rig := newTLSRig(t)
	certs := map[string]tls.Certificate{"a.test": rig.ca.Issue(t, "a.test"), "b.test": rig.ca.Issue(t, "b.test")}
	cfg := &tls.Config{GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
		c, ok := certs[hi.ServerName]
		if !ok {
			return nil, io.ErrUnexpectedEOF // refuse an unknown name
		}
		return &c, nil
	}}
	addr, hs := serveEcho(t, cfg)
	for _, name := range []string{"a.test", "b.test"} {
		cc := rig.clientConfig(0)
		cc.ServerName = name
		c := dialTLS(t, addr, cc)
		require.Equal(t, name, c.ConnectionState().PeerCertificates[0].Subject.CommonName)
		h := <-hs
		require.Equal(t, name, (<-h.states).ServerName)
		roundTrip(t, c, "sni "+name)
	}
	cc := rig.clientConfig(0)
	cc.ServerName = "c.test"
	_, err := tls.Dial("tcp", addr, cc)
	require.Error(t, err, "a name the server has no certificate for")
	require.ErrorContains(t, waitErr(t, (<-hs).closed), "tls handshake")
}

// ALPN: the protocol both sides name is agreed, and the handler sees it.
func TestTLSALPN(t *testing.T) {
	rig := newTLSRig(t)
	cfg := rig.serverConfig()
	cfg.NextProtos = []string{"h2", "resp3"}
	addr, hs := serveEcho(t, cfg)
	cc := rig.clientConfig(0)
	cc.NextProtos = []string{"resp3", "x"}
	c := dialTLS(t, addr, cc)
	require.Equal(t, "resp3", c.ConnectionState().NegotiatedProtocol)
	require.Equal(t, "resp3", (<-(<-hs).states).NegotiatedProtocol)
	roundTrip(t, c, "alpn")
}

// Mutual TLS: a client with a certificate the server's CA signed is
// accepted (the handler sees it); one without, or with a certificate of
// another CA, is refused: its Conn closes with the handshake's error, and
// the server goes on.
func TestTLSMutual(t *testing.T) {
	rig := newTLSRig(t)
	cfg := rig.serverConfig()
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	cfg.ClientCAs = rig.ca.Pool()
	addr, hs := serveEcho(t, cfg)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			cc := rig.clientConfig(v)
			cc.Certificates = []tls.Certificate{rig.ca.Issue(t, "client one")}
			c := dialTLS(t, addr, cc)
			roundTrip(t, c, "mutual")
			h := <-hs
			require.Equal(t, "client one", (<-h.states).PeerCertificates[0].Subject.CommonName)

			for name, certs := range map[string][]tls.Certificate{
				"no certificate": nil,
				"another CA's":   {newTLSRig(t).ca.Issue(t, "stranger")},
			} {
				cc := rig.clientConfig(v)
				cc.Certificates = certs
				c, err := tls.Dial("tcp", addr, cc)
				if err == nil {
					// TLS 1.3: the client's handshake ends before the
					// server judges its certificate; the refusal comes
					// as an alert on the first read.
					_, err = c.Read(make([]byte, 1))
					_ = c.Close()
				}
				require.Error(t, err, name)
				err = waitErr(t, (<-hs).closed)
				require.ErrorContains(t, err, "tls handshake", name)
				var ce *tls.CertificateVerificationError
				if certs != nil {
					require.ErrorAs(t, err, &ce, name)
					var ua x509.UnknownAuthorityError
					require.ErrorAs(t, err, &ua, name)
				}
			}
			roundTrip(t, c, "still served")
		})
	}
}

// Resumption with session tickets: a client's second connection resumes
// its first's session (both sides say so), in TLS 1.2 and 1.3.
func TestTLSResumption(t *testing.T) {
	rig := newTLSRig(t)
	addr, hs := serveEcho(t, rig.serverConfig())
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			cc := rig.clientConfig(v)
			cc.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			for i, resumed := range []bool{false, true} {
				c := dialTLS(t, addr, cc)
				roundTrip(t, c, "ticket") // TLS 1.3's ticket comes after the handshake: read it
				require.Equal(t, resumed, c.ConnectionState().DidResume, "client, connection %d", i)
				require.Equal(t, resumed, (<-(<-hs).states).DidResume, "server, connection %d", i)
				require.NoError(t, c.Close())
			}
		})
	}
}

// A server that speaks first: what it writes right after Add, before the
// handshake, waits for the keys and is the client's first read; and one
// that writes in HandshakeDone is read after it, in order.
func TestTLSServerSpeaksFirst(t *testing.T) {
	rig := newTLSRig(t)
	g, err := NewGroup(GroupConfig{Loops: 1})
	require.NoError(t, err)
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, s *socket.TCPConn) {
		c, err := Add(l, s, &greeter{echo: echo{closed: make(chan error, 1)}}, Config{TLS: rig.serverConfig()})
		if err == nil {
			_, _ = c.WriteString("banner;")
		}
	})
	require.NoError(t, err)
	runGroup(t, g)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		c := dialTLS(t, ln.Addr().String(), rig.clientConfig(v))
		got := make([]byte, len("banner;agreed "+tls.VersionName(v)+";"))
		_, err := io.ReadFull(c, got)
		require.NoError(t, err)
		require.Equal(t, "banner;agreed "+tls.VersionName(v)+";", string(got))
	}
}

// greeter says which version the handshake agreed, then echoes.
type greeter struct{ echo }

func (*greeter) HandshakeDone(c *Conn) {
	st, _ := c.ConnectionState()
	_, _ = c.WriteString("agreed " + tls.VersionName(st.Version) + ";")
}

// Bad TLS settings are refused with ErrInvalidArgument, and so is a Relay
// of a TLS Conn (it would pass ciphertext on as if it were the stream).
func TestTLSInvalid(t *testing.T) {
	rig := newTLSRig(t)
	l := newLoop(t, eventloop.Config{})
	for _, cfg := range []Config{
		{TLS: rig.serverConfig(), MaxHandshakes: -1},
		{TLS: rig.serverConfig(), HandshakeTimeout: -time.Second},
	} {
		a, b, err := socket.Pair()
		require.NoError(t, err)
		_, err = Add(l, a, newTLSEcho(), cfg)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.NoError(t, b.Close())
	}
	pair := func(cfg Config) *Conn {
		a, b, err := socket.Pair()
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		c, err := Add(l, a, newTLSEcho(), cfg)
		require.NoError(t, err)
		return c
	}
	err := Relay(pair(Config{TLS: rig.serverConfig()}), pair(Config{}))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "TLS")
}

// The handshake goes on while the Conn's input waits: a server that
// queues more than HighWater before it and closes, or that pauses
// reading (as a proxy does until its backend answers), still completes
// it, then sends what it queued, close_notify and the FIN.
func TestTLSHandshakeWhileInputWaits(t *testing.T) {
	rig := newTLSRig(t)
	big := strings.Repeat("x", 64<<10)
	for name, before := range map[string]func(c *Conn){
		"above HighWater, then Close": func(c *Conn) { _, _ = c.WriteString(big); c.Close() },
		"paused":                      func(c *Conn) { c.PauseRead(); _, _ = c.WriteString(big); c.CloseWrite() },
	} {
		t.Run(name, func(t *testing.T) {
			g, err := NewGroup(GroupConfig{Loops: 1})
			require.NoError(t, err)
			ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, s *socket.TCPConn) {
				c, err := Add(l, s, newTLSEcho(), Config{TLS: rig.serverConfig(), HighWater: 4 << 10})
				if err == nil {
					before(c)
				}
			})
			require.NoError(t, err)
			runGroup(t, g)
			c := dialTLS(t, ln.Addr().String(), rig.clientConfig(0))
			got, err := io.ReadAll(c)
			require.NoError(t, err, "close_notify ends the stream cleanly")
			require.Equal(t, len(big), len(got))
		})
	}
}
