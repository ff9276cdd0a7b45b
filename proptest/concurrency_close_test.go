//go:build linux

package proptest

// Concurrency property: Poll.Close during activity.

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// TestConcurrentClose closes the Poll at a drawn moment while producers set
// readiness, a registrar registers and deregisters, and one or two
// consumers poll (blocked or not). Nothing may panic or hang: Close returns
// nil once and ErrClosed after; every Poll returns ErrClosed promptly; every
// call after Close fails with ErrClosed, SetReadiness of a bound
// Registration included.
func TestConcurrentClose(t *testing.T) {
	forEachBackend(t, closeDuringActivity)
}

func closeDuringActivity(t *rapid.T, be string) {
	p := drawPoll(t, be)
	nreg := rapid.IntRange(0, 4).Draw(t, "registrations")
	nsock := rapid.IntRange(0, 2).Draw(t, "sockets")
	consumers := rapid.IntRange(1, 2).Draw(t, "consumers")
	blocking := rapid.Bool().Draw(t, "consumers block forever")
	closeAfter := time.Duration(rapid.IntRange(0, 3000).Draw(t, "close after µs")) * time.Microsecond
	closers := rapid.IntRange(1, 2).Draw(t, "closers")
	var fails failures
	var sets []*poll.SetReadiness
	var regs []*poll.Registration
	for i := 0; i < nreg; i++ {
		r, s := poll.NewRegistration()
		defer r.Close()
		if err := p.Register(r, poll.Token(i+1), poll.Readable, drawOpts(t)); err != nil {
			t.Fatalf("Register: %v", err)
		}
		regs, sets = append(regs, r), append(sets, s)
	}
	var peers []int
	for i := 0; i < nsock; i++ {
		fds := socketPair(t)
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if err := p.Register(poll.Fd(fds[0]), poll.Token(100+i), poll.Readable, drawOpts(t)); err != nil {
			t.Fatalf("Register fd: %v", err)
		}
		peers = append(peers, fds[1])
	}
	var closed atomic.Bool
	ok := func(err error, what string) {
		if err != nil && !errors.Is(err, poll.ErrClosed) && !errors.Is(err, poll.ErrNotRegistered) {
			fails.add("%s: %v", what, err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, s := range sets {
		wg.Add(1)
		go func(s *poll.SetReadiness) {
			defer wg.Done()
			for i := 0; !stopped(stop); i++ {
				ok(s.SetReadiness(poll.Readable), "SetReadiness")
				if i%3 == 0 {
					ok(s.UnsetReadiness(poll.Readable), "UnsetReadiness")
				}
				if i%5 == 0 {
					ok(s.DelayReadiness(poll.Readable, time.Duration(i%3)*time.Millisecond), "DelayReadiness")
				}
				runtime.Gosched()
			}
		}(s)
	}
	for _, fd := range peers {
		wg.Add(1)
		go func(fd int) {
			defer wg.Done()
			for !stopped(stop) {
				_, _ = unix.Write(fd, []byte{1})
				time.Sleep(100 * time.Microsecond)
			}
		}(fd)
	}
	wg.Add(1)
	go func() { // registrar
		defer wg.Done()
		for i := 0; !stopped(stop); i++ {
			r, _ := poll.NewRegistration()
			ok(p.Register(r, poll.Token(1000+i), poll.Readable, poll.Edge), "Register")
			ok(p.Reregister(r, poll.Token(1000+i), poll.Writable, poll.Level), "Reregister")
			ok(p.Deregister(r), "Deregister")
			_ = r.Close()
			runtime.Gosched()
		}
	}()
	var cwg sync.WaitGroup
	for i := 0; i < consumers; i++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			ev := poll.NewEvents(4)
			timeout := time.Duration(-1)
			if !blocking {
				timeout = time.Millisecond
			}
			for {
				_, err := p.Poll(ev, timeout)
				if errors.Is(err, poll.ErrClosed) {
					if !closed.Load() {
						fails.add("Poll returned ErrClosed before Close was called")
					}
					return
				}
				if err != nil {
					fails.add("Poll: %v", err)
					return
				}
				totals.polls.Add(1)
			}
		}()
	}
	time.Sleep(closeAfter)
	var nils atomic.Int32
	var clwg sync.WaitGroup
	for i := 0; i < closers; i++ {
		clwg.Add(1)
		go func() {
			defer clwg.Done()
			closed.Store(true)
			switch err := p.Close(); {
			case err == nil:
				nils.Add(1)
			case !errors.Is(err, poll.ErrClosed):
				fails.add("Close: %v", err)
			}
		}()
	}
	if !waitGroupTimeout(&clwg, ackTimeout) {
		fails.add("Close did not return within %v", ackTimeout)
	}
	if !waitGroupTimeout(&cwg, ackTimeout) {
		fails.add("a consumer's Poll did not return ErrClosed within %v of Close", ackTimeout)
	}
	close(stop)
	if !waitGroupTimeout(&wg, ackTimeout) {
		fails.add("producers or registrar hung after Close")
	}
	if n := nils.Load(); n != 1 {
		fails.add("Close returned nil %d times, want once", n)
	}
	// Everything after Close fails cleanly.
	if _, err := p.Poll(poll.NewEvents(1), 0); !errors.Is(err, poll.ErrClosed) {
		fails.add("Poll after Close = %v", err)
	}
	r, s := poll.NewRegistration()
	if err := p.Register(r, 1, poll.Readable, poll.Level); !errors.Is(err, poll.ErrClosed) {
		fails.add("Register after Close = %v", err)
	}
	_ = s.SetReadiness(poll.Readable)
	_ = r.Close()
	for _, r := range regs {
		if err := p.Reregister(r, 1, poll.Readable, poll.Level); !errors.Is(err, poll.ErrClosed) {
			fails.add("Reregister after Close = %v", err)
		}
		if err := p.Deregister(r); !errors.Is(err, poll.ErrClosed) {
			fails.add("Deregister after Close = %v", err)
		}
	}
	for _, s := range sets {
		if err := s.DelayReadiness(poll.Writable, time.Millisecond); !errors.Is(err, poll.ErrClosed) {
			fails.add("DelayReadiness after Close = %v", err)
		}
		if err := s.SetReadiness(poll.Writable); !errors.Is(err, poll.ErrClosed) {
			fails.add("SetReadiness of a bound Registration after Close = %v, want ErrClosed", err)
		}
	}
	totals.rounds.Add(1)
	fails.report(t)
}
