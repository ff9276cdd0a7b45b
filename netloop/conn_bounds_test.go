package netloop

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// A Conn's bounds at their exact edges, as Config states them:
// MaxWriteQueue is the most a Write may leave queued, and MaxReadBuffer
// the most input a Conn keeps (and hands to Data) unconsumed. The water
// marks are in conn_watermark_linux_test.go (they need a pipe's exact
// capacity).

// connWriter is Write or WriteString: both must draw the bound at the
// same byte.
type connWriter struct {
	name  string
	write func(c *Conn, n int) (int, error)
}

var connWriters = []connWriter{
	{"Write", func(c *Conn, n int) (int, error) { return c.Write(bytes.Repeat([]byte{'w'}, n)) }},
	{"WriteString", func(c *Conn, n int) (int, error) { return c.WriteString(strings.Repeat("s", n)) }},
}

// Writes that fill the queue exactly to MaxWriteQueue are taken, whatever
// the split; one byte more is refused whole with ErrWriteQueueFull and
// leaves the queue as it was; an empty write is taken even at the bound.
// No Run serves the Loop, so nothing queued is written meanwhile.
func TestConnWriteQueueBoundAtTheEdge(t *testing.T) {
	const max = 1000
	cfg := Config{MaxWriteQueue: max, HighWater: 500, LowWater: 100}
	for _, w := range connWriters {
		for _, first := range []int{0, 1, max / 2, max - 1, max} {
			t.Run(fmt.Sprintf("%s/%d+%d", w.name, first, max-first), func(t *testing.T) {
				l := newLoop(t, eventloop.Config{})
				s, _ := clientPair(t)
				c, err := Add(l, s, newEcho(), cfg)
				require.NoError(t, err)
				for _, n := range []int{first, max - first} {
					got, err := w.write(c, n)
					require.NoError(t, err, "%s of %d bytes with %d queued, bound %d", w.name, n, c.Queued(), max)
					require.Equal(t, n, got)
				}
				require.Equal(t, max, c.Queued())
				got, err := w.write(c, 1)
				require.ErrorIs(t, err, ErrWriteQueueFull, "%s of one byte past the bound", w.name)
				require.Zero(t, got)
				require.Equal(t, max, c.Queued(), "a refused %s queued something", w.name)
				got, err = w.write(c, 0)
				require.NoError(t, err, "%s of nothing at the bound", w.name)
				require.Zero(t, got)
			})
		}
		t.Run(w.name+"/one past from empty", func(t *testing.T) {
			l := newLoop(t, eventloop.Config{})
			s, _ := clientPair(t)
			c, err := Add(l, s, newEcho(), cfg)
			require.NoError(t, err)
			got, err := w.write(c, max+1)
			require.ErrorIs(t, err, ErrWriteQueueFull)
			require.Zero(t, got)
			require.Zero(t, c.Queued())
		})
	}
}

// hoarder consumes nothing and records what Data was handed.
type hoarder struct {
	longest int // the longest input Data was handed
	last    int
	closed  []error
}

func (h *hoarder) Data(c *Conn, in []byte) int {
	h.longest = max(h.longest, len(in))
	h.last = len(in)
	return 0
}

func (h *hoarder) Closed(c *Conn, err error) { h.closed = append(h.closed, err) }

// runOnceN makes n iterations with RunOnce on the test's goroutine, which
// is then the Loop's: what they call is over when it returns.
func runOnceN(t *testing.T, l *eventloop.Loop, n int) {
	t.Helper()
	for range n {
		require.NoError(t, l.RunOnce(0, nil))
	}
}

// A handler that consumes nothing may hold MaxReadBuffer-1 bytes and
// stay open; the byte that fills the buffer is handed to Data with the
// rest (MaxReadBuffer bytes, never more) and, Data consuming nothing of a
// full buffer, the Conn is closed with ErrReadBufferFull. The same when
// the input comes at once, exactly MaxReadBuffer bytes or more. Both
// when the workers' read buffer is larger than the bound (input is read
// where it lies there) and when it is smaller (the Conn's own buffer
// grows to the bound), and with one read per call.
func TestConnReadBufferBoundAtTheEdge(t *testing.T) {
	const max = 1000
	for _, rc := range []struct {
		name string
		cfg  eventloop.Config
		per  int // ReadsPerCall
	}{
		{"read buffer larger", eventloop.Config{}, 0},
		{"read buffer smaller", eventloop.Config{ReadBuffer: 256}, 0},
		{"read buffer smaller, one read per call", eventloop.Config{ReadBuffer: 256}, 1},
	} {
		t.Run(rc.name, func(t *testing.T) {
			open := func(t *testing.T) (*eventloop.Loop, *Conn, *hoarder, func(n int)) {
				l := newLoop(t, rc.cfg)
				s, client := clientPair(t)
				h := &hoarder{}
				c, err := Add(l, s, h, Config{MaxReadBuffer: max, ReadsPerCall: rc.per})
				require.NoError(t, err)
				send := func(n int) {
					_, err := client.Write(bytes.Repeat([]byte{'r'}, n))
					require.NoError(t, err)
				}
				return l, c, h, send
			}
			t.Run("one short, then the last byte", func(t *testing.T) {
				l, c, h, send := open(t)
				send(max - 1)
				runOnceN(t, l, 5)
				require.False(t, c.Closed(), "closed holding %d bytes of %d: %v", max-1, max, h.closed)
				require.Equal(t, max-1, c.Buffered())
				require.Equal(t, max-1, h.last)
				send(1)
				runOnceN(t, l, 5)
				require.Equal(t, max, h.last, "the last Data call was not handed the full buffer")
				require.Equal(t, max, h.longest)
				require.True(t, c.Closed(), "open with a full buffer that Data consumed nothing of")
				require.Len(t, h.closed, 1)
				require.ErrorIs(t, h.closed[0], ErrReadBufferFull)
			})
			for _, n := range []int{max, max + 1, 3 * max} {
				t.Run(fmt.Sprintf("%d at once", n), func(t *testing.T) {
					l, c, h, send := open(t)
					send(n)
					runOnceN(t, l, 5)
					require.LessOrEqual(t, h.longest, max, "Data was handed more than MaxReadBuffer")
					require.Equal(t, max, h.last)
					require.True(t, c.Closed(), "open with a full buffer that Data consumed nothing of (%d bytes buffered)", c.Buffered())
					require.Len(t, h.closed, 1)
					require.ErrorIs(t, h.closed[0], ErrReadBufferFull)
				})
			}
		})
	}
}
