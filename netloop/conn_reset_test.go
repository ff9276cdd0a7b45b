package netloop

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// slowReaderLimit is the timeout of the slow-reader tests: long enough
// that the client's first reads come before it on a loaded machine.
const slowReaderLimit = 200 * time.Millisecond

// A slow reader never reads a truncated stream as a clean end: the Conn
// queues 32 MiB for a client that reads 32 KiB and then stops; the
// IdleTimeout (or the WriteTimeout) closes the Conn with most of it still
// queued, and the client, reading on after the close, gets ECONNRESET
// after whatever the kernels held, never io.EOF.
func TestTimeoutResetsSlowReader(t *testing.T) {
	const total = 32 << 20
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"idle", Config{IdleTimeout: slowReaderLimit}, ErrIdleTimeout},
		{"write", Config{WriteTimeout: slowReaderLimit}, ErrWriteTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoop(t, eventloop.Config{})
			start(t, l, nil)
			s, client := tcpClientPair(t)
			require.NoError(t, client.(*net.TCPConn).SetReadBuffer(64<<10))
			h := &closeRec{ch: make(chan closeAt, 1)}
			cfg := tc.cfg
			cfg.MaxWriteQueue = total
			c, err := Add(l, s, h, cfg)
			require.NoError(t, err)
			require.NoError(t, c.Async(func(c *Conn) {
				_, err := c.Write(make([]byte, total))
				require.NoError(t, err)
			}))
			got, err := io.ReadFull(client, make([]byte, 32<<10))
			require.NoError(t, err, "the first 32 KiB")
			var closed closeAt
			select {
			case closed = <-h.ch:
			case <-time.After(waitLimit):
				t.Fatalf("the Conn was not closed %v after it was added (%+v)", waitLimit, tc.cfg)
			}
			require.ErrorIs(t, closed.err, tc.want)
			require.NoError(t, client.SetReadDeadline(time.Now().Add(waitLimit)))
			n, err := io.Copy(io.Discard, client)
			got += int(n)
			require.Less(t, got, total, "the client read everything")
			require.ErrorIs(t, err, syscall.ECONNRESET, "the client's read after %d of %d bytes", got, total)
		})
	}
}

// A Conn whose timeout finds everything it wrote written and everything it
// read consumed has discarded nothing: it closes with a FIN, and the peer
// reads all of it, then the end of stream.
func TestTimeoutWithNothingQueuedEndsCleanly(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := tcpClientPair(t)
	h := &closeRec{ch: make(chan closeAt, 1)}
	c, err := Add(l, s, h, Config{ReadTimeout: slowReaderLimit})
	require.NoError(t, err)
	require.NoError(t, c.Async(func(c *Conn) { _, _ = c.WriteString("hello") }))
	select {
	case closed := <-h.ch:
		require.ErrorIs(t, closed.err, ErrReadTimeout)
	case <-time.After(waitLimit):
		t.Fatalf("the Conn was not closed %v after it was added", waitLimit)
	}
	require.NoError(t, client.SetReadDeadline(time.Now().Add(waitLimit)))
	all, err := io.ReadAll(client)
	require.NoError(t, err, "a clean end of stream")
	require.Equal(t, "hello", string(all))
}

// Abort always resets, also with nothing queued: it is the caller's way
// to say the exchange failed. Close, with the same nothing queued, ends
// cleanly.
func TestAbortResets(t *testing.T) {
	for _, abort := range []bool{true, false} {
		t.Run(map[bool]string{true: "Abort", false: "Close"}[abort], func(t *testing.T) {
			l := newLoop(t, eventloop.Config{})
			start(t, l, nil)
			s, client := tcpClientPair(t)
			h := &closeRec{ch: make(chan closeAt, 1)}
			c, err := Add(l, s, h, Config{})
			require.NoError(t, err)
			require.NoError(t, c.Async(func(c *Conn) {
				if abort {
					c.Abort(nil)
				} else {
					c.Close()
				}
			}))
			select {
			case closed := <-h.ch:
				require.NoError(t, closed.err)
			case <-time.After(waitLimit):
				t.Fatalf("the Conn was not closed %v after Abort", waitLimit)
			}
			require.NoError(t, client.SetReadDeadline(time.Now().Add(waitLimit)))
			_, err = io.ReadAll(client)
			if abort {
				require.ErrorIs(t, err, syscall.ECONNRESET)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// A handler that consumes nothing of a full read buffer ends its Conn
// with ErrReadBufferFull, discarding that input: a reset. The client
// sends exactly MaxReadBuffer bytes, so the kernel holds none unread
// (which would make the close a reset by itself).
func TestReadBufferFullResets(t *testing.T) {
	const limit = 4096
	l := newLoop(t, eventloop.Config{})
	start(t, l, nil)
	s, client := tcpClientPair(t)
	h := &keepAll{closeRec{ch: make(chan closeAt, 1)}}
	_, err := Add(l, s, h, Config{MaxReadBuffer: limit})
	require.NoError(t, err)
	_, err = client.Write(make([]byte, limit))
	require.NoError(t, err)
	select {
	case closed := <-h.ch:
		require.ErrorIs(t, closed.err, ErrReadBufferFull)
	case <-time.After(waitLimit):
		t.Fatalf("the Conn was not closed %v after its buffer filled", waitLimit)
	}
	require.NoError(t, client.SetReadDeadline(time.Now().Add(waitLimit)))
	_, err = io.ReadAll(client)
	require.ErrorIs(t, err, syscall.ECONNRESET)
}

// keepAll consumes nothing, and tells when its Conn closes.
type keepAll struct{ closeRec }

func (*keepAll) Data(*Conn, []byte) int { return 0 }
