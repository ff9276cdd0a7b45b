package netloop

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The timeouts of a TLS Conn, with Go's crypto/tls client over loopback:
// they count plaintext as a plain Conn's count its bytes (Config), and
// end the Conn as a plain Conn's do (conn_timeout_rules_test.go,
// conn_reset_test.go): with a clean end when nothing was discarded, with
// a reset when queued output was.

// tlsTimed is a TLS server's handler that echoes, runs up (if set) and
// hands its Conn to the test once the handshake is done, and notes when
// and why its Conn closed.
type tlsTimed struct {
	closeRec
	up    func(c *Conn)
	conns chan *Conn
}

func (h *tlsTimed) Data(c *Conn, in []byte) int {
	n, _ := c.Write(in)
	return n
}

func (h *tlsTimed) HandshakeDone(c *Conn) {
	if h.up != nil {
		h.up(c)
	}
	h.conns <- c
}

// serveTimed serves TLS with cfg (its TLS set to the rig's) and hands
// the test each Conn's handler, whose up is up.
func serveTimed(t *testing.T, rig *tlsRig, cfg Config, up func(c *Conn)) (addr string, hs <-chan *tlsTimed) {
	t.Helper()
	ch := make(chan *tlsTimed, 4)
	cfg.TLS = rig.serverConfig()
	addr, _ = serveTLS(t, cfg, func() Handler {
		h := &tlsTimed{closeRec: closeRec{ch: make(chan closeAt, 1)}, up: up, conns: make(chan *Conn, 1)}
		ch <- h
		return h
	})
	return addr, ch
}

// A TLS client that sends a line every quarter of the limit for three
// limits lives on: its input (and the echo) count. Once it falls silent
// it is closed at ReadTimeout, or IdleTimeout, with that timeout's
// error, no earlier than the limit after its last input. Nothing was
// discarded, so the client reads the last echo and then a clean end
// (io.EOF), as a plain Conn's peer does. (On a loaded machine the client
// may itself stall past the limit while busy; then, and only then, may
// its Conn be closed early.)
func TestTLSIdleClientTimesOut(t *testing.T) {
	const limit = slowReaderLimit
	rig := newTLSRig(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"read", Config{ReadTimeout: limit}, ErrReadTimeout},
		{"idle", Config{IdleTimeout: limit}, ErrIdleTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, hs := serveTimed(t, rig, tc.cfg, nil)
			c := dialTLS(t, addr, rig.clientConfig(0))
			h := <-hs
			<-h.conns
			// A gap runs from the start of one exchange to the end of the
			// next, so that it is never underestimated.
			busy, prev, gap := time.Now(), time.Now(), time.Duration(0)
			for time.Since(busy) < 3*limit {
				began := time.Now()
				_, err := io.WriteString(c, "ping")
				if err == nil {
					_, err = io.ReadFull(c, make([]byte, 4))
				}
				gap, prev = max(gap, time.Since(prev)), began
				var got closeAt
				closed := err != nil
				if closed {
					got = closedWithin(t, &h.closeRec, "the exchange failed ("+err.Error()+")")
				} else {
					select {
					case got = <-h.ch:
						closed = true
					default:
					}
				}
				if closed {
					require.GreaterOrEqual(t, gap, limit, "closed (%v) while busy, though the client never paused for the limit", got.err)
					t.Logf("the client paused %v: its Conn was rightly closed", gap)
					return
				}
				time.Sleep(limit / 4) // the client's pace, not synchronisation
			}
			last := time.Now() // before the client's last input to the Conn
			_, err := io.WriteString(c, "last words")
			require.NoError(t, err)
			got := closedWithin(t, &h.closeRec, tc.name+" timeout")
			require.ErrorIs(t, got.err, tc.want)
			require.GreaterOrEqual(t, got.at.Sub(last), limit, "closed before the limit")
			all, err := io.ReadAll(c)
			require.NoError(t, err, "a clean end: nothing was discarded")
			require.Equal(t, "last words", string(all))
		})
	}
}

// A TLS client that reads 32 KiB of 32 MiB the server queued and then
// stops: the server's Conn is closed by its ReadTimeout (HighWater at
// the bound, so no back pressure stops the read clock), IdleTimeout or
// WriteTimeout, no earlier than the limit after the dial, with most of
// the output still queued; the client, reading on after the close, gets
// ECONNRESET after whatever the kernels held, never a clean end of a
// stream cut short.
func TestTLSTimeoutResetsSlowReader(t *testing.T) {
	const total = 32 << 20
	rig := newTLSRig(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"read", Config{ReadTimeout: slowReaderLimit, HighWater: total}, ErrReadTimeout},
		{"idle", Config{IdleTimeout: slowReaderLimit}, ErrIdleTimeout},
		{"write", Config{WriteTimeout: slowReaderLimit}, ErrWriteTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.MaxWriteQueue = total
			addr, hs := serveTimed(t, rig, cfg, func(c *Conn) {
				if _, err := c.Write(make([]byte, total)); err != nil {
					t.Errorf("queueing %d bytes: %v", total, err)
				}
			})
			began := time.Now() // before the Conn, and so before each clock's start
			c := dialTLS(t, addr, rig.clientConfig(0))
			require.NoError(t, c.NetConn().(*net.TCPConn).SetReadBuffer(64<<10))
			h := <-hs
			got, err := io.ReadFull(c, make([]byte, 32<<10))
			require.NoError(t, err, "the first 32 KiB")
			closed := closedWithin(t, &h.closeRec, tc.name+" timeout")
			require.ErrorIs(t, closed.err, tc.want)
			require.GreaterOrEqual(t, closed.at.Sub(began), slowReaderLimit, "closed before the limit")
			n, err := io.Copy(io.Discard, c)
			got += int(n)
			require.Less(t, got, total, "the client read everything")
			require.ErrorIs(t, err, syscall.ECONNRESET, "the client's read after %d of %d bytes", got, total)
		})
	}
}
