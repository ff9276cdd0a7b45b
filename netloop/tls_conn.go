package netloop

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// ErrHandshakeTimeout is what the CloseHandler (or a Dial's done) of a
// TLS Conn hears when its handshake did not finish within
// Config.HandshakeTimeout, the wait for a place among the Loop's
// handshakes included.
var ErrHandshakeTimeout = errors.New("unipoll: netloop: tls handshake timeout")

// TLSHandler is told, in a Conn's call, when its TLS handshake is done,
// before Data hears any input (after a Dial's done): a server that speaks
// first may write here, and c.ConnectionState says what was agreed, such
// as the ALPN protocol or the client's certificate.
type TLSHandler interface {
	HandshakeDone(c *Conn)
}

// tlsConn is a Conn's TLS session (Conn.tls, nil for a plain Conn). The
// Conn's socket stays its Stream; reads and writes go through tc, whose
// transport the Loop feeds (tls_transport.go).
//
// Invariants (besides the transport's):
//  1. Until the Conn's call sees hsDone (under tr.mu), the handshake's
//     goroutine alone uses tc; the call that sees it sets established,
//     and from then on the Conn's calls alone use tc.
//  2. waitHello, ahead, pending and notified are the Conn's calls' alone
//     (waitHello is set in Add, before the first call).
//  3. ahead is the count of plaintext bytes at the front of the Conn's
//     queue (out[at:]) already encrypted into tr.out: they count as
//     written once tr.out is all on the socket. Write only appends to the
//     queue, so its front is always those bytes.
type tlsConn struct {
	tc *tls.Conn
	tr tlsTransport

	hsDone bool  // under tr.mu: the handshake ended
	hsErr  error // under tr.mu: how

	waitHello   bool // a server's handshake waits for the whole ClientHello before it starts (tls_hello.go)
	established bool // the handshake succeeded, seen by the Conn's call
	pending     bool // tc may hold input: its last Read did not say "no more now"
	notified    bool // close_notify is queued
	ahead       int  // invariant 3

	timedOut atomic.Bool // the HandshakeTimeout expired
	cancel   func() bool // under tr.mu: the timeout's AfterFunc (a stale one only sets timedOut)
}

// tlsWriteChunk bounds the plaintext encrypted at a time, and so the
// ciphertext a Conn holds beyond its queue.
const tlsWriteChunk = 64 << 10

// newTLS makes c's TLS session: a client (named serverName unless its
// Config names the server) or a server. It runs in Add, before the
// Conn's first call.
func (c *Conn) newTLS(client bool, serverName string) *tlsConn {
	t := &tlsConn{}
	t.tr = tlsTransport{c: c, l: c.l, handshaking: true, feedLimit: tlsFeedLimit, wake: make(chan struct{}, 1)}
	if client {
		cfg := c.cfg.TLS
		if cfg.ServerName == "" && serverName != "" {
			cfg = cfg.Clone()
			cfg.ServerName = serverName // as tls.Dial does
		}
		t.tc = tls.Client(&t.tr, cfg)
	} else {
		t.tc = tls.Server(&t.tr, c.cfg.TLS)
		t.waitHello, t.tr.feedLimit = true, helloFeedLimit
		switch c.s.(type) {
		case *socket.TCPConn, *socket.UnixConn: // accepted, so connected: see tlsTransport
			t.tr.direct = c.s
		}
	}
	return t
}

// tlsCall runs at the start of each call of a TLS Conn that is not yet
// established: it ends the Conn at the handshake timeout, and takes the
// handshake's result. It reports whether the Conn is established now.
func (c *Conn) tlsCall() (up bool) {
	t := c.tls
	t.tr.mu.Lock()
	done, err := t.hsDone, t.hsErr
	t.tr.mu.Unlock()
	// After hsDone is read: a read the goroutine made before it finished
	// is seen here, by this call or (not done) by a later one.
	if t.tr.noteDirectReads() {
		c.noteRead() // the handshake's goroutine read input (tlsTransport invariant 5)
	}
	switch {
	case !done && t.timedOut.Load():
		c.fail(ErrHandshakeTimeout)
	case !done:
	case err != nil:
		_ = t.tr.flushOut(c.s) // the alert crypto/tls sent, if the socket takes it
		c.fail(fmt.Errorf("netloop: tls handshake: %w", err))
	default:
		t.established = true
		t.pending = true // input may have come with the handshake's last flight
		t.stopTimeout()
		t.tr.dropHandshakeBuffers()
	}
	return t.established
}

// tlsUp reports whether the Conn may run its Dial's done: a plain Conn,
// or a TLS one once established.
func (c *Conn) tlsUp() bool { return c.tls == nil || c.tls.established }

// stopTimeout cancels the HandshakeTimeout's AfterFunc, if armed.
func (t *tlsConn) stopTimeout() {
	t.tr.mu.Lock()
	cancel := t.cancel
	t.cancel = nil
	t.tr.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// handshakeDue is the HandshakeTimeout's AfterFunc.
func (t *tlsConn) handshakeDue(l *eventloop.Loop) {
	t.timedOut.Store(true)
	_ = l.Trigger(t.tr.tok) // fails only once the Conn is removed
}

// ConnectionState is the TLS state of the Conn (the version, the cipher
// suite, the peer's certificates, the ALPN protocol, whether the session
// was resumed) once its handshake is done; ok is false for a plain Conn
// and before that. Call it from the Conn's calls.
func (c *Conn) ConnectionState() (st tls.ConnectionState, ok bool) {
	if c.zero() || c.tls == nil || !c.tls.established {
		return st, false
	}
	return c.tls.tc.ConnectionState(), true
}

// mayHaveInput reports whether a read pass may find input: in the socket
// (an edge came, and no read since found it drained), or, for a TLS Conn,
// records crypto/tls holds already read from it.
func (c *Conn) mayHaveInput() bool {
	return c.undrained || c.tls != nil && c.tls.pending
}

// queued is Queued, plus the ciphertext of a TLS Conn's own records
// (handshake, close_notify, a KeyUpdate's reply) not yet written.
func (c *Conn) queued() int {
	q := c.Queued()
	if c.tls != nil && c.tls.ahead == 0 {
		q += c.tls.tr.pendingOut()
	}
	return q
}

// canWrite reports output the Conn can write once the socket has room:
// its queue, but while a TLS handshake runs only the handshake's records
// (the plaintext waits for the keys; the handshake's end triggers the
// call that writes it).
func (c *Conn) canWrite() bool {
	if c.tls != nil && !c.tls.established {
		return c.tls.tr.pendingOut() > 0
	}
	return c.queued() > 0
}

// readStream reads the Stream, or a TLS Conn's plaintext.
func (c *Conn) readStream(buf []byte) (int, error) {
	if c.tls == nil {
		return c.s.Read(buf)
	}
	n, err := c.tls.tc.Read(buf)
	c.tls.pending = err == nil
	switch {
	case err == nil:
	case isWouldBlock(err):
		err = socket.ErrWouldBlock
	default:
		// The alert crypto/tls wrote as it failed (an unexpected message,
		// such as a renegotiation's ClientHello; a bad record MAC) goes
		// out before the Conn closes, if the socket takes it.
		_ = c.tls.tr.flushOut(c.s)
	}
	return n, err
}

// tlsReadSocket is the established transport's read of the socket, with
// the Conn's rule of drained sockets (see readPass): none once a read
// found it drained and no edge came since.
func (c *Conn) tlsReadSocket(p []byte) (int, error) {
	if !c.undrained {
		return 0, errTLSWouldBlock
	}
	n, err := c.s.Read(p)
	switch {
	case err == nil && n < len(p) && !c.hup:
		c.undrained = false
	case err == nil:
	case isWouldBlock(err):
		c.undrained = false
		return 0, errTLSWouldBlock
	case err == io.EOF:
		c.undrained = false
	}
	if n > 0 {
		c.noteRead()
	}
	return n, err
}

// tlsFeed is the read pass of a handshake: it reads the socket into the
// transport for the handshake's goroutine, until the socket is drained,
// ends, or the transport holds tlsFeedLimit (then the pass resumes when
// the goroutine has read some: the transport triggers the Conn).
func (c *Conn) tlsFeed() eventloop.Action {
	tr := &c.tls.tr
	buf := c.l.ReadBuffer(c.tok)
	for range c.cfg.ReadsPerCall {
		n, asked, err := tr.feedFrom(c.s, buf)
		if c.tls.waitHello && (n > 0 || asked == 0) && tr.helloReady() {
			c.tlsStart()
		}
		if asked == 0 && err == nil {
			return eventloop.Keep // stalled: undrained stays, reading() is false
		}
		if n > 0 {
			c.noteRead()
		}
		switch {
		case errors.Is(err, net.ErrClosed) && asked == 0:
			return eventloop.Keep // the Conn is being removed
		case err == nil && n < asked && !c.hup:
			c.undrained = false
			return eventloop.Keep
		case err == nil:
		case isWouldBlock(err):
			c.undrained = false
			return eventloop.Keep
		default: // the end of input or an error: the handshake fails on it
			c.undrained = false
			tr.end(err)
			if c.tls.waitHello {
				c.tlsStart() // crypto/tls says what was wrong: "EOF", a reset
			}
			return eventloop.Keep
		}
	}
	return eventloop.Again
}

// tlsStart gives a server Conn's handshake to the Loop's pool, once its
// ClientHello is in (tls_hello.go); Add starts a client's.
func (c *Conn) tlsStart() {
	c.tls.waitHello = false
	c.ls.hs.start(c.tls, c.cfg.MaxHandshakes)
}

// writeStream writes to the Stream, or encrypts for a TLS Conn: n is
// what of b counts as written.
func (c *Conn) writeStream(b []byte) (int, error) {
	if c.tls == nil {
		return c.s.Write(b)
	}
	return c.tlsWrite(b)
}

// tlsWrite writes the pending ciphertext, then encrypts b a chunk at a
// time, writing each, until b is done or the socket is full (invariant
// 3). Before the handshake is done it only writes the handshake's
// records.
func (c *Conn) tlsWrite(b []byte) (int, error) {
	t := c.tls
	done := 0
	for {
		if err := t.tr.flushOut(c.s); err != nil {
			if isWouldBlock(err) {
				err = socket.ErrWouldBlock
			}
			return done, err
		}
		done += t.ahead
		t.ahead = 0
		if done == len(b) || !t.established {
			return done, nil
		}
		chunk := b[done:min(len(b), done+tlsWriteChunk)]
		if _, err := t.tc.Write(chunk); err != nil {
			return done, err
		}
		t.ahead = len(chunk)
	}
}

// tlsNotify queues close_notify once the queue is written, before the
// Conn's FIN (Close, CloseWrite, the end of input), and writes it. A
// handshake not done has nothing to close.
func (c *Conn) tlsNotify() {
	t := c.tls
	if t == nil || !t.established || t.notified {
		return
	}
	t.notified = true
	if err := t.tc.CloseWrite(); err != nil {
		c.fail(err)
		return
	}
	if err := t.tr.flushOut(c.s); err != nil && !isWouldBlock(err) {
		c.fail(err)
	}
}

// tlsShutReady reports whether the socket's sending side may be shut
// down: a plain Conn, or a TLS one whose close_notify is queued.
func (c *Conn) tlsShutReady() bool { return c.tls == nil || c.tls.notified }

// tlsStalled reports a handshake whose transport is full (see tlsFeed).
func (c *Conn) tlsStalled() bool { return c.tls.tr.stalled.Load() }

// tlsRemoved closes the transport at the Conn's removal: a handshake
// waiting for input ends, and its timeout is cancelled.
func (c *Conn) tlsRemoved() {
	if c.tls == nil {
		return
	}
	c.tls.stopTimeout()
	_ = c.tls.tr.Close()
}
