package main

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/netloop"
)

// startTLS serves TLS with a certificate for 127.0.0.1 loaded as the
// flags load it, and returns the port and the CA file that trusts it.
func startTLS(t *testing.T) (port, caFile string) {
	t.Helper()
	ca := testsupport.NewCA(t)
	caFile, certFile, keyFile := ca.WritePEM(t, ca.Issue(t, "127.0.0.1", "localhost"))
	tlsConfig, err := loadTLS(certFile, keyFile)
	require.NoError(t, err)
	srv := start(t, config{loops: 2, conn: netloop.Config{TLS: tlsConfig}})
	return strconv.Itoa(srv.Addr().(*net.TCPAddr).Port), caFile
}

// redisCLITLS runs redis-cli --tls against port.
func redisCLITLS(t *testing.T, port, caFile string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("redis-cli", append([]string{"--tls", "--cacert", caFile, "-h", "127.0.0.1", "-p", port}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "redis-cli --tls %v: %s", args, stderr.Bytes())
	return out
}

// With -tls-cert and -tls-key the server speaks TLS, and the unchanged
// redis-cli --tls talks to it as to redis-server's tls-port: commands,
// and a 16 MiB value set from its input and read back byte for byte.
func TestRedisCLITLS(t *testing.T) {
	needRedisCLI(t)
	port, caFile := startTLS(t)
	require.Equal(t, "PONG\n", string(redisCLITLS(t, port, caFile, nil, "PING")))
	require.Equal(t, "OK\n", string(redisCLITLS(t, port, caFile, nil, "SET", "greeting", "hello over tls")))
	require.Equal(t, "hello over tls\n", string(redisCLITLS(t, port, caFile, nil, "GET", "greeting")))
	require.Equal(t, "OK\n2\n2\n", string(redisCLITLS(t, port, caFile, []byte("SET a 1\nINCR a\nGET a\n"))))

	value := make([]byte, 16<<20)
	_, _ = rand.NewChaCha8([32]byte{25}).Read(value) // never fails
	file := filepath.Join(t.TempDir(), "value")
	require.NoError(t, os.WriteFile(file, value, 0o600))
	in, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "OK\n", string(redisCLITLS(t, port, caFile, in, "-x", "SET", "big")))
	out := redisCLITLS(t, port, caFile, nil, "GET", "big")
	require.Len(t, out, len(value)+1)
	require.True(t, bytes.Equal(value, out[:len(value)]), "the value came back changed")
}

// A plain client on the TLS port is refused (its request is no
// ClientHello), and one flag without the other is a clear error.
func TestTLSFlags(t *testing.T) {
	port, _ := startTLS(t)
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	b, _ := new(bytes.Buffer).ReadFrom(c)
	require.Zero(t, b, "a plaintext client gets no reply, the connection closes")

	_, err = loadTLS("cert.pem", "")
	require.ErrorIs(t, err, errTLSFlags)
	_, err = loadTLS("", "key.pem")
	require.ErrorIs(t, err, errTLSFlags)
	_, err = loadTLS(filepath.Join(t.TempDir(), "missing.pem"), "key.pem")
	require.ErrorContains(t, err, "load the TLS certificate")
	cfg, err := loadTLS("", "")
	require.NoError(t, err)
	require.Nil(t, cfg)
}
