package main

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs a server on a free port until the test ends.
func start(t testing.TB, cfg config) *server {
	t.Helper()
	cfg.addr = "127.0.0.1:0"
	srv, err := newServer(cfg, t.Logf)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Run() }()
	t.Cleanup(func() {
		srv.Stop()
		require.NoError(t, <-done)
	})
	return srv
}

func TestCommands(t *testing.T) {
	srv := start(t, config{loops: 2})
	c := dial(t, srv.Addr().String())
	for _, tc := range []struct {
		args []string
		want any
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"ping", "hi"}, []byte("hi")},
		{[]string{"PING", "a", "b"}, respError("ERR wrong number of arguments for 'ping' command")},
		{[]string{"ECHO", "hello\r\nworld"}, []byte("hello\r\nworld")},
		{[]string{"GET", "k"}, []byte(nil)},
		{[]string{"SET", "k", "v1"}, "OK"},
		{[]string{"GET", "k"}, []byte("v1")},
		{[]string{"set", "k", "v2", "XX"}, "OK"},
		{[]string{"SET", "k", "v3", "NX"}, []byte(nil)},
		{[]string{"GET", "k"}, []byte("v2")},
		{[]string{"SET", "n", "v", "NX"}, "OK"},
		{[]string{"SET", "k", "v", "BOGUS"}, respError("ERR syntax error")},
		{[]string{"SET", "k", "v", "EX", "x"}, respError("ERR value is not an integer or out of range")},
		{[]string{"SET", "k", "v", "EX", "0"}, respError("ERR invalid expire time in 'set' command")},
		{[]string{"SET", "k", "v", "EX", "10", "PX", "5"}, respError("ERR syntax error")},
		{[]string{"EXISTS", "k", "n", "nope", "k"}, int64(3)},
		{[]string{"DEL", "k", "nope"}, int64(1)},
		{[]string{"EXISTS", "k"}, int64(0)},
		{[]string{"INCR", "counter"}, int64(1)},
		{[]string{"INCR", "counter"}, int64(2)},
		{[]string{"SET", "s", "abc"}, "OK"},
		{[]string{"INCR", "s"}, respError("ERR value is not an integer or out of range")},
		{[]string{"SET", "big", "9223372036854775807"}, "OK"},
		{[]string{"INCR", "big"}, respError("ERR increment or decrement would overflow")},
		{[]string{"SET", "z", "007"}, "OK"},
		{[]string{"INCR", "z"}, respError("ERR value is not an integer or out of range")},
		{[]string{"MGET", "n", "missing", "counter"}, []any{[]byte("v"), []byte(nil), []byte("2")}},
		{[]string{"GET"}, respError("ERR wrong number of arguments for 'get' command")},
		{[]string{"FLUSHALL", "x"}, respError("ERR unknown command 'FLUSHALL', with args beginning with: 'x' ")},
		{[]string{"CONFIG", "GET", "save"}, []any{[]byte("save"), []byte("")}},
		{[]string{"CONFIG", "GET", "maxmemory"}, []any{}},
		{[]string{"QUIT"}, "OK"},
	} {
		require.Equal(t, tc.want, c.mustDo(t, tc.args...), "%q", tc.args)
	}
	_, err := c.read()
	require.ErrorIs(t, err, io.EOF, "QUIT closes the connection")
}

// SET with EX and PX: the key is there, then gone; INCR keeps the expiry.
// The short expiries are long enough that the checks before them do not
// race them on a loaded machine.
func TestExpiry(t *testing.T) {
	srv := start(t, config{})
	c := dial(t, srv.Addr().String())
	setAt := time.Now()
	require.Equal(t, "OK", c.mustDo(t, "SET", "px", "v", "PX", "1500"))
	require.Equal(t, "OK", c.mustDo(t, "SET", "ex", "v", "EX", "100"))
	require.Equal(t, "OK", c.mustDo(t, "SET", "cnt", "1", "PX", "1500"))
	require.Equal(t, int64(2), c.mustDo(t, "INCR", "cnt"))
	require.Equal(t, []byte("v"), c.mustDo(t, "GET", "px"))
	require.Less(t, time.Since(setAt), 1500*time.Millisecond, "too slow to check anything before the expiry")
	require.Eventually(t, func() bool {
		return c.mustDo(t, "EXISTS", "px", "cnt").(int64) == 0
	}, 20*time.Second, 10*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(setAt), 1500*time.Millisecond, "expired early")
	require.Equal(t, []byte(nil), c.mustDo(t, "GET", "px"))
	require.Equal(t, []byte("v"), c.mustDo(t, "GET", "ex"))
	require.Equal(t, int64(1), c.mustDo(t, "INCR", "cnt"), "an expired counter starts again")
}

// Pipelining: many requests in one write, replies in order; in one read
// they cost one write back.
func TestPipelining(t *testing.T) {
	srv := start(t, config{})
	c := dial(t, srv.Addr().String())
	const n = 1000
	var req []byte
	for i := range n {
		req = append(req, encode("SET", "k"+strconv.Itoa(i), strconv.Itoa(i))...)
		req = append(req, encode("GET", "k"+strconv.Itoa(i))...)
		req = append(req, "PING\r\n"...) // inline, as redis-benchmark's PING_INLINE
	}
	go func() { _, _ = c.c.Write(req) }()
	for i := range n {
		v, err := c.read()
		require.NoError(t, err)
		require.Equal(t, "OK", v)
		v, err = c.read()
		require.NoError(t, err)
		require.Equal(t, []byte(strconv.Itoa(i)), v)
		v, err = c.read()
		require.NoError(t, err)
		require.Equal(t, "PONG", v)
	}
}

// Inline commands split as redis splits them: quotes and escapes.
func TestInline(t *testing.T) {
	srv := start(t, config{})
	c := dial(t, srv.Addr().String())
	for _, tc := range []struct {
		line string
		want any
	}{
		{"SET greeting \"hello world\"\r\n", "OK"},
		{"GET greeting\n", []byte("hello world")},
		{"  echo   'it\\'s'  \r\n", []byte("it's")},
		{"ECHO \"tab\\there\\x41\"\r\n", []byte("tab\there\x41")},
		{"\r\n\r\nPING\r\n", "PONG"}, // empty lines are skipped
	} {
		_, err := c.c.Write([]byte(tc.line))
		require.NoError(t, err)
		v, err := c.read()
		require.NoError(t, err)
		require.Equal(t, tc.want, v, "%q", tc.line)
	}
	// Unbalanced quotes: a protocol error, and the connection closes.
	_, err := c.c.Write([]byte("ECHO \"open\r\n"))
	require.NoError(t, err)
	v, err := c.read()
	require.NoError(t, err)
	require.Equal(t, respError("ERR Protocol error: unbalanced quotes in request"), v)
	_, err = c.read()
	require.ErrorIs(t, err, io.EOF)
}

// Malformed and oversized input: an error reply, then the connection
// closes; the server keeps serving others. An oversized bulk string is
// refused at its header: the reply comes before its body is sent.
func TestProtocolErrors(t *testing.T) {
	srv := start(t, config{})
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"*2\r\n$3\r\nGET\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"},
		{"*x\r\n", "ERR Protocol error: invalid multibulk length"},
		{"*2000000\r\n", "ERR Protocol error: invalid multibulk length"},
		{"*1\r\n$-5\r\n", "ERR Protocol error: invalid bulk length"},
		{"*1\r\n$1000000000\r\n", "ERR Protocol error: invalid bulk length"},
		{"*1\r\n$3\r\nGETXX", "ERR Protocol error: bulk string not terminated by CRLF"},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870913\r\n", "ERR Protocol error: invalid bulk length"}, // past -max-bulk
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$300000000\r\n", "ERR Protocol error: request too big"},     // past -max-client-memory
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16777216\r\n", ""},                                         // 16 MiB: waits for the body
	} {
		c := dial(t, srv.Addr().String())
		_, err := c.c.Write([]byte(tc.in))
		require.NoError(t, err)
		if tc.want == "" {
			require.NoError(t, c.c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
			_, err := c.read()
			var ne interface{ Timeout() bool }
			require.ErrorAs(t, err, &ne, "no reply before the body")
			require.True(t, ne.Timeout())
			continue
		}
		v, err := c.read()
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, respError(tc.want), v, "%q", tc.in)
		_, err = c.read()
		require.ErrorIs(t, err, io.EOF, "%q: the connection closes", tc.in)
	}
	// An inline line longer than the limit, without a newline.
	c := dial(t, srv.Addr().String())
	_, err := c.c.Write(bytes.Repeat([]byte("a"), 70<<10))
	require.NoError(t, err)
	v, err := c.read()
	require.NoError(t, err)
	require.Equal(t, respError("ERR Protocol error: too big inline request"), v)
	require.Equal(t, "PONG", dial(t, srv.Addr().String()).mustDo(t, "PING"))
}

// A "*" or "$" header line that never ends: refused once it passes the
// line bound, with an error reply and a close, like any protocol error;
// the server keeps serving others. One at the bound that does end is an
// ordinary invalid length. Each is sent in two writes, the first ending
// with the line's bound-th byte, so the server most likely sees a line of
// exactly the bound with no end yet, which it must wait on.
func TestHeaderNeverEnds(t *testing.T) {
	srv := start(t, config{})
	bound := srv.cfg.lim.maxInline
	digits := func(n int) string { return string(bytes.Repeat([]byte("1"), n)) }
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"*" + digits(bound), "ERR Protocol error: too big mbulk count string"},
		{"*1\r\n$" + digits(bound), "ERR Protocol error: too big bulk count string"},
		{"*" + digits(bound-2) + "\r\n", "ERR Protocol error: invalid multibulk length"},
		{"*1\r\n$" + digits(bound-2) + "\r\n", "ERR Protocol error: invalid bulk length"},
	} {
		c := dial(t, srv.Addr().String())
		cut := strings.LastIndexAny(tc.in, "*$") + bound
		for _, part := range []string{tc.in[:cut], tc.in[cut:]} {
			_, err := c.c.Write([]byte(part))
			require.NoError(t, err)
		}
		v, err := c.read()
		require.NoError(t, err, "%.20q... (%d bytes)", tc.in, len(tc.in))
		require.Equal(t, respError(tc.want), v, "%.20q... (%d bytes)", tc.in, len(tc.in))
		_, err = c.read()
		require.ErrorIs(t, err, io.EOF, "%.20q...: the connection closes", tc.in)
	}
	require.Equal(t, "PONG", dial(t, srv.Addr().String()).mustDo(t, "PING"))
}

// Many clients on several Loops incrementing one counter: the shared key
// space loses no increment.
func TestConcurrentIncr(t *testing.T) {
	srv := start(t, config{loops: 3})
	const clients, each = 20, 200
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, srv.Addr().String())
			for range each {
				// Pipelined in pairs, to mix requests within reads.
				require.NoError(t, c.send("INCR", "shared"))
				require.NoError(t, c.send("GET", "shared"))
				_, err := c.read()
				require.NoError(t, err)
				_, err = c.read()
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	c := dial(t, srv.Addr().String())
	require.Equal(t, []byte(fmt.Sprint(clients*each)), c.mustDo(t, "GET", "shared"))
}

// A client that sends and never reads: the server's memory for it stays
// bounded (its Conn stops reading), and it gets every reply once it reads.
func TestSlowReader(t *testing.T) {
	srv := start(t, config{})
	c := dial(t, srv.Addr().String())
	value := bytes.Repeat([]byte("v"), 4096)
	require.Equal(t, "OK", c.mustDo(t, "SET", "big", string(value)))
	const n = 20000 // 80 MiB of replies
	sent := make(chan error, 1)
	go func() {
		req := encode("GET", "big")
		var batch []byte
		for range 100 {
			batch = append(batch, req...)
		}
		for i := 0; i < n; i += 100 {
			if _, err := c.c.Write(batch); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	// Wait until the server has pushed back: the Conn's queue is past its
	// high-water mark, so it has stopped reading. The requests not read
	// wait in the kernel's socket buffers, not in the server.
	high := int64(srv.cfg.conn.HighWater)
	require.Eventually(t, func() bool { return srv.maxQueued.Load() > high }, 10*time.Second, time.Millisecond)
	for i := range n {
		v, err := c.read()
		require.NoError(t, err, "reply %d", i)
		require.Equal(t, value, v, "reply %d", i)
	}
	require.NoError(t, <-sent)
	// Bounded: the queue never went further past the mark than one
	// reply, and the input held unconsumed stayed within the read
	// buffer's bound.
	require.LessOrEqual(t, srv.maxQueued.Load(), high+int64(len(value))+64)
	require.LessOrEqual(t, srv.maxBuffered.Load(), int64(srv.cfg.conn.MaxReadBuffer))
	t.Logf("most queued %d bytes, most unconsumed %d bytes, for %d MiB of replies", srv.maxQueued.Load(), srv.maxBuffered.Load(), n*len(value)>>20)
}

// A client that says nothing for -idle is disconnected; one that keeps
// talking is not.
func TestIdleTimeout(t *testing.T) {
	srv := start(t, config{idle: 300 * time.Millisecond})
	quiet := dial(t, srv.Addr().String())
	begin := time.Now()
	talker := dial(t, srv.Addr().String())
	for time.Since(begin) < time.Second {
		require.Equal(t, "PONG", talker.mustDo(t, "PING"))
		time.Sleep(20 * time.Millisecond) // the client's pace
	}
	_, err := quiet.read()
	require.ErrorIs(t, err, io.EOF, "the quiet client was disconnected")
	require.Equal(t, "PONG", talker.mustDo(t, "PING"), "the talker is still connected")
}

// Expired keys nobody reads are swept.
func TestActiveExpiry(t *testing.T) {
	srv := start(t, config{})
	c := dial(t, srv.Addr().String())
	for i := range 500 {
		require.Equal(t, "OK", c.mustDo(t, "SET", "tmp"+strconv.Itoa(i), "v", "PX", "20"))
	}
	require.Equal(t, "OK", c.mustDo(t, "SET", "keep", "v"))
	require.Eventually(t, func() bool { return srv.db.size() == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []byte("v"), c.mustDo(t, "GET", "keep"))
}
