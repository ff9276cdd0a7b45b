package netloop

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// The bounds of a TLS Conn count plaintext (Config): MaxWriteQueue is
// the most plaintext a Write may leave queued, MaxReadBuffer the most
// plaintext a Conn keeps unconsumed, at the same edges as a plain Conn's
// (conn_bounds_test.go). A bound that counted ciphertext, which is
// longer, would refuse or close early.

// tlsBoundsMax is the bound of these tests: smaller than a record, so
// that one record's ciphertext passes it while its plaintext does not.
const tlsBoundsMax = 1000

// Before the handshake (no Run serves the Loop, so none happens), Writes
// that fill the queue exactly to MaxWriteQueue are taken; one byte more
// is refused whole with ErrWriteQueueFull; an empty write is taken.
func TestTLSWriteQueueBoundBeforeHandshake(t *testing.T) {
	rig := newTLSRig(t)
	cfg := Config{TLS: rig.serverConfig(), MaxWriteQueue: tlsBoundsMax, HighWater: 500, LowWater: 100}
	for _, w := range connWriters {
		t.Run(w.name, func(t *testing.T) {
			l := newLoop(t, eventloop.Config{})
			s, _ := clientPair(t)
			c, err := Add(l, s, newTLSEcho(), cfg)
			require.NoError(t, err)
			require.NoError(t, writeBound(w, c))
		})
	}
}

// writeBound fills c's empty queue to tlsBoundsMax in two writes, and
// checks the bound's edge there. It may run on the Loop's goroutine, so
// it returns what went wrong rather than failing the test.
func writeBound(w connWriter, c *Conn) error {
	for _, n := range []int{tlsBoundsMax / 2, tlsBoundsMax - tlsBoundsMax/2} {
		if got, err := w.write(c, n); err != nil || got != n {
			return fmt.Errorf("%s of %d bytes with %d queued, bound %d: %d, %v", w.name, n, c.Queued(), tlsBoundsMax, got, err)
		}
	}
	if q := c.Queued(); q != tlsBoundsMax {
		return fmt.Errorf("Queued %d after %d bytes of plaintext", q, tlsBoundsMax)
	}
	if got, err := w.write(c, 1); !errors.Is(err, ErrWriteQueueFull) || got != 0 {
		return fmt.Errorf("%s of one byte past the bound: %d, %v", w.name, got, err)
	}
	if q := c.Queued(); q != tlsBoundsMax {
		return fmt.Errorf("a refused %s queued something: Queued %d", w.name, q)
	}
	if got, err := w.write(c, 0); err != nil || got != 0 {
		return fmt.Errorf("%s of nothing at the bound: %d, %v", w.name, got, err)
	}
	return nil
}

// Once established, in HandshakeDone (one call, so nothing is written
// meanwhile), the same edge, in TLS 1.2 and 1.3 (whose session tickets,
// ciphertext of the server's own, are not counted); the client then
// reads the whole queue intact, and the Conn takes new output.
func TestTLSWriteQueueBoundEstablished(t *testing.T) {
	rig := newTLSRig(t)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, w := range connWriters {
			t.Run(tls.VersionName(v)+"/"+w.name, func(t *testing.T) {
				cfg := Config{MaxWriteQueue: tlsBoundsMax, HighWater: 500, LowWater: 100}
				bound := make(chan error, 1)
				addr, hs := serveTimed(t, rig, cfg, func(c *Conn) { bound <- writeBound(w, c) })
				c := dialTLS(t, addr, rig.clientConfig(v))
				h := <-hs
				srv := <-h.conns
				require.NoError(t, <-bound)
				want := bytes.Repeat([]byte{map[string]byte{"Write": 'w', "WriteString": 's'}[w.name]}, tlsBoundsMax)
				got := make([]byte, tlsBoundsMax)
				_, err := io.ReadFull(c, got)
				require.NoError(t, err)
				require.Equal(t, want, got, "the queue came through intact")
				var n int
				inCall(t, srv, func(c *Conn) { n, err = w.write(c, tlsBoundsMax) })
				require.NoError(t, err, "the written queue left room")
				require.Equal(t, tlsBoundsMax, n)
				_, err = io.ReadFull(c, got)
				require.NoError(t, err)
				require.Equal(t, want, got)
			})
		}
	}
}

// tlsHoarder consumes nothing, and reports the length of each input Data
// is handed, its Conn once the handshake is done, and how it ended.
type tlsHoarder struct {
	lens   chan int
	conns  chan *Conn
	closed chan error
}

func (h *tlsHoarder) Data(c *Conn, in []byte) int {
	h.lens <- len(in)
	return 0
}
func (h *tlsHoarder) HandshakeDone(c *Conn)     { h.conns <- c }
func (h *tlsHoarder) Closed(c *Conn, err error) { h.closed <- err }

// A handler that consumes nothing may hold MaxReadBuffer-1 bytes of
// plaintext (a record whose ciphertext is longer than the bound) and
// stay open; the byte that fills the buffer is handed to Data with the
// rest (MaxReadBuffer bytes, never more) and the Conn is closed with
// ErrReadBufferFull. The same when the plaintext comes at once, exactly
// MaxReadBuffer bytes or more. The Conn discarded input: the client hears
// ECONNRESET.
func TestTLSReadBufferBound(t *testing.T) {
	rig := newTLSRig(t)
	for _, tc := range []struct {
		name  string
		sends []int
	}{
		{"one short, then the last byte", []int{tlsBoundsMax - 1, 1}},
		{"the bound at once", []int{tlsBoundsMax}},
		{"three times the bound at once", []int{3 * tlsBoundsMax}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := make(chan *tlsHoarder, 1)
			addr, _ := serveTLS(t, Config{TLS: rig.serverConfig(), MaxReadBuffer: tlsBoundsMax}, func() Handler {
				h := &tlsHoarder{lens: make(chan int, 64), conns: make(chan *Conn, 1), closed: make(chan error, 1)}
				hs <- h
				return h
			})
			c := dialTLS(t, addr, rig.clientConfig(0))
			h := <-hs
			srv := <-h.conns
			sent, reset := 0, false
			for i, n := range tc.sends {
				_, err := c.Write(bytes.Repeat([]byte{'r'}, n))
				sent += n
				if i == len(tc.sends)-1 {
					// Go's client sends the first bytes of a connection in
					// records of about 1,200: the Conn may close on the
					// first while the client still writes the next.
					if err != nil {
						require.ErrorIs(t, err, syscall.ECONNRESET)
						reset = true
					}
					break
				}
				require.NoError(t, err)
				// Not the last: wait until Data has been handed all of it,
				// then look at the Conn in its next call.
				for got := 0; got < sent; {
					got = nextLen(t, h.lens)
				}
				var closed bool
				var buffered int
				inCall(t, srv, func(c *Conn) { closed, buffered = c.Closed(), c.Buffered() })
				require.False(t, closed, "closed holding %d bytes of plaintext, bound %d", sent, tlsBoundsMax)
				require.Equal(t, sent, buffered)
			}
			err := waitErr(t, h.closed)
			require.ErrorIs(t, err, ErrReadBufferFull)
			close(h.lens) // the Conn is closed: Data is called no more
			last := 0
			for n := range h.lens {
				require.LessOrEqual(t, n, tlsBoundsMax, "Data was handed more than MaxReadBuffer")
				last = n
			}
			require.Equal(t, tlsBoundsMax, last, "the last Data call was not handed the full buffer")
			if !reset { // else the client's write heard it
				_, err = io.Copy(io.Discard, c)
				require.ErrorIs(t, err, syscall.ECONNRESET, "the Conn discarded input")
			}
		})
	}
}

// nextLen waits for the next input length Data reports.
func nextLen(t *testing.T, lens <-chan int) int {
	t.Helper()
	select {
	case n := <-lens:
		return n
	case <-time.After(waitLimit):
		t.Fatal("Data was not called")
		return 0
	}
}
