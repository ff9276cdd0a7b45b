//go:build linux

package proptest

// Descriptor kind "sock": one end of a unix stream socket pair, the test
// holding the peer (the model of its kernel conditions is model_fd.go's).

import (
	"fmt"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

type sockKind struct{}

func (sockKind) name() string { return "sock" }

func (sockKind) open(t *rapid.T, w *world) impl {
	fds := socketPair(t)
	im := &sockImpl{a: fds[0], b: fds[1]}
	im.conds = conds{im}
	return im
}

func (sockKind) ops() []op {
	return []op{
		{"peer writes", sockPeerWrite},
		{"read", sockRead},
		{"drain", sockDrain},
		{"write to peer", sockOwnWrite},
		{"peer drains", sockPeerRead},
		{"peer shuts down writing", sockPeerShut(unix.SHUT_WR)},
		{"peer shuts down reading", sockPeerShut(unix.SHUT_RD)},
		{"peer closes", sockPeerClose},
		{"close", sockCloseOp},
	}
}

type sockImpl struct {
	conds       // kernel, ready and filtered, from cond
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
	n, m, err := w.drawWrite(t, s, im.b, "peer")
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
	k, m, err := w.drawRead(t, s, im.a)
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

// sockPeerShut is the op of a peer that shuts down one direction: how is
// unix.SHUT_WR or unix.SHUT_RD.
func sockPeerShut(how int) func(t *rapid.T, w *world, s *src) {
	name, shut := "SHUT_WR", func(im *sockImpl) { im.wrShut = true }
	if how == unix.SHUT_RD {
		name, shut = "SHUT_RD", func(im *sockImpl) { im.rdShut = true }
	}
	return func(t *rapid.T, w *world, s *src) {
		im := s.impl.(*sockImpl)
		if im.b < 0 {
			t.Skip("peer closed")
		}
		before, _ := im.cond()
		err := unix.Shutdown(im.b, how)
		w.logf("%s: peer shutdown(%s) = %v", s.label, name, err)
		w.expectErr(t, "shutdown", err, nil)
		shut(im)
		w.fdChanged(s, before)
	}
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

func (im *sockImpl) discard() { closeAll(im.a, im.b); im.a, im.b = -1, -1 }
