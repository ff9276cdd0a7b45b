//go:build linux

package proptest

import (
	"errors"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/netloop"
)

// The checks of the Conns of the Loop's state machine (the list is in
// model_loop_conn.go): checkConns after every step, checkConnIteration
// after every iteration.

// sockInq is how many bytes wait in the Conn's socket (0 once it is
// closed: its descriptor number may be another's by then).
func sockInq(lc *loopConn) int {
	if lc.closed {
		return 0
	}
	return inq(lc.fd)
}

// inq is SIOCINQ: the bytes waiting to be read from a socket.
func inq(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	if err != nil {
		return -1
	}
	return n
}

// queues are where lc's bytes wait outside the model's own counts: in
// its socket and its peer's (SIOCINQ), and, in completion mode
// (UNIPOLL_COMPLETION=1 on uring), in its socket's Stream, received and
// not read or queued and not sent. A send's completion work runs on the
// polling thread at its next system call, these ioctls included, and
// moves bytes from the Stream into the peer's socket: so the counts are
// taken until two rounds agree.
func (lc *loopConn) queues() (unread, unsent, peerHas, has int) {
	if lc.closed {
		return 0, 0, inq(lc.pfd), 0
	}
	for range 5 {
		unread, unsent = lc.sock.CompletionBuffered()
		peerHas, has = inq(lc.pfd), inq(lc.fd)
		u, s := lc.sock.CompletionBuffered()
		if u == unread && s == unsent && inq(lc.pfd) == peerHas && inq(lc.fd) == has {
			break
		}
	}
	return unread, unsent, peerHas, has
}

// pollOut reports whether a write to fd would not block now.
func pollOut(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n == 1 && pfd[0].Revents&unix.POLLOUT != 0
}

// checkConns checks every Conn's observable state against the model.
func (w *loopWorld) checkConns(t *rapid.T) {
	open := 0
	for _, lc := range w.conns {
		if want := btoi(lc.closed); len(lc.closedErrs) != want {
			w.fatalf(t, "%s: CloseHandler called %d times, want %d", lc.label, len(lc.closedErrs), want)
		}
		if lc.c.Closed() != lc.closed {
			w.fatalf(t, "%s: Closed() = %v, want %v", lc.label, lc.c.Closed(), lc.closed)
		}
		unread, unsent, peerHas, sockHas := lc.queues()
		if lc.closed {
			// Whatever was written and not dropped is the peer's.
			if lc.outRead+peerHas > len(lc.out) || !lc.lost && lc.outRead+peerHas != len(lc.out) {
				w.fatalf(t, "%s, closed: the peer read %d and has %d more of %d written (dropped %v)", lc.label, lc.outRead, peerHas, len(lc.out), lc.lost)
			}
			continue
		}
		open++
		q, held, has := lc.c.Queued(), lc.c.Buffered(), sockHas+unread
		peerHas += unsent
		switch {
		case q > lc.max:
			w.fatalf(t, "%s: %d bytes queued, MaxWriteQueue %d", lc.label, q, lc.max)
		case lc.outRead+peerHas+q > len(lc.out) || !lc.lost && lc.outRead+peerHas+q != len(lc.out):
			w.fatalf(t, "%s: of %d bytes written, the peer read %d, %d wait in its socket and %d are queued (dropped %v)",
				lc.label, len(lc.out), lc.outRead, peerHas, q, lc.lost)
		case held != lc.held || held > lc.maxRead:
			w.fatalf(t, "%s: Buffered() = %d, Data left %d unconsumed, MaxReadBuffer %d", lc.label, held, lc.held, lc.maxRead)
		case lc.consumed+held+has != len(lc.in):
			w.fatalf(t, "%s: of %d bytes sent, %d were consumed, %d are held and %d wait in the socket", lc.label, len(lc.in), lc.consumed, held, has)
		case !lc.aborted && lc.pressured && q <= lc.low:
			w.fatalf(t, "%s: reading paused by back pressure with %d queued, LowWater %d", lc.label, q, lc.low)
		case !lc.aborted && !lc.pressured && q > lc.high:
			w.fatalf(t, "%s: reading not paused with %d queued, HighWater %d", lc.label, q, lc.high)
		}
	}
	if n := netloop.Conns(w.l); n != open {
		w.fatalf(t, "netloop.Conns(Loop) = %d, want %d", n, open)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// connState is what shows that a Conn's call did something with its input.
type connState struct {
	has, held, consumed int
	closed              bool
	redeliver, reading  bool
	dataCalls           int
}

func (w *loopWorld) connStates() []connState {
	s := make([]connState, len(w.conns))
	for i, lc := range w.conns {
		s[i] = connState{sockInq(lc), lc.held, lc.consumed, lc.closed, lc.redeliver, lc.reading(), lc.dataCalls}
	}
	return s
}

// checkConnIteration checks the Conns after an iteration. before is their
// state before it; reached tells whether the iteration got as far as a
// priority, under its cap.
func (w *loopWorld) checkConnIteration(t *rapid.T, before []connState, reached func(prio int) bool) {
	for i, lc := range w.conns {
		if lc.closed {
			continue
		}
		if lc.c.Closed() {
			w.connClosed(t, lc)
			continue
		}
		if !lc.must || !reached(lc.prio) {
			continue
		}
		lc.must = false
		q := lc.c.Queued()
		// In completion mode a Conn's output may wait in its socket's
		// Stream (sent by the ring on later Polls): a closing Conn waits
		// for it, and a Write that found the Stream full leaves bytes
		// queued whatever the socket's own room.
		_, unsent := lc.sock.CompletionBuffered()
		ring := lc.sock.Completion()
		switch {
		case lc.aborted:
			w.fatalf(t, "%s: Abort did not close the Conn in its next call", lc.label)
		case lc.closing && q == 0 && ring && unsent == 0 && !lc.ringGrace:
			// The count above let the ring finish the last send; the
			// Writable that tells the Conn comes with the next Poll.
			lc.ringGrace, lc.must = true, true
		case lc.closing && q == 0 && unsent == 0:
			w.fatalf(t, "%s: Close with nothing left to write did not close the Conn in its next call", lc.label)
		case q > 0 && !ring && pollOut(lc.fd):
			w.fatalf(t, "%s: %d bytes queued after its call, and its socket takes more", lc.label, q)
		}
		b := before[i]
		if lc.reading() && (b.has > 0 || b.held == lc.maxRead) && sockInq(lc) == b.has && lc.held == b.held && lc.consumed == b.consumed {
			w.fatalf(t, "%s: its call left %d bytes in the socket and %d held, as before it", lc.label, b.has, b.held)
		}
		if b.reading && b.redeliver && lc.dataCalls == b.dataCalls {
			w.fatalf(t, "%s: reading resumed with %d bytes held, and its call did not hand them to Data", lc.label, b.held)
		}
		// A pass that stopped at ReadsPerCall calls again; a full buffer
		// that Data consumed nothing of ends the Conn in its next read;
		// input held when reading resumed is handed to Data again.
		if lc.reading() && (sockInq(lc) > 0 || lc.held == lc.maxRead || lc.redeliver) {
			lc.must = true
		}
	}
}

// connClosed checks a Conn that its last call closed: once, for the
// reason the model knows.
func (w *loopWorld) connClosed(t *rapid.T, lc *loopConn) {
	lc.closed, lc.must = true, false
	if len(lc.closedErrs) != 1 {
		w.fatalf(t, "%s: closed, CloseHandler called %d times", lc.label, len(lc.closedErrs))
	}
	err := lc.closedErrs[0]
	w.logf("%s closed: %v", lc.label, err)
	switch {
	case lc.aborted:
		if !errors.Is(err, errAbort) {
			w.fatalf(t, "%s: closed with %v after Abort(%v)", lc.label, err, errAbort)
		}
	case errors.Is(err, netloop.ErrReadBufferFull):
		if lc.lastLen != lc.maxRead || lc.lastTook != 0 {
			w.fatalf(t, "%s: closed with ErrReadBufferFull, Data's last call was handed %d bytes (MaxReadBuffer %d) and consumed %d",
				lc.label, lc.lastLen, lc.maxRead, lc.lastTook)
		}
		lc.lost = true
	case err == nil:
		if !lc.closing {
			w.fatalf(t, "%s: closed, and neither Close nor the end of input asked for it", lc.label)
		}
	default:
		w.fatalf(t, "%s: closed with %v", lc.label, err)
	}
}

// closeConns is the end of the Conns at the Loop's Close: every open one
// is closed once, with nil or the error an Abort left pending.
func (w *loopWorld) closeConns(t *rapid.T) {
	for _, lc := range w.conns {
		if lc.closed {
			continue
		}
		if !lc.c.Closed() || len(lc.closedErrs) != 1 {
			w.fatalf(t, "%s: after the Loop's Close, Closed() = %v and CloseHandler called %d times", lc.label, lc.c.Closed(), len(lc.closedErrs))
		}
		if err := lc.closedErrs[0]; lc.aborted && !errors.Is(err, errAbort) || !lc.aborted && err != nil {
			w.fatalf(t, "%s: closed by the Loop's Close with %v (aborted %v)", lc.label, err, lc.aborted)
		}
		// What was queued is dropped: the peer has what was written.
		lc.closed, lc.lost = true, true
	}
}
