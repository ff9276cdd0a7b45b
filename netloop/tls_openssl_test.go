package netloop

import (
	"bytes"
	"crypto/tls"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// opensslClient is `openssl s_client` against a netloop server: a client
// nobody here wrote. Its stdin is ours; its output (with -msg, every TLS
// message it sends ">>>" and receives "<<<") is collected.
type opensslClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
}

func (o *opensslClient) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out.Write(p)
}

// output is what the client printed so far.
func (o *opensslClient) output() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out.String()
}

// needOpenSSL finds openssl; CI installs it (.ci/run), so under CI its
// absence fails the test rather than skipping it.
func needOpenSSL(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("openssl is not installed (.ci/run installs it): %v", err)
		}
		t.Skip("openssl is not installed (apt-get install openssl)")
	}
	return p
}

// startOpenSSL runs s_client against addr with the extra arguments.
func startOpenSSL(t *testing.T, addr, caFile string, args ...string) *opensslClient {
	t.Helper()
	bin := needOpenSSL(t)
	o := &opensslClient{}
	all := append([]string{"s_client", "-connect", addr, "-CAfile", caFile, "-verify_return_error", "-msg", "-no_ign_eof"}, args...)
	o.cmd = exec.Command(bin, all...)
	o.cmd.Stdout, o.cmd.Stderr = o, o
	var err error
	o.stdin, err = o.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, o.cmd.Start())
	t.Cleanup(func() {
		_ = o.stdin.Close()
		_ = o.cmd.Process.Kill()
		_ = o.cmd.Wait()
	})
	return o
}

// send writes a line (or command) to the client's stdin and waits until
// its output contains want.
func (o *opensslClient) send(t *testing.T, line, want string) {
	t.Helper()
	_, err := io.WriteString(o.stdin, line)
	require.NoError(t, err)
	o.expect(t, want)
}

func (o *opensslClient) expect(t *testing.T, want string) {
	t.Helper()
	if !testsupport.Eventually(waitLimit, func() bool { return strings.Contains(o.output(), want) }) {
		t.Fatalf("openssl s_client did not print %q; its output:\n%s", want, o.output())
	}
}

// openssl s_client, TLS 1.2 and 1.3, talks to a netloop server: lines
// come back, and a line "bye" makes the server Close, which sends
// close_notify (s_client prints it received) before the FIN.
func TestTLSOpenSSLClient(t *testing.T) {
	rig := newTLSRig(t)
	caFile, _, _ := rig.ca.WritePEM(t, rig.server)
	for _, v := range []string{"-tls1_2", "-tls1_3"} {
		t.Run(v, func(t *testing.T) {
			hs := make(chan *tlsEcho, 1)
			addr, _ := serveTLS(t, Config{TLS: rig.serverConfig()}, func() Handler {
				h := newTLSEcho()
				hs <- h
				return byeEcho{h}
			})
			o := startOpenSSL(t, addr, caFile, v, "-servername", "localhost")
			h := <-hs
			st := <-h.states
			require.Equal(t, map[string]uint16{"-tls1_2": tls.VersionTLS12, "-tls1_3": tls.VersionTLS13}[v], st.Version)
			o.expect(t, "Verify return code: 0 (ok)")
			o.send(t, "hello from openssl\n", "\nhello from openssl\n")
			o.send(t, "bye\n", "close_notify")
			require.NoError(t, waitErr(t, h.closed))
			require.Regexp(t, `<<< TLS 1\.[23], Alert \[length 0002\], warning close_notify`, o.output())
		})
	}
}

// A KeyUpdate from the peer that asks for one back (s_client's "K"
// command): crypto/tls takes the new keys inside Read and writes its own
// KeyUpdate, which the Conn's call puts on the socket (s_client prints it
// received), and the lines after it still come back.
func TestTLSOpenSSLKeyUpdate(t *testing.T) {
	rig := newTLSRig(t)
	caFile, _, _ := rig.ca.WritePEM(t, rig.server)
	hs := make(chan *tlsEcho, 1)
	addr, _ := serveTLS(t, Config{TLS: rig.serverConfig()}, func() Handler {
		h := newTLSEcho()
		hs <- h
		return byeEcho{h}
	})
	o := startOpenSSL(t, addr, caFile, "-tls1_3", "-servername", "localhost")
	h := <-hs
	o.send(t, "before\n", "\nbefore\n")
	o.send(t, "K\n", "<<< TLS 1.3, Handshake [length 0005], KeyUpdate")
	o.send(t, "after\n", "\nafter\n")
	_, err := io.WriteString(o.stdin, "K\n") // a second one, after the first reply
	require.NoError(t, err)
	require.True(t, testsupport.Eventually(waitLimit, func() bool {
		return strings.Count(o.output(), "<<< TLS 1.3, Handshake [length 0005], KeyUpdate") == 2
	}), o.output())
	o.send(t, "again\n", "\nagain\n")
	o.send(t, "bye\n", "close_notify")
	require.NoError(t, waitErr(t, h.closed))
}
