package main

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Sizes are read as redis.conf reads them; anything else is refused with
// errSize. String gives back what Set reads.
func TestSize(t *testing.T) {
	for in, want := range map[string]size{
		"65536": 65536, "1k": 1000, "1kb": 1024, "16mb": 16 << 20, "16MB": 16 << 20, "2m": 2e6,
		"1gb": 1 << 30, "1g": 1e9, " 3 kb ": 3 << 10,
	} {
		var z size
		require.NoError(t, z.Set(in), "%q", in)
		require.Equal(t, want, z, "%q", in)
		var back size
		require.NoError(t, back.Set(z.String()), "%q -> %q", in, z.String())
		require.Equal(t, z, back, "%q -> %q", in, z.String())
	}
	for _, in := range []string{"", "0", "-1", "mb", "1.5mb", "1tb", "2gb", "99999999999999999999", "1 k b"} {
		var z size
		require.ErrorIs(t, z.Set(in), errSize, "%q", in)
	}
}

// Zero limits are the defaults; a negative one is refused; a request is
// never allowed to be larger than the clients' memory bound.
func TestConfigLimits(t *testing.T) {
	cfg, err := config{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, defaultLimits.maxBulk, cfg.lim.maxBulk)
	require.Equal(t, defaultClientMem, cfg.lim.maxTotal, "-max-request lowered to -max-client-memory")
	require.Equal(t, defaultMaxReply, cfg.maxReply)
	require.Equal(t, cfg.lim.maxTotal+cfg.lim.maxInline, cfg.conn.MaxReadBuffer)

	cfg, err = config{clientMem: 1 << 40, lim: limits{maxTotal: 1 << 20}}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, 1<<20, cfg.lim.maxTotal)

	for _, bad := range []config{{maxReply: -1}, {clientMem: -1}, {lim: limits{maxBulk: -1}}} {
		_, err := bad.withDefaults()
		require.ErrorIs(t, err, errConfig, "%+v", bad)
		_, err = newServer(bad, t.Logf)
		require.ErrorIs(t, err, errConfig, "%+v", bad)
	}
}

// The limits, small: a value at -max-bulk is taken and one byte more is
// refused at its header; a request larger than -max-client-memory is
// refused at its header though it is within -max-bulk; a reply over
// -max-reply is an error, and the connection goes on.
func TestLimits(t *testing.T) {
	srv := start(t, config{lim: limits{maxBulk: 4096}, maxReply: 10000, clientMem: 64 << 10})
	addr := srv.Addr().String()
	c := dial(t, addr)
	v := strings.Repeat("v", 4096)
	require.Equal(t, "OK", c.mustDo(t, "SET", "a", v))
	require.Equal(t, "OK", c.mustDo(t, "SET", "b", v))
	require.Equal(t, []any{[]byte(v), []byte(v)}, c.mustDo(t, "MGET", "a", "b"))
	require.Equal(t, respError("ERR reply exceeds the output buffer limit"), c.mustDo(t, "MGET", "a", "b", "a"))
	require.Equal(t, []byte(v), c.mustDo(t, "GET", "a"), "the connection goes on")

	// Refused at the header, with no body sent: the reply must not wait
	// for one.
	refusedAtHeader := func(header, want string) {
		t.Helper()
		c := dial(t, addr)
		_, err := c.c.Write([]byte(header))
		require.NoError(t, err)
		v, err := c.read()
		require.NoError(t, err)
		require.Equal(t, respError(want), v)
		_, err = c.read()
		require.ErrorIs(t, err, io.EOF, "the connection closes")
	}
	refusedAtHeader("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4097\r\n", "ERR Protocol error: invalid bulk length")
	// 20 arguments of 4096 bytes: the 16th would take the request past
	// 64 KiB.
	arg := "$4096\r\n" + v + "\r\n"
	refusedAtHeader("*20\r\n"+strings.Repeat(arg, 15)+"$4096\r\n", "ERR Protocol error: request too big")
	require.Equal(t, "PONG", c.mustDo(t, "PING"), "the server goes on")
}

// The command itself: the limits' flags reach the server (INFO shows the
// memory bound, a value past -max-bulk is refused), and SIGTERM stops it
// cleanly.
func TestFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "resp")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-max-bulk", "4kb", "-max-client-memory", "1mb", "-max-reply", "5kb")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewScanner(stderr)
	addr, seen := "", ""
	for addr == "" && lines.Scan() {
		seen += lines.Text() + "\n"
		if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
	}
	require.NotEmpty(t, addr, "no listening line in its log: %s (%v)", seen, lines.Err())

	c := dial(t, addr)
	info := string(c.mustDo(t, "INFO").([]byte))
	require.Contains(t, info, "\r\nmaxmemory_clients:"+strconv.Itoa(1<<20)+"\r\n")
	v := strings.Repeat("v", 4096)
	require.Equal(t, "OK", c.mustDo(t, "SET", "a", v))
	require.Equal(t, respError("ERR reply exceeds the output buffer limit"), c.mustDo(t, "MGET", "a", "a"))
	require.Equal(t, respError("ERR Protocol error: invalid bulk length"), c.mustDo(t, "SET", "b", v+"v"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	require.NoError(t, cmd.Wait(), "exit status; its log: %s", rest.String())
	require.Contains(t, rest.String(), "resp: stopped")
}
