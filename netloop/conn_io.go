package netloop

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// source is the Conn as a source of its Loop: its eventloop.SourceHandler
// and Remover, as every source of a Loop has. It is a type of its own so
// that Ready and Removed are not methods of Conn.
type source Conn

// Ready is one call of the Conn: the functions Async queued, the output
// that waits for room, a read pass, one write of what the pass produced,
// the deadlines if their timeout expired, then the registration it needs
// now. It returns Remove once the Conn is finished, Again if the read pass
// stopped at ReadsPerCall with the socket still full.
func (cs *source) Ready(l *eventloop.Loop, ev poll.Event) eventloop.Action {
	c := (*Conn)(cs)
	if r := c.rl.active(); r != nil {
		return c.relayReady(r, ev.Ready)
	}
	c.inCall = true
	c.triggered = false
	up := c.tls != nil && !c.tls.established && c.tlsCall()
	if f := c.opened; f != nil && c.tlsUp() {
		c.opened = nil
		f(c, nil) // a Dial's done: before anything else of the Conn's
	}
	if h, ok := c.h.(TLSHandler); up && ok && !c.Closed() {
		h.HandshakeDone(c)
	}
	c.runAsync()
	if c.queued() > 0 {
		c.flush()
	}
	if ev.Ready&connReading != 0 {
		c.undrained = true
		c.hup = c.hup || ev.Ready&(poll.Hup|poll.Error) != 0
	}
	act := eventloop.Keep
	if c.reading() && (c.mayHaveInput() || c.redeliver) {
		act = c.readPass()
	}
	c.flush()
	// Deadlines last: input that waited in the socket while the Loop was
	// busy elsewhere has just been read, and counts.
	c.checkDeadlines()
	c.inCall = false
	return c.settle(act)
}

// Removed closes the Stream and tells the CloseHandler.
func (cs *source) Removed(*eventloop.Loop, poll.Token) {
	(*Conn)(cs).relayRemoved() // first: a Relay after the CloseHandler ran sees ErrClosed
	(*Conn)(cs).removed()
}

// reading reports whether the Conn reads now. A TLS handshake reads its
// records also while the Conn's input would wait (PauseRead, back
// pressure, Close): what waits for them is the keys of the queued output
// and of the input, so not reading them would only stall both.
func (c *Conn) reading() bool {
	if c.tls != nil && !c.tls.established {
		return !c.failed && !c.tlsStalled()
	}
	return !c.paused && !c.pressured && !c.eof && !c.closing && !c.failed && !c.rl.pending()
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
// A short read means drained only if no event has reported a hang-up or
// an error: those last, and under Edge they were reported once and will
// not be again, so the pass goes on to the read that returns the end of
// input (or the error).
//
// The socket is read only while it may hold input (undrained): since an
// edge (Readable, Hup, Error) came, or the Conn was added, no read has
// found it drained. A call that only a Trigger brought (output queued
// from elsewhere, Async, a deadline, the peer of a copy) thus costs no
// read that would only say EAGAIN. An edge that comes while the Conn does
// not read (back pressure, PauseRead) is remembered the same way, so
// resuming reads what it announced: under Edge it comes only once.
func (c *Conn) readPass() eventloop.Action {
	lasting := c.hup
	var scratch []byte // the Loop's worker's read buffer, fetched at first use
	if c.redeliver {
		c.redeliver = false
		c.deliverOwn()
	}
	if c.tls != nil && !c.tls.established {
		if c.failed || !c.undrained {
			return eventloop.Keep
		}
		return c.tlsFeed()
	}
	if !c.mayHaveInput() {
		return eventloop.Keep
	}
	for range c.cfg.ReadsPerCall {
		if !c.reading() {
			// Stopped with the socket maybe still holding input:
			// undrained stays set, and resuming reads.
			return eventloop.Keep
		}
		var buf []byte
		own := len(c.in) > 0
		if own {
			if !c.growIn() {
				return eventloop.Keep
			}
			buf = c.in[len(c.in):cap(c.in)]
		} else {
			// No more than MaxReadBuffer at a time, also when the workers'
			// buffer is larger: what Data leaves of it is kept, and a read
			// that fills it is full, so a handler that consumes nothing of
			// a full buffer meets growIn's limit at once.
			if scratch == nil {
				scratch = c.l.ReadBuffer(c.tok)
			}
			buf = scratch[:min(len(scratch), c.cfg.MaxReadBuffer)]
		}
		n, err := c.readStream(buf)
		if n > 0 {
			c.stats.Reads++
			c.stats.BytesRead += uint64(n)
			c.noteRead()
			if own {
				c.in = c.in[:len(c.in)+n]
				c.deliverOwn()
			} else {
				c.deliverScratch(buf[:n])
			}
		}
		switch {
		case err == nil && n < len(buf) && !lasting && c.tls == nil:
			c.undrained = false // a short read: the socket is drained (a TLS read is one record: see tlsReadSocket)
			return eventloop.Keep
		case err == nil:
			continue // full: there may be more
		case isWouldBlock(err):
			c.undrained = false
			return eventloop.Keep
		case err == io.EOF:
			c.undrained = false
			c.readEOF()
			return eventloop.Keep
		default:
			c.fail(err)
			return eventloop.Keep
		}
	}
	return eventloop.Again
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
	if k == 0 {
		return // nothing consumed (a message still arriving): no copy of what waits
	}
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
	if e, ok := c.h.(EOFHandler); ok {
		e.ReadClosed(c)
		return
	}
	c.Close()
}

// flush writes the queued output until it is all written or the socket is
// full, then applies what waited for the queue to empty.
func (c *Conn) flush() {
	for c.flushOnce() {
	}
}

// flushOnce is one write of flush. It reports whether to write again: the
// socket took everything, and the PressureHandler, told that the queue
// drained, queued more. That output must not wait for a Writable edge:
// under Edge none comes for a socket that never filled.
func (c *Conn) flushOnce() (again bool) {
	if c.failed {
		return false
	}
	full := false
	if c.queued() > 0 {
		b := c.out[c.at:]
		n, err := c.writeStream(b)
		c.at += n
		if n > 0 {
			c.stats.Writes++
			c.stats.BytesWritten += uint64(n)
		}
		c.noteWrite(n)
		if err != nil && !isWouldBlock(err) {
			c.fail(err)
			return false
		}
		full = err != nil || n < len(b)
	}
	if c.at == len(c.out) {
		c.at = 0
		if cap(c.out) > c.cfg.HighWater {
			c.out = nil
		} else {
			c.out = c.out[:0]
		}
		if c.shut || c.closing {
			c.tlsNotify() // close_notify before the FIN
		}
		if c.shut && !c.shutDone && c.tlsShutReady() && c.queued() == 0 {
			c.shutDone = true
			if err := c.s.CloseWrite(); err != nil {
				c.fail(err)
				return false
			}
		}
	} else if c.at > len(c.out)/2 && c.at > 4096 {
		// Keep the queue from creeping through its buffer.
		n := copy(c.out, c.out[c.at:])
		c.out, c.at = c.out[:n], 0
	}
	if c.pressured && c.Queued() <= c.cfg.LowWater {
		c.pressured = false
		c.resumeReading()
		if p, ok := c.h.(PressureHandler); ok {
			p.Pressure(c, false)
		}
		if !c.inCall {
			c.trigger()
		}
		return !full && c.queued() > 0
	}
	return false
}

// settle decides what the call ends with: Remove when the Conn is done,
// otherwise the registration its state needs (Readable while reading,
// Writable while output waits), changed only when it differs.
func (c *Conn) settle(act eventloop.Action) eventloop.Action {
	if c.failed {
		return eventloop.Remove
	}
	flushing := false
	if c.closing && c.queued() == 0 {
		if c.streamFlushed() {
			return eventloop.Remove
		}
		// Its output is in the socket's Stream, not yet in the kernel
		// (completion mode): the Writable that says it has gone comes
		// next (streamFlushed).
		flushing = true
	}
	var want poll.Ready
	if c.reading() {
		want |= connReading
	}
	if c.canWrite() || flushing {
		want |= poll.Writable
	}
	if want == 0 {
		// Neither reading nor writing (the end of input came and the
		// handler keeps the Conn open): a Poll watches nothing for
		// nothing, so it watches for an error, the one thing left to learn.
		want = poll.Error
	}
	if c.reading() && (c.redeliver || c.mayHaveInput()) {
		act = eventloop.Again // reading resumed: input in hand, or maybe in the socket
	}
	if want != c.registered {
		if err := c.l.SetInterest(c.tok, want); err != nil {
			c.fail(err)
			return eventloop.Remove
		}
		c.registered = want
	}
	if act == eventloop.Again && want&connReading == 0 {
		act = eventloop.Keep // not reading: nothing to come back for
	}
	return act
}

// streamFlushed reports whether the socket's own queue is empty: always
// so, unless its I/O goes through its Poll's backend (completion mode,
// socket.TCPConn.CompletionFlushed), whose queue a closing Conn waits
// for, as it waits for its own: closed earlier, the rest would go out on
// later Polls only, and not at all if the Poll closed first. When it is
// not empty, a Writable comes once it is.
func (c *Conn) streamFlushed() bool {
	f, ok := c.s.(interface{ CompletionFlushed() bool })
	return !ok || f.CompletionFlushed()
}

// resumeReading is the end of PauseRead or of back pressure: unconsumed
// input goes to Data again, the ReadTimeout's clock restarts, and, if
// settle had dropped Readable from the registration meanwhile, the socket
// may hold input whose edge the Poll never reported (it watched nothing
// to report it on), so the next read pass reads rather than wait for an
// edge that re-registering brings only a Poll later.
func (c *Conn) resumeReading() {
	c.redeliver = len(c.in) > 0
	if c.registered&poll.Readable == 0 {
		c.undrained = true
	}
	c.readResumed()
}

// connReading is a Conn's interest while it reads: Hup and Error too, so
// that an event says when the end of input or an error came with the data
// (see readPass).
const connReading = poll.Readable | poll.Hup | poll.Error

// isWouldBlock reports an operation that could not proceed now.
func isWouldBlock(err error) bool {
	return err == socket.ErrWouldBlock || errors.Is(err, unix.EAGAIN)
}
