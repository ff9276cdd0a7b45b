package netloop

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// pipeStream is a Stream whose output goes into a pipe of one page. Such
// a pipe takes exactly its capacity when it is empty and nothing while it
// holds anything, so how much a flush writes is known to the byte (a
// socket's buffer counts its bytes with overheads). It has no input:
// Read says it would block. Its Write follows the Edge rule as the socket
// package does: it writes until EAGAIN and re-arms then.
type pipeStream struct {
	w int        // the pipe's write end, the registered descriptor
	p *poll.Poll // the Poll it is registered with, for Rearm
}

// newPipeStream returns a pipeStream, the pipe's read end (closed at the
// test's end) and the pipe's capacity. The Conn owns the write end.
func newPipeStream(t *testing.T) (*pipeStream, int, int) {
	t.Helper()
	r, w := pipe(t)
	t.Cleanup(func() { _ = unix.Close(r) })
	_, err := unix.FcntlInt(uintptr(w), unix.F_SETPIPE_SZ, os.Getpagesize())
	require.NoError(t, err)
	size, err := unix.FcntlInt(uintptr(w), unix.F_GETPIPE_SZ, 0)
	require.NoError(t, err)
	return &pipeStream{w: w}, r, size
}

func (s *pipeStream) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	s.p = p
	return poll.Fd(s.w).Register(p, t, interest, opts)
}

func (s *pipeStream) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	return poll.Fd(s.w).Reregister(p, t, interest, opts)
}

func (s *pipeStream) Deregister(p *poll.Poll) error { return poll.Fd(s.w).Deregister(p) }

func (s *pipeStream) Read([]byte) (int, error) { return 0, socket.ErrWouldBlock }

func (s *pipeStream) Write(b []byte) (int, error) {
	total := 0
	for len(b) > 0 {
		n, err := unix.Write(s.w, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if rerr := poll.Fd(s.w).Drained(s.p, poll.Writable); rerr != nil {
				return total, rerr
			}
			return total, socket.ErrWouldBlock
		case err != nil:
			return total, err
		}
		total += n
		b = b[n:]
	}
	return total, nil
}

func (s *pipeStream) CloseWrite() error { return nil }

func (s *pipeStream) Close() error { return unix.Close(s.w) }

// pressureRec records each Pressure call with the queue at that moment.
type pressureRec struct{ calls []pressureCall }

type pressureCall struct {
	high   bool
	queued int
}

func (p *pressureRec) Data(c *Conn, in []byte) int { return len(in) }

func (p *pressureRec) Pressure(c *Conn, high bool) {
	p.calls = append(p.calls, pressureCall{high, c.Queued()})
}

// onLoop runs f as a posted function of l, driving l with RunOnce on the
// test's goroutine (no Run serves it), and returns once f has run.
func onLoop(t *testing.T, l *eventloop.Loop, f func()) {
	t.Helper()
	ran := false
	require.NoError(t, l.Post(func(*eventloop.Loop) { f(); ran = true }))
	for i := 0; !ran; i++ {
		require.Less(t, i, 10, "the posted function did not run")
		require.NoError(t, l.RunOnce(0, nil))
	}
}

// The water marks at their exact edges, as Config states them: the
// Conn stops reading (Pressure true) when more than HighWater is queued,
// not at HighWater, and resumes (Pressure false) when the queue falls to
// LowWater, not to LowWater+1. A one-page pipe makes each flush take
// exactly the pipe's capacity, so the queue lands on the byte wanted:
// HighWater is the capacity plus LowWater, and a flush of HighWater+1
// leaves LowWater+1.
func TestConnWaterMarksAtTheEdge(t *testing.T) {
	const low = 100
	for _, w := range connWriters {
		t.Run(w.name, func(t *testing.T) {
			l := newLoop(t, eventloop.Config{})
			ps, r, size := newPipeStream(t)
			high := size + low
			h := &pressureRec{}
			c, err := Add(l, ps, h, Config{LowWater: low, HighWater: high, MaxWriteQueue: high + size})
			require.NoError(t, err)
			write := func(n int) {
				t.Helper()
				onLoop(t, l, func() {
					got, err := w.write(c, n)
					require.NoError(t, err)
					require.Equal(t, n, got)
				})
			}
			drain := func() {
				t.Helper()
				buf := make([]byte, size)
				n, err := unix.Read(r, buf)
				require.NoError(t, err)
				require.Equal(t, size, n, "the pipe held less than its capacity")
				require.Equal(t, bytes.Repeat(buf[:1], size), buf)
			}
			written := func(what string, queued int, calls ...pressureCall) {
				t.Helper()
				runOnceN(t, l, 3) // the Conn's call, and spares
				require.Equal(t, queued, c.Queued(), what)
				require.Equal(t, calls, h.calls, what)
			}
			paused := pressureCall{true, high + 1}
			resumed := pressureCall{false, low}

			write(size)
			written("the pipe filled", 0)
			write(high)
			written("exactly HighWater queued", high)
			write(1)
			written("one byte above HighWater", high+1, paused)
			drain()
			written("the pipe took its capacity, LowWater+1 left", low+1, paused)
			write(size - 1)
			written("queued while the pipe is full", size+low, paused)
			drain()
			written("exactly LowWater left", low, paused, resumed)
			write(high - low)
			written("exactly HighWater again", high, paused, resumed)
			write(1)
			written("above HighWater again", high+1, paused, resumed, paused)
		})
	}
}
