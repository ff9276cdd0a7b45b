//go:build linux

package proptest

// Descriptor kind "pipe": the read end of a pipe, the test holding the
// write end (the model of its kernel conditions is model_fd.go's).

import (
	"fmt"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

type pipeKind struct{}

func (pipeKind) name() string { return "pipe" }

func (pipeKind) open(t *rapid.T, w *world) impl {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatalf("pipe2: %v", err)
	}
	im := &pipeImpl{r: p[0], w: p[1]}
	im.conds = conds{im}
	return im
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
	conds     // kernel, ready and filtered, from cond
	r, w  int // r is registered; w is -1 once closed
	data  int
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
	n, m, err := w.drawWrite(t, s, im.w, "writer")
	if err != nil || m != n {
		w.fatalf(t, "pipe write: %d, %v", m, err)
	}
	im.data += n
	w.notify(s, poll.Readable) // every write is a new edge
}

func pipeRead(t *rapid.T, w *world, s *src) {
	im := s.impl.(*pipeImpl)
	k, m, err := w.drawRead(t, s, im.r)
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

func (im *pipeImpl) discard() { closeAll(im.r, im.w); im.r, im.w = -1, -1 }
