package netloop

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// httpResponder is a small HTTP/1.1 server on a TLS Conn, for curl: a GET
// is answered with what the Conn's handshake agreed and the request's
// number on its connection (so that keep-alive shows), a POST with its
// body, echoed as it arrives. Requests are handled in order on one
// connection (curl reuses it for several URLs). It knows only what curl
// sends here: no chunked bodies, no Expect.
type httpResponder struct {
	closed chan error
	conns  chan struct{} // one per handshake done
	served int           // requests begun on this Conn
	body   int           // bytes of a POST body still to echo
}

func newHTTPResponder(conns chan struct{}) *httpResponder {
	return &httpResponder{closed: make(chan error, 1), conns: conns}
}

func (h *httpResponder) HandshakeDone(c *Conn) { h.conns <- struct{}{} }

func (h *httpResponder) Closed(c *Conn, err error) { h.closed <- err }

func (h *httpResponder) Data(c *Conn, in []byte) int {
	used := 0
	for {
		if h.body > 0 {
			n, err := c.Write(in[used:min(len(in), used+h.body)])
			if errors.Is(err, ErrWriteQueueFull) {
				return used // the rest once the queue drains
			}
			used += n
			h.body -= n
			if h.body > 0 {
				return used
			}
		}
		end := bytes.Index(in[used:], []byte("\r\n\r\n"))
		if end < 0 {
			return used
		}
		head := string(in[used : used+end])
		used += end + 4
		h.served++
		if err := h.respond(c, head); err != nil {
			_, _ = c.WriteString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			c.Close()
			return len(in)
		}
	}
}

// respond answers the request whose head (request line and headers) is
// head; a POST's body follows through Data.
func (h *httpResponder) respond(c *Conn, head string) error {
	lines := strings.Split(head, "\r\n")
	method, rest, _ := strings.Cut(lines[0], " ")
	path, _, _ := strings.Cut(rest, " ")
	length := 0
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, ":")
		if strings.EqualFold(k, "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return fmt.Errorf("content-length %q", v)
			}
			length = n
		}
	}
	switch method {
	case "GET":
		st, _ := c.ConnectionState()
		body := fmt.Sprintf("%s %s #%d %s alpn=%s sni=%s\n", method, path, h.served,
			tls.VersionName(st.Version), st.NegotiatedProtocol, st.ServerName)
		_, err := c.WriteString(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
		return err
	case "POST":
		h.body = length
		_, err := c.WriteString(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", length))
		return err
	}
	return fmt.Errorf("method %q", method)
}

// needCurl finds curl; CI installs it (.ci/run), so under CI its absence
// fails the test rather than skipping it.
func needCurl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("curl is not installed (.ci/run installs it): %v", err)
		}
		t.Skip("curl is not installed (apt-get install curl)")
	}
	return p
}

// curl runs the curl binary against the server on addr (a 127.0.0.1
// address), named localhost, verifying its certificate with the CA in
// caFile; it returns what curl wrote to standard output.
func curl(t *testing.T, addr, caFile string, args ...string) string {
	t.Helper()
	bin := needCurl(t)
	_, port, _ := strings.Cut(addr, ":")
	all := append([]string{"--silent", "--show-error", "--fail", "--max-time", "20",
		"--cacert", caFile, "--resolve", "localhost:" + port + ":127.0.0.1"}, args...)
	cmd := exec.Command(bin, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "curl %s: %s", strings.Join(all, " "), stderr.String())
	return stdout.String()
}

// curl, which nobody here wrote, fetches two URLs over one TLS connection
// to an HTTP/1.1 responder on a netloop Conn, in TLS 1.2 and 1.3, with
// ALPN offering h2 and http/1.1 (the server picks http/1.1, all it
// speaks) or, with --http1.1, http/1.1 alone; it verifies the server's
// certificate against the test's CA, and %{http_version} says the
// answers came over HTTP/1.1.
func TestTLSCurl(t *testing.T) {
	rig := newTLSRig(t)
	caFile, _, _ := rig.ca.WritePEM(t, rig.server)
	for _, tc := range []struct {
		name string
		args []string
		ver  string
	}{
		{"tls1.3", []string{"--tlsv1.3"}, "TLS 1.3"},
		{"tls1.3-http1.1", []string{"--tlsv1.3", "--http1.1"}, "TLS 1.3"},
		{"tls1.2", []string{"--tlsv1.2", "--tls-max", "1.2"}, "TLS 1.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rig.serverConfig()
			cfg.NextProtos = []string{"http/1.1"}
			conns := make(chan struct{}, 4)
			hs := make(chan *httpResponder, 4)
			addr, _ := serveTLS(t, Config{TLS: cfg}, func() Handler {
				h := newHTTPResponder(conns)
				hs <- h
				return h
			})
			_, port, _ := strings.Cut(addr, ":")
			base := "https://localhost:" + port
			out := curl(t, addr, caFile, append(tc.args, "--write-out", "http=%{http_version}\n", base+"/first", base+"/second")...)
			want := fmt.Sprintf("GET /first #1 %[1]s alpn=http/1.1 sni=localhost\nhttp=1.1\n"+
				"GET /second #2 %[1]s alpn=http/1.1 sni=localhost\nhttp=1.1\n", tc.ver)
			require.Equal(t, want, out)
			h := <-hs
			require.NoError(t, waitErr(t, h.closed), "curl's end of the connection")
			require.Len(t, conns, 1, "both requests on one connection")
		})
	}
}

// A 4 MiB POST through curl comes back intact: the responder echoes the
// body as it arrives, so it crosses the Conn's read and write paths (and
// its back pressure, the write queue filling while curl still sends)
// in records of every size.
func TestTLSCurlPostBody(t *testing.T) {
	rig := newTLSRig(t)
	caFile, _, _ := rig.ca.WritePEM(t, rig.server)
	body := make([]byte, 4<<20)
	_, err := rand.Read(body)
	require.NoError(t, err)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "body"), filepath.Join(dir, "echoed")
	require.NoError(t, os.WriteFile(in, body, 0o600))
	hs := make(chan *httpResponder, 1)
	addr, _ := serveTLS(t, Config{TLS: rig.serverConfig()}, func() Handler {
		h := newHTTPResponder(make(chan struct{}, 1))
		hs <- h
		return h
	})
	_, port, _ := strings.Cut(addr, ":")
	code := curl(t, addr, caFile, "--http1.1", "--data-binary", "@"+in, "-H", "Expect:",
		"--output", out, "--write-out", "%{http_code}", "https://localhost:"+port+"/echo")
	require.Equal(t, "200", code)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(body, got), "the echoed body differs: %d bytes of %d", len(got), len(body))
	require.NoError(t, waitErr(t, (<-hs).closed), "curl's end of the connection")
}
