package netloop

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// relayRig is a relay between two Go net clients: front <-> Conn a, and
// Conn b <-> back, on loopback.
type relayRig struct {
	l           *eventloop.Loop
	a, b        *Conn
	front, back net.Conn
	ha, hb      *relayEnd
}

// relayEnd is a relayed Conn's handler: it hears the close, and counts
// the bytes Data was handed (none once the relay runs).
type relayEnd struct {
	closed chan error
	data   chan int
}

func newRelayEnd() *relayEnd { return &relayEnd{closed: make(chan error, 1), data: make(chan int, 16)} }

func (e *relayEnd) Data(c *Conn, in []byte) int {
	select {
	case e.data <- len(in):
	default:
	}
	return 0
}

func (e *relayEnd) Closed(c *Conn, err error) { e.closed <- err }

// relayCase is a variant of the rig: the socket family, the workers, and
// whether the relay copies (relayForceCopy) or hides the descriptors
// (noFdStream).
type relayCase struct {
	transport string // "tcp" or "unix"
	workers   int
	copy      bool
	noFd      bool
	twoLoops  bool // b on a Loop of its own
}

func (rc relayCase) String() string {
	how := "splice"
	switch {
	case rc.noFd:
		how = "nofd"
	case rc.copy:
		how = "copy"
	}
	if rc.twoLoops {
		how += "/two-loops"
	}
	return fmt.Sprintf("%s/%s/w%d", rc.transport, how, rc.workers)
}

// relayCases are the variants each relay test runs in.
var relayCases = []relayCase{
	{transport: "tcp", workers: 1},
	{transport: "tcp", workers: 1, copy: true},
	{transport: "unix", workers: 1},
	{transport: "unix", workers: 1, noFd: true},
	{transport: "tcp", workers: 3},
	{transport: "tcp", workers: 3, copy: true},
	{transport: "tcp", workers: 1, twoLoops: true},
}

// forceCopy sets relayForceCopy for the test (no Loop runs yet).
func forceCopy(t *testing.T, on bool) {
	relayForceCopy = on
	t.Cleanup(func() { relayForceCopy = false })
}

// newRelayRig makes the two Conns on one running Loop, relays them, and
// returns the rig.
func newRelayRig(t *testing.T, rc relayCase, cfg Config) *relayRig {
	t.Helper()
	forceCopy(t, rc.copy)
	r := &relayRig{l: newLoop(t, eventloop.Config{Workers: rc.workers}), ha: newRelayEnd(), hb: newRelayEnd()}
	sa, front := streamPair(t, rc.transport)
	sb, back := streamPair(t, rc.transport)
	if rc.noFd {
		sa, sb = noFdStream{sa}, noFdStream{sb}
	}
	r.front, r.back = front, back
	var err error
	r.a, err = Add(r.l, sa, r.ha, cfg)
	require.NoError(t, err)
	lb := r.l
	if rc.twoLoops {
		lb = newLoop(t, eventloop.Config{Workers: rc.workers})
		start(t, lb, nil)
	}
	r.b, err = Add(lb, sb, r.hb, cfg)
	require.NoError(t, err)
	require.NoError(t, Relay(r.a, r.b))
	start(t, r.l, nil)
	return r
}

// relayOf returns the Conn's relay, for a look at its counters.
func relayOf(c *Conn) *relay { return c.rl.next.Load() }

// noFdStream hides a Stream's descriptor: the relay must copy.
type noFdStream struct{ s Stream }

func (n noFdStream) Register(p *poll.Poll, t poll.Token, r poll.Ready, o poll.PollOpt) error {
	return n.s.Register(p, t, r, o)
}

func (n noFdStream) Reregister(p *poll.Poll, t poll.Token, r poll.Ready, o poll.PollOpt) error {
	return n.s.Reregister(p, t, r, o)
}
func (n noFdStream) Deregister(p *poll.Poll) error { return n.s.Deregister(p) }
func (n noFdStream) Read(b []byte) (int, error)    { return n.s.Read(b) }
func (n noFdStream) Write(b []byte) (int, error)   { return n.s.Write(b) }
func (n noFdStream) CloseWrite() error             { return n.s.CloseWrite() }
func (n noFdStream) Close() error                  { return n.s.Close() }

// stream is a reproducible byte stream of n bytes: its content and its
// hash.
type stream struct {
	seed uint64
	n    int64
}

func (s stream) reader() io.Reader {
	return io.LimitReader(rngReader{rand.New(rand.NewPCG(s.seed, s.seed^0x9e3779b97f4a7c15))}, s.n)
}

func (s stream) sum() [32]byte {
	h := sha256.New()
	_, _ = io.Copy(h, s.reader())
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

type rngReader struct{ r *rand.Rand }

func (g rngReader) Read(b []byte) (int, error) {
	for i := 0; i < len(b); i += 8 {
		v := g.r.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return len(b), nil
}

// readSum reads r to its end and returns the count and hash of what came.
func readSum(r io.Reader) (int64, [32]byte, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return n, out, err
}

// closeWrite shuts down a client's sending side.
func closeWrite(t *testing.T, c net.Conn) {
	t.Helper()
	cw, ok := c.(interface{ CloseWrite() error })
	require.True(t, ok, "%T has no CloseWrite", c)
	require.NoError(t, cw.CloseWrite())
}
