package main

import (
	"net"
	"os/exec"
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
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
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
