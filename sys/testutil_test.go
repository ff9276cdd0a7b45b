//go:build unix

package sys

// Helpers for this package's tests: every selector this build has, real
// descriptors (pipes, socket pairs), and waits for an event with a
// deadline, never time.Sleep.

import (
	"runtime"
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
		// epoll's other ways to wait (WaitLook, the default, is "epoll").
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

type selectResult struct {
	evs   []Event
	woken bool
	err   error
}

// readablePipe returns a pipe with one byte in it.
func readablePipe(t *testing.T) *fdPair {
	p := newPipe(t)
	writeByte(t, p.b)
	return p
}

// requireQuiet asserts that a Select of d reports nothing and waits d out;
// it returns the selector's Waits counter from before, for a bound on how
// often the Select woke inside.
func requireQuiet(t *testing.T, s Selector, d time.Duration, msg string) (waits uint64) {
	t.Helper()
	waits = s.Counters().Waits
	start := time.Now()
	require.Empty(t, selectEvents(t, s, 4, d), msg)
	require.GreaterOrEqual(t, time.Since(start), d)
	return waits
}

// blockedSelect runs one Select with no timeout in a goroutine and returns
// once it is blocked in the kernel.
func blockedSelect(t *testing.T, s Selector) <-chan selectResult {
	started, done := selectAsync(s)
	<-started
	waitBlocked(t, s)
	return done
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

func fdReadable(t *testing.T, fd int) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	require.NoError(t, err)
	return n == 1 && fds[0].Revents&unix.POLLIN != 0
}
