//go:build unix

package sys

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A selector under test: every backend this build has and, on Linux, the
// poll backend once more with the pipe waker that other unixes use.
type selectorCase struct {
	name string
	open func() (Selector, error)
}

func selectorCases() []selectorCase {
	var cases []selectorCase
	for _, name := range Backends() {
		cases = append(cases, selectorCase{name, func() (Selector, error) { return New(name) }})
	}
	if runtime.GOOS == "linux" {
		// epoll's other ways to wait (WaitPoll, the default, is "epoll").
		for _, mode := range []string{WaitBlock, WaitPark} {
			cases = append(cases, selectorCase{"epoll-" + mode, func() (Selector, error) {
				return NewWithOptions(BackendEpoll, Options{Wait: mode})
			}})
		}
		cases = append(cases, selectorCase{"poll-pipe", func() (Selector, error) {
			w, err := newPipeWaker()
			if err != nil {
				return nil, err
			}
			return newPollSelector(w), nil
		}})
	}
	return cases
}

func forEachSelector(t *testing.T, fn func(t *testing.T, s Selector)) {
	for _, c := range selectorCases() {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.open()
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			fn(t, s)
		})
	}
}

// fdPair is two connected descriptors, closed at the end of the test unless
// the test closed them first (closing twice could hit a reused number).
type fdPair struct{ a, b int }

func (p *fdPair) closeA(t *testing.T) {
	t.Helper()
	require.NoError(t, unix.Close(p.a))
	p.a = -1
}

func (p *fdPair) closeB(t *testing.T) {
	t.Helper()
	require.NoError(t, unix.Close(p.b))
	p.b = -1
}

func (p *fdPair) cleanup() {
	if p.a >= 0 {
		_ = unix.Close(p.a)
	}
	if p.b >= 0 {
		_ = unix.Close(p.b)
	}
}

// newPipe returns a pipe: a is the read end, b the write end.
func newPipe(t *testing.T) *fdPair {
	t.Helper()
	fds, err := nonblockingPipe() // pipe2(O_NONBLOCK|O_CLOEXEC) where there is one
	require.NoError(t, err)
	p := &fdPair{a: fds[0], b: fds[1]}
	t.Cleanup(p.cleanup)
	return p
}

func newSocketpair(t *testing.T) *fdPair {
	t.Helper()
	// Not every unix has SOCK_NONBLOCK|SOCK_CLOEXEC; tests do not exec.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	p := &fdPair{a: fds[0], b: fds[1]}
	t.Cleanup(p.cleanup)
	require.NoError(t, unix.SetNonblock(p.a, true))
	require.NoError(t, unix.SetNonblock(p.b, true))
	return p
}

func writeByte(t *testing.T, fd int) {
	t.Helper()
	n, err := unix.Write(fd, []byte{'x'})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func drainFd(t *testing.T, fd int) {
	t.Helper()
	var buf [512]byte
	for {
		_, err := unix.Read(fd, buf[:])
		if err == unix.EAGAIN {
			return
		}
		require.NoError(t, err)
	}
}

// fillFd writes to fd until it would block: it is then not writable until
// its peer reads.
func fillFd(t *testing.T, fd int) {
	t.Helper()
	buf := make([]byte, 64<<10)
	for {
		_, err := unix.Write(fd, buf)
		if err == unix.EAGAIN {
			return
		}
		require.NoError(t, err)
	}
}

// selectEvents runs one Select and returns the events filled.
func selectEvents(t *testing.T, s Selector, size int, timeout time.Duration) []Event {
	t.Helper()
	buf := make([]Event, size)
	n, _, err := s.Select(buf, timeout)
	require.NoError(t, err)
	require.LessOrEqual(t, n, size)
	return buf[:n]
}

func eventFor(evs []Event, key uint64) (Event, bool) {
	for _, ev := range evs {
		if ev.Key == key {
			return ev, true
		}
	}
	return Event{}, false
}

// waitEvent selects, up to a generous limit, until key is reported.
func waitEvent(t *testing.T, s Selector, key uint64) Event {
	t.Helper()
	limit := time.Now().Add(5 * time.Second)
	for time.Now().Before(limit) {
		if ev, ok := eventFor(selectEvents(t, s, 16, time.Until(limit)), key); ok {
			return ev
		}
	}
	t.Fatalf("key %d not reported within 5s", key)
	return Event{}
}

// quiet is how long a Select waits to show that nothing is reported.
const quiet = 20 * time.Millisecond

func requireNoEvent(t *testing.T, s Selector, key uint64) {
	t.Helper()
	evs := selectEvents(t, s, 16, quiet)
	_, ok := eventFor(evs, key)
	require.False(t, ok, "key %d reported: %v", key, evs)
}

func TestSelectorLevelReportsWhileReady(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		writeByte(t, p.b)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		for i := 0; i < 3; i++ {
			ev := waitEvent(t, s, 1)
			require.NotZero(t, ev.Ready&Readable)
		}
		drainFd(t, p.a)
		requireNoEvent(t, s, 1)
	})
}

func TestSelectorEdge(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Edge))
		requireNoEvent(t, s, 1)
		for round := 0; round < 3; round++ {
			writeByte(t, p.b)
			ev := waitEvent(t, s, 1)
			require.NotZero(t, ev.Ready&Readable)
			requireNoEvent(t, s, 1) // not drained, but no new data
			// The documented rule: read until EAGAIN, then re-arm.
			drainFd(t, p.a)
			require.NoError(t, s.Drained(p.a, Readable))
			requireNoEvent(t, s, 1)
		}
	})
}

func TestSelectorOneshot(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		writeByte(t, p.b)
		require.NoError(t, s.Add(p.a, 1, Readable, Level|Oneshot))
		require.NotZero(t, waitEvent(t, s, 1).Ready&Readable)
		requireNoEvent(t, s, 1)
		writeByte(t, p.b)
		requireNoEvent(t, s, 1) // disarmed, even with new data

		require.NoError(t, s.Modify(p.a, 1, Readable, Level|Oneshot))
		require.NotZero(t, waitEvent(t, s, 1).Ready&Readable)
		requireNoEvent(t, s, 1)

		// Modify can also turn it into a plain level registration.
		require.NoError(t, s.Modify(p.a, 2, Readable, Level))
		waitEvent(t, s, 2)
		waitEvent(t, s, 2)
	})
}

// A oneshot registration for Readable|Writable on a descriptor that is both
// makes one event, which carries both (kqueue merges its two filters), and
// then nothing until Modify: no Select reports the key twice, and no
// second event comes from the other filter.
func TestSelectorOneshotBothFiltersOneEvent(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		writeByte(t, p.b) // a is readable and writable
		require.NoError(t, s.Add(p.a, 1, Readable|Writable, Edge|Oneshot))
		limit := time.Now().Add(5 * time.Second)
		var got []Event
		for len(got) == 0 && time.Now().Before(limit) {
			for _, ev := range selectEvents(t, s, 16, time.Until(limit)) {
				if ev.Key == 1 {
					got = append(got, ev)
				}
			}
		}
		require.Len(t, got, 1, "one key, one event")
		require.Equal(t, Readable|Writable, got[0].Ready&(Readable|Writable))
		requireNoEvent(t, s, 1)
		writeByte(t, p.b)
		requireNoEvent(t, s, 1)
	})
}

// A oneshot registration makes one event whichever condition comes first,
// and the other one, arriving later, makes none until Modify: on kqueue
// that is a filter of its own, still in the kernel after the first fired,
// which the selector itself must keep from reporting.
func TestSelectorOneshotLaterCondition(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		fillFd(t, p.a)    // a is not writable
		writeByte(t, p.b) // a is readable
		require.NoError(t, s.Add(p.a, 1, Readable|Writable, Level|Oneshot))
		ev := waitEvent(t, s, 1)
		require.Equal(t, Readable, ev.Ready&(Readable|Writable))
		drainFd(t, p.b) // now a is writable as well
		requireNoEvent(t, s, 1)
		requireNoEvent(t, s, 1)

		require.NoError(t, s.Modify(p.a, 1, Readable|Writable, Level|Oneshot))
		ev = waitEvent(t, s, 1)
		require.Equal(t, Readable|Writable, ev.Ready&(Readable|Writable))
		requireNoEvent(t, s, 1)
	})
}

func TestSelectorReadWriteMerge(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		writeByte(t, p.b)
		require.NoError(t, s.Add(p.a, 9, Readable|Writable, Level))
		// Level: both stay ready, so some Select reports both at once, and
		// none reports the key twice.
		limit := time.Now().Add(5 * time.Second)
		for time.Now().Before(limit) {
			evs := selectEvents(t, s, 16, time.Until(limit))
			require.LessOrEqual(t, len(evs), 1)
			if len(evs) == 1 && evs[0].Ready&(Readable|Writable) == Readable|Writable {
				return
			}
		}
		t.Fatal("readable and writable never reported together")
	})
}

func TestSelectorDelete(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		writeByte(t, p.b)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		waitEvent(t, s, 1)
		require.NoError(t, s.Delete(p.a))
		requireNoEvent(t, s, 1)
		require.Error(t, s.Delete(p.a))
		require.Error(t, s.Modify(p.a, 1, Readable, Level))
		// It can be added again.
		require.NoError(t, s.Add(p.a, 2, Readable, Level))
		waitEvent(t, s, 2)
	})
}

func TestSelectorModifyChangesKeyAndInterest(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		writeByte(t, p.b)
		// A pipe's read end is never writable.
		require.NoError(t, s.Add(p.a, 1, Writable, Level))
		requireNoEvent(t, s, 1)
		require.NoError(t, s.Modify(p.a, 2, Readable, Level))
		waitEvent(t, s, 2)
		evs := selectEvents(t, s, 16, quiet)
		_, ok := eventFor(evs, 1)
		require.False(t, ok, "old key reported after Modify: %v", evs)
	})
}

func TestSelectorInterestWritableOnly(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newSocketpair(t)
		writeByte(t, p.b) // a is readable too
		require.NoError(t, s.Add(p.a, 1, Writable, Level))
		for i := 0; i < 3; i++ {
			ev := waitEvent(t, s, 1)
			require.NotZero(t, ev.Ready&Writable)
			require.Zero(t, ev.Ready&Readable, "Readable reported without interest")
		}
	})
}

func TestSelectorHup(t *testing.T) {
	t.Run("socketpair", func(t *testing.T) {
		forEachSelector(t, func(t *testing.T, s Selector) {
			p := newSocketpair(t)
			require.NoError(t, s.Add(p.a, 1, Readable, Level))
			requireNoEvent(t, s, 1)
			p.closeB(t)
			require.NotZero(t, waitEvent(t, s, 1).Ready&Hup)
		})
	})
	t.Run("pipe", func(t *testing.T) {
		forEachSelector(t, func(t *testing.T, s Selector) {
			p := newPipe(t)
			require.NoError(t, s.Add(p.a, 1, Readable, Edge))
			requireNoEvent(t, s, 1)
			p.closeB(t)
			require.NotZero(t, waitEvent(t, s, 1).Ready&Hup)
		})
	})
}

type selectResult struct {
	evs   []Event
	woken bool
	err   error
}

// selectAsync runs one Select with no timeout in a goroutine. started is
// closed just before the call.
func selectAsync(s Selector) (started <-chan struct{}, done <-chan selectResult) {
	st := make(chan struct{})
	d := make(chan selectResult, 1)
	go func() {
		buf := make([]Event, 16)
		close(st)
		n, woken, err := s.Select(buf, -1)
		d <- selectResult{evs: buf[:n], woken: woken, err: err}
	}()
	return st, d
}

// await receives the result or, after a generous limit, wakes the Select
// so the goroutine ends, and fails.
func await(t *testing.T, s Selector, done <-chan selectResult) selectResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(5 * time.Second):
		require.NoError(t, s.Wake())
		<-done
		t.Fatal("blocked Select did not return within 5s")
		return selectResult{}
	}
}

// waitBlocked waits until a poll selector has marked itself blocked, so
// that the next registration change goes down the nudge path.
func waitBlocked(t *testing.T, s Selector) {
	t.Helper()
	ps, ok := s.(*pollSelector)
	if !ok {
		return
	}
	limit := time.Now().Add(5 * time.Second)
	for {
		ps.mu.Lock()
		blocked := ps.blocked
		ps.mu.Unlock()
		if blocked {
			return
		}
		require.True(t, time.Now().Before(limit), "Select never blocked")
		runtime.Gosched()
	}
}

func TestSelectorWakeInterruptsBlockedSelect(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		started, done := selectAsync(s)
		<-started
		require.NoError(t, s.Wake())
		r := await(t, s, done)
		require.NoError(t, r.err)
		require.True(t, r.woken)
		require.Empty(t, r.evs, "a wake-up is not an event")
	})
}

func TestSelectorWakeCoalesces(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		before := s.Counters().WakerWrites
		for i := 0; i < 1000; i++ {
			require.NoError(t, s.Wake())
		}
		require.Equal(t, before+1, s.Counters().WakerWrites)

		buf := make([]Event, 4)
		n, woken, err := s.Select(buf, 0)
		require.NoError(t, err)
		require.True(t, woken)
		require.Zero(t, n)
		require.Equal(t, before+1, s.Counters().WakerWrites)

		// Consumed: the next Select is not woken, and the next Wake writes.
		n, woken, err = s.Select(buf, 0)
		require.NoError(t, err)
		require.False(t, woken)
		require.Zero(t, n)
		require.NoError(t, s.Wake())
		require.Equal(t, before+2, s.Counters().WakerWrites)
		_, woken, err = s.Select(buf, 0)
		require.NoError(t, err)
		require.True(t, woken)
	})
}

// Ping-pong: every Wake is observed by exactly one Select, also while other
// goroutines change registrations (which nudge the poll backend).
func TestSelectorNoLostWakeups(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		const rounds = 300
		p := newPipe(t) // never written: its registration never fires
		stop := make(chan struct{})
		regErr := make(chan error, 1)
		go func() {
			added := false
			for {
				select {
				case <-stop:
					regErr <- nil
					return
				default:
				}
				var err error
				if added {
					err = s.Delete(p.a)
				} else {
					err = s.Add(p.a, 5, Readable, Level)
				}
				if err != nil {
					regErr <- err
					return
				}
				added = !added
				runtime.Gosched()
			}
		}()
		defer func() {
			close(stop)
			require.NoError(t, <-regErr)
		}()

		woke := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			buf := make([]Event, 4)
			for i := 0; i < rounds; {
				n, woken, err := s.Select(buf, -1)
				if err != nil {
					errc <- err
					return
				}
				if n != 0 {
					errc <- errors.New("event from a descriptor that was never ready")
					return
				}
				if woken {
					i++
					woke <- struct{}{}
				}
			}
			errc <- nil
		}()
		for i := 0; i < rounds; i++ {
			require.NoError(t, s.Wake())
			select {
			case <-woke:
			case err := <-errc:
				t.Fatalf("round %d: %v", i, err)
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: wake-up lost", i)
			}
		}
		require.NoError(t, <-errc)
	})
}

func TestSelectorSubMillisecondTimeout(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		const d = 200 * time.Microsecond
		buf := make([]Event, 4)
		start := time.Now()
		n, woken, err := s.Select(buf, d)
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), d)
		require.Zero(t, n)
		require.False(t, woken)

		// No busy loop: each call really waits.
		start = time.Now()
		for i := 0; i < 100; i++ {
			_, _, err := s.Select(buf, d)
			require.NoError(t, err)
		}
		require.GreaterOrEqual(t, time.Since(start), 100*d)
	})
}

func TestSelectorZeroTimeoutDoesNotBlock(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		done := make(chan error, 1)
		go func() {
			_, _, err := s.Select(make([]Event, 4), 0)
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			require.NoError(t, s.Wake())
			t.Fatal("Select with zero timeout blocked")
		}
	})
}

func TestSelectorEmptyBuffer(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		_, _, err := s.Select(nil, 0)
		require.ErrorIs(t, err, ErrEmptyBuffer)
		_, _, err = s.Select([]Event{}, -1)
		require.ErrorIs(t, err, ErrEmptyBuffer)
	})
}

func TestSelectorFairness(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		const fds, room = 10, 3
		for i := 0; i < fds; i++ {
			p := newPipe(t)
			writeByte(t, p.b)
			require.NoError(t, s.Add(p.a, uint64(100+i), Readable, Level))
		}
		seen := map[uint64]int{}
		for i := 0; i < 4; i++ { // 4*3 slots for 10 ready descriptors
			evs := selectEvents(t, s, room, time.Second)
			require.Len(t, evs, room, "never more than fits, never fewer than ready")
			for _, ev := range evs {
				seen[ev.Key]++
			}
		}
		require.Len(t, seen, fds, "a ready descriptor starved: %v", seen)
	})
}

func TestSelectorAddWhileBlocked(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		writeByte(t, p.b)
		started, done := selectAsync(s)
		<-started
		waitBlocked(t, s)
		require.NoError(t, s.Add(p.a, 3, Readable, Level))
		r := await(t, s, done)
		require.NoError(t, r.err)
		require.False(t, r.woken, "a registration change is not a Wake")
		ev, ok := eventFor(r.evs, 3)
		require.True(t, ok, "the blocked Select did not report the new descriptor: %v", r.evs)
		require.NotZero(t, ev.Ready&Readable)

		// The gate is not left pending: a real Wake still writes and wakes.
		_ = s.Delete(p.a)
		require.NoError(t, s.Wake())
		_, woken, err := s.Select(make([]Event, 4), time.Second)
		require.NoError(t, err)
		require.True(t, woken)
	})
}

func TestSelectorModifyWhileBlocked(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		writeByte(t, p.b)
		require.NoError(t, s.Add(p.a, 1, Writable, Level)) // never fires
		started, done := selectAsync(s)
		<-started
		waitBlocked(t, s)
		require.NoError(t, s.Modify(p.a, 2, Readable, Level))
		r := await(t, s, done)
		require.NoError(t, r.err)
		require.False(t, r.woken)
		_, ok := eventFor(r.evs, 2)
		require.True(t, ok, "Modify did not reach the blocked Select: %v", r.evs)
	})
}

func TestSelectorWakeWhileRegistering(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		for i := 0; i < 50; i++ {
			started, done := selectAsync(s)
			<-started
			waitBlocked(t, s)
			require.NoError(t, s.Add(p.a, 1, Readable, Level))
			require.NoError(t, s.Wake())
			require.NoError(t, s.Delete(p.a))
			r := await(t, s, done)
			require.NoError(t, r.err)
			require.True(t, r.woken, "round %d: Wake lost behind a registration nudge", i)
		}
	})
}

func TestSelectorClosedWithoutDelete(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		writeByte(t, p.b)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		waitEvent(t, s, 1)
		fd := p.a
		p.closeA(t)

		waits := s.Counters().Waits
		start := time.Now()
		evs := selectEvents(t, s, 4, quiet)
		require.Empty(t, evs)
		require.GreaterOrEqual(t, time.Since(start), quiet)
		// One poll sees POLLNVAL and disarms, one waits out the rest: no
		// spinning.
		require.LessOrEqual(t, s.Counters().Waits-waits, uint64(3))
		// Its entry goes with Delete, which answers as epoll does for a
		// descriptor that is no longer open.
		require.ErrorIs(t, s.Delete(fd), unix.EBADF)
	})
}

func TestSelectorRegistrationErrors(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		p := newPipe(t)
		require.NoError(t, s.Add(p.a, 1, Readable, Level))
		require.Error(t, s.Add(p.a, 1, Readable, Level), "added twice")
		require.Error(t, s.Modify(p.b, 1, Readable, Level), "not registered")
		require.Error(t, s.Delete(p.b), "not registered")
		const badFd = 1 << 22 // above any descriptor limit
		require.Error(t, s.Add(badFd, 1, Readable, Level))
		require.Error(t, s.Add(-1, 1, Readable, Level))
	})
}

func TestSelectorCloseTwiceAndWakeAfterClose(t *testing.T) {
	for _, c := range selectorCases() {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.open()
			require.NoError(t, err)
			require.NoError(t, s.Close())
			require.NoError(t, s.Close())
			require.NoError(t, s.Wake())
		})
	}
}

func TestNewUnknownBackend(t *testing.T) {
	_, err := New("no-such-backend")
	require.ErrorIs(t, err, ErrUnknownBackend)
	_, err = NewWithOptions("", Options{Wait: "spin"})
	require.ErrorIs(t, err, ErrUnknownWait)
	require.Contains(t, Backends(), BackendPoll)
	require.Equal(t, defaultBackend, Backends()[0])
}

func fdReadable(t *testing.T, fd int) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	require.NoError(t, err)
	return n == 1 && fds[0].Revents&unix.POLLIN != 0
}

func TestFdWakers(t *testing.T) {
	open := map[string]func() (fdWaker, error){
		"default": newFdWaker,
		"pipe": func() (fdWaker, error) {
			p, err := newPipeWaker()
			if err != nil {
				return nil, err
			}
			return p, nil
		},
	}
	for name, newWaker := range open {
		t.Run(name, func(t *testing.T) {
			w, err := newWaker()
			require.NoError(t, err)
			defer func() { require.NoError(t, w.close()) }()
			require.False(t, fdReadable(t, w.fd()))
			require.NoError(t, w.wake())
			require.NoError(t, w.wake())
			require.True(t, fdReadable(t, w.fd()))
			w.drain()
			require.False(t, fdReadable(t, w.fd()))
			w.drain() // draining an empty waker does not block
			require.False(t, fdReadable(t, w.fd()))

			flags, err := unix.FcntlInt(uintptr(w.fd()), unix.F_GETFD, 0)
			require.NoError(t, err)
			require.NotZero(t, flags&unix.FD_CLOEXEC)
		})
	}
}

// A pipe full of pending wake-ups (EAGAIN) is success, and one drain
// empties it.
func TestPipeWakerFull(t *testing.T) {
	w, err := newPipeWaker()
	require.NoError(t, err)
	defer func() { require.NoError(t, w.close()) }()
	const capacity = 1 << 16 // the largest default pipe buffer among unixes
	for i := 0; i < capacity+10; i++ {
		require.NoError(t, w.wake())
	}
	w.drain()
	require.False(t, fdReadable(t, w.fd()))
}

// A storm of Wake calls racing a Select loop must never leave the waker
// stuck: afterwards one more Wake still ends a blocked Select. (A waker
// drained after its gate was reset could swallow a write that the gate
// still counts as pending, and every later Wake would coalesce into it.)
func TestSelectorWakeStorm(t *testing.T) {
	forEachSelector(t, func(t *testing.T, s Selector) {
		var stop atomic.Bool
		exited := make(chan error, 1)
		go func() {
			buf := make([]Event, 4)
			for !stop.Load() {
				if _, _, err := s.Select(buf, -1); err != nil {
					exited <- err
					return
				}
			}
			exited <- nil
		}()
		p := newPipe(t)
		for i := 0; i < 20000; i++ {
			require.NoError(t, s.Wake())
			if i%64 == 0 {
				// Registration changes nudge the poll backend too.
				require.NoError(t, s.Add(p.a, 1, Readable, Level))
				require.NoError(t, s.Delete(p.a))
			}
		}
		stop.Store(true)
		require.NoError(t, s.Wake())
		select {
		case err := <-exited:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Wake after a storm did not end the blocked Select: wake-up lost")
		}
	})
}
