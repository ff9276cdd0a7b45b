package netloop

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// echo is the simplest protocol: every byte back.
type echo struct {
	closed  chan error
	press   atomic.Int32 // Pressure(true) calls
	release atomic.Int32 // Pressure(false) calls
}

func newEcho() *echo { return &echo{closed: make(chan error, 1)} }

func (e *echo) Data(c *Conn, in []byte) int {
	n, err := c.Write(in)
	if errors.Is(err, ErrWriteQueueFull) {
		return 0 // keep it for later
	}
	return n
}

func (e *echo) Closed(c *Conn, err error) { e.closed <- err }

func (e *echo) Pressure(c *Conn, high bool) {
	if high {
		e.press.Add(1)
	} else {
		e.release.Add(1)
	}
}

// clientPair returns a server end for a Conn and a blocking client end as
// a net.Conn (a file-backed socket, so it has deadlines).
func clientPair(t *testing.T) (*socket.UnixConn, net.Conn) {
	t.Helper()
	a, b, err := socket.Pair()
	require.NoError(t, err)
	dup, err := unix.FcntlInt(uintptr(b.Fd()), unix.F_DUPFD_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	cf := os.NewFile(uintptr(dup), "client")
	client, err := net.FileConn(cf)
	require.NoError(t, err)
	require.NoError(t, cf.Close())
	t.Cleanup(func() { _ = client.Close() })
	require.NoError(t, client.SetDeadline(time.Now().Add(waitLimit)))
	return a, client
}

// The echo through a Conn: messages of every size up to 1 MiB come back
// byte for byte while the client writes and reads at once; the client's
// CloseWrite makes the Conn close once everything is written back.
func TestConnEcho(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(map[int]string{1: "one worker", 3: "three workers"}[workers], func(t *testing.T) {
			l := newLoop(t, eventloop.Config{Workers: workers})
			start(t, l, nil)
			s, client := clientPair(t)
			h := newEcho()
			c, err := Add(l, s, h, Config{})
			require.NoError(t, err)
			require.Equal(t, 1, Conns(l))
			rng := rand.New(rand.NewPCG(1, 2))
			for _, size := range []int{1, 7, 100, 4096, 65536 + 3, 1 << 20, 13} {
				msg := make([]byte, size)
				for i := range msg {
					msg[i] = byte(rng.Uint32())
				}
				werr := make(chan error, 1)
				go func() {
					_, err := client.Write(msg)
					werr <- err
				}()
				got := make([]byte, size)
				_, err := io.ReadFull(client, got)
				require.NoError(t, err)
				require.NoError(t, <-werr)
				require.True(t, bytes.Equal(msg, got), "echo of %d bytes differs", size)
			}
			require.NoError(t, client.(interface{ CloseWrite() error }).CloseWrite())
			rest, err := io.ReadAll(client)
			require.NoError(t, err)
			require.Empty(t, rest)
			require.NoError(t, <-h.closed)
			eventually(t, "the Conn to leave", func() bool { return Conns(l) == 0 })
			require.True(t, c.Closed())
		})
	}
}

// countStream counts a Stream's reads and those that would block.
type countStream struct {
	Stream
	reads, blocked atomic.Int64
}

func (s *countStream) Read(b []byte) (int, error) {
	n, err := s.Stream.Read(b)
	s.reads.Add(1)
	if isWouldBlock(err) {
		s.blocked.Add(1)
	}
	return n, err
}

// A short read ends a read pass: a small message costs one read, not a
// second one that would only return EAGAIN.
func TestConnShortReadOneReadPerMessage(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := clientPair(t)
	cs := &countStream{Stream: s}
	_, err := Add(l, cs, newEcho(), Config{})
	require.NoError(t, err)
	const msgs = 200
	buf := make([]byte, 32)
	for i := range msgs {
		msg := []byte{byte(i), 1, 2, 3}
		_, err := client.Write(msg)
		require.NoError(t, err)
		_, err = io.ReadFull(client, buf[:len(msg)])
		require.NoError(t, err)
	}
	// Every message arrived on its own (the client waits for its echo), so
	// each was one read; a spurious event may add a read that blocks.
	require.Equal(t, int64(0), cs.blocked.Load(), "reads that only said EAGAIN")
	require.Equal(t, int64(msgs), cs.reads.Load())
}

// A client that sends and never reads: the Conn stops reading once its
// queue passes HighWater, so its memory stays bounded; when the client
// reads again, everything comes back.
func TestConnBackPressure(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := clientPair(t)
	h := newEcho()
	cfg := Config{HighWater: 64 << 10, LowWater: 16 << 10, MaxWriteQueue: 256 << 10}
	c, err := Add(l, s, h, cfg)
	require.NoError(t, err)
	const total = 8 << 20
	sent := make(chan error, 1)
	var written atomic.Int64
	go func() {
		chunk := bytes.Repeat([]byte("abcdefgh"), 4096)
		for written.Load() < total {
			n, err := client.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	eventually(t, "back pressure", func() bool { return h.press.Load() > 0 })
	// The client's writes stall: the socket buffers fill up and the Conn
	// reads no more. Look at the Conn's queue on the Loop.
	stalled := written.Load()
	var queued, buffered atomic.Int64
	for range 5 {
		quiesce(t, l)
		done := make(chan struct{})
		require.NoError(t, l.Post(func(*eventloop.Loop) {
			queued.Store(int64(c.Queued()))
			buffered.Store(int64(c.Buffered()))
			close(done)
		}))
		<-done
		require.LessOrEqual(t, queued.Load(), int64(cfg.MaxWriteQueue))
		require.LessOrEqual(t, buffered.Load(), int64(DefaultMaxReadBuffer))
	}
	require.Less(t, written.Load()-stalled, int64(total/2), "the client kept writing: nothing pushed back")
	// Now read: everything comes back, in order.
	got := make([]byte, total)
	_, err = io.ReadFull(client, got)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	require.Equal(t, bytes.Repeat([]byte("abcdefgh"), total/8), got)
	require.Positive(t, h.release.Load())
}

// Write beyond MaxWriteQueue is refused whole.
func TestConnWriteQueueFull(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	s, _ := clientPair(t)
	c, err := Add(l, s, newEcho(), Config{MaxWriteQueue: 1024, HighWater: 512})
	require.NoError(t, err)
	n, err := c.Write(make([]byte, 1000))
	require.NoError(t, err)
	require.Equal(t, 1000, n)
	n, err = c.Write(make([]byte, 100))
	require.ErrorIs(t, err, ErrWriteQueueFull)
	require.Zero(t, n)
	require.Equal(t, 1000, c.Queued())
}

// nothing consumes nothing.
type nothing struct{ closed chan error }

func newNothing() nothing                   { return nothing{closed: make(chan error, 1)} }
func (nothing) Data(*Conn, []byte) int      { return 0 }
func (n nothing) Closed(c *Conn, err error) { n.closed <- err }
func (n nothing) expect(t *testing.T) error { return <-n.closed }

// A handler that consumes nothing of a full buffer ends its Conn with
// ErrReadBufferFull, not with unbounded memory.
func TestConnReadBufferFull(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := clientPair(t)
	h := newNothing()
	_, err := Add(l, s, h, Config{MaxReadBuffer: 64 << 10})
	require.NoError(t, err)
	go func() { _, _ = client.Write(make([]byte, 1<<20)) }()
	require.ErrorIs(t, h.expect(t), ErrReadBufferFull)
}

// Async from other goroutines runs in the Conn's calls; Close from one of
// them closes after the queued output.
func TestConnAsyncAndClose(t *testing.T) {
	l := newLoop(t, eventloop.Config{Workers: 2})
	start(t, l, nil)
	s, client := clientPair(t)
	h := newEcho()
	c, err := Add(l, s, h, Config{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, c.Async(func(c *Conn) { _, _ = c.Write([]byte{byte('a' + i)}) }))
		}()
	}
	wg.Wait()
	got := make([]byte, 10)
	_, err = io.ReadFull(client, got)
	require.NoError(t, err)
	require.ElementsMatch(t, []byte("abcdefghij"), got)
	require.NoError(t, c.Async(func(c *Conn) {
		_, _ = c.WriteString("bye")
		c.Close()
	}))
	rest, err := io.ReadAll(client)
	require.NoError(t, err)
	require.Equal(t, "bye", string(rest))
	require.NoError(t, <-h.closed)
	require.ErrorIs(t, c.Async(func(*Conn) {}), ErrClosed)
}

// eofReply answers the end of input with a last line and CloseWrite,
// keeping the Conn open.
type eofReply struct{ echo }

func (e *eofReply) ReadClosed(c *Conn) {
	_, _ = c.WriteString("that was all")
	c.CloseWrite()
}

func TestConnReadClosedHook(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := clientPair(t)
	h := &eofReply{echo: *newEcho()}
	c, err := Add(l, s, h, Config{})
	require.NoError(t, err)
	_, err = client.Write([]byte("hello "))
	require.NoError(t, err)
	require.NoError(t, client.(interface{ CloseWrite() error }).CloseWrite())
	rest, err := io.ReadAll(client)
	require.NoError(t, err)
	require.Equal(t, "hello that was all", string(rest))
	require.Equal(t, 1, Conns(l), "the Conn stays open after CloseWrite")
	done := make(chan struct{})
	require.NoError(t, c.Async(func(c *Conn) { c.Close(); close(done) }))
	<-done
	require.NoError(t, <-h.closed)
}

func TestConnConfigErrors(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	for _, cfg := range []Config{
		{MaxReadBuffer: -1},
		{HighWater: 100, LowWater: 100},
		{MaxWriteQueue: 10, HighWater: 100},
	} {
		s, _ := clientPair(t)
		_, err := Add(l, s, newEcho(), cfg)
		require.ErrorIs(t, err, ErrInvalidArgument, "%+v", cfg)
	}
	_, err := Add(l, nil, newEcho(), Config{})
	require.ErrorIs(t, err, ErrInvalidArgument)
}
