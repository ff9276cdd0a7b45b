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

// conder is a descriptor kind's model of its registered end: the kernel
// conditions that are there for sure, and those that may be.
type conder interface{ cond() (sure, maybe kflags) }

// conds gives a descriptor kind, by embedding, the parts of its impl that
// follow from its cond, the same for every kind.
type conds struct{ c conder }

func (c conds) kernel() kflags { s, _ := c.c.cond(); return s }

func (c conds) ready(interest poll.Ready) (poll.Ready, poll.Ready) {
	s, m := c.c.cond()
	return fdReady(s, m, interest)
}

func (c conds) filtered(interest, quiet poll.Ready) bool {
	_, m := c.c.cond()
	return fdFiltered(m, interest, quiet)
}

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

// drawWrite writes a drawn 1 to 64 bytes to fd and logs it under who.
func (w *world) drawWrite(t *rapid.T, s *src, fd int, who string) (n, m int, err error) {
	n = rapid.IntRange(1, 64).Draw(t, "bytes")
	m, err = unix.Write(fd, payload[:n])
	w.logf("%s: %s writes %d bytes = %d, %v", s.label, who, n, m, err)
	return n, m, err
}

// drawRead reads a drawn 1 to 64 bytes from fd and logs it.
func (w *world) drawRead(t *rapid.T, s *src, fd int) (k, m int, err error) {
	k = rapid.IntRange(1, 64).Draw(t, "bytes")
	var buf [64]byte
	m, err = unix.Read(fd, buf[:k])
	w.logf("%s: read %d = %d, %v", s.label, k, m, err)
	return k, m, err
}

// socketPair returns a non-blocking, close-on-exec unix stream socket pair;
// the caller closes both ends.
func socketPair(t interface{ Fatalf(string, ...any) }) [2]int {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	return [2]int(fds)
}

func closeAll(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
}
