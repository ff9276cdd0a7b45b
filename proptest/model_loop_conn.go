//go:build linux

package proptest

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/socket"
)

// The Conns of the Loop's state machine: eventloop.Conns on unix socket
// pairs, on the same Loop as the Registrations (with priorities of their
// own, behind the same cap) and driven by the same iterations. The test's
// goroutine runs every iteration, so between iterations it is the Loop's
// own and calls the Conns' methods as a posted function would.
//
// A Conn's calls cannot be seen one by one (a call that only writes calls
// no handler), so the model checks what they leave. After every step,
// each Conn's observable state against the model (model_loop_conn_check.go):
//
//   - output: every byte a Write took has been read by the peer, waits in
//     the peer's socket, or is queued (Queued), in order, unless an Abort
//     or a failure dropped the queue; a Write (and WriteString alike) is
//     taken whole exactly when it fits under MaxWriteQueue;
//   - input: every byte the peer sent has been consumed, is held
//     (Buffered) or waits in the Conn's socket; Data is handed the
//     unconsumed bytes in order, all of them, never more than
//     MaxReadBuffer;
//   - back pressure: Pressure(true) came exactly when the queue went above
//     HighWater, Pressure(false) when it fell to LowWater or less;
//   - open or closed: Closed, netloop.Conns, one CloseHandler call with the
//     error the model expects.
//
// After an iteration that had to call the Conn (an outside Write, Close,
// Abort or ResumeRead kicked it, the peer sent while it read, the peer's
// read made room for its queue, its last call left input to read), what
// that call must have done: written all its socket takes, read on, closed
// once it was told to and had nothing left to write. At the cap of calls
// per iteration, a Conn of the lowest priority called may not have been
// reached: what it owes then waits for a later iteration.

// errAbort is the error the model's Aborts give.
var errAbort = errors.New("proptest: Abort")

// loopConn is the model of one Conn and its peer.
type loopConn struct {
	label string
	c     *netloop.Conn
	fd    int              // the Conn's descriptor; not to be used once it is closed
	sock  *socket.UnixConn // the Conn's socket, for its Stream's counts
	// ringGrace: closing in completion mode, its Stream emptied by the
	// check's count; one more call to close (checkConnIteration).
	ringGrace bool
	peer      *socket.UnixConn
	pfd       int
	prio      int

	max, maxRead, high, low int // the netloop.Config in effect

	out      []byte // every byte a Write took, in order
	outRead  int    // how many of them the peer has read
	lost     bool   // an Abort or a failure dropped the queue: out is a bound
	in       []byte // every byte the peer sent, in order
	consumed int    // how many of them Data consumed
	held     int    // handed to Data's last call and not consumed

	consume string // the handler's policy: what Data consumes
	echo    bool   // Data writes back what it consumes

	// What the handler saw.
	pressured         bool
	eof               bool // ReadClosed
	lastLen, lastTook int  // Data's last call: handed, consumed
	dataCalls         int
	closedErrs        []error

	// The model.
	paused, closing, aborted, closed, peerShut bool
	must                                       bool // a call must come when the Conn is next reached
	redeliver                                  bool // reading resumed with input held: Data must be handed it again
}

// reading is the model of whether the Conn reads now (Conn.reading).
func (lc *loopConn) reading() bool {
	return !lc.paused && !lc.pressured && !lc.eof && !lc.closing && !lc.aborted && !lc.closed
}

// open is whether Write may still take output.
func (lc *loopConn) open() bool { return !lc.closing && !lc.aborted && !lc.closed }

func (lc *loopConn) String() string {
	if lc.closed {
		return fmt.Sprintf("%s(closed %v, out %d read %d lost %v)", lc.label, lc.closedErrs, len(lc.out), lc.outRead, lc.lost)
	}
	return fmt.Sprintf("%s(prio %d max %d maxRead %d water %d/%d; out %d read %d; in %d consumed %d held %d; %s echo=%v; pressured=%v eof=%v paused=%v closing=%v aborted=%v peerShut=%v must=%v redeliver=%v)",
		lc.label, lc.prio, lc.max, lc.maxRead, lc.low, lc.high, len(lc.out), lc.outRead, len(lc.in), lc.consumed, lc.held,
		lc.consume, lc.echo, lc.pressured, lc.eof, lc.paused, lc.closing, lc.aborted, lc.peerShut, lc.must, lc.redeliver)
}

// loopConnHandler is a Conn's handler: it checks each call against the
// model and consumes by the model's policy.
type loopConnHandler struct {
	w  *loopWorld
	lc *loopConn
}

func (h *loopConnHandler) strayf(format string, args ...any) {
	h.w.stray = append(h.w.stray, h.lc.label+": "+fmt.Sprintf(format, args...))
}

func (h *loopConnHandler) Data(c *netloop.Conn, in []byte) int {
	lc := h.lc
	switch {
	case !h.w.inIter:
		h.strayf("Data outside RunOnce")
	case len(in) > lc.maxRead:
		h.strayf("Data handed %d bytes, MaxReadBuffer %d", len(in), lc.maxRead)
	case len(in) < lc.held:
		h.strayf("Data handed %d bytes, %d were left unconsumed", len(in), lc.held)
	case lc.consumed+len(in) > len(lc.in) || !bytes.Equal(in, lc.in[lc.consumed:lc.consumed+len(in)]):
		h.strayf("Data handed %d bytes that are not the next ones the peer sent (%d consumed of %d)", len(in), lc.consumed, len(lc.in))
	}
	k := consumeBy(lc.consume, len(in))
	lc.lastLen, lc.lastTook = len(in), k
	lc.redeliver = false
	lc.dataCalls++
	if lc.echo && k > 0 {
		if msg := h.w.connWrite(lc, "Write", in[:k]); msg != "" {
			h.strayf("in Data: %s", msg)
		}
	}
	lc.consumed += k
	lc.held = len(in) - k
	return k
}

func (h *loopConnHandler) Pressure(c *netloop.Conn, high bool) {
	lc := h.lc
	q := c.Queued()
	switch {
	case high == lc.pressured:
		h.strayf("Pressure(%v) twice", high)
	case high && q <= lc.high:
		h.strayf("Pressure(true) with %d queued, HighWater %d", q, lc.high)
	case !high && q > lc.low:
		h.strayf("Pressure(false) with %d queued, LowWater %d", q, lc.low)
	}
	lc.pressured = high
	if !high && lc.held > 0 {
		lc.redeliver = true
	}
}

func (h *loopConnHandler) ReadClosed(c *netloop.Conn) {
	lc := h.lc
	if !h.w.inIter || !lc.peerShut || lc.eof {
		h.strayf("ReadClosed (in an iteration %v, the peer shut %v, already %v)", h.w.inIter, lc.peerShut, lc.eof)
	}
	lc.eof = true
	lc.closing = true
	c.Close() // as a Conn without an EOFHandler does
}

func (h *loopConnHandler) Closed(c *netloop.Conn, err error) {
	if !h.w.inIter && !h.w.closing {
		h.strayf("Closed outside RunOnce and Close")
	}
	h.lc.closedErrs = append(h.lc.closedErrs, err)
}

// consumeBy is what Data consumes of n bytes under a policy.
func consumeBy(policy string, n int) int {
	switch policy {
	case "none":
		return 0
	case "half":
		return n / 2
	case "all but one":
		return max(n-1, 0)
	}
	return n
}

var connConsume = []string{"all", "all", "none", "half", "all but one"}

// connWrite writes b through the Conn (Write or WriteString, by how) and
// checks the answer against the model: taken whole exactly when the Conn
// is open and b fits under MaxWriteQueue, Pressure(true) exactly when the
// queue goes above HighWater. It returns what went wrong, or "".
func (w *loopWorld) connWrite(lc *loopConn, how string, b []byte) string {
	q := lc.c.Queued()
	was := lc.pressured
	var n int
	var err error
	if how == "WriteString" {
		n, err = lc.c.WriteString(string(b))
	} else {
		n, err = lc.c.Write(b)
	}
	switch {
	case !lc.open():
		if !errors.Is(err, eventloop.ErrClosed) || n != 0 {
			return fmt.Sprintf("%s of %d bytes on a closed Conn = %d, %v, want ErrClosed", how, len(b), n, err)
		}
	case q+len(b) > lc.max:
		if !errors.Is(err, netloop.ErrWriteQueueFull) || n != 0 || lc.c.Queued() != q {
			return fmt.Sprintf("%s of %d bytes with %d queued, MaxWriteQueue %d = %d, %v (%d queued after), want ErrWriteQueueFull",
				how, len(b), q, lc.max, n, err, lc.c.Queued())
		}
	default:
		if err != nil || n != len(b) || lc.c.Queued() != q+len(b) {
			return fmt.Sprintf("%s of %d bytes with %d queued, MaxWriteQueue %d = %d, %v (%d queued after), want all taken",
				how, len(b), q, lc.max, n, err, lc.c.Queued())
		}
		lc.out = append(lc.out, b...)
		if above := q+len(b) > lc.high; !was && above != lc.pressured {
			return fmt.Sprintf("%s took the queue from %d to %d, HighWater %d: Pressure(true) called %v", how, q, q+len(b), lc.high, lc.pressured)
		}
	}
	return ""
}

const loopMaxConns = 3

// ConnAdd puts a Conn on the Loop, over a unix socket pair whose Conn end
// has a small send buffer (so that output queues), with a drawn
// netloop.Config, priority and handler policy.
func (w *loopWorld) ConnAdd(t *rapid.T) {
	open := 0
	for _, lc := range w.conns {
		if !lc.closed {
			open++
		}
	}
	if open >= loopMaxConns {
		t.Skip("enough Conns")
	}
	w.nextID++
	lc := &loopConn{label: fmt.Sprintf("c%d", w.nextID)}
	lc.max = rapid.SampledFrom([]int{64, 1000, 20000}).Draw(t, "MaxWriteQueue")
	lc.high = rapid.IntRange(1, lc.max).Draw(t, "HighWater")
	low := rapid.IntRange(0, lc.high-1).Draw(t, "LowWater (0 default)")
	lc.low = low
	if low == 0 {
		lc.low = lc.high / 4 // the documented default
	}
	lc.maxRead = rapid.SampledFrom([]int{16, 100, 3000}).Draw(t, "MaxReadBuffer")
	perCall := rapid.SampledFrom([]int{0, 1, 2}).Draw(t, "ReadsPerCall (0 default)")
	lc.prio = rapid.SampledFrom(loopPrios).Draw(t, "priority")
	lc.consume = rapid.SampledFrom(connConsume).Draw(t, "Data consumes")
	lc.echo = rapid.Bool().Draw(t, "Data echoes")
	a, b, err := socket.Pair()
	if err != nil {
		w.fatalf(t, "socket.Pair: %v", err)
	}
	lc.fd, lc.sock, lc.peer, lc.pfd = a.Fd(), a, b, b.Fd()
	if err := unix.SetsockoptInt(lc.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1); err != nil { // the least the kernel allows
		w.fatalf(t, "SO_SNDBUF: %v", err)
	}
	cfg := netloop.Config{MaxWriteQueue: lc.max, HighWater: lc.high, LowWater: low, MaxReadBuffer: lc.maxRead, ReadsPerCall: perCall}
	lc.c, err = netloop.Add(w.l, a, &loopConnHandler{w, lc}, cfg, eventloop.Priority(lc.prio))
	w.logf("netloop.Add(%s, %+v, priority %d, consumes %s, echo %v) = %v", lc.label, cfg, lc.prio, lc.consume, lc.echo, err)
	if err != nil {
		_ = b.Close()
		w.fatalf(t, "netloop.Add: %v", err)
	}
	w.conns = append(w.conns, lc)
}

// pickConn draws a Conn: an open one, or any (closed ones refuse writes).
func (w *loopWorld) pickConn(t *rapid.T, openOnly bool) *loopConn {
	var cand []*loopConn
	for _, lc := range w.conns {
		if !openOnly || !lc.closed {
			cand = append(cand, lc)
		}
	}
	if len(cand) == 0 {
		t.Skip("no such Conn")
	}
	return cand[rapid.IntRange(0, len(cand)-1).Draw(t, "Conn (index)")]
}
