package netloop

import (
	"errors"
	"io"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// relayReady is a call of a relaying Conn, in place of source.Ready: the
// functions Async queued, then the Conn as a sink (what waits for its
// socket goes first, and frees room for its peer), then as a source, then
// its deadlines and the registration it needs now.
//
// The source reads only while its socket may hold input (rl.unread): since
// an edge came, or the relay started, no splice or read has found it
// empty. A call that only the peer's poke brought (bytes to write) then
// costs no read that would only say EAGAIN.
func (c *Conn) relayReady(r *relay, ev poll.Ready) eventloop.Action {
	c.inCall = true
	c.triggered = false
	c.runAsync()
	out, in, peer := r.dirs(c)
	if r.inline {
		prefetchPeer(peer) // the source acts as its sink (invariant 7)
	}
	if !c.rl.started {
		c.rl.started = true
		c.rl.unread = true // it stopped reading when Relay claimed it
		c.relayStart(out, peer)
	}
	if ev&connReading != 0 {
		c.rl.unread = true
		c.hup = c.hup || ev&(poll.Hup|poll.Error) != 0
	}
	act := eventloop.Keep
	if c.relaying(r) {
		act = c.relaySink(in, peer)
	}
	if c.relaying(r) && c.rl.unread {
		var a eventloop.Action
		if r.inline {
			a = c.relaySourceInline(r, out, peer)
		} else {
			a = c.relaySource(out, peer)
		}
		if a == eventloop.Again {
			act = eventloop.Again
		}
	}
	c.checkDeadlines()
	c.inCall = false
	return c.relaySettle(r, out, in, act)
}

// relaying reports that the relay goes on for c.
func (c *Conn) relaying(r *relay) bool { return !c.failed && !c.closing && !r.failed.Load() }

// relayStart is the Conn's first relay call: its unconsumed input becomes
// the head of the direction it is the source of (invariant 5), and an end
// of input it had already read ends that direction.
func (c *Conn) relayStart(out *relayDir, peer *Conn) {
	c.redeliver, c.undrained = false, false
	if len(c.in) > 0 {
		out.mu.Lock()
		out.head, c.in = c.in, nil
		out.mu.Unlock()
		poke(peer)
	}
	if c.eof {
		c.rl.eof = true
		out.srcEnded.Store(true)
		poke(peer)
	}
}

// relaySource reads the Conn's socket into the transport until the socket
// is drained (EAGAIN), its input ends or fails, the transport is full, or
// ReadsPerCall reads were made (Again: there may be more).
func (c *Conn) relaySource(d *relayDir, peer *Conn) eventloop.Action {
	if c.rl.eof {
		return eventloop.Keep
	}
	for range c.cfg.ReadsPerCall {
		held := d.held()
		t := d.transport(c, peer)
		room := t.bound() - held
		if room <= 0 {
			if t.grow() || d.stall(held) {
				continue
			}
			return eventloop.Keep
		}
		n, err := t.fill(c, d.filled.Load(), room)
		if n > 0 {
			d.filled.Add(int64(n))
			c.relayRead(n)
			if !d.sinkBlocked.Load() && !d.notified.Swap(true) {
				poke(peer)
			}
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, errSpliceRefused) && held+n == 0:
			// Empty, so the sink does not look at it (invariant 2): the
			// pipe can go at once.
			d.t.Store(&transportRef{newRing()})
			t.close()
			continue
		case isWouldBlock(err):
			// A splice that would block may also mean a full pipe, whose
			// slots can fill before its bytes reach the bound: stall as
			// at the bound, so that the sink's drain calls us again, and
			// read again then (unread stays set). Only an empty pipe, or
			// the ring, says for sure that the socket is empty.
			if t.fullBlocks() && held+n > 0 {
				if d.stall(held + n) {
					continue
				}
				return eventloop.Keep
			}
			c.rl.unread = false
			return eventloop.Keep
		default:
			c.sourceEnds(d, peer, err)
			return eventloop.Keep
		}
	}
	return eventloop.Again
}

// sourceEnds ends the source's reading at err: the end of its input
// (io.EOF), which the sink passes on once it has written what came
// before, or a failure, which ends the relay.
func (c *Conn) sourceEnds(d *relayDir, peer *Conn, err error) {
	c.rl.unread = false
	if err != io.EOF {
		c.fail(err)
		return
	}
	c.rl.eof = true
	d.srcEnded.Store(true)
	poke(peer)
}

// relayRead and relayWrote note the relay's traffic on c's socket as its
// own reads and writes are noted, for its deadlines and its Stats.
func (c *Conn) relayRead(n int) {
	c.stats.Reads++
	c.stats.BytesRead += uint64(n)
	c.noteRead()
}

func (c *Conn) relayWrote(n int) {
	c.stats.Writes++
	c.stats.BytesWritten += uint64(n)
	c.noteWrite(n)
}

// stall stops the source at a transport that held held bytes; it reports
// whether the sink has drained some meanwhile, so that the source goes on
// at once (invariant 3).
func (d *relayDir) stall(held int) bool {
	d.stalled.Store(true)
	return d.held() < held
}

// transport returns the direction's transport, chosen at the source's
// first fill (invariant 2).
func (d *relayDir) transport(src, sink *Conn) transport {
	if t := d.t.Load(); t != nil {
		return t.transport
	}
	t := newTransport(src.s, sink.s)
	d.t.Store(&transportRef{t})
	return t
}

// relaySink writes into the Conn's socket, in order, its queued output,
// the head of the direction it is the sink of, then the transport, until
// all is written (then, if the source's input has ended, it shuts down its
// sending side) or the socket is full (then it waits for Writable).
func (c *Conn) relaySink(d *relayDir, peer *Conn) eventloop.Action {
	c.rl.blocked = false
	d.sinkBlocked.Store(false)
	d.notified.Store(false)
	for range c.cfg.ReadsPerCall {
		if c.Queued() > 0 {
			c.flush()
			if c.failed || c.Queued() > 0 {
				return c.sinkBlocks(d)
			}
		}
		// The end first: the head and every fill come before it
		// (invariant 5), so once it is seen, so are they.
		ended := d.srcEnded.Load()
		if d.writeHead(c) {
			return c.sinkBlocks(d)
		}
		at := d.drained.Load()
		n := int(d.filled.Load() - at)
		if n == 0 {
			if d.stalled.Swap(false) {
				poke(peer) // the source stopped at a head this call wrote
			}
			if ended && !c.rl.shut {
				c.rl.shut = true
				if err := c.s.CloseWrite(); err != nil {
					c.fail(err)
				}
				d.done.Store(true)
				poke(peer)
			}
			return eventloop.Keep
		}
		k, err := d.t.Load().drain(c, at, n)
		if k > 0 {
			d.drained.Add(int64(k))
			c.relayWrote(k)
			if d.stalled.Swap(false) {
				poke(peer)
			}
		}
		if err != nil {
			if !isWouldBlock(err) {
				c.fail(err)
			}
			return c.sinkBlocks(d)
		}
	}
	return eventloop.Again
}

// writeHead writes what is left of the head; it reports that the socket
// would not take all of it (or failed).
func (d *relayDir) writeHead(c *Conn) (blocked bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.head) == 0 {
		return false
	}
	n, err := c.s.Write(d.head)
	if n > 0 {
		c.relayWrote(n)
	}
	d.head = d.head[n:]
	if len(d.head) == 0 {
		d.head = nil
	}
	if err != nil && !isWouldBlock(err) {
		c.fail(err)
		return true
	}
	return len(d.head) > 0
}

// sinkBlocks: the socket is full, and its Writable event will call the
// sink again (invariant 4).
func (c *Conn) sinkBlocks(d *relayDir) eventloop.Action {
	if !c.failed {
		c.rl.blocked = true
		d.sinkBlocked.Store(true)
		c.noteWrite(0) // WriteTimeout counts from the first wait
	}
	return eventloop.Keep
}

// relaySettle decides what the call ends with: Remove once both
// directions have ended or the relay failed (then with a reset if bytes
// are dropped), otherwise the registration the Conn needs: Readable while
// it reads, Writable while bytes wait for its socket.
func (c *Conn) relaySettle(r *relay, out, in *relayDir, act eventloop.Action) eventloop.Action {
	if c.failed || c.closing || r.failed.Load() {
		drop := c.Queued() > 0 || r.lost()
		switch {
		case c.failed:
			r.fail(c, c.err)
		case c.closing:
			c.fail(nil) // a Close ends the relay: both hear nil
			r.fail(c, nil)
		default:
			c.fail(r.peerError(c))
		}
		if drop {
			resetOnClose(c.s)
		}
		return eventloop.Remove
	}
	if out.done.Load() && in.done.Load() {
		return eventloop.Remove
	}
	var want poll.Ready
	// An inline relay's source is registered Level while it reads, so that
	// the Poll, not a splice that finds nothing, tells whether its socket
	// holds more. Not while it is stalled, when it does not read at all
	// (the peer's call wakes it), nor once its input has ended: Level would
	// report the end, or a hang-up or an error (which the Poll reports
	// whatever the interest), at every look.
	stalled := r.inline && out.stalled.Load()
	level := r.inline && !c.rl.eof && !stalled
	if !c.rl.eof && !stalled {
		want |= connReading
	}
	if c.rl.blocked {
		want |= poll.Writable
	}
	if want == 0 {
		want = poll.Error // see settle
	}
	if want != c.registered || level != c.rl.level {
		var err error
		if level != c.rl.level {
			err = c.l.SetMode(c.tok, want, modeOf(level))
		} else {
			err = c.l.SetInterest(c.tok, want)
		}
		if err != nil {
			c.fail(err)
			r.fail(c, err)
			return eventloop.Remove
		}
		c.registered, c.rl.level = want, level
	}
	return act
}

// modeOf is the registration mode: Level, or the Conn's usual Edge.
func modeOf(level bool) poll.PollOpt {
	if level {
		return poll.Level
	}
	return poll.Edge
}

// resetOnClose makes the close of s a reset (SO_LINGER 0), for a Stream
// that has the option: its peer then sees an error, not a clean end of a
// truncated stream.
func resetOnClose(s Stream) {
	if l, ok := s.(interface{ SetLinger(sec int) error }); ok {
		_ = l.SetLinger(0)
	}
}
