package netloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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

// pattern is the bytes a bulk reply is cut from: reply k of n bytes is
// pattern[k%251 : k%251+n], so every client's is different and checkable.
func pattern(n int) []byte {
	b := make([]byte, n+251)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// bulkServer answers a line "k size\n" with size bytes of the pattern at
// k, queued at once, and tells the CloseHandler's error per k.
type bulkServer struct {
	base   []byte
	queued atomic.Int64
	failed atomic.Int64 // a Write that did not queue the whole reply
	closed sync.Map     // k -> the error its Conn closed with
}

func (s *bulkServer) Data(c *Conn, in []byte) int {
	i := bytes.IndexByte(in, '\n')
	if i < 0 {
		return 0
	}
	var k, n int
	if _, err := fmt.Sscan(string(in[:i]), &k, &n); err != nil {
		c.Abort(err)
		return len(in)
	}
	c.User = k
	if _, err := c.Write(s.base[k%251 : k%251+n]); err != nil {
		s.failed.Add(1)
	}
	s.queued.Add(1)
	return i + 1
}

func (s *bulkServer) Closed(c *Conn, err error) {
	if k, ok := c.User.(int); ok {
		s.closed.Store(k, errOrNil{err})
	}
}

// errOrNil boxes an error for a sync.Map, which would not tell a stored
// nil from a missing key.
type errOrNil struct{ err error }

// Shutdown with 200 clients mid-transfer: each asked for 1 MiB, which
// the server queued before the drain began, and has read only the first
// 64 KiB of it. Every client gets all of its reply, intact, then the end
// of the stream; a client connecting once the drain has begun is refused;
// Shutdown returns nil and Run returns, long before the deadline. With a
// shared listener handing off, and with a listener per Loop.
func TestShutdownDrainsClientsMidTransfer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ListenOption
	}{{"hand-off", nil}, {"reuseport", []ListenOption{ReusePort()}}} {
		t.Run(tc.name, func(t *testing.T) {
			const clients, size, head = 200, 1 << 20, 64 << 10
			logger, logs := newTestLogger()
			g, err := NewGroup(GroupConfig{Loops: 2, Logger: logger})
			require.NoError(t, err)
			srv := &bulkServer{base: pattern(size)}
			ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
				if _, err := Add(l, c, srv, Config{}); err != nil {
					t.Errorf("Add: %v", err)
				}
			}, tc.opts...)
			require.NoError(t, err)
			addr := ln.Addr().String()
			ran := runForShutdown(t, g)

			var read sync.WaitGroup // every client has read its head
			release := make(chan struct{})
			errs := make(chan error, clients)
			var done sync.WaitGroup
			for k := range clients {
				read.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					errs <- bulkClient(addr, k, size, head, srv.base, &read, release)
				}()
			}
			read.Wait()
			eventually(t, "every reply queued", func() bool { return srv.queued.Load() == clients })
			require.Zero(t, srv.failed.Load(), "a reply did not fit the queue")

			ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
			defer cancel()
			deadline, _ := ctx.Deadline()
			shut := make(chan error, 1)
			go func() { shut <- g.Shutdown(ctx) }()
			logs.waitLine(t, `msg="netloop: drain begun"`)
			_, err = net.Dial("tcp", addr)
			require.ErrorIs(t, err, syscall.ECONNREFUSED, "a client connecting during the drain")

			close(release)
			done.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, waitShutdown(t, shut))
			end := <-ran
			require.NoError(t, end.err)
			require.True(t, end.at.Before(deadline), "Run returned at the deadline, not when the drain was over")
			require.NotEmpty(t, logs.line(`msg="netloop: drain begun"`, "conns="+strconv.Itoa(clients)), logs.String())
			require.NotEmpty(t, logs.line(`msg="netloop: drain finished"`, "conns="+strconv.Itoa(clients)), logs.String())
			require.Empty(t, logs.line("drain forced"))
			for k := range clients {
				v, ok := srv.closed.Load(k)
				require.True(t, ok, "client %d's Conn not closed", k)
				require.NoError(t, v.(errOrNil).err, "client %d", k)
			}
		})
	}
}

// bulkClient asks for size bytes, reads head of them, says so (read),
// waits for release, then reads the rest until the end of the stream and
// checks all of it.
func bulkClient(addr string, k, size, head int, base []byte, read *sync.WaitGroup, release <-chan struct{}) error {
	once := sync.OnceFunc(read.Done)
	defer once()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * waitLimit)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c, "%d %d\n", k, size); err != nil {
		return err
	}
	got := make([]byte, size+1) // one more, for the end of the stream
	if _, err := io.ReadFull(c, got[:head]); err != nil {
		return fmt.Errorf("client %d: head: %w", k, err)
	}
	once()
	<-release
	n, err := io.ReadFull(c, got[head:])
	if n != size-head || err != io.ErrUnexpectedEOF {
		return fmt.Errorf("client %d: got %d bytes of %d, then %v (want the end of the stream)", k, head+n, size, err)
	}
	if !bytes.Equal(got[:size], base[k%251:k%251+size]) {
		return fmt.Errorf("client %d: wrong bytes", k)
	}
	return nil
}

// A client that never reads holds its Conn past the deadline: Shutdown
// then ends it (its CloseHandler hears the context's error, its queued
// output is dropped, so the client gets less than it asked for), returns
// the context's error, and Run returns at the deadline, within a margin
// for a loaded machine. A client that reads is served in full meanwhile.
func TestShutdownForcedAtDeadline(t *testing.T) {
	// The stuck client's reply is larger than what the kernel's buffers
	// take (its receive buffer is kept small, so the window stays shut).
	const stuckSize, size, timeout, margin = 16 << 20, 1 << 20, 2 * time.Second, 3 * time.Second
	logger, logs := newTestLogger()
	g, err := NewGroup(GroupConfig{Loops: 2, Logger: logger})
	require.NoError(t, err)
	srv := &bulkServer{base: pattern(stuckSize)}
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = Add(l, c, srv, Config{MaxWriteQueue: 2 * stuckSize})
	})
	require.NoError(t, err)
	ran := runForShutdown(t, g)

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		})
		return errors.Join(err, serr)
	}}
	stuck, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer stuck.Close()
	_, err = fmt.Fprintf(stuck, "%d %d\n", 0, stuckSize)
	require.NoError(t, err)
	eventually(t, "the stuck client's reply queued", func() bool { return srv.queued.Load() == 1 })

	var read sync.WaitGroup
	read.Add(1)
	release := make(chan struct{})
	reader := make(chan error, 1)
	go func() { reader <- bulkClient(ln.Addr().String(), 1, size, 1, srv.base, &read, release) }()
	read.Wait()
	close(release)

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	err = g.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, <-reader, "the client that reads is served in full")
	end := <-ran
	require.NoError(t, end.err)
	require.False(t, end.at.Before(deadline), "Run returned %v before the deadline", deadline.Sub(end.at))
	require.Less(t, end.at.Sub(deadline), margin, "Run returned long after the deadline")

	v, ok := srv.closed.Load(0)
	require.True(t, ok)
	require.ErrorIs(t, v.(errOrNil).err, context.DeadlineExceeded)
	require.NoError(t, stuck.SetReadDeadline(time.Now().Add(waitLimit)))
	n, err := io.Copy(io.Discard, stuck)
	require.Less(t, n, int64(stuckSize), "the stuck client got everything: nothing was dropped (read error %v)", err)
	require.NotEmpty(t, logs.line(`msg="netloop: drain forced"`, "left=1"), logs.String())
}

// polite finishes a Conn its own way when the drain begins: it says
// "draining", keeps reading, answers the client's last line and closes.
type polite struct{ draining atomic.Int32 }

func (p *polite) Data(c *Conn, in []byte) int {
	i := bytes.IndexByte(in, '\n')
	if i < 0 {
		return 0
	}
	_, _ = fmt.Fprintf(c, "ok %s\n", in[:i])
	if string(in[:i]) == "last" {
		c.Close()
	}
	return i + 1
}

func (p *polite) Draining(c *Conn) {
	p.draining.Add(1)
	_, _ = c.WriteString("draining\n")
}

// A DrainHandler hears of the drain and finishes the Conn its own way:
// the Conn keeps reading and writing until the handler closes it, and
// Shutdown waits for that. Also on Loops with several workers, where the
// drain reaches each Conn through Async.
func TestShutdownDrainHandler(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) { testShutdownDrainHandler(t, workers) })
	}
}

func testShutdownDrainHandler(t *testing.T, workers int) {
	g, err := NewGroup(GroupConfig{Loops: 2, Loop: eventloop.Config{Workers: workers}})
	require.NoError(t, err)
	p := new(polite)
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = Add(l, c, p, Config{})
	})
	require.NoError(t, err)
	ran := runForShutdown(t, g)
	var cs []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
		expectLines(t, c, "hello\n", "ok hello\n")
		cs = append(cs, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- g.Shutdown(ctx) }()
	for _, c := range cs {
		expectLines(t, c, "", "draining\n")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while the Conns were still open", err)
	default:
	}
	for _, c := range cs {
		expectLines(t, c, "more\n", "ok more\n")
		expectLines(t, c, "last\n", "ok last\n")
		n, err := c.Read(make([]byte, 1))
		require.Equal(t, 0, n)
		require.ErrorIs(t, err, io.EOF)
	}
	require.NoError(t, waitShutdown(t, shut))
	require.NoError(t, (<-ran).err)
	require.Equal(t, int32(len(cs)), p.draining.Load(), "each Conn hears of the drain once")
}

// expectLines sends send (if any) and reads exactly want.
func expectLines(t *testing.T, c net.Conn, send, want string) {
	t.Helper()
	if send != "" {
		_, err := io.WriteString(c, send)
		require.NoError(t, err)
	}
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// Shutdown of a lone Loop drains its Conns, also one added during the
// drain, and stops it; a second Shutdown gets the same result; after
// Close, Shutdown says ErrClosed.
func TestShutdownLoneLoop(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	ran := make(chan error, 1)
	go func() { ran <- l.Run(context.Background(), nil) }()
	p := new(polite)
	s1, c1 := clientPair(t)
	defer c1.Close()
	_, err := Add(l, s1, p, Config{})
	require.NoError(t, err)
	require.NoError(t, c1.SetDeadline(time.Now().Add(waitLimit)))

	shut := make(chan error, 2)
	go func() { shut <- Shutdown(context.Background(), l) }()
	expectLines(t, c1, "", "draining\n")
	s2, c2 := clientPair(t)
	defer c2.Close()
	require.NoError(t, c2.SetDeadline(time.Now().Add(waitLimit)))
	_, err = Add(l, s2, p, Config{})
	require.NoError(t, err)
	expectLines(t, c2, "", "draining\n")
	go func() { shut <- Shutdown(context.Background(), l) }()
	expectLines(t, c1, "last\n", "ok last\n")
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a Conn added during the drain still open", err)
	default:
	}
	expectLines(t, c2, "last\n", "ok last\n")
	require.NoError(t, waitShutdown(t, shut))
	require.NoError(t, waitShutdown(t, shut))
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after Shutdown")
	}
	require.NoError(t, Shutdown(context.Background(), l), "after the drain: its result again")
	require.NoError(t, l.Close())
	require.ErrorIs(t, Shutdown(context.Background(), l), ErrClosed)
}

// A second Shutdown during the first waits for the same drain; one after
// it returns its result; listening is refused from the first on.
func TestShutdownTwice(t *testing.T) {
	g, err := NewGroup(GroupConfig{Loops: 2})
	require.NoError(t, err)
	p := new(polite)
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = Add(l, c, p, Config{})
	})
	require.NoError(t, err)
	ran := runForShutdown(t, g)
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	expectLines(t, c, "hello\n", "ok hello\n")

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- g.Shutdown(context.Background()) }()
	expectLines(t, c, "", "draining\n")
	_, err = g.ListenTCP("tcp", "127.0.0.1:0", func(*eventloop.Loop, *socket.TCPConn) {})
	require.ErrorIs(t, err, ErrClosed, "listening during a Shutdown")
	require.ErrorIs(t, ln.Close(), ErrClosed, "Shutdown closed the Listener")
	// The second, with the shorter deadline, forces the drain for both.
	require.ErrorIs(t, g.Shutdown(short), context.DeadlineExceeded)
	require.ErrorIs(t, waitShutdown(t, shut), context.DeadlineExceeded, "the first gets the result of the drain")
	require.NoError(t, (<-ran).err)
	require.ErrorIs(t, g.Shutdown(context.Background()), context.DeadlineExceeded, "after: the same result")
	require.NoError(t, g.Close())
	require.ErrorIs(t, g.Shutdown(context.Background()), ErrClosed)
}

// A Shutdown that Close interrupts says ErrClosed: Close dropped what
// was queued.
func TestShutdownInterruptedByClose(t *testing.T) {
	g, err := NewGroup(GroupConfig{Loops: 1})
	require.NoError(t, err)
	p := new(polite)
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = Add(l, c, p, Config{})
	})
	require.NoError(t, err)
	ran := runForShutdown(t, g)
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	// Accepted and added: one still in the listener's queue would be
	// reset by the kernel when Shutdown closes the listener.
	expectLines(t, c, "hello\n", "ok hello\n")
	shut := make(chan error, 1)
	go func() { shut <- g.Shutdown(context.Background()) }()
	expectLines(t, c, "", "draining\n")
	require.NoError(t, g.Close())
	require.ErrorIs(t, waitShutdown(t, shut), ErrClosed)
	require.NoError(t, (<-ran).err)
}
