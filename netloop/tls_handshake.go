package netloop

import (
	"runtime"
	"sync"
	"time"
)

// crypto/tls runs a handshake as a sequence of blocking reads and writes
// (Conn.HandshakeContext) and latches its first error (handshakeErr): a
// handshake cannot be stopped at "no input yet" and resumed later, as an
// established connection's Read can. So each handshake runs in a
// goroutine, whose reads wait for the ciphertext the Loop feeds
// (tls_transport.go); a server's starts once the Loop has read the whole
// ClientHello (tls_hello.go). Those goroutines are bounded: at most
// Config.MaxHandshakes of a Loop's handshakes run at once; the others
// wait in the Loop's queue as a pointer each, not as a goroutine. A
// goroutine that finishes a handshake takes the next one from the queue,
// and ends when it is empty. Config.HandshakeTimeout, kept on the Loop's
// timing wheel from Add, ends a handshake running or queued: the Conn
// closes, its transport's Close wakes the goroutine, and a queued one is
// skipped when its turn comes. Once established, a Conn has no goroutine.
//
// Invariants (mu guards queue and running):
//  1. running counts the goroutines; each takes from queue until it is
//     empty, so a queued handshake never waits while running < its limit.
//  2. A goroutine touches only the tlsConn it runs (see tlsTransport).

// handshakes is a Loop's handshake pool (in its loopState).
type handshakes struct {
	mu      sync.Mutex
	queue   []*tlsConn
	running int
}

// Handshake defaults.
const (
	DefaultHandshakeTimeout = 10 * time.Second
)

// DefaultMaxHandshakes is MaxHandshakes's default: 4 per CPU (a
// handshake's goroutine mostly computes, but waits a round trip for its
// peer between flights), at least 16.
func DefaultMaxHandshakes() int { return max(16, 4*runtime.GOMAXPROCS(0)) }

// start runs t's handshake in a goroutine of the pool, or queues it when
// limit run already.
func (p *handshakes) start(t *tlsConn, limit int) {
	p.mu.Lock()
	if p.running >= limit {
		p.queue = append(p.queue, t)
		p.mu.Unlock()
		return
	}
	p.running++
	p.mu.Unlock()
	go p.run(t)
}

// run is a goroutine of the pool: t's handshake, then the queue's.
func (p *handshakes) run(t *tlsConn) {
	for t != nil {
		t.handshake()
		p.mu.Lock()
		t = nil
		if len(p.queue) > 0 {
			t = p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
			if len(p.queue) == 0 {
				p.queue = nil // let the backing array go
			}
		} else {
			p.running--
		}
		p.mu.Unlock()
	}
}

// handshake runs crypto/tls's handshake on the transport, unless the
// Conn has closed meanwhile, and hands the result to the Conn's next
// call.
func (t *tlsConn) handshake() {
	t.tr.mu.Lock()
	closed := t.tr.closed
	t.tr.feedLimit = tlsFeedLimit // a stalled feed resumes at crypto/tls's first Read (invariant 2 of tlsTransport)
	t.tr.mu.Unlock()
	var err error
	if closed {
		err = ErrClosed
	} else {
		err = t.tc.Handshake()
	}
	t.tr.mu.Lock()
	t.hsDone, t.hsErr = true, err
	t.tr.handshaking = false // invariant 3 of tlsTransport: tc is the Conn's now
	t.tr.mu.Unlock()
	_ = t.tr.l.Trigger(t.tr.tok) // fails only once the Conn is removed
}
