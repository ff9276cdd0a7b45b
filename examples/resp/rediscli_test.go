package main

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// redisCLI runs redis-cli against port with args, stdin as its input, and
// returns its output. Output to a pipe is raw: one line per reply, nil as
// an empty line, errors without "(error)".
func redisCLI(t *testing.T, port int, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("redis-cli", append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "redis-cli %v: %s", args, out)
	return string(out)
}

// The unchanged redis-cli talks to the server: single commands, commands
// piped on its standard input, and values with spaces and binary bytes
// (which it quotes and escapes its own way).
func TestRedisCLI(t *testing.T) {
	needRedisCLI(t)
	srv := start(t, config{loops: 2})
	port := srv.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG\n"},
		{[]string{"SET", "greeting", "hello world"}, "OK\n"},
		{[]string{"GET", "greeting"}, "hello world\n"},
		{[]string{"GET", "missing"}, "\n"},
		{[]string{"STRLEN", "bin"}, "ERR unknown command 'STRLEN', with args beginning with: 'bin' \n\n"}, // redis-cli adds a line after an error
		{[]string{"INCR", "n"}, "1\n"},
		{[]string{"MGET", "greeting", "missing", "n"}, "hello world\n\n1\n"},
		{[]string{"SET", "t", "v", "PX", "60000"}, "OK\n"},
		{[]string{"EXISTS", "t", "greeting", "missing"}, "2\n"},
		{[]string{"DEL", "t", "missing"}, "1\n"},
	} {
		require.Equal(t, tc.want, redisCLI(t, port, "", tc.args...), "%q", tc.args)
	}
	// A binary value, set through redis-cli's own quoting on its input;
	// --no-raw shows it quoted and escaped: it is intact.
	require.Equal(t, "OK\n", redisCLI(t, port, `SET bin "a\x00b\xffc"`+"\n"))
	require.Equal(t, "\"a\\x00b\\xffc\"\n", redisCLI(t, port, "", "--no-raw", "GET", "bin"))
	// Commands on standard input, one per line, as redis-cli pipes them.
	require.Equal(t, "OK\n2\n2\n", redisCLI(t, port, "SET a 1\nINCR a\nGET a\n"))
}

// A 16 MiB value, random bytes, with the default limits: redis-cli sets
// it from its standard input (-x) and gets it back byte for byte (its
// output to a pipe is the raw value and a newline).
func TestRedisCLIBigValue(t *testing.T) {
	needRedisCLI(t)
	srv := start(t, config{loops: 2})
	port := strconv.Itoa(srv.Addr().(*net.TCPAddr).Port)
	value := make([]byte, 16<<20)
	_, _ = rand.NewChaCha8([32]byte{24}).Read(value) // never fails
	file := filepath.Join(t.TempDir(), "value")
	require.NoError(t, os.WriteFile(file, value, 0o600))

	set := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "-x", "SET", "big")
	in, err := os.Open(file)
	require.NoError(t, err)
	defer in.Close()
	set.Stdin = in
	out, err := set.CombinedOutput()
	require.NoError(t, err, "redis-cli -x SET: %s", out)
	require.Equal(t, "OK\n", string(out))

	get := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "GET", "big")
	var stderr bytes.Buffer
	get.Stderr = &stderr
	out, err = get.Output()
	require.NoError(t, err, "redis-cli GET: %s", stderr.Bytes())
	require.Len(t, out, len(value)+1)
	require.True(t, bytes.Equal(value, out[:len(value)]), "the value came back changed")
	require.Equal(t, byte('\n'), out[len(value)])
	require.Zero(t, srv.mem.held.Load(), "nothing held once the request was served")
}

// needRedisCLI skips a test that drives redis-cli where it is not
// installed, except under CI (CI set), whose script installs it: there a
// missing client is a failure, so an acceptance test cannot pass by
// skipping.
func needRedisCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-cli is not installed, and CI is set: .ci/run installs redis-tools")
		}
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
}
