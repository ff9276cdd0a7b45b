package netloop

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// goTLSEcho runs a crypto/tls echo server (a goroutine per connection),
// and reports the name each client asked for.
func goTLSEcho(t *testing.T, cfg *tls.Config) (addr string, names <-chan string) {
	t.Helper()
	ch := make(chan string, 16)
	cfg = cfg.Clone()
	cfg.GetConfigForClient = func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		ch <- hi.ServerName
		return nil, nil
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	return ln.Addr().String(), ch
}

// tlsDialResult is what a Dial's done heard.
type tlsDialResult struct {
	c   *Conn
	st  tls.ConnectionState
	ok  bool
	err error
}

// dialOnLoop dials addr from a running Loop with cfg and h, and waits
// for done.
func dialOnLoop(t *testing.T, addr string, cfg Config, h Handler) tlsDialResult {
	t.Helper()
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	res := make(chan tlsDialResult, 1)
	require.NoError(t, Dial(context.Background(), l, "tcp", addr, h, cfg, func(c *Conn, err error) {
		r := tlsDialResult{c: c, err: err}
		if c != nil {
			r.st, r.ok = c.ConnectionState()
		}
		res <- r
	}))
	select {
	case r := <-res:
		return r
	case <-time.After(waitLimit):
		t.Fatal("the dial did not end")
		return tlsDialResult{}
	}
}

// collect keeps what a client Conn receives, for the test to read.
type collect struct {
	got    chan []byte
	closed chan error
}

func newCollect() *collect {
	return &collect{got: make(chan []byte, 1024), closed: make(chan error, 1)}
}

func (h *collect) Data(c *Conn, in []byte) int {
	h.got <- append([]byte(nil), in...)
	return len(in)
}
func (h *collect) Closed(c *Conn, err error) { h.closed <- err }

// read waits for n bytes.
func (h *collect) read(t *testing.T, n int) string {
	t.Helper()
	var b []byte
	for len(b) < n {
		select {
		case p := <-h.got:
			b = append(b, p...)
		case <-time.After(waitLimit):
			t.Fatalf("got %q, want %d bytes", b, n)
		}
	}
	return string(b)
}

// Dial with Config.TLS is a TLS client: done hears the Conn once the
// handshake is done (its state is there), the server name comes from the
// address's host (an IP literal, or a name), and lines go both ways with
// a crypto/tls server, in TLS 1.2 and 1.3.
func TestTLSDialGoServer(t *testing.T) {
	rig := newTLSRig(t)
	addr, names := goTLSEcho(t, rig.serverConfig())
	_, port, _ := net.SplitHostPort(addr)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, host := range []string{"127.0.0.1", "localhost"} {
			t.Run(tls.VersionName(v)+" "+host, func(t *testing.T) {
				h := newCollect()
				r := dialOnLoop(t, net.JoinHostPort(host, port), Config{TLS: rig.clientConfig(v)}, h)
				require.NoError(t, r.err)
				require.True(t, r.ok, "done runs after the handshake")
				require.Equal(t, v, r.st.Version)
				name := <-names
				if host == "localhost" {
					require.Equal(t, host, name) // SNI carries names, not IP literals
				}
				require.NoError(t, r.c.Async(func(c *Conn) { _, _ = c.WriteString("hello, tls\n") }))
				require.Equal(t, "hello, tls\n", h.read(t, len("hello, tls\n")))
				require.NoError(t, r.c.Async(func(c *Conn) { c.Close() }))
				require.NoError(t, waitErr(t, h.closed))
			})
		}
	}
}

// A Dial whose handshake fails (the server's certificate is of a CA the
// client does not trust) reports the handshake's error to done, and no
// Conn.
func TestTLSDialUntrusted(t *testing.T) {
	rig := newTLSRig(t)
	addr, _ := goTLSEcho(t, rig.serverConfig())
	r := dialOnLoop(t, addr, Config{TLS: newTLSRig(t).clientConfig(0)}, newCollect())
	require.Nil(t, r.c)
	var ua x509.UnknownAuthorityError
	require.True(t, errors.As(r.err, &ua), "%v", r.err)
	require.ErrorContains(t, r.err, "tls handshake")
}
