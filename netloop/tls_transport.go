package netloop

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/poll"
)

// tlsTransport is the net.Conn a Conn's tls.Conn reads and writes. It is
// not the socket: the Loop moves the bytes between it and the socket, so
// that crypto/tls, which reads and writes as if blocking, never blocks
// the Loop.
//
// Two phases, told apart by handshaking (under mu):
//
//   - The handshake: a goroutine of the Loop's handshake pool
//     (tls_handshake.go) owns the tls.Conn. Read waits until the Loop has
//     fed ciphertext into in (or the end of input, or close); Write
//     appends to out and triggers the Conn, whose call writes out to the
//     socket. A server Conn on one of package socket's sockets (direct)
//     first tries to write the flight to the socket itself, when nothing
//     is pending before it: the flight then leaves as soon as crypto/tls
//     has made it, rather than when the Loop's goroutine next runs, which
//     on a busy process can be after every other handshake's computation
//     (a full Write needs no trigger either). In the same way its Read,
//     when in is empty, first reads the socket itself: the client's
//     Finished, which follows the server's flight, needs no pass of the
//     Loop to reach crypto/tls. Only when the socket has nothing does it
//     wait for the Loop's feed, which the next edge brings. (The
//     ClientHello is the Loop's to read: a server's handshake starts only
//     once the Loop holds it whole, tls_hello.go.)
//   - Established: only the Conn's calls use the tls.Conn. Read takes
//     what is left in in, then reads the socket itself, without blocking:
//     a socket with nothing to read (or known drained) gives
//     errTLSWouldBlock, a net.Error whose Temporary is true, which
//     crypto/tls's record reader (readRecordOrCCS) returns without
//     latching it as the connection's error, keeping the partial record
//     for the next Read. Write appends to out, which the same call writes
//     to the socket (Conn.tlsWrite).
//
// Invariants:
//  1. in[inAt:], out[outAt:], inErr, closed, handshaking, feedLimit and
//     hsDone/hsErr (tlsConn) are guarded by mu. The goroutine touches nothing else of
//     the Conn: l and tok are fixed before it starts.
//  2. stalled is set by the Loop, under mu, when in holds feedLimit
//     bytes; Read clears it under mu when it takes some, and then triggers
//     the Conn, so a feed stopped by a full buffer always resumes.
//  3. Once handshaking is false it stays false, and the goroutine no
//     longer uses the tls.Conn: from then on the Conn's calls alone do.
//  4. direct is fixed before the goroutine starts. The goroutine writes
//     to it only under mu, while handshaking and not closed; the Loop
//     writes the socket during the handshake only in flushOut, under mu;
//     and the Conn closes its socket only after Close has set closed. So
//     the socket's writes never interleave, and none comes after its
//     close. socket's sockets may be written from any goroutine.
//  5. Reads of a direct socket during the handshake obey the same rule:
//     the goroutine reads it only under mu, while handshaking, not
//     closed, with no error recorded and in empty; the Loop reads it
//     only in feedFrom, under mu, appending what it read to in before
//     it lets mu go. So bytes reach crypto/tls in the socket's order:
//     what the Loop read is in in, which the goroutine empties before
//     it reads the socket again. readDirect tells the Conn's next call
//     that input came (for its read clocks, which only its calls touch).
type tlsTransport struct {
	c      *Conn // the socket and its read state, for the established phase (the Conn's calls only)
	l      *eventloop.Loop
	tok    poll.Token
	direct Stream // invariant 4: the socket a server's handshake writes itself, or nil

	mu          sync.Mutex
	in          []byte // ciphertext fed by the Loop, in[inAt:] not yet read
	inAt        int
	out         []byte // ciphertext written by crypto/tls, out[outAt:] not yet on the socket
	outAt       int
	inErr       error // the socket's end of input or read error, after in
	closed      bool  // the Conn was removed
	handshaking bool
	feedLimit   int           // what in may hold: helloFeedLimit until a server's handshake runs, then tlsFeedLimit
	wake        chan struct{} // cap 1: in grew, inErr or closed was set
	stalled     atomic.Bool   // invariant 2
	readDirect  atomic.Bool   // invariant 5: the goroutine read the socket since the Conn's call last looked
}

// tlsFeedLimit bounds the ciphertext the Loop holds for a handshake that
// has not read it yet (a peer cannot make it buffer more); crypto/tls
// reads a handshake message of up to 64 KiB, so this never stalls one.
const tlsFeedLimit = 128 << 10

// errTLSWouldBlock is what the established transport's Read returns when
// the socket has nothing more now.
var errTLSWouldBlock error = tlsWouldBlock{}

// tlsWouldBlock is a net.Error with Temporary true: crypto/tls returns it
// from Read and does not latch it (see tlsTransport).
type tlsWouldBlock struct{}

func (tlsWouldBlock) Error() string   { return "netloop: tls: no input now" }
func (tlsWouldBlock) Timeout() bool   { return true }
func (tlsWouldBlock) Temporary() bool { return true }
func (tlsWouldBlock) Unwrap() error   { return unix.EAGAIN }

var _ net.Conn = (*tlsTransport)(nil)

// Read is crypto/tls's read of ciphertext (see tlsTransport).
func (tr *tlsTransport) Read(p []byte) (int, error) {
	tr.mu.Lock()
	for {
		if tr.inAt < len(tr.in) {
			n := copy(p, tr.in[tr.inAt:])
			tr.inAt += n
			if tr.inAt == len(tr.in) {
				tr.in, tr.inAt = tr.in[:0], 0
				if cap(tr.in) > tlsFeedLimit {
					tr.in = nil
				}
			}
			resume := tr.stalled.Swap(false)
			tr.mu.Unlock()
			if resume {
				_ = tr.l.Trigger(tr.tok) // fails only once the Conn is removed
			}
			return n, nil
		}
		if tr.closed {
			tr.mu.Unlock()
			return 0, net.ErrClosed
		}
		if tr.inErr != nil {
			err := tr.inErr
			tr.mu.Unlock()
			return 0, err
		}
		if !tr.handshaking {
			tr.mu.Unlock()
			return tr.c.tlsReadSocket(p)
		}
		if tr.direct != nil { // invariant 5
			n, err := tr.direct.Read(p)
			switch {
			case n > 0: // with an error too: the next Read meets it again
				tr.readDirect.Store(true)
				tr.mu.Unlock()
				return n, nil
			case err == nil:
				tr.mu.Unlock()
				return 0, nil
			case !isWouldBlock(err):
				tr.inErr = err // the end of input or an error, for every later Read
				tr.mu.Unlock()
				return 0, err
			}
		}
		tr.mu.Unlock()
		<-tr.wake
		tr.mu.Lock()
	}
}

// Write is crypto/tls's write of ciphertext: it is queued, never refused
// (the Conn bounds what it encrypts at a time, see Conn.tlsWrite).
func (tr *tlsTransport) Write(p []byte) (int, error) {
	all := len(p)
	tr.mu.Lock()
	if tr.closed {
		tr.mu.Unlock()
		return 0, net.ErrClosed
	}
	if tr.direct != nil && tr.handshaking && tr.outAt == len(tr.out) {
		n, _ := tr.direct.Write(p) // an error or a full socket: the rest waits in out for the Loop, which meets the error again
		if n == len(p) {
			tr.mu.Unlock()
			return n, nil
		}
		p = p[max(n, 0):]
	}
	tr.out = append(tr.out, p...)
	trigger := tr.handshaking
	tr.mu.Unlock()
	if trigger {
		_ = tr.l.Trigger(tr.tok) // the Conn's call writes it; fails only once removed
	}
	return all, nil
}

// feedFrom is the Loop's read of the socket s during the handshake: under
// mu (invariant 5), it reads into b, as much as the transport has room
// for, and appends what it read to in. asked is how much it asked for,
// zero when the transport is full: it is then marked stalled (invariant
// 2) and s is not read.
func (tr *tlsTransport) feedFrom(s Stream, b []byte) (n, asked int, err error) {
	tr.mu.Lock()
	room := tr.feedLimit - (len(tr.in) - tr.inAt)
	if room <= 0 {
		tr.stalled.Store(true)
		tr.mu.Unlock()
		return 0, 0, nil
	}
	if tr.closed {
		tr.mu.Unlock()
		return 0, 0, net.ErrClosed
	}
	b = b[:min(len(b), room)]
	n, err = s.Read(b)
	if n > 0 {
		tr.in = append(tr.in, b[:n]...)
	}
	tr.mu.Unlock()
	if n > 0 {
		tr.signal()
	}
	return n, len(b), err
}

// helloReady reports whether in holds enough for a server's handshake to
// begin (tls_hello.go).
func (tr *tlsTransport) helloReady() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return helloReady(tr.in[tr.inAt:])
}

// noteDirectReads reports whether the handshake's goroutine has read the
// socket since the last call, and forgets it (invariant 5).
func (tr *tlsTransport) noteDirectReads() bool {
	return tr.readDirect.Load() && tr.readDirect.Swap(false)
}

// end records the socket's end of input or read error for the reader.
func (tr *tlsTransport) end(err error) {
	tr.mu.Lock()
	if tr.inErr == nil {
		tr.inErr = err
	}
	tr.mu.Unlock()
	tr.signal()
}

// signal wakes a Read waiting in the handshake.
func (tr *tlsTransport) signal() {
	select {
	case tr.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Close is the Conn's removal (crypto/tls's own Close is never called):
// a waiting handshake's Read returns net.ErrClosed.
func (tr *tlsTransport) Close() error {
	tr.mu.Lock()
	tr.closed = true
	tr.in, tr.out, tr.inAt, tr.outAt = nil, nil, 0, 0
	tr.mu.Unlock()
	tr.signal()
	return nil
}

// dropHandshakeBuffers lets the handshake's buffers go, if empty: an
// idle Conn keeps none, and traffic grows its own.
func (tr *tlsTransport) dropHandshakeBuffers() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.inAt == len(tr.in) {
		tr.in, tr.inAt = nil, 0
	}
	if tr.outAt == len(tr.out) {
		tr.out, tr.outAt = nil, 0
	}
	tr.wake = nil // no handshake waits any more (invariant 3)
}

// pendingOut is the ciphertext not yet written to the socket.
func (tr *tlsTransport) pendingOut() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.out) - tr.outAt
}

// flushOut writes the pending ciphertext to s, in one write. It returns
// ErrWouldBlock (socket's) when some is left, or the write's error.
func (tr *tlsTransport) flushOut(s Stream) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.outAt == len(tr.out) {
		return nil
	}
	n, err := s.Write(tr.out[tr.outAt:])
	tr.outAt += n
	if tr.outAt == len(tr.out) {
		tr.out, tr.outAt = tr.out[:0], 0
		if cap(tr.out) > 2*tlsWriteChunk {
			tr.out = nil // a burst's buffer goes back to the GC
		}
		return nil
	}
	if err == nil {
		err = errTLSWouldBlock
	}
	return err
}

// LocalAddr is the socket's, if it has one.
func (tr *tlsTransport) LocalAddr() net.Addr {
	if a, ok := tr.c.s.(interface{ LocalAddr() net.Addr }); ok {
		return a.LocalAddr()
	}
	return nil
}

// RemoteAddr is the socket's, if it has one.
func (tr *tlsTransport) RemoteAddr() net.Addr {
	if a, ok := tr.c.s.(interface{ RemoteAddr() net.Addr }); ok {
		return a.RemoteAddr()
	}
	return nil
}

// SetDeadline and its kin do nothing: the Conn's own timeouts
// (HandshakeTimeout, ReadTimeout, ...) bound the waits. crypto/tls sets
// a write deadline around close_notify, which cannot block here anyway.
func (tr *tlsTransport) SetDeadline(time.Time) error { return nil }

// SetReadDeadline does nothing (see SetDeadline).
func (tr *tlsTransport) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline does nothing (see SetDeadline).
func (tr *tlsTransport) SetWriteDeadline(time.Time) error { return nil }
