package netloop

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// errZeroConn is returned by the methods of a nil or zero Conn.
var errZeroConn = fmt.Errorf("%w: nil or zero netloop.Conn (make one with netloop.Add)", ErrInvalidArgument)

// Conn is a buffered non-blocking stream on a Loop: input is read when the
// Stream is readable and handed to the Handler; output written with
// Write is queued and written at the end of the Conn's call (one write for
// everything a call produced), and whatever the socket does not take is
// written when it becomes writable again. The queue is bounded, and back
// pressure stops reading while it is too full (see Config).
//
// A read pass ends at the first short read: a read that returns less than
// it asked for has drained the socket, so a message costs one read, not a
// second one that would only say EAGAIN. And a call that no edge brought
// (output queued from elsewhere, Async, a deadline) reads only if an
// earlier pass stopped before the socket was drained.
//
// A Conn belongs to its Loop: call its methods from its handler, or, on a
// Loop with one worker, from any handler or posted function of that Loop.
// From another goroutine (or another worker), use Async; the timeout
// setters (SetReadTimeout, ...) and the socket options (SetNoDelay, ...)
// may be called from anywhere. Conn is a source
// of its Loop like any other (eventloop.Loop.Add), registered
// Edge-triggered, for Readable while it reads and Writable only while
// output waits for room (for Error alone while it does neither).
//
// A Conn ends with a FIN (the peer reads a clean end of stream) only when
// it threw nothing away: Close, CloseWrite and the end of input write
// every byte queued first. A close that discards something resets the
// connection instead (SO_LINGER 0, then close), so the peer's read fails
// with ECONNRESET and a truncated stream never passes for a whole one:
//
//   - Abort resets always, also with nothing queued: the exchange failed.
//   - A timeout or an error (ErrReadTimeout, ErrIdleTimeout,
//     ErrWriteTimeout, ErrReadBufferFull, a failed read or write) resets
//     when output was queued and not yet written, or input received and
//     not consumed. With neither, nothing was lost: it closes with a FIN.
//   - The Loop's Close resets a Conn that still has output queued.
//
// A reset also drops what the kernel still held to send. A Stream without
// SetLinger closes as it always does: a Unix socket has no reset, and its
// peer reads the end of stream.
//
// The zero Conn is not usable: Write, WriteString and Async return an
// error wrapping ErrInvalidArgument, Closed reports true, and the other
// methods do nothing. Make Conns with Add.
type Conn struct {
	l   *eventloop.Loop
	ls  *loopState
	s   Stream
	h   Handler
	cfg *Config    // shared by the Conns of a Loop made with the same Config (loopState.intern)
	tok poll.Token // set before the first call (eventloop.OnToken), then fixed

	// User is the caller's, for its own per-connection state.
	User any

	in  []byte // input not yet consumed (own buffer; empty most of the time)
	out []byte // output queued, out[outAt:]
	at  int

	registered poll.Ready // the interest the Stream is registered with now
	inCall     bool       // a call of this Conn is in progress: it flushes at its end
	triggered  bool       // a Trigger for output queued outside a call is pending
	eof        bool       // Read returned io.EOF
	closing    bool       // Close: write what is queued, then close
	shut       bool       // CloseWrite asked for: shut down once the queue is written
	shutDone   bool
	paused     bool // PauseRead
	pressured  bool // output above HighWater: not reading
	redeliver  bool // hand the unconsumed input to Data again before reading
	undrained  bool // the socket may hold input not yet read: an edge came (or the Conn is new), and no read since found it drained
	hup        bool // the Poll reported Hup or Error: the end lasts, so a read pass reads on to it
	failed     bool // an error or Abort: close now, dropping the queue
	reset      bool // close with a reset (SO_LINGER 0): output or input was discarded, or Abort
	closed     bool // removed: its Stream is closed
	drained    bool // a drain has begun for it (drain.go)
	listed     int8 // its place in the Loop's registry, guarded by ls.mu (loopstate.go)
	// asyncClosed is guarded by asyncMu (below): removed, Async refuses.
	// Kept among the flags, where it costs no padding: a Conn is 384
	// bytes, the size class below the next (416).
	asyncClosed bool
	err         error

	dl    connDeadline // the timeouts (conn_deadline.go)
	stats connStats    // conn_stats.go
	rl    connRelay    // Relay (relay.go)
	tls   *tlsConn     // Config.TLS's session, made before the first call (tls_conn.go)

	opened func(*Conn, error) // a Dial's done, run first in the Conn's first call (dial.go)

	asyncMu sync.Mutex
	async   []func(*Conn) // guarded by asyncMu
}

// Add puts s on l as a Conn with protocol h; o are l's options for a
// source (eventloop.Priority). The Conn owns s from then on, also when Add
// fails (s is then closed). s may still be connecting (socket.DialTCP): a
// connect that fails closes the Conn, and its CloseHandler hears the
// dial's error ("socket: dial tcp 192.0.2.1:80: connect: connection
// refused").
func Add(l *eventloop.Loop, s Stream, h Handler, cfg Config, o ...eventloop.AddOption) (*Conn, error) {
	return add(l, s, h, cfg, nil, "", o...)
}

// add is Add, with a Dial's done to run (as opened(c, nil)) at the start
// of the Conn's first call, before its handler hears anything; a Conn
// removed before that call runs it as opened(nil, err) instead, and its
// CloseHandler is not told (the dialer never had the Conn). With
// Config.TLS, a dial's Conn is the client side, named serverName, and
// opened waits for the handshake.
func add(l *eventloop.Loop, s Stream, h Handler, cfg Config, opened func(*Conn, error), serverName string, o ...eventloop.AddOption) (*Conn, error) {
	if l == nil || l.Poll() == nil {
		return nil, fmt.Errorf("%w: netloop: Add on a nil or zero eventloop.Loop", ErrInvalidArgument)
	}
	if f, ok := h.(HandlerFunc); s == nil || h == nil || ok && f == nil {
		return nil, fmt.Errorf("%w: netloop: Add needs a Stream and a Handler", ErrInvalidArgument)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	if nd, ok := s.(interface{ SetNoDelay(bool) error }); ok && cfg.TLS != nil {
		_ = nd.SetNoDelay(true) // see Config.TLS; a Stream that cannot is served as it is
	}
	ls := stateOf(l)
	c := &Conn{l: l, ls: ls, s: s, h: h, cfg: ls.intern(cfg), registered: connReading, opened: opened, undrained: true}
	c.ls.conns.Add(1)
	if cfg.TLS != nil {
		c.tls = c.newTLS(opened != nil, serverName)
	}
	tok, err := l.Add(s, connReading, poll.Edge, (*source)(c), append(o[:len(o):len(o)], eventloop.OnToken(c.bind))...)
	if err != nil {
		c.ls.conns.Add(-1)
		_ = s.Close()
		return nil, err
	}
	if opened != nil {
		_ = l.Trigger(tok) // the first call, with or without an event; fails only if already removed
	}
	if t := c.tls; t != nil {
		if cancel, err := l.AfterFunc(cfg.HandshakeTimeout, t.handshakeDue); err == nil {
			t.tr.mu.Lock()
			t.cancel = cancel
			t.tr.mu.Unlock()
		}
		if opened != nil { // a client speaks first; a server's starts in tlsFeed (waitHello, the Conn's calls' own)
			c.ls.hs.start(t, cfg.MaxHandshakes)
		}
	}
	if cfg.ReadTimeout|cfg.IdleTimeout|cfg.WriteTimeout != 0 {
		c.firstDeadline(min(nonZero(cfg.ReadTimeout), nonZero(cfg.IdleTimeout), nonZero(cfg.WriteTimeout)))
	}
	if c.ls.enlist(c) {
		_ = c.Async((*Conn).drain) // added during a drain: it drains too
	}
	return c, nil
}

// bind is the Conn's OnToken: the token, the clocks and the limits are
// the Conn's before its first call, which may come on another worker
// before Add returns. (A method, not a closure over Add's variables: that
// closure held a copy of the Config, in every Conn's memory.)
func (c *Conn) bind(tok poll.Token) {
	c.tok = tok
	if c.tls != nil {
		c.tls.tr.tok = tok
	}
	c.stats.connected = time.Now().UnixNano()
	c.startDeadlines(monoNow())
}

// nonZero is d, or the longest duration for 0 (no limit).
func nonZero(d time.Duration) time.Duration {
	if d == 0 {
		return 1<<63 - 1
	}
	return d
}

// zero reports a nil or zero Conn.
func (c *Conn) zero() bool { return c == nil || c.l == nil }

// Token is the Conn's token on its Loop (0 for a zero Conn).
func (c *Conn) Token() poll.Token {
	if c.zero() {
		return 0
	}
	return c.tok
}

// Loop is the Loop the Conn is on (nil for a zero Conn).
func (c *Conn) Loop() *eventloop.Loop {
	if c.zero() {
		return nil
	}
	return c.l
}

// Stream is the Stream the Conn drives, for its addresses and options. Do
// not read, write or close it directly.
func (c *Conn) Stream() Stream {
	if c.zero() {
		return nil
	}
	return c.s
}

// Queued is the number of bytes written and not yet taken by the Stream.
func (c *Conn) Queued() int {
	if c.zero() {
		return 0
	}
	return len(c.out) - c.at
}

// Buffered is the number of bytes received and not yet consumed.
func (c *Conn) Buffered() int {
	if c.zero() {
		return 0
	}
	return len(c.in)
}

// Closed reports whether the Conn is closed (removed, its Stream closed).
func (c *Conn) Closed() bool { return c.zero() || c.closed }

// Write queues b to be written at the end of the Conn's call (or, from
// outside a call, in the Conn's next call, which it triggers). It returns
// ErrWriteQueueFull, queuing nothing, if that would pass MaxWriteQueue,
// and ErrClosed after Close.
func (c *Conn) Write(b []byte) (int, error) {
	if err := c.canQueue(len(b)); err != nil {
		return 0, err
	}
	c.out = append(c.out, b...)
	c.afterQueue()
	return len(b), nil
}

// WriteString is Write for a string, without converting it.
func (c *Conn) WriteString(s string) (int, error) {
	if err := c.canQueue(len(s)); err != nil {
		return 0, err
	}
	c.out = append(c.out, s...)
	c.afterQueue()
	return len(s), nil
}

var _ io.Writer = (*Conn)(nil)

// canQueue says whether n more bytes may be queued: not on a zero Conn,
// nor a closed or failing one, nor past MaxWriteQueue.
func (c *Conn) canQueue(n int) error {
	if c.zero() {
		return errZeroConn
	}
	if c.closed || c.closing || c.failed {
		return ErrClosed
	}
	if c.Queued()+n > c.cfg.MaxWriteQueue {
		return ErrWriteQueueFull
	}
	return nil
}

// afterQueue applies back pressure and makes sure the output is written.
func (c *Conn) afterQueue() {
	if !c.pressured && c.Queued() > c.cfg.HighWater {
		c.pressured = true
		if p, ok := c.h.(PressureHandler); ok {
			p.Pressure(c, true)
		}
	}
	c.trigger()
}

// trigger makes sure the Conn gets a call to act on something done
// outside one. Trigger fails only once the Conn is being removed: then
// there is nothing left to act on.
func (c *Conn) trigger() {
	if c.inCall || c.triggered || c.closed {
		return
	}
	c.triggered = true
	_ = c.l.Trigger(c.tok)
}

// Flush writes the queued output now, rather than at the end of the call.
func (c *Conn) Flush() {
	if !c.Closed() {
		c.flush()
	}
}

// Close closes the Conn once its queued output is written: reading stops
// at once. Its CloseHandler hears err nil. Closing twice does nothing.
func (c *Conn) Close() {
	if c.Closed() || c.closing {
		return
	}
	c.closing = true
	c.trigger()
}

// CloseWrite shuts down the sending side once the queued output is
// written: the peer reads the end of input, and may still send.
func (c *Conn) CloseWrite() {
	if c.Closed() || c.shut {
		return
	}
	c.shut = true
	c.trigger()
}

// Abort closes the Conn at once, dropping its queued output, with a reset
// (see Conn: the peer sees ECONNRESET), also when nothing was queued.
// Its CloseHandler hears err (nil if err is nil).
func (c *Conn) Abort(err error) {
	if c.Closed() || c.failed {
		return
	}
	c.fail(err)
	c.reset = true
	c.trigger()
}

// PauseRead stops reading until ResumeRead (as back pressure does on its
// own); input the peer sends meanwhile waits in the socket.
func (c *Conn) PauseRead() {
	if !c.Closed() {
		c.paused = true
	}
}

// ResumeRead resumes reading after PauseRead; unconsumed input is handed
// to Data again.
func (c *Conn) ResumeRead() {
	if c.Closed() || !c.paused {
		return
	}
	c.paused = false
	c.resumeReading()
	c.trigger()
}

// Async runs f on the Loop as part of the Conn's calls, from any
// goroutine: never concurrently with its handler, also with several
// workers. It returns ErrClosed if the Conn is closed (f may also be
// dropped if it closes before f's turn).
func (c *Conn) Async(f func(*Conn)) error {
	if c.zero() {
		return errZeroConn
	}
	if f == nil {
		return fmt.Errorf("%w: netloop: Async of a nil function", ErrInvalidArgument)
	}
	c.asyncMu.Lock()
	if c.asyncClosed {
		c.asyncMu.Unlock()
		return ErrClosed
	}
	c.async = append(c.async, f)
	c.asyncMu.Unlock()
	_ = c.l.Trigger(c.tok) // fails only if the Conn is being removed, which drops f
	return nil
}

// fail ends the Conn with err: it closes at the end of the call, its
// queue dropped, with a reset if that discards output or input.
func (c *Conn) fail(err error) {
	if c.failed {
		return
	}
	c.failed = true
	c.err = err
	c.reset = c.reset || c.Queued() > 0 || len(c.in) > 0
	c.out, c.at = nil, 0
}

// removed is the source's Removed: the Conn is off the Loop and no call
// of it runs.
func (c *Conn) removed() {
	c.closed = true
	c.stopDeadline()
	c.asyncMu.Lock()
	c.asyncClosed = true
	c.async = nil
	c.asyncMu.Unlock()
	if c.reset || c.Queued() > 0 { // (the Loop's Close removes a Conn with its queue)
		c.resetOnClose()
	}
	c.tlsRemoved()
	if err := ignoreClosed(c.s.Close()); err != nil && c.err == nil {
		c.err = err
	}
	c.logEnd()
	c.in, c.out = nil, nil
	// Delisted last, after its CloseHandler (or a Dial's done) has run: a
	// drain is over, and Shutdown returns, only once every Conn's end has
	// been told.
	defer c.ls.delist(c)
	if f := c.opened; f != nil {
		c.opened = nil
		f(nil, dialClosedError(c.err))
		return
	}
	if cl, ok := c.h.(CloseHandler); ok {
		cl.Closed(c, c.err)
	}
}
