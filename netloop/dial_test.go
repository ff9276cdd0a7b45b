package netloop

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// dialResult is what a dial's done heard, and how often it was called.
type dialResult struct {
	calls atomic.Int32
	ch    chan dialOutcome // the first call's
}

type dialOutcome struct {
	c   *Conn
	err error
}

func newDialResult() *dialResult { return &dialResult{ch: make(chan dialOutcome, 1)} }

// done is the dial's done function.
func (r *dialResult) done(c *Conn, err error) {
	if r.calls.Add(1) == 1 {
		r.ch <- dialOutcome{c: c, err: err}
	}
}

// wait returns the outcome, and checks that done ran once only.
func (r *dialResult) wait(t *testing.T, l *eventloop.Loop) dialOutcome {
	t.Helper()
	select {
	case o := <-r.ch:
		if l != nil {
			quiesce(t, l)
		}
		require.Equal(t, int32(1), r.calls.Load(), "done calls")
		return o
	case <-time.After(waitLimit):
		t.Fatal("the dial's done was not called")
		return dialOutcome{}
	}
}

// acceptAll accepts every connection on ln in a goroutine, keeps it open,
// and closes it all at the test's end. It returns the accepted conns'
// channel.
func acceptAll(t *testing.T, ln net.Listener) chan net.Conn {
	t.Helper()
	conns := make(chan net.Conn, 4096)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		close(conns)
		for c := range conns {
			_ = c.Close()
		}
	})
	return conns
}

// listenTCP listens on a loopback port; the test closes it.
func listenTCP(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// A dial that connects: done hears a live Conn, in the Conn's first call,
// before its handler hears anything; it may write on it at once, and the
// handler then has the reply.
func TestDialConnects(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(map[int]string{1: "one worker", 3: "three workers"}[workers], func(t *testing.T) {
			l := newLoop(t, eventloop.Config{Workers: workers})
			start(t, l, nil)
			ln := listenTCP(t)
			accepted := acceptAll(t, ln)

			var doneRan, inCall atomic.Bool
			got := make(chan string, 1)
			h := HandlerFunc(func(c *Conn, in []byte) int {
				if !doneRan.Load() {
					got <- "data before done"
				}
				got <- string(in)
				return len(in)
			})
			r := newDialResult()
			require.NoError(t, Dial(context.Background(), l, "tcp", ln.Addr().String(), h, Config{}, func(c *Conn, err error) {
				doneRan.Store(true)
				if c != nil {
					// The Loop lends a read buffer only during a call of c's.
					inCall.Store(l.ReadBuffer(c.Token()) != nil)
					_, _ = c.WriteString("ping")
				}
				r.done(c, err)
			}))
			o := r.wait(t, l)
			require.NoError(t, o.err)
			require.NotNil(t, o.c)
			require.Equal(t, l, o.c.Loop())
			require.True(t, inCall.Load(), "done ran in the Conn's first call")
			require.Equal(t, ln.Addr().String(), o.c.Stream().(*socket.TCPConn).RemoteAddr().String())

			srv := <-accepted
			require.NoError(t, srv.SetDeadline(time.Now().Add(waitLimit)))
			buf := make([]byte, 4)
			_, err := io.ReadFull(srv, buf)
			require.NoError(t, err)
			require.Equal(t, "ping", string(buf))
			_, err = srv.Write([]byte("pong"))
			require.NoError(t, err)
			require.Equal(t, "pong", <-got)
			require.NoError(t, o.c.Async(func(c *Conn) { c.Close() }))
			eventually(t, "the Conn closed", func() bool { return Conns(l) == 0 })
		})
	}
}

// A port nothing listens on: done hears ECONNREFUSED, with what was
// dialed, and no Conn.
func TestDialRefused(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	ln := listenTCP(t)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	r := newDialResult()
	require.NoError(t, Dial(context.Background(), l, "tcp", addr, newEcho(), Config{}, r.done))
	o := r.wait(t, l)
	require.Nil(t, o.c)
	require.ErrorIs(t, o.err, syscall.ECONNREFUSED)
	require.Contains(t, o.err.Error(), "netloop: dial tcp "+addr)
	require.Zero(t, Conns(l))
}

// A context that has already ended: no connect, done hears why.
func TestDialCancelledBefore(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newDialResult()
	require.NoError(t, Dial(ctx, l, "tcp", "127.0.0.1:1", newEcho(), Config{}, r.done))
	o := r.wait(t, l)
	require.ErrorIs(t, o.err, context.Canceled)
}

// A Unix-domain dial: connected at once, or refused at once.
func TestDialUnix(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	accepted := acceptAll(t, ln)
	r := newDialResult()
	require.NoError(t, Dial(context.Background(), l, "unix", path, newEcho(), Config{}, r.done))
	o := r.wait(t, l)
	require.NoError(t, o.err)
	srv := <-accepted
	require.NoError(t, srv.SetDeadline(time.Now().Add(waitLimit)))
	_, err = srv.Write([]byte("echo"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(srv, buf)
	require.NoError(t, err)
	require.Equal(t, "echo", string(buf))

	r = newDialResult()
	require.NoError(t, Dial(context.Background(), l, "unix", path+".absent", newEcho(), Config{}, r.done))
	o = r.wait(t, l)
	require.Nil(t, o.c)
	require.ErrorIs(t, o.err, syscall.ENOENT)
}

// What cannot start returns an error and never calls done.
func TestDialInvalid(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	ctx := context.Background()
	done := func(*Conn, error) { t.Error("done called") }
	var nilCtx context.Context // a caller's mistake, which Dial refuses
	for name, err := range map[string]error{
		"nil loop":     Dial(ctx, nil, "tcp", "127.0.0.1:1", newEcho(), Config{}, done),
		"zero loop":    Dial(ctx, &eventloop.Loop{}, "tcp", "127.0.0.1:1", newEcho(), Config{}, done),
		"nil ctx":      Dial(nilCtx, l, "tcp", "127.0.0.1:1", newEcho(), Config{}, done),
		"nil handler":  Dial(ctx, l, "tcp", "127.0.0.1:1", nil, Config{}, done),
		"nil func":     Dial(ctx, l, "tcp", "127.0.0.1:1", HandlerFunc(nil), Config{}, done),
		"nil done":     Dial(ctx, l, "tcp", "127.0.0.1:1", newEcho(), Config{}, nil),
		"udp":          Dial(ctx, l, "udp", "127.0.0.1:1", newEcho(), Config{}, done),
		"no port":      Dial(ctx, l, "tcp", "127.0.0.1", newEcho(), Config{}, done),
		"no path":      Dial(ctx, l, "unix", "", newEcho(), Config{}, done),
		"bad config":   Dial(ctx, l, "tcp", "127.0.0.1:1", newEcho(), Config{MaxReadBuffer: -1}, done),
		"neg. timeout": (&Dialer{Timeout: -1}).Dial(ctx, l, "tcp", "127.0.0.1:1", newEcho(), done),
		"nil Dialer":   (*Dialer)(nil).Dial(ctx, l, "tcp", "127.0.0.1:1", newEcho(), done),
	} {
		require.ErrorIs(t, err, ErrInvalidArgument, name)
	}
	require.NoError(t, l.Close())
	err := Dial(ctx, l, "tcp", "127.0.0.1:1", newEcho(), Config{}, done)
	require.ErrorIs(t, err, ErrClosed)
}

// itoa is strconv.Itoa.
func itoa(n int) string { return strconv.Itoa(n) }

// The time left is shared among the addresses as net.Dialer shares it.
func TestPartialDeadline(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		left      time.Duration
		remaining int
		want      time.Duration
	}{
		{10 * time.Second, 2, 5 * time.Second},  // an equal share
		{10 * time.Second, 10, 2 * time.Second}, // at least 2 s
		{time.Second, 3, time.Second},           // or all that is left
		{3 * time.Second, 2, 2 * time.Second},   // 1.5 s is too short a share
		{6 * time.Second, 1, 6 * time.Second},   // the last takes the rest
	} {
		got := partialDeadline(now, now.Add(tc.left), tc.remaining).Sub(now)
		require.Equal(t, tc.want, got, "%v left, %d addresses", tc.left, tc.remaining)
	}
}
