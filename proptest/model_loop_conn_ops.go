//go:build linux

package proptest

import (
	"bytes"
	"errors"
	"io"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/socket"
)

// The operations on the Conns of the Loop's state machine, between
// iterations: the Conn's methods (ConnOp) and its peer's sends, reads and
// shutdown (ConnPeer). Each marks the Conn's call a must when the Conn's
// documentation promises one: a Write, Close, Abort or ResumeRead from
// outside a call triggers it, and the peer's data, end of input or room
// in the Conn's socket is an edge while the Conn watches for it.

// ConnOp calls one of a Conn's methods from outside a call.
func (w *loopWorld) ConnOp(t *rapid.T) {
	lc := w.pickConn(t, false)
	op := rapid.SampledFrom([]string{"Write", "WriteString", "Write to the bound", "WriteString to the bound",
		"Close", "Abort", "PauseRead", "ResumeRead", "policy"}).Draw(t, "Conn operation")
	switch op {
	case "Write", "WriteString", "Write to the bound", "WriteString to the bound":
		how := op
		n := rapid.IntRange(0, 3000).Draw(t, "bytes")
		if op == "Write to the bound" || op == "WriteString to the bound" {
			how = op[:len(op)-len(" to the bound")]
			n = 0
			if !lc.closed {
				n = max(lc.max-lc.c.Queued()+rapid.IntRange(-1, 1).Draw(t, "past the bound"), 0)
			}
		}
		b := bytes.Repeat([]byte{byte('a' + len(lc.out)%26)}, n)
		q := lc.c.Queued()
		msg := w.connWrite(lc, how, b)
		w.logf("%s.%s(%d bytes) with %d queued", lc.label, how, n, q)
		if msg != "" {
			w.fatalf(t, "%s: %s", lc.label, msg)
		}
		if lc.open() && q+n <= lc.max {
			lc.must = true // written in the Conn's next call, which the Write triggers
		}
	case "Close":
		lc.c.Close()
		w.logf("%s.Close()", lc.label)
		if lc.open() {
			lc.closing, lc.must = true, true
		}
	case "Abort":
		lc.c.Abort(errAbort)
		w.logf("%s.Abort(%v)", lc.label, errAbort)
		if !lc.closed && !lc.aborted {
			lc.aborted, lc.lost, lc.must = true, true, true
		}
	case "PauseRead":
		lc.c.PauseRead()
		w.logf("%s.PauseRead()", lc.label)
		if !lc.closed {
			lc.paused = true
		}
	case "ResumeRead":
		lc.c.ResumeRead()
		w.logf("%s.ResumeRead()", lc.label)
		if !lc.closed && lc.paused {
			lc.paused, lc.must = false, true
			lc.redeliver = lc.held > 0
		}
	case "policy":
		lc.consume = rapid.SampledFrom(connConsume).Draw(t, "Data consumes")
		lc.echo = rapid.Bool().Draw(t, "Data echoes")
		w.logf("%s's Data consumes %s, echo %v, from now on", lc.label, lc.consume, lc.echo)
	}
}

// ConnPeer acts on a Conn's peer: it sends (a drawn amount, or to the edge
// of the Conn's read buffer), reads, or shuts down its sending side.
func (w *loopWorld) ConnPeer(t *rapid.T) {
	lc := w.pickConn(t, false)
	op := rapid.SampledFrom([]string{"send", "send to the bound", "read", "read", "shut"}).Draw(t, "peer operation")
	switch op {
	case "send", "send to the bound":
		if lc.peerShut {
			t.Skip("the peer has shut its sending side")
		}
		n := rapid.IntRange(1, 3000).Draw(t, "bytes")
		if op == "send to the bound" {
			n = max(lc.maxRead-lc.held-sockInq(lc)+rapid.IntRange(-1, 1).Draw(t, "past the bound"), 1)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(len(lc.in) + i)
		}
		k, err := lc.peer.Write(b)
		w.logf("%s's peer sends %d bytes = %d, %v", lc.label, n, k, err)
		if err != nil && !errors.Is(err, socket.ErrWouldBlock) && !lc.closed {
			w.fatalf(t, "the peer's write: %v", err)
		}
		lc.in = append(lc.in, b[:k]...)
		if k > 0 && lc.reading() {
			lc.must = true
		}
	case "read":
		n := rapid.IntRange(1, 8000).Draw(t, "bytes")
		buf := make([]byte, n)
		k, err := lc.peer.Read(buf)
		w.logf("%s's peer reads %d bytes = %d, %v", lc.label, n, k, err)
		switch {
		case err == nil, errors.Is(err, socket.ErrWouldBlock):
		case lc.closed && (err == io.EOF || errors.Is(err, unix.ECONNRESET)):
			// The end; a reset if the Conn closed with input unread.
		default:
			w.fatalf(t, "the peer's read: %v", err)
		}
		if lc.outRead+k > len(lc.out) || !bytes.Equal(buf[:k], lc.out[lc.outRead:lc.outRead+k]) {
			w.fatalf(t, "%s's peer read %d bytes that are not the next ones written (%d read of %d)", lc.label, k, lc.outRead, len(lc.out))
		}
		lc.outRead += k
		if !lc.closed && lc.c.Queued() > 0 && pollOut(lc.fd) {
			lc.must = true // room for the queue: an edge of Writable
		}
	case "shut":
		if lc.peerShut {
			t.Skip("shut already")
		}
		err := lc.peer.CloseWrite()
		w.logf("%s's peer shuts its sending side = %v", lc.label, err)
		if err != nil {
			w.fatalf(t, "CloseWrite: %v", err)
		}
		lc.peerShut = true
		if lc.reading() {
			lc.must = true
		}
	}
}
