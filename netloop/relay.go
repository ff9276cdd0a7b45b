package netloop

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrRelayPeer is what a relayed Conn's CloseHandler hears when the relay
// ended because its peer failed (a read or write error, a reset, a
// timeout, Abort): it wraps the peer's error, so errors.Is matches both.
var ErrRelayPeer = errors.New("unipoll: netloop: relay peer failed")

// Relay ties a and b together: from their next calls on, what arrives on
// a is written to b and what arrives on b is written to a, without passing
// through their Handlers' Data. On Linux, when both Streams have a
// descriptor (*socket.TCPConn, *socket.UnixConn), the bytes go from socket
// to socket with splice(2) through a pipe per direction and never enter
// user space; elsewhere, for a Stream without a descriptor, or when the
// kernel refuses to splice them, they are copied through a 64 KiB buffer
// per direction. A pipe or buffer is made with its direction's first
// bytes, and kept until both Conns have closed.
//
// What each Conn had received and not consumed, and what it had queued to
// write, when Relay was called goes first, in order.
//
// When a and b are on one Loop that one worker serves (a proxy that dials
// its backend from the client's Loop, with eventloop.Config.Workers 1),
// no two of their calls can overlap, and the relay does what io.Copy
// does between two sockets: the Conn that reads writes the bytes on into
// its peer's socket in the same call, with no call of the peer. A small
// burst is then read into the worker's read buffer and written out (two
// system calls), and a burst that fills that buffer is spliced, through
// a pipe emptied after each fill. What the peer's socket does not take
// waits for it, and the reading stops until it is written.
//
// Back pressure holds both ways: at most one pipe (64 KiB, grown to
// 256 KiB the first time it fills up) or buffer of bytes is in flight per
// direction; when the receiving socket will not take more, the sending
// Conn stops reading until it does, so a slow reader on one side slows
// the writer on the other, and memory stays bounded.
//
// The ends:
//   - The end of a's input (its peer shut down its side) reaches b as a
//     CloseWrite once everything before it is written; the other direction
//     goes on. When both directions have ended, both Conns close and their
//     CloseHandlers hear nil.
//   - An error on either side (a reset, a write error, ReadTimeout or
//     IdleTimeout, Abort) closes both: the failing Conn's CloseHandler
//     hears its error, the other's hears ErrRelayPeer wrapping it (or an
//     error of its own that came at the same time). Close on either Conn
//     also ends the relay and closes both (they hear nil). Bytes still in
//     flight are then dropped, and a TCP Conn that drops any closes with a
//     reset (SO_LINGER 0), so that its peer does not take a truncated
//     stream for a whole one.
//
// Requirements: a and b are distinct Conns, neither relaying already, and
// connected (a dial has completed). Relay may be called from any
// goroutine, for Conns on a Loop with several workers, and for Conns on
// different Loops: each Conn's socket is read and written only in its own
// calls, and the two sides meet only through atomic counters and the
// pipe (or buffer) between them, so no lock is held across a system call.
// Once Relay returns nil, a and b close together. It returns an error
// wrapping ErrInvalidArgument for a nil or zero Conn, a == b, or a Conn
// that relays already, and ErrClosed for a Conn already closed; the other
// Conn is then left as it was. (A Conn that closes while Relay runs makes
// it return ErrClosed too, and closes the other.)
//
// During a relay, the Conns' Write, CloseWrite, PauseRead and ResumeRead
// must not be used; Async still runs. ReadTimeout counts the input of the
// Conn's own socket (so a Conn that only receives through the relay times
// out: prefer IdleTimeout, which also counts what the relay writes to it),
// WriteTimeout counts while the relay's bytes wait for the Conn's socket
// to take them (its peer stopped reading), and a timeout ends the relay
// as an error does.
func Relay(a, b *Conn) error {
	if a.zero() || b.zero() {
		return fmt.Errorf("%w: netloop: Relay of a nil or zero Conn", ErrInvalidArgument)
	}
	if a == b {
		return fmt.Errorf("%w: netloop: Relay of a Conn to itself", ErrInvalidArgument)
	}
	if a.tls != nil || b.tls != nil {
		return fmt.Errorf("%w: netloop: Relay of a TLS Conn (it would pass ciphertext on)", ErrInvalidArgument)
	}
	r := &relay{a: a, b: b}
	r.refs.Store(2)
	if err := a.rl.claim(r); err != nil {
		return err
	}
	if err := b.rl.claim(r); err != nil {
		if a.rl.next.CompareAndSwap(r, nil) {
			_ = a.Async(func(*Conn) {}) // resume reading
		}
		return err
	}
	r.inline = a.l == b.l && a.l.Workers() == 1
	if r.inline {
		can := spliceable(a.s, b.s)
		r.ab.inl.canSplice, r.ba.inl.canSplice = can, can
	}
	r.armed.Store(true)
	// Each Conn's calls act on the relay from now on; a Conn that is
	// being removed fails the relay in its removal (relayRemoved).
	ea, eb := a.Async(func(*Conn) {}), b.Async(func(*Conn) {})
	if ea != nil || eb != nil {
		return ErrClosed
	}
	return nil
}

// relayGone marks a Conn that was removed: it can relay no more.
var relayGone = new(relay)

// A relay's state and who touches it (the invariants the code relies on):
//
//  1. A Conn's socket is read and written only in that Conn's own calls
//     (it is closed after its last one), so each direction's source reads
//     its socket into the direction's transport in its calls, and the sink
//     writes the transport into its socket in its calls.
//  2. filled is advanced only by the source, after the bytes are in the
//     transport (and the transport is chosen before the first bytes);
//     drained only by the sink, after the bytes are out. filled-drained is
//     what is in flight, bounded by the direction's bound.
//  3. The source stops when the transport is full and sets stalled first,
//     then looks at the count again; the sink advances drained first, then
//     takes stalled: one of the two sees the other, and a stopped source is
//     always called again.
//  4. The source calls the sink after it fills, unless the sink waits for
//     its socket to take more (sinkBlocked: its Writable event will come)
//     or a call is already on its way (notified, cleared by the sink
//     before it looks at filled).
//  5. head (what the source had received and not consumed) is set before
//     the source fills anything or marks the end of its input (srcEnded),
//     and the sink, which looks at srcEnded first, writes it before the
//     transport.
//  6. The pipes are closed by the removal of the second Conn (refs).
//  7. In an inline relay (relay_inline.go), a source's call may also act
//     as its peer's sink: its calls and the peer's never overlap.
//
// What every call reads (the Conns, the flags) comes first, in the
// relay's first cache line: with thousands of relays, a call's first
// touch of its relay is a cache miss, and the directions' lines follow.
type relay struct {
	a, b *Conn

	inline bool         // set before armed: one Loop, one worker (relay_inline.go)
	armed  atomic.Bool  // both Conns claimed: their calls relay
	failed atomic.Bool  // ended by an error or a Close: both close
	refs   atomic.Int32 // Conns not yet removed

	mu  sync.Mutex
	err error // guarded by mu: the first error, nil for a Close
	who *Conn // guarded by mu: the Conn that failed first

	ab, ba relayDir
}

// relayDir is one direction: its source Conn's input on its way to the
// sink Conn's output.
type relayDir struct {
	t           atomic.Pointer[transportRef]
	filled      atomic.Int64
	drained     atomic.Int64
	srcEnded    atomic.Bool // the source read the end of its input
	done        atomic.Bool // the sink has written everything and shut down its side
	stalled     atomic.Bool // the source stopped at a full transport (invariant 3)
	sinkBlocked atomic.Bool // the sink waits for Writable (invariant 4)
	notified    atomic.Bool // a call of the sink is on its way (invariant 4)

	mu   sync.Mutex
	head []byte // guarded by mu (invariant 5)

	inl inlineDir // the source's, in an inline relay (invariant 7)
}

// transport moves a direction's bytes: a pipe spliced from socket to
// socket, or a buffer copied through.
type transport interface {
	// fill moves at most room bytes from the source c's socket into the
	// transport, whose write position is at; io.EOF at the end of c's
	// input.
	fill(c *Conn, at int64, room int) (int, error)
	// drain moves at most n bytes from the transport, whose read position
	// is at, into the sink c's socket.
	drain(c *Conn, at int64, n int) (int, error)
	// bound is how many bytes the transport may hold.
	bound() int
	// fullBlocks reports that fill may say EAGAIN for a full transport
	// below its bound (a pipe whose slots are taken), not only for a
	// drained socket.
	fullBlocks() bool
	// grow makes the transport larger, once, when it fills up; it
	// reports whether there is more room now.
	grow() bool
	close()
}

type transportRef struct{ transport }

// held is what is in flight in the transport.
func (d *relayDir) held() int { return int(d.filled.Load() - d.drained.Load()) }

// dirs returns the direction c is the source of and the one it is the
// sink of, and its peer.
func (r *relay) dirs(c *Conn) (out, in *relayDir, peer *Conn) {
	if c == r.a {
		return &r.ab, &r.ba, r.b
	}
	return &r.ba, &r.ab, r.a
}

// fail ends the relay: the first error (nil for a Close) is kept, and
// both Conns are called to close.
func (r *relay) fail(c *Conn, err error) {
	r.mu.Lock()
	if !r.failed.Load() {
		r.err, r.who = err, c
		r.failed.Store(true)
	}
	r.mu.Unlock()
	poke(r.a)
	poke(r.b)
}

// peerError is what c hears when the relay failed: nil if it was the one
// that failed or the relay ended with a Close, ErrRelayPeer otherwise.
func (r *relay) peerError(c *Conn) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil || r.who == c {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrRelayPeer, r.err)
}

// lost reports bytes that the relay's end drops: in flight, or not yet
// written from a head.
func (r *relay) lost() bool {
	for _, d := range []*relayDir{&r.ab, &r.ba} {
		d.mu.Lock()
		h := len(d.head)
		d.mu.Unlock()
		if h > 0 || d.held() > 0 {
			return true
		}
	}
	return false
}

// poke queues a call of c, from any goroutine; it fails only for a Conn
// being removed, whose removal acts on the relay anyway.
func poke(c *Conn) { _ = c.l.Trigger(c.tok) }

// connRelay is a Conn's part of a relay. next is set by Relay (any
// goroutine); the rest is the Conn's calls' own.
type connRelay struct {
	next atomic.Pointer[relay]

	started bool // the Conn's first relay call has run (relayStart)
	eof     bool // its input ended
	blocked bool // its socket took less than was there: Writable wanted
	shut    bool // its sending side is shut down
	unread  bool // its socket may hold input not yet read (as Conn.undrained): the source runs only then
	level   bool // registered Level (an inline relay's source until its input ends: relay_inline.go)
}

// claim makes r the Conn's relay.
func (cr *connRelay) claim(r *relay) error {
	if cr.next.CompareAndSwap(nil, r) {
		return nil
	}
	if cr.next.Load() == relayGone {
		return ErrClosed
	}
	return fmt.Errorf("%w: netloop: Relay of a Conn that relays already", ErrInvalidArgument)
}

// pending reports a relay claimed and not yet armed, or armed: the
// Conn's own reading stops.
func (cr *connRelay) pending() bool { return cr.next.Load() != nil }

// active returns the armed relay, or nil.
func (cr *connRelay) active() *relay {
	r := cr.next.Load()
	if r == nil || r == relayGone || !r.armed.Load() {
		return nil
	}
	return r
}

// relayRemoved is the Conn's removal seen by its relay: the relay fails
// unless it had ended, and the second removal closes the pipes.
func (c *Conn) relayRemoved() {
	r := c.rl.next.Swap(relayGone)
	if r == nil || !r.armed.Load() {
		return
	}
	if !(r.ab.done.Load() && r.ba.done.Load()) {
		r.fail(c, ErrClosed)
	}
	if r.refs.Add(-1) == 0 {
		for _, d := range []*relayDir{&r.ab, &r.ba} {
			if t := d.t.Load(); t != nil {
				t.close()
			}
		}
	}
}
