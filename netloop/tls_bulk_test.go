package netloop

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"hash"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
)

// bulkSize is what each side of a bulk test sends.
const bulkSize = 64 << 20

// seedStream is a deterministic pseudo-random byte seedStream of a seed.
type seedStream struct{ r *rand.ChaCha8 }

func newSeedStream(seed byte) *seedStream { return &seedStream{r: rand.NewChaCha8([32]byte{seed})} }

func (s *seedStream) Read(p []byte) (int, error) { return s.r.Read(p) }

// streamSum is the SHA-256 of a seed's first n bytes.
func streamSum(seed byte, n int64) [32]byte {
	h := sha256.New()
	_, _ = io.CopyN(h, newSeedStream(seed), n)
	return [32]byte(h.Sum(nil))
}

// bulkPump sends bulkSize bytes of its seed's stream as fast as back
// pressure lets it (it writes until Pressure(true), and again at
// Pressure(false)), then CloseWrite; it hashes what it receives, and at
// the end of input reports the sum and closes once its own sending is
// done. A replier starts sending at the end of its input: two pumps
// sending at once would each stop reading under back pressure, waiting
// for the other to read, as any two Conns would.
type bulkPump struct {
	replier bool
	seed    byte
	src     *seedStream
	sent    int
	high    bool
	eof     bool
	recv    hash.Hash
	n       atomic.Int64
	sums    chan [32]byte
	closed  chan error
}

func newBulkPump(seed byte) *bulkPump {
	return &bulkPump{seed: seed, src: newSeedStream(seed), recv: sha256.New(), sums: make(chan [32]byte, 1), closed: make(chan error, 1)}
}

func (p *bulkPump) fill(c *Conn) {
	buf := make([]byte, 32<<10)
	for !p.high && p.sent < bulkSize {
		n := min(len(buf), bulkSize-p.sent)
		_, _ = p.src.Read(buf[:n])
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
		p.sent += n
	}
	if p.sent == bulkSize {
		c.CloseWrite()
		if p.eof {
			c.Close()
		}
	}
}

func (p *bulkPump) Data(c *Conn, in []byte) int {
	p.recv.Write(in)
	p.n.Add(int64(len(in)))
	return len(in)
}
func (p *bulkPump) Pressure(c *Conn, high bool) {
	p.high = high
	if !high {
		p.fill(c)
	}
}
func (p *bulkPump) ReadClosed(c *Conn) {
	p.eof = true
	p.sums <- [32]byte(p.recv.Sum(nil))
	if p.replier {
		p.fill(c)
	} else if p.sent == bulkSize {
		c.Close()
	}
}
func (p *bulkPump) Closed(c *Conn, err error) { p.closed <- err }

// waitSum waits for a bulkPump's sum of what it received.
func (p *bulkPump) waitSum(t *testing.T) [32]byte {
	t.Helper()
	select {
	case s := <-p.sums:
		return s
	case <-time.After(2 * waitLimit):
		t.Fatalf("bulkPump %d: received %d of %d bytes", p.seed, p.n.Load(), bulkSize)
		return [32]byte{}
	}
}

// 64 MiB each way between a netloop TLS client (Dial) and a netloop TLS
// server, one way after the other, under back pressure (a HighWater of
// 64 KiB), TLS 1.2 and 1.3: both arrive intact, and each side's
// close_notify is the other's clean end of input. Plain Conns too: a
// PressureHandler that writes when the queue drains, after a write the
// socket took whole, is written without waiting for an edge.
func TestTLSBulkBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB each way: not in -short")
	}
	rig := newTLSRig(t)
	for _, v := range []uint16{0, tls.VersionTLS12, tls.VersionTLS13} {
		name, serverTLS, clientTLS := "plain", (*tls.Config)(nil), (*tls.Config)(nil)
		if v != 0 {
			name, serverTLS, clientTLS = tls.VersionName(v), rig.serverConfig(), rig.clientConfig(v)
		}
		t.Run(name, func(t *testing.T) {
			server := newBulkPump(1)
			server.replier = true
			addr, _ := serveTLS(t, Config{TLS: serverTLS, HighWater: 64 << 10}, func() Handler { return server })
			client := newBulkPump(2)
			l := newLoop(t, eventloop.Config{})
			start(t, l, nil)
			dialed := make(chan error, 1)
			require.NoError(t, Dial(context.Background(), l, "tcp", addr, client, Config{TLS: clientTLS, HighWater: 64 << 10},
				func(c *Conn, err error) {
					if c != nil {
						client.fill(c)
					}
					dialed <- err
				}))
			require.NoError(t, <-dialed)
			var wg sync.WaitGroup
			var want1, want2 [32]byte
			wg.Add(2)
			go func() { defer wg.Done(); want1 = streamSum(1, bulkSize) }()
			go func() { defer wg.Done(); want2 = streamSum(2, bulkSize) }()
			wg.Wait()
			require.Equal(t, want2, server.waitSum(t), "client to server")
			require.Equal(t, want1, client.waitSum(t), "server to client")
			require.NoError(t, waitErr(t, server.closed))
			require.NoError(t, waitErr(t, client.closed))
		})
	}
}

// 64 MiB each way through a netloop TLS echo server with Go's crypto/tls
// client writing and reading at once: what comes back is what was sent.
func TestTLSBulkEchoGoClient(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB each way: not in -short")
	}
	rig := newTLSRig(t)
	addr, hs := serveTLS(t, Config{TLS: rig.serverConfig(), HighWater: 64 << 10}, func() Handler { return newTLSEcho() })
	_ = hs
	c := dialTLS(t, addr, rig.clientConfig(0))
	require.NoError(t, c.SetDeadline(time.Now().Add(4*waitLimit)))
	werr := make(chan error, 1)
	go func() {
		_, err := io.CopyN(c, newSeedStream(3), bulkSize)
		werr <- err
	}()
	h := sha256.New()
	_, err := io.CopyN(h, c, bulkSize)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.Equal(t, streamSum(3, bulkSize), [32]byte(h.Sum(nil)))
}
