//go:build linux

package proptest

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// Descriptor kinds: one end of a unix stream socket pair ("sock"; the test
// holds the peer) and the read end of a pipe ("pipe"; the test holds the
// write end). The registered descriptor is a poll.Fd.
//
// Readiness is modelled as the kernel conditions of the registered end
// (the same ->poll() answer for epoll and poll(2) on Linux), filtered by
// what the selector asks for (EPOLLIN for Readable, EPOLLRDHUP for Readable
// or Hup, EPOLLOUT for Writable, EPOLLPRI for Priority; errors and
// hang-ups always) and then
// mapped as poll/fd.go documents: an error makes the source readable and
// writable, a hang-up readable.
//
// Edges (owed on a backend with a real edge mode): each write by the peer
// (the kernel wakes the reader on every write, even into a non-empty
// buffer), and each operation that makes a condition newly true (shutdown,
// close). Kernel wake-ups that bring nothing new (write space after the
// peer reads, a partial read of a pipe) may produce an event and need not.

func init() {
	registerKind(sockKind{})
	registerKind(pipeKind{})
}

// kflags are kernel readiness conditions.
type kflags uint8

const (
	kIN kflags = 1 << iota
	kOUT
	kRDHUP
	kHUP
	kERR
	kPRI
)

func (f kflags) String() string {
	var s string
	for i, n := range []string{"IN", "OUT", "RDHUP", "HUP", "ERR", "PRI"} {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if s == "" {
		return "-"
	}
	return s
}

// requested is what the selector asks the kernel for, given an interest.
func requested(interest poll.Ready) kflags {
	req := kERR | kHUP
	if interest&poll.Readable != 0 {
		req |= kIN
	}
	if interest&(poll.Readable|poll.Hup) != 0 {
		req |= kRDHUP // a peer's half-close is a hang-up to report
	}
	if interest&poll.Writable != 0 {
		req |= kOUT
	}
	if interest&poll.Priority != 0 {
		req |= kPRI
	}
	return req
}

func kReady(f kflags) poll.Ready {
	var r poll.Ready
	if f&kIN != 0 {
		r |= poll.Readable
	}
	if f&kOUT != 0 {
		r |= poll.Writable
	}
	if f&kERR != 0 {
		r |= poll.Error
	}
	if f&(kHUP|kRDHUP) != 0 {
		r |= poll.Hup
	}
	if f&kPRI != 0 {
		r |= poll.Priority
	}
	return r
}

// fdMask applies the documented mapping: an error makes a source readable
// and writable, a hang-up readable. Leniently (for what MAY be reported) a
// hang-up may also make it writable, as ready.go's documentation says.
func fdMask(r poll.Ready, lenient bool) poll.Ready {
	if r&poll.Error != 0 {
		r |= poll.Readable | poll.Writable
	}
	if r&poll.Hup != 0 {
		r |= poll.Readable
		if lenient {
			r |= poll.Writable
		}
	}
	return r
}

// fdReady turns kernel conditions (sure and maybe) into reported readiness.
func fdReady(sure, maybe kflags, interest poll.Ready) (poll.Ready, poll.Ready) {
	req := requested(interest)
	return fdMask(kReady(sure&req), false) & interest, fdMask(kReady(maybe&req), true) & interest
}

// fdImpl is implemented by the descriptor kinds: their registered end's
// kernel conditions now.
type fdImpl interface{ kernel() kflags }

// fdQuieted is what an emulated edge stops asking for once it reports an
// event: the conditions it asked for (interest less what was quiet already)
// that the kernel reported. Hang-ups and errors cannot be left out of a
// poll(2) set; those are the lasting conditions the model gives
// backend.lastingLatency instead.
func fdQuieted(k kflags, interest, quiet poll.Ready) poll.Ready {
	return kReady(k & requested(interest&^quiet) & (kIN | kOUT | kPRI))
}

// rearm is what a caller following the rule under poll.Edge does after a
// read that returned EAGAIN, or a short read (the socket or pipe was
// drained at that moment): it re-arms Readable, which ends its quiet.
func (w *world) rearm(t *rapid.T, s *src, fd int) {
	if s.registered && !w.closed {
		err := poll.Fd(fd).Drained(w.p, poll.Readable)
		w.logf("%s: Drained(Readable) = %v", s.label, err)
		w.expectErr(t, "Drained", err, nil)
	}
	if s.quiet&poll.Readable != 0 && s.armedNow() {
		// Re-armed while still readable (EOF after a short read): an
		// emulated edge reports it again, spuriously (rule 9).
		if sure, _ := s.impl.ready(s.interest); sure&poll.Readable != 0 {
			s.mayFire = true
		}
	}
	s.quiet &^= poll.Readable
}

// fdFiltered: the kernel may report something that Poll drops because,
// mapped strictly (fd.go's maskReady), none of it is in the interest. What
// an emulated edge keeps quiet is not asked for, so it is not there to
// keep the event.
func fdFiltered(maybe kflags, interest, quiet poll.Ready) bool {
	seen := maybe & requested(interest&^quiet)
	return seen != 0 && fdMask(kReady(seen), false)&interest == 0
}

// fdChanged notifies the model of a change of the kernel conditions (a
// shutdown or close by the peer): readiness the source reports that it did
// not report before is a new edge; anything else (a new kernel flag that
// maps to readiness already there, such as a full hang-up after a
// half-close) is a mere wake-up, which may or may not be reported.
func (w *world) fdChanged(s *src, before kflags) {
	if !s.armedNow() {
		return
	}
	// A descriptor whose only readiness the selector was watching was
	// lasting (hang-up, error; quiet conditions are not watched) may be
	// resting in the backend: the news, or a mere wake-up, may be late.
	const lasting = kERR | kHUP | kRDHUP
	resting := false
	if w.be.lastingLatency > 0 {
		seen := before & requested(s.interest&^s.quiet)
		resting = seen != 0 && seen&^lasting == 0
	}
	was, _ := fdReady(before, before, s.interest)
	is, _ := s.impl.ready(s.interest)
	fresh := is &^ was
	if fresh == 0 {
		w.jiggle(s)
	} else {
		w.notify(s, fresh)
	}
	if resting {
		until := time.Now().Add(w.be.lastingLatency)
		s.mayUntil = until
		if fresh != 0 {
			s.graceUntil = until
		}
	}
}

// fdRelease deregisters (if needed) and closes the descriptors.
func fdRelease(t *rapid.T, w *world, s *src, fds ...int) {
	if s.registered {
		err := w.p.Deregister(s.impl.evented())
		w.expectErr(t, "Deregister before close", err, nil)
		w.deregistered(s, "deregistered and closed")
	}
	for _, fd := range fds {
		if fd >= 0 {
			if err := unix.Close(fd); err != nil {
				t.Fatalf("close(%d): %v", fd, err)
			}
		}
	}
}

// readAll reads fd until EAGAIN or EOF and returns the bytes read and the
// errors seen (ECONNRESET is reported once and reading goes on).
func readAll(fd int) (n int, eof bool, reset bool, err error) {
	var buf [512]byte
	for {
		m, e := unix.Read(fd, buf[:])
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return n, false, reset, nil
		case e == unix.ECONNRESET:
			if reset {
				return n, false, reset, fmt.Errorf("ECONNRESET twice")
			}
			reset = true
			continue
		case e != nil:
			return n, false, reset, e
		case m == 0:
			return n, true, reset, nil
		}
		n += m
	}
}

var payload [512]byte

// ---- sock: one end of a unix stream socket pair

type sockKind struct{}

func (sockKind) name() string { return "sock" }

func (sockKind) open(t *rapid.T, w *world) impl {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	return &sockImpl{a: fds[0], b: fds[1]}
}

func (sockKind) ops() []op {
	return []op{
		{"peer writes", sockPeerWrite},
		{"read", sockRead},
		{"drain", sockDrain},
		{"write to peer", sockOwnWrite},
		{"peer drains", sockPeerRead},
		{"peer shuts down writing", sockPeerShutWr},
		{"peer shuts down reading", sockPeerShutRd},
		{"peer closes", sockPeerClose},
		{"close", sockCloseOp},
	}
}

type sockImpl struct {
	a, b    int // a is registered; b is the peer (-1 once closed)
	inA     int // bytes queued towards a
	inB     int // bytes queued towards b
	writesB int // writes a made that b has not read (bounded: a stays writable)
	wrShut  bool
	rdShut  bool
	err     bool // ECONNRESET pending on a (the peer closed with unread data)
}

func (im *sockImpl) evented() poll.Evented { return poll.Fd(im.a) }
func (im *sockImpl) isFd() bool            { return true }

func (im *sockImpl) cond() (sure, maybe kflags) {
	sure = kOUT // a's writes stay far below its send buffer
	if im.inA > 0 || im.wrShut {
		sure |= kIN
	}
	if im.wrShut {
		sure |= kRDHUP
	}
	if im.wrShut && im.rdShut {
		sure |= kHUP
	}
	if im.err {
		sure |= kERR
	}
	return sure, sure
}

func (im *sockImpl) kernel() kflags { s, _ := im.cond(); return s }

func (im *sockImpl) ready(interest poll.Ready) (poll.Ready, poll.Ready) {
	s, m := im.cond()
	return fdReady(s, m, interest)
}

func (im *sockImpl) filtered(interest, quiet poll.Ready) bool {
	_, m := im.cond()
	return fdFiltered(m, interest, quiet)
}

func (im *sockImpl) String() string {
	s, _ := im.cond()
	peer := "open"
	switch {
	case im.b < 0:
		peer = "closed"
	case im.wrShut && im.rdShut:
		peer = "shut down"
	case im.wrShut:
		peer = "shut down writing"
	case im.rdShut:
		peer = "shut down reading"
	}
	return fmt.Sprintf("fd %d, %d bytes in, %d out, peer %s; kernel %v", im.a, im.inA, im.inB, peer, s)
}

func sockPeerWrite(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	if im.b < 0 || im.inA > 4096 {
		t.Skip("peer closed or enough data")
	}
	n := rapid.IntRange(1, 64).Draw(t, "bytes")
	m, err := unix.Write(im.b, payload[:n])
	w.logf("%s: peer writes %d bytes = %d, %v", s.label, n, m, err)
	if im.wrShut {
		w.expectErr(t, "write after shutdown(SHUT_WR)", err, unix.EPIPE)
		return
	}
	if err != nil || m != n {
		w.fatalf(t, "peer write: %d, %v", m, err)
	}
	im.inA += n
	w.notify(s, poll.Readable) // every write is a new edge
}

func sockRead(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	k := rapid.IntRange(1, 64).Draw(t, "bytes")
	var buf [64]byte
	m, err := unix.Read(im.a, buf[:k])
	w.logf("%s: read %d = %d, %v", s.label, k, m, err)
	switch {
	case im.inA > 0:
		if err != nil || m != min(k, im.inA) {
			w.fatalf(t, "read: got %d, %v, want %d", m, err, min(k, im.inA))
		}
		im.inA -= m
		if m < k {
			w.rearm(t, s, im.a) // a short read: drained
		}
	case im.err && err == unix.ECONNRESET:
		im.err = false
	case im.err:
		w.fatalf(t, "read with a pending ECONNRESET: got %d, %v", m, err)
	case im.wrShut:
		if err != nil || m != 0 {
			w.fatalf(t, "read after the peer's shutdown: got %d, %v, want EOF", m, err)
		}
	default:
		w.expectErr(t, "read of an empty socket", err, unix.EAGAIN)
		w.rearm(t, s, im.a)
	}
}

func sockDrain(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	n, eof, reset, err := readAll(im.a)
	w.logf("%s: drain = %d bytes, eof %v, reset %v, %v", s.label, n, eof, reset, err)
	if err != nil || n != im.inA || eof != im.wrShut || reset != im.err {
		w.fatalf(t, "drain: %d bytes, eof %v, reset %v, %v; want %d bytes, eof %v, reset %v", n, eof, reset, err, im.inA, im.wrShut, im.err)
	}
	im.inA, im.err = 0, false
	if !eof {
		w.rearm(t, s, im.a) // readAll stopped at EAGAIN
	}
}

func sockOwnWrite(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	if im.writesB >= 8 {
		t.Skip("enough unread data at the peer")
	}
	n := rapid.IntRange(1, 512).Draw(t, "bytes")
	m, err := unix.Write(im.a, payload[:n])
	w.logf("%s: writes %d bytes to peer = %d, %v", s.label, n, m, err)
	if im.b < 0 || im.rdShut {
		w.expectErr(t, "write to a peer that closed or shut down reading", err, unix.EPIPE)
		return
	}
	if err != nil || m != n {
		w.fatalf(t, "write: %d, %v", m, err)
	}
	im.inB += n
	im.writesB++
}

func sockPeerRead(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	if im.b < 0 {
		t.Skip("peer closed")
	}
	n, _, _, err := readAll(im.b)
	w.logf("%s: peer drains = %d bytes, %v", s.label, n, err)
	if err != nil || n != im.inB {
		w.fatalf(t, "peer drain: %d, %v; want %d", n, err, im.inB)
	}
	if n > 0 {
		w.jiggle(s) // write space: a wake-up with nothing new
	}
	im.inB, im.writesB = 0, 0
}

func sockPeerShutWr(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	if im.b < 0 {
		t.Skip("peer closed")
	}
	before, _ := im.cond()
	err := unix.Shutdown(im.b, unix.SHUT_WR)
	w.logf("%s: peer shutdown(SHUT_WR) = %v", s.label, err)
	w.expectErr(t, "shutdown", err, nil)
	im.wrShut = true
	w.fdChanged(s, before)
}

func sockPeerShutRd(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	if im.b < 0 {
		t.Skip("peer closed")
	}
	before, _ := im.cond()
	err := unix.Shutdown(im.b, unix.SHUT_RD)
	w.logf("%s: peer shutdown(SHUT_RD) = %v", s.label, err)
	w.expectErr(t, "shutdown", err, nil)
	im.rdShut = true
	w.fdChanged(s, before)
}

func sockPeerClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*sockImpl)
	if im.b < 0 {
		t.Skip("peer closed")
	}
	before, _ := im.cond()
	err := unix.Close(im.b)
	w.logf("%s: peer closes = %v", s.label, err)
	w.expectErr(t, "close", err, nil)
	im.b = -1
	if im.inB > 0 {
		im.err = true
	}
	im.inB, im.writesB = 0, 0
	im.wrShut, im.rdShut = true, true
	w.fdChanged(s, before)
}

func sockCloseOp(t *rapid.T, w *world, s *src) {
	w.logf("%s: deregister and close", s.label)
	s.impl.release(t, w, s)
	s.gone = true
}

func (im *sockImpl) release(t *rapid.T, w *world, s *src) {
	fdRelease(t, w, s, im.a, im.b)
	im.a, im.b = -1, -1
}

// ---- pipe: the read end of a pipe

type pipeKind struct{}

func (pipeKind) name() string { return "pipe" }

func (pipeKind) open(t *rapid.T, w *world) impl {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	return &pipeImpl{r: p[0], w: p[1]}
}

func (pipeKind) ops() []op {
	return []op{
		{"writer writes", pipeWrite},
		{"read", pipeRead},
		{"drain", pipeDrain},
		{"writer closes", pipeCloseWriter},
		{"close", pipeCloseOp},
	}
}

type pipeImpl struct {
	r, w int // r is registered; w is -1 once closed
	data int
}

func (im *pipeImpl) evented() poll.Evented { return poll.Fd(im.r) }
func (im *pipeImpl) isFd() bool            { return true }

func (im *pipeImpl) cond() (sure, maybe kflags) {
	if im.data > 0 {
		sure |= kIN
	}
	if im.w < 0 {
		sure |= kHUP
	}
	return sure, sure
}

func (im *pipeImpl) kernel() kflags { s, _ := im.cond(); return s }

func (im *pipeImpl) ready(interest poll.Ready) (poll.Ready, poll.Ready) {
	s, m := im.cond()
	return fdReady(s, m, interest)
}

func (im *pipeImpl) filtered(interest, quiet poll.Ready) bool {
	_, m := im.cond()
	return fdFiltered(m, interest, quiet)
}

func (im *pipeImpl) String() string {
	s, _ := im.cond()
	wr := "open"
	if im.w < 0 {
		wr = "closed"
	}
	return fmt.Sprintf("fd %d, %d bytes, writer %s; kernel %v", im.r, im.data, wr, s)
}

func pipeWrite(t *rapid.T, w *world, s *src) {
	im := s.impl.(*pipeImpl)
	if im.w < 0 || im.data > 4096 {
		t.Skip("writer closed or enough data")
	}
	n := rapid.IntRange(1, 64).Draw(t, "bytes")
	m, err := unix.Write(im.w, payload[:n])
	w.logf("%s: writer writes %d bytes = %d, %v", s.label, n, m, err)
	if err != nil || m != n {
		w.fatalf(t, "pipe write: %d, %v", m, err)
	}
	im.data += n
	w.notify(s, poll.Readable) // every write is a new edge
}

func pipeRead(t *rapid.T, w *world, s *src) {
	im := s.impl.(*pipeImpl)
	k := rapid.IntRange(1, 64).Draw(t, "bytes")
	var buf [64]byte
	m, err := unix.Read(im.r, buf[:k])
	w.logf("%s: read %d = %d, %v", s.label, k, m, err)
	switch {
	case im.data > 0:
		if err != nil || m != min(k, im.data) {
			w.fatalf(t, "pipe read: got %d, %v, want %d", m, err, min(k, im.data))
		}
		im.data -= m
		if im.data > 0 {
			w.jiggle(s) // pipe_read wakes the next reader when data is left
		} else if m < k {
			w.rearm(t, s, im.r) // a short read: drained
		}
	case im.w < 0:
		if err != nil || m != 0 {
			w.fatalf(t, "pipe read after writer closed: %d, %v, want EOF", m, err)
		}
	default:
		w.expectErr(t, "read of an empty pipe", err, unix.EAGAIN)
		w.rearm(t, s, im.r)
	}
}

func pipeDrain(t *rapid.T, w *world, s *src) {
	im := s.impl.(*pipeImpl)
	n, eof, _, err := readAll(im.r)
	w.logf("%s: drain = %d bytes, eof %v, %v", s.label, n, eof, err)
	if err != nil || n != im.data || eof != (im.w < 0) {
		w.fatalf(t, "pipe drain: %d bytes, eof %v, %v; want %d, eof %v", n, eof, err, im.data, im.w < 0)
	}
	im.data = 0
	if !eof {
		w.rearm(t, s, im.r) // readAll stopped at EAGAIN
	}
}

func pipeCloseWriter(t *rapid.T, w *world, s *src) {
	im := s.impl.(*pipeImpl)
	if im.w < 0 {
		t.Skip("writer closed")
	}
	before, _ := im.cond()
	err := unix.Close(im.w)
	w.logf("%s: writer closes = %v", s.label, err)
	w.expectErr(t, "close", err, nil)
	im.w = -1
	w.fdChanged(s, before)
}

func pipeCloseOp(t *rapid.T, w *world, s *src) {
	w.logf("%s: deregister and close", s.label)
	s.impl.release(t, w, s)
	s.gone = true
}

func (im *pipeImpl) release(t *rapid.T, w *world, s *src) {
	fdRelease(t, w, s, im.r, im.w)
	im.r, im.w = -1, -1
}

func closeAll(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}

func (im *sockImpl) discard() { closeAll(im.a, im.b); im.a, im.b = -1, -1 }
func (im *pipeImpl) discard() { closeAll(im.r, im.w); im.r, im.w = -1, -1 }
