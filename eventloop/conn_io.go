package eventloop

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// ready is one call of a Conn: the functions Async queued, the output
// that waits for room, a read pass, one write of what the pass produced,
// the deadlines if their timeout expired, then the registration it needs
// now. It returns Remove once the Conn is finished, Rearm if the read pass
// stopped at ReadsPerCall with the socket still full.
func (c *Conn) ready(w *worker, r poll.Ready) Action {
	c.inCall = true
	c.kicked = false
	c.runAsync()
	if c.Queued() > 0 {
		c.flush()
	}
	act := Keep
	if c.reading() {
		act = c.readPass(w, r)
	}
	c.flush()
	// Deadlines last: input that waited in the socket while the Loop was
	// busy elsewhere has just been read, and counts.
	c.checkDeadlines()
	c.inCall = false
	return c.settle(act)
}

// reading reports whether the Conn reads now.
func (c *Conn) reading() bool {
	return !c.paused && !c.pressured && !c.eof && !c.closing && !c.failed
}

// runAsync runs what Async queued, in order.
func (c *Conn) runAsync() {
	c.asyncMu.Lock()
	fs := c.async
	c.async = nil
	c.asyncMu.Unlock()
	for _, f := range fs {
		f(c)
	}
}

// readPass reads until a read comes back short (the socket is drained),
// would block, ends, fails, or ReadsPerCall reads came back full.
//
// A short read means drained only if the event did not also report a
// hang-up or an error: those last, and under Edge they were reported with
// this event and will not be again, so the pass goes on to the read that
// returns the end of input (or the error).
func (c *Conn) readPass(w *worker, r poll.Ready) Action {
	lasting := r&(poll.Hup|poll.Error) != 0
	c.undrained = false
	if c.redeliver {
		c.redeliver = false
		c.deliverOwn()
	}
	for range c.cfg.ReadsPerCall {
		if !c.reading() {
			// Stopped with the socket maybe still holding input, which
			// under Edge brings no new event: resuming must read.
			c.undrained = true
			return Keep
		}
		var buf []byte
		own := len(c.in) > 0
		if own {
			if !c.growIn() {
				return Keep
			}
			buf = c.in[len(c.in):cap(c.in)]
		} else {
			// No more than MaxReadBuffer at a time, also when the workers'
			// buffer is larger: what Data leaves of it is kept, and a read
			// that fills it is full, so a handler that consumes nothing of
			// a full buffer meets growIn's limit at once.
			buf = w.scratch()
			buf = buf[:min(len(buf), c.cfg.MaxReadBuffer)]
		}
		n, err := c.s.Read(buf)
		if n > 0 {
			c.noteRead()
			if own {
				c.in = c.in[:len(c.in)+n]
				c.deliverOwn()
			} else {
				c.deliverScratch(buf[:n])
			}
		}
		switch {
		case err == nil && n < len(buf) && !lasting:
			return Keep // a short read: the socket is drained
		case err == nil:
			continue // full: there may be more
		case isWouldBlock(err):
			return Keep
		case err == io.EOF:
			c.readEOF()
			return Keep
		default:
			c.fail(err)
			return Keep
		}
	}
	return Rearm
}

// deliverScratch hands input read into the worker's buffer to Data and
// keeps what it did not consume in the Conn's own buffer.
func (c *Conn) deliverScratch(in []byte) {
	k := c.consume(in)
	if rest := in[k:]; len(rest) > 0 {
		if cap(c.in) < len(rest) {
			c.in = make([]byte, 0, min(max(2*len(rest), 4096), c.cfg.MaxReadBuffer))
		}
		c.in = append(c.in[:0], rest...)
	}
}

// deliverOwn hands the Conn's own buffer to Data and drops what it
// consumed.
func (c *Conn) deliverOwn() {
	k := c.consume(c.in)
	n := copy(c.in, c.in[k:])
	c.in = c.in[:n]
	if n == 0 && cap(c.in) > 64<<10 {
		c.in = nil // a burst's big buffer goes back to the GC
	}
}

// consume calls Data and keeps its answer within bounds.
func (c *Conn) consume(in []byte) int {
	k := c.h.Data(c, in)
	return min(max(k, 0), len(in))
}

// growIn makes room in the Conn's own buffer, up to MaxReadBuffer; a full
// buffer at the limit ends the Conn.
func (c *Conn) growIn() bool {
	if len(c.in) < cap(c.in) {
		return true
	}
	if cap(c.in) >= c.cfg.MaxReadBuffer {
		c.fail(ErrReadBufferFull)
		return false
	}
	n := min(max(2*cap(c.in), 4096), c.cfg.MaxReadBuffer)
	in := make([]byte, len(c.in), n)
	copy(in, c.in)
	c.in = in
	return true
}

// readEOF: the peer has finished sending.
func (c *Conn) readEOF() {
	c.eof = true
	if e, ok := c.h.(ConnEOF); ok {
		e.ReadClosed(c)
		return
	}
	c.Close()
}

// flush writes the queued output until it is all written or the socket is
// full, then applies what waited for the queue to empty.
func (c *Conn) flush() {
	if c.failed {
		return
	}
	if c.at < len(c.out) {
		n, err := c.s.Write(c.out[c.at:])
		c.at += n
		if n > 0 {
			c.noteWrite()
		}
		if err != nil && !isWouldBlock(err) {
			c.fail(err)
			return
		}
	}
	if c.at == len(c.out) {
		c.at = 0
		if cap(c.out) > c.cfg.HighWater {
			c.out = nil
		} else {
			c.out = c.out[:0]
		}
		if c.shut && !c.shutDone {
			c.shutDone = true
			if err := c.s.CloseWrite(); err != nil {
				c.fail(err)
				return
			}
		}
	} else if c.at > len(c.out)/2 && c.at > 4096 {
		// Keep the queue from creeping through its buffer.
		n := copy(c.out, c.out[c.at:])
		c.out, c.at = c.out[:n], 0
	}
	if c.pressured && c.Queued() <= c.cfg.LowWater {
		c.pressured = false
		c.redeliver = len(c.in) > 0
		if p, ok := c.h.(ConnPressure); ok {
			p.Pressure(c, false)
		}
		if !c.inCall {
			c.kick()
		}
	}
}

// settle decides what the call ends with: Remove when the Conn is done,
// otherwise the registration its state needs (Readable while reading,
// Writable while output waits), changed only when it differs.
func (c *Conn) settle(act Action) Action {
	if c.failed || c.closing && c.Queued() == 0 {
		return Remove
	}
	var want poll.Ready
	if c.reading() {
		want |= connReading
	}
	if c.Queued() > 0 {
		want |= poll.Writable
	}
	if want == 0 {
		// Neither reading nor writing (the end of input came and the
		// handler keeps the Conn open): a Poll watches nothing for
		// nothing, so it watches for an error, the one thing left to learn.
		want = poll.Error
	}
	if c.reading() && (c.redeliver || c.undrained) {
		act = Rearm // reading resumed: input in hand, or maybe in the socket
	}
	if want != c.registered {
		if err := c.l.reinterest(c.e, c.gen, want); err != nil {
			c.fail(err)
			return Remove
		}
		c.registered = want
	}
	if act == Rearm && want&connReading == 0 {
		act = Keep // not reading: nothing to come back for
	}
	return act
}

// connReading is a Conn's interest while it reads: Hup and Error too, so
// that an event says when the end of input or an error came with the data
// (see readPass).
const connReading = poll.Readable | poll.Hup | poll.Error

// isWouldBlock reports an operation that could not proceed now.
func isWouldBlock(err error) bool {
	return err == socket.ErrWouldBlock || errors.Is(err, unix.EAGAIN)
}
