//go:build linux

package sys

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// uringStream is a Stream on the io_uring backend: a multishot receive
// (IORING_OP_RECV with IORING_RECV_MULTISHOT) into the selector's provided
// buffers (uringBufs), and sends (IORING_OP_SEND) of a queue, one in
// flight at a time so that the bytes leave in order. Its requests name the
// socket by its slot in the ring's table of files (uringFiles), which
// holds a reference to the socket until the last request is over.
//
// Invariants. Lock order: uringSelector.mu, then mu.
//
//	S1. mu guards chunks, held, spill, eof, rerr, out, flight, werr and
//	    closedSel. The selector's fields (entry, rx, paused, starved,
//	    unarmed, tx, wantRoom, roomArmed, deleted) are guarded by
//	    uringSelector.mu.
//	S2. chunks are the buffers the receive completed into and the caller
//	    has not read in full, in the order the kernel completed them (the
//	    order of the bytes: one receive per Stream, whose completions the
//	    CQ keeps in order). Each is the Stream's (B2 in uringBufs) until
//	    Read gives it back. held counts their unread bytes.
//	S3. rx: a receive of this Stream is in the kernel, from its submission
//	    until its last completion (one without IORING_CQE_F_MORE) is
//	    harvested. At most one at a time: a receive is submitted again only
//	    once rx is false, so two receives never race for the socket's bytes.
//	    A Stream that wants a receive (wantRecv) and has none is paused,
//	    starved (in the selector's starved list) or unarmed (in its
//	    unarmed list: the SQ had no room for the receive, and the next
//	    Select arms it); nothing else, so none is left without a receive
//	    that nothing would arm.
//	S4. flight is the slice a send in the kernel reads (tx true), from its
//	    submission to its completion; it is not written meanwhile (Write
//	    appends to out), and it stays reachable from the Stream, so the
//	    collector keeps it. A short send is submitted again for the rest.
//	S5. A Stream is in the selector's streams map from AddStream until it
//	    is deleted and no receive, send or room poll is in the kernel; its
//	    slot is cleared then, once.
//	S6. A send never waits in the kernel: it carries MSG_DONTWAIT, so
//	    its completion tells every byte it put in the socket, and no byte
//	    of flight reaches the peer before the completion that counts it.
//	    (Without it, the kernel may hand a send that keeps finding no
//	    room to a worker thread, where it blocks, delivering bytes long
//	    before it completes, and holding that thread while the peer does
//	    not read.) A send that finds no room completes with EAGAIN and
//	    sets wantRoom; tx stays true, flight waits. A multishot poll for
//	    room (its own user_data, uringStreamRoomBit) is in the kernel
//	    while roomArmed, at most one at a time: a report with POLLOUT,
//	    POLLERR or POLLHUP sends the rest (and cancels the poll, if it
//	    goes on; a new EAGAIN arms a new one once it is over); a report
//	    of a half-close alone (POLLRDHUP, which the kernel adds to every
//	    poll and reports at every look once the peer has shut its
//	    sending side) is ignored, and the poll waits on for the next
//	    wake-up. A single-shot poll would complete at once, again and
//	    again, in that state. (A socket whose error queue the caller
//	    fills, with SO_TIMESTAMPING say, reports POLLERR at every look:
//	    with no room, each Select then tries one send. Stream sockets
//	    here do not ask for that queue.) Close ends a sending side that
//	    still holds bytes with ECANCELED: they are dropped, and a later
//	    Write fails rather than reach the socket behind them.
//	S7. A receive never brings much more than the Stream may hold: it is
//	    armed with a cap of room() bytes (uringStreamHold less what is
//	    held), after which the kernel ends it. The kernel fills a whole
//	    buffer before it looks at the cap, so held stays below
//	    uringStreamHold plus one buffer. The pause's cancel alone does
//	    not bound it: the kernel runs a multishot receive's work on the
//	    polling thread, and a writer on another CPU that keeps the socket
//	    full keeps that work going, megabytes of it, before the thread
//	    gets to the cancel (TestConnBackPressure saw 8 MiB). Kernels
//	    before 6.17 have no cap and refuse a capped receive with EINVAL;
//	    the selector then arms without it (uringCapMissing), and there
//	    the bound rests on the cancel.
type uringStream struct {
	s     *uringSelector
	id    uint32 // key in uringSelector.streams; user_data of its requests
	fd    int    // the caller's descriptor: the table's key
	slot  uint32 // in uringFiles: what the requests name
	slotd bool   // slot cleared

	// Guarded by uringSelector.mu (S1).
	entry  *uringEntry
	rx     bool // S3
	capped bool // S7: the receive in the kernel was armed with a cap
	paused bool // the receive was cancelled: held reached uringStreamHold
	// pausedHint mirrors paused for Read, which looks without the
	// selector's lock. A Read that misses a pause that has just begun is
	// followed by recvDoneLocked's own look at low: after the hint is
	// set, at the last completion of the receive (a cancelled one, or
	// one that reached its cap).
	pausedHint atomic.Bool
	starved    bool // the receive ended for want of buffers (ENOBUFS)
	unarmed    bool // S3: in the selector's unarmed list
	tx         bool // S4
	wantRoom   bool // S6: a send found no room; flight waits for the room poll
	roomArmed  bool // S6: the room poll is in the kernel
	deleted    bool

	mu        sync.Mutex
	chunks    []uringChunk // unread from chunks[head]
	head      int
	held      int
	spill     []byte // bytes after the chunks, in the heap (past the bound, or the selector closed)
	eof       bool
	rerr      unix.Errno
	out       []byte // queued, not yet handed to the kernel
	flight    []byte // S4
	fbase     []byte // the whole buffer flight is the unsent rest of
	spare     []byte // an emptied buffer, for out next
	werr      unix.Errno
	closedSel bool
	shutWr    bool // CloseWrite: shut down once the queue has gone
	// wantFlushed: Flushed found bytes queued; the send that empties the
	// queue makes Writable due whatever the quiet (sentLocked).
	wantFlushed bool
	rxOver      bool // deleted and no receive in the kernel: Read falls back
	txOver      bool // deleted: Write falls back once nothing is queued
}

// uringChunk is the unread part [off, end) of buffer id.
type uringChunk struct {
	id       uint16
	off, end uint16
}

// uringStreamSend bounds the bytes a Stream queues (out and flight
// together); Write returns EAGAIN past it.
const uringStreamSend = 64 << 10

// Read copies what the Stream received (S2) and gives the emptied
// buffers back to the kernel. When nothing is there it looks at the ring
// once (uringSelector.look) before it says EAGAIN.
func (st *uringStream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := st.read(p)
	if err == unix.EAGAIN {
		st.s.look()
		n, err = st.read(p)
	}
	return n, err
}

func (st *uringStream) read(p []byte) (int, error) {
	var ids [64]uint16
	nids := 0
	st.mu.Lock()
	n := 0
	bufs := st.s.bufs
	for n < len(p) && st.head < len(st.chunks) && nids < len(ids) {
		c := &st.chunks[st.head]
		m := copy(p[n:], bufs.buf(c.id)[c.off:c.end])
		n += m
		c.off += uint16(m)
		if c.off == c.end {
			ids[nids] = c.id
			nids++
			st.head++
		}
	}
	if st.head == len(st.chunks) {
		st.chunks, st.head = st.chunks[:0], 0 // the array is reused
		if n < len(p) && len(st.spill) > 0 {
			m := copy(p[n:], st.spill)
			st.spill = st.spill[m:]
			n += m
			if len(st.spill) == 0 {
				st.spill = nil
			}
		}
	}
	st.held -= n
	var err error
	switch {
	case n > 0:
	case st.rerr != 0:
		err, st.rerr, st.eof = st.rerr, 0, true // reported once, then the end
	case st.eof:
	case st.rxOver:
		// Deleted and its receive over: the descriptor is the caller's
		// again, read it directly.
		st.mu.Unlock()
		return ignoringEINTRn(func() (int, error) { return unix.Read(st.fd, p) })
	default:
		err = unix.EAGAIN
	}
	low := st.held <= uringStreamHold/2
	st.mu.Unlock()
	if nids > 0 {
		bufs.put(ids[:nids]...)
		st.s.buffersBack()
	}
	if low && st.pausedHint.Load() {
		st.s.resumeIfPaused(st)
	}
	return n, err
}

// Write queues what fits of p and starts a send if none is in flight.
// When not all of it fits it looks at the ring once (uringSelector.look),
// which may complete sends, and queues what fits then.
func (st *uringStream) Write(p []byte) (int, error) {
	n, err := st.write(p)
	if err == unix.EAGAIN {
		st.s.look()
		var m int
		m, err = st.write(p[n:])
		n += m
	}
	return n, err
}

func (st *uringStream) write(p []byte) (int, error) {
	st.mu.Lock()
	if st.shutWr {
		st.mu.Unlock()
		return 0, unix.EPIPE
	}
	if st.werr != 0 {
		err := st.werr
		st.mu.Unlock()
		return 0, err
	}
	if st.txOver && len(st.out) == 0 && len(st.flight) == 0 {
		// Deleted, or its selector closed, and nothing of it is queued or
		// in flight: the caller's descriptor takes the bytes directly.
		st.mu.Unlock()
		return ignoringEINTRn(func() (int, error) { return unix.Write(st.fd, p) })
	}
	if st.closedSel {
		st.mu.Unlock()
		return 0, unix.EPIPE
	}
	room := uringStreamSend - len(st.out) - len(st.flight)
	m := min(room, len(p))
	st.out = append(st.out, p[:m]...)
	st.mu.Unlock()
	if m > 0 {
		st.s.startSend(st)
	}
	if m < len(p) {
		return m, unix.EAGAIN
	}
	return m, nil
}

// CloseWrite implements Stream: at once when nothing is queued or in
// flight, else when the last send completes (sentLocked).
func (st *uringStream) CloseWrite() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.shutWr {
		return nil
	}
	st.shutWr = true
	if len(st.out) == 0 && len(st.flight) == 0 {
		return unix.Shutdown(st.fd, unix.SHUT_WR)
	}
	return nil
}

// Buffered implements Stream.
func (st *uringStream) Buffered() (unread, unsent int) {
	st.s.look()
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.held, len(st.out) + len(st.flight)
}

// Flushed implements Stream. Its caller holds no selector lock; the
// request for the Writable is read by sentLocked under mu.
func (st *uringStream) Flushed() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.out) == 0 && len(st.flight) == 0 {
		return true
	}
	st.wantFlushed = true
	return false
}

// ignoringEINTRn retries f while it fails with EINTR, and makes a failed
// call's count 0.
func ignoringEINTRn(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// condLocked is what the Stream holds now, as readiness bits. Called with
// mu held.
func (st *uringStream) condLocked() uint32 {
	var r uint32
	if st.held > 0 || st.eof || st.rerr != 0 {
		r |= Readable
	}
	if st.eof {
		r |= Hup
	}
	if st.rerr != 0 || st.werr != 0 {
		r |= Error
	}
	if st.werr != 0 || len(st.out)+len(st.flight) < uringStreamSend {
		r |= Writable
	}
	return r
}

// received applies one completion of the Stream's receive: res bytes in
// buffer id (when hasBuf), the end (0) or an error. It reports whether
// the receive should pause (held reached uringStreamHold).
func (st *uringStream) received(res int32, id uint16, hasBuf bool) (pause bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case res > 0 && hasBuf && (len(st.spill) > 0 || st.held+int(res) > uringStreamHold ||
		int(st.s.bufs.lent.Load()) >= st.s.bufs.count/2):
		// Past its bound (the kernel received more before the pause's
		// cancel reached it), or half the buffers every stream shares
		// are held by streams whose readers have not read them: the
		// bytes go to the heap and the buffer back to the ring at once,
		// so that readers who do not read (paused, slow) never keep the
		// ring from the others. Once spilling, everything spills, to
		// keep the order.
		st.spill = append(st.spill, st.s.bufs.buf(id)[:res]...)
		st.held += int(res)
		st.s.bufs.put(id)
		st.s.bufs.lent.Add(1) // put counted a buffer no chunk held
	case res > 0 && hasBuf:
		if st.head > 0 && len(st.chunks) == cap(st.chunks) {
			// Move the unread ones to the front rather than grow.
			k := copy(st.chunks, st.chunks[st.head:])
			st.chunks, st.head = st.chunks[:k], 0
		}
		st.chunks = append(st.chunks, uringChunk{id: id, end: uint16(res)})
		st.held += int(res)
		st.s.bufs.lent.Add(1)
	case res == 0:
		st.eof = true
	case res == -int32(unix.ENOBUFS), res == -int32(unix.ECANCELED):
	default:
		if !st.eof {
			st.rerr = unix.Errno(-res)
		}
	}
	return st.held >= uringStreamHold
}

// room is the cap of a receive armed now (S7): what the Stream may still
// hold. A receive is armed only below the hold (a paused one is not, and
// a pause ends at half of it), so room is positive; the floor of 1 only
// keeps a zero, which would mean no cap, out of the SQE.
func (st *uringStream) room() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return max(uringStreamHold-st.held, 1)
}

// setPaused sets paused and its hint. Called with uringSelector.mu held.
func (st *uringStream) setPaused(p bool) {
	st.paused = p
	st.pausedHint.Store(p)
}

// low reports whether a paused receive may go on: Read brought what the
// Stream holds down to half its hold.
func (st *uringStream) low() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.held <= uringStreamHold/2
}

// spillLocked copies the unread bytes out of the selector's buffers,
// which are about to be unmapped, and gives the buffers up. Called with
// mu held.
func (st *uringStream) spillLocked() {
	var kept []byte
	for _, c := range st.chunks[st.head:] {
		kept = append(kept, st.s.bufs.buf(c.id)[c.off:c.end]...)
	}
	st.spill = append(kept, st.spill...) // the chunks are older
	st.s.bufs.lent.Add(-int32(len(st.chunks) - st.head))
	st.chunks, st.head = nil, 0
}
