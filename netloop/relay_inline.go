package netloop

import (
	"errors"

	"github.com/unipoll/unipoll/eventloop"
)

// An inline relay: both Conns on one Loop that one worker serves, so that
// no two of their calls ever overlap (eventloop.Loop.Workers). A source's
// call then does its sink's work as well, as io.Copy does between two
// sockets: what it reads goes on into the peer's socket in the same call,
// with no call of the peer and no wake-up. Invariant 7 of the relay:
//
//	7. Only in an inline relay, a source's call may write its peer's
//	   socket and touch the peer's sink state (relaySink, its Stats and
//	   deadlines), and only while the peer is not waiting for Writable,
//	   has nothing of its own queued, and the relay goes on. Whatever the
//	   peer's socket does not take waits in the direction (the head, or
//	   the pipe) for the peer's own call, which the source pokes, and the
//	   source stalls (invariant 3) until the peer has written it.
//
// The source reads each burst one of two ways, chosen per direction:
//
//   - copying (the start): read into the worker's buffer, write that
//     into the peer's socket. A short read says the socket is drained, so
//     a small message costs a read and a write, where a splice costs
//     three calls (in, out, and the one that finds the socket empty).
//   - splicing: through the pipe, emptied into the peer's socket after
//     each fill, so that the pipe is empty whenever the source splices
//     into it and an EAGAIN always means a drained socket. Large bursts
//     never enter user space.
//
// While it reads, the source is registered Level (relaySettle), so that a
// fill that comes back short ends the pass with no splice that would say
// EAGAIN: if the socket holds more (more came, or the pipe ran out of
// slots before bytes), the Poll says so at its next look, at the cost of a
// poll of the socket inside epoll_wait rather than a system call. It goes
// back to Edge when it stalls and when its input ends: Level would report
// an ended input, a hang-up or an error at every look while the source
// does not read.
//
// A read that fills the worker's buffer switches the direction to
// splicing (where its Streams can splice); a burst, from an edge to the
// drained socket, of less than relaySmallBurst switches it back.

// relaySmallBurst is the burst below which an inline direction copies:
// about where a read and a write of the bytes cost what three splices do.
const relaySmallBurst = 16 << 10

// inlineDir is an inline direction's source-side state.
type inlineDir struct {
	canSplice bool // both Streams have descriptors the kernel splices: set by Relay, cleared if the kernel refuses
	splicing  bool // this burst goes through the pipe
	burst     int  // bytes read since the socket was last found drained
}

// relaySourceInline is relaySource for an inline relay.
func (c *Conn) relaySourceInline(r *relay, d *relayDir, peer *Conn) eventloop.Action {
	if c.rl.eof {
		return eventloop.Keep
	}
	m := &d.inl
	for range c.cfg.ReadsPerCall {
		if !d.empty() || !peer.sinkFree(r) {
			if !c.catchUp(r, d, peer) {
				return eventloop.Keep
			}
		}
		var n, t0room int
		var err error
		if m.splicing {
			t := d.transport(c, peer)
			t.grow() // once: a direction that splices carries large bursts
			t0room = t.bound()
			n, err = t.fill(c, d.filled.Load(), t0room)
			if n > 0 {
				d.filled.Add(int64(n))
			}
		} else {
			buf := c.l.ReadBuffer(c.tok)
			n, err = c.s.Read(buf)
			if n > 0 {
				d.writeThrough(c, peer, buf[:n])
				if n == len(buf) && m.canSplice {
					m.splicing = true // a large burst: the rest goes through the pipe
				}
			}
			if err == nil && n < len(buf) && !c.hup {
				err = errDrained
			}
		}
		if n > 0 {
			c.relayRead(n)
			m.burst += n
		}
		switch {
		case err == nil && m.splicing && n < t0room && c.rl.level && !c.hup:
			// Short, under Level: the Poll says whether more came (or
			// was left by a pipe out of slots), at no system call.
			c.burstEnds(m)
			c.afterFill(r, d, peer)
			return eventloop.Keep
		case err == nil:
			continue
		case errors.Is(err, errSpliceRefused) && d.held() == 0:
			// Empty, so the peer's sink does not look at it: the pipe
			// can go at once, and the direction copies from now on.
			m.splicing, m.canSplice = false, false
			if ref := d.t.Swap(nil); ref != nil {
				ref.close()
			}
			continue
		case err == errDrained || isWouldBlock(err):
			// The pipe was empty (catchUp), so the socket is drained.
			c.burstEnds(m)
			c.afterFill(r, d, peer)
			return eventloop.Keep
		default:
			c.sourceEnds(d, peer, err)
			return eventloop.Keep
		}
	}
	c.afterFill(r, d, peer)
	return eventloop.Again
}

// burstEnds: the socket is drained, or under Level the Poll will say it
// is not. A small burst turns the direction back to the copy.
func (c *Conn) burstEnds(m *inlineDir) {
	c.rl.unread = false
	if m.splicing && m.burst < relaySmallBurst {
		m.splicing = false
	}
	m.burst = 0
}

// errDrained is a short read of the copy: the socket is drained.
var errDrained = errors.New("drained")

// afterFill empties into the peer's socket what the last fill left in the
// pipe, before the call ends.
func (c *Conn) afterFill(r *relay, d *relayDir, peer *Conn) {
	if !d.empty() {
		c.catchUp(r, d, peer)
	}
}

// empty reports that nothing of the direction waits for the sink: no
// head, nothing in the transport.
func (d *relayDir) empty() bool {
	if d.held() > 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.head) == 0
}

// sinkFree reports that c's socket may be written by its peer's call now
// (invariant 7).
func (c *Conn) sinkFree(r *relay) bool {
	return !r.failed.Load() && !c.failed && !c.closing && !c.closed && !c.rl.blocked && !c.rl.shut && c.Queued() == 0
}

// catchUp has the peer, as the sink of d, write what waits in d; it
// reports whether all of it is out and the source may read on. If not, the
// peer is poked (its call waits for Writable, or ends the relay), and the
// source stalls until the peer's sink has caught up.
func (c *Conn) catchUp(r *relay, d *relayDir, peer *Conn) bool {
	if peer.sinkFree(r) {
		peer.relaySink(d, c)
		if d.empty() && peer.sinkFree(r) {
			return true
		}
	}
	d.stalled.Store(true)
	poke(peer)
	return false
}

// writeThrough writes b, just read by the source c, into the peer's
// socket; what it does not take becomes the head, which the peer's call
// writes (c's next catchUp pokes it and stalls).
func (d *relayDir) writeThrough(c, peer *Conn, b []byte) {
	n, err := peer.s.Write(b)
	if n > 0 {
		peer.relayWrote(n)
	}
	if n == len(b) {
		return
	}
	_ = err // the peer's call meets it again, writing the head
	d.mu.Lock()
	d.head = append([]byte(nil), b[n:]...)
	d.mu.Unlock()
}
