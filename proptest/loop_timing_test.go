//go:build linux

package proptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/netloop"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// TestConnDeadlineTiming: a Conn with a drawn ReadTimeout, IdleTimeout or
// both, over unix or TCP, on one or two workers, whose peer sends and
// which writes (by Async) at drawn moments, is closed by the deadline that
// passes first: never before it, and at most one wheel tick, the Loop's
// measured lateness and an allowance for the iteration that acts on the
// expiry after it; with ErrReadTimeout no earlier than ReadTimeout after
// its last input, with ErrIdleTimeout no earlier than IdleTimeout after its
// last input or output. The moments are measured on the monotonic clock:
// the last input lies between the peer's write and the Data call that was
// handed it, the last output between the Async function that wrote it and
// the peer's read of it. The Loop's lateness is measured by an AfterFunc
// that runs every tick meanwhile.
func TestConnDeadlineTiming(t *testing.T) {
	forBackends(t, func(t *testing.T, b string) {
		checkFraction(t, connTimingDiv, func(t *rapid.T) { connDeadlineTiming(t, b) })
	})
}

// connTimingDiv divides rapid's checks for TestConnDeadlineTiming: each
// check waits for its deadlines, a few hundredths of a second.
const connTimingDiv = 2

// timedConn is the Conn's handler and the record of its moments.
type timedConn struct {
	mu      sync.Mutex
	dataAt  map[byte]time.Time // when Data was handed each byte the peer sent
	wroteAt map[byte]time.Time // when each Async function wrote its byte
	closed  chan closedAt
}

type closedAt struct {
	at  time.Time
	err error
}

func (h *timedConn) Data(c *netloop.Conn, in []byte) int {
	now := time.Now()
	h.mu.Lock()
	for _, b := range in {
		h.dataAt[b] = now
	}
	h.mu.Unlock()
	return len(in)
}

func (h *timedConn) Closed(c *netloop.Conn, err error) { h.closed <- closedAt{time.Now(), err} }

// timedPair connects a Conn's Stream to a blocking peer, over unix or TCP.
func timedPair(t *rapid.T, transport string) (netloop.Stream, net.Conn) {
	if transport == "unix" {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("socketpair: %v", err)
		}
		s, err := socket.AdoptUnixConn(fds[0])
		if err != nil {
			t.Fatalf("AdoptUnixConn: %v", err)
		}
		f := os.NewFile(uintptr(fds[1]), "peer")
		defer f.Close()
		peer, err := net.FileConn(f)
		if err != nil {
			t.Fatalf("FileConn: %v", err)
		}
		return s, peer
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	acc, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	defer acc.Close()
	f, err := acc.(*net.TCPConn).File()
	if err != nil {
		t.Fatalf("File: %v", err)
	}
	defer f.Close()
	s, err := socket.FileTCPConn(f)
	if err != nil {
		t.Fatalf("FileTCPConn: %v", err)
	}
	return s, peer
}

// timingStep is one drawn moment of activity.
type timingStep struct {
	pause      time.Duration
	send, echo bool // the peer sends a byte; the Conn writes one
}

func connDeadlineTiming(t *rapid.T, backend string) {
	totals.checks.Add(1)
	tick := rapid.SampledFrom([]time.Duration{time.Millisecond, 2 * time.Millisecond}).Draw(t, "wheel tick")
	ms := func(label string) time.Duration {
		return time.Duration(rapid.SampledFrom([]int{0, 10, 17, 25, 40}).Draw(t, label)) * time.Millisecond
	}
	readTimeout, idleTimeout := ms("ReadTimeout ms (0 none)"), ms("IdleTimeout ms (0 none)")
	if readTimeout == 0 && idleTimeout == 0 {
		readTimeout = 10 * time.Millisecond
	}
	transport := rapid.SampledFrom([]string{"unix", "tcp"}).Draw(t, "transport")
	workers := rapid.IntRange(1, 2).Draw(t, "workers")
	steps := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) timingStep {
		return timingStep{
			pause: time.Duration(rapid.IntRange(0, 30).Draw(t, "pause ms")) * time.Millisecond,
			send:  rapid.Bool().Draw(t, "the peer sends"),
			echo:  rapid.Bool().Draw(t, "the Conn writes"),
		}
	}), 0, 4).Draw(t, "steps")

	l, err := eventloop.New(eventloop.Config{Poll: poll.Config{Backend: backend, WheelTick: tick}, Workers: workers})
	if err != nil {
		t.Fatalf("eventloop.New: %v", err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background(), nil) }()
	defer func() { l.Shutdown(); <-done }()

	s, peer := timedPair(t, transport)
	defer peer.Close()
	recvAt := map[byte]time.Time{} // when the peer read each byte the Conn wrote
	reading := make(chan struct{})
	go func() { // the peer reads all it is sent, noting when
		defer close(reading)
		buf := make([]byte, 64)
		for {
			n, err := peer.Read(buf)
			now := time.Now()
			for _, b := range buf[:n] {
				recvAt[b] = now
			}
			if err != nil {
				return
			}
		}
	}()
	pr := startProbes(t, l, tick)
	h := &timedConn{dataAt: map[byte]time.Time{}, wroteAt: map[byte]time.Time{}, closed: make(chan closedAt, 1)}
	added0 := time.Now()
	c, err := netloop.Add(l, s, h, netloop.Config{ReadTimeout: readTimeout, IdleTimeout: idleTimeout})
	if err != nil {
		t.Fatalf("netloop.Add: %v", err)
	}
	added1 := time.Now()
	sentAt := map[byte]time.Time{}
	for i, st := range steps {
		time.Sleep(st.pause) // the peer's pace, not synchronisation
		b := byte(i)
		if st.send {
			sentAt[b] = time.Now()
			_, _ = peer.Write([]byte{b}) // fails once the Conn is closed
		}
		if st.echo {
			_ = c.Async(func(c *netloop.Conn) {
				now := time.Now()
				if _, err := c.Write([]byte{b}); err == nil {
					h.mu.Lock()
					h.wroteAt[b] = now
					h.mu.Unlock()
				}
			})
		}
	}
	var got closedAt
	select {
	case got = <-h.closed:
	case <-time.After(10 * wakeBound):
		t.Fatalf("the Conn (ReadTimeout %v, IdleTimeout %v) was not closed %v after its last step", readTimeout, idleTimeout, 10*wakeBound)
	}
	_ = peer.Close()
	<-reading
	probes := pr.stop()

	// The last input and output, each between two measured moments.
	h.mu.Lock()
	readLo, readHi := added0, added1
	for b, at := range h.dataAt {
		readLo, readHi = later(readLo, sentAt[b]), later(readHi, at)
	}
	activeLo, activeHi := readLo, readHi
	for b, at := range h.wroteAt {
		r, ok := recvAt[b]
		if !ok {
			r = got.at
		}
		activeLo, activeHi = later(activeLo, at), later(activeHi, r)
	}
	h.mu.Unlock()
	// The first deadline is no later than dueHi. (No earlier than the
	// lower bounds either: each close is checked against its own below.)
	dueHi := got.at.Add(time.Hour)
	if readTimeout > 0 {
		dueHi = earlier(dueHi, readHi.Add(readTimeout))
	}
	if idleTimeout > 0 {
		dueHi = earlier(dueHi, activeHi.Add(idleTimeout))
	}
	lateness := pr.lateness(probes, dueHi.Add(-2*tick), got.at)
	// The iteration after the one whose timer ran, in which the Conn's
	// call closes it: microseconds, unless the Loop is held up then for
	// longer than a tick, which a probe due meanwhile shows.
	allowance := tick + 2*time.Millisecond
	what := fmt.Sprintf("a Conn with ReadTimeout %v and IdleTimeout %v (%s, %d workers, wheel tick %v), steps %+v, closed with %v",
		readTimeout, idleTimeout, transport, workers, tick, steps, got.err)
	switch {
	case errors.Is(got.err, netloop.ErrReadTimeout) && readTimeout > 0:
		if early := readLo.Add(readTimeout).Sub(got.at); early > 0 {
			t.Fatalf("%s %v before ReadTimeout after its last input", what, early)
		}
	case errors.Is(got.err, netloop.ErrIdleTimeout) && idleTimeout > 0:
		if early := activeLo.Add(idleTimeout).Sub(got.at); early > 0 {
			t.Fatalf("%s %v before IdleTimeout after its last input or output", what, early)
		}
	default:
		t.Fatalf("%s", what)
	}
	if late := got.at.Sub(dueHi); late > tick+lateness+allowance {
		t.Fatalf("%s %v after its first deadline: more than a tick, the Loop's lateness then (%v) and %v for the iteration",
			what, late, lateness, allowance)
	}
	totals.rounds.Add(1)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// probes is an AfterFunc that runs every tick on the Loop and notes how
// late it ran: the Loop's scheduling delay at that moment.
type probes struct {
	mu    sync.Mutex
	runs  []probeRun
	off   bool
	ended chan struct{}
}

type probeRun struct{ due, ran time.Time }

func startProbes(t *rapid.T, l *eventloop.Loop, tick time.Duration) *probes {
	p := &probes{ended: make(chan struct{})}
	var next func(due time.Time) func(*eventloop.Loop)
	next = func(due time.Time) func(*eventloop.Loop) {
		return func(l *eventloop.Loop) {
			now := time.Now()
			p.mu.Lock()
			p.runs = append(p.runs, probeRun{due, now})
			off := p.off
			p.mu.Unlock()
			if off {
				close(p.ended)
				return
			}
			if _, err := l.AfterFunc(tick, next(now.Add(tick))); err != nil {
				close(p.ended)
			}
		}
	}
	if _, err := l.AfterFunc(tick, next(time.Now().Add(tick))); err != nil {
		t.Fatalf("AfterFunc: %v", err)
	}
	return p
}

// stop ends the probes once the next has run, and returns their runs.
func (p *probes) stop() []probeRun {
	p.mu.Lock()
	p.off = true
	p.mu.Unlock()
	<-p.ended
	return p.runs
}

// lateness is how late the Loop was, by the probes due by to that ran
// after from: the two largest delays added, as the close waits for two
// wake-ups (the timer's, then the Conn's call that it triggers) and each
// may be held up. A delay longer than a tick makes a probe late by as much.
func (p *probes) lateness(runs []probeRun, from, to time.Time) time.Duration {
	var first, second time.Duration
	for _, r := range runs {
		if !r.ran.Before(from) && !r.due.After(to) {
			switch late := r.ran.Sub(r.due); {
			case late > first:
				first, second = late, first
			case late > second:
				second = late
			}
		}
	}
	return first + second
}
