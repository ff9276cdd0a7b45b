package poll

// The one home of the helpers that more than one test file of package poll
// uses (a helper that serves a single file stays with it; helpers that tests
// of other packages share too are in internal/testsupport). Their names and
// signatures are stable: add new helpers rather than changing these.
//
// Conventions:
//   - Every descriptor a helper creates is closed by t.Cleanup, unless the
//     test closes it first with closeFd (never with unix.Close directly: the
//     cleanup would then close whatever reused the number).
//   - Every Poll a helper creates is closed by t.Cleanup. Polls are created
//     after the descriptors they watch, so (cleanups running last-in
//     first-out) a Poll is closed before its descriptors.
//   - Waiting is always for a condition with a deadline, never time.Sleep.
//     A short Poll timeout (noEventWait) is how a test asserts that nothing
//     is reported.

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/sys"
)

const (
	// noEventWait is the Poll timeout used to assert that nothing is
	// reported (testsupport.NoEventWait).
	noEventWait = testsupport.NoEventWait
	// eventWait is the deadline for something that must happen
	// (testsupport.EventWait).
	eventWait = testsupport.EventWait
)

// ---------------------------------------------------------------------------
// Backends and Polls

// backends returns the backend names this build has (sys.Backends()). It
// fails the test if there are none.
func backends(t testing.TB) []string {
	t.Helper()
	b := sys.Backends()
	require.NotEmpty(t, b, "sys.Backends() is empty")
	return b
}

// newPollFunc opens a Poll on one backend, closed at the test's cleanup.
type newPollFunc func(t testing.TB) *Poll

// forEachBackend runs fn as a subtest named after each backend in
// sys.Backends(). newPoll opens a Poll on that backend with
// NewWithConfig(Config{Backend: name}) and closes it at cleanup.
func forEachBackend(t *testing.T, fn func(t *testing.T, newPoll newPollFunc)) {
	t.Helper()
	for _, name := range backends(t) {
		t.Run(name, func(t *testing.T) {
			fn(t, func(t testing.TB) *Poll {
				t.Helper()
				return newPollBackend(t, name)
			})
		})
	}
}

// newPollBackend opens a Poll on the named backend and closes it at cleanup
// (a Close that the test already did is fine).
func newPollBackend(t testing.TB, backend string) *Poll {
	t.Helper()
	return newPollConfig(t, Config{Backend: backend})
}

// newPollConfig opens a Poll with c and closes it at cleanup.
func newPollConfig(t testing.TB, c Config) *Poll {
	t.Helper()
	p, err := NewWithConfig(c)
	require.NoError(t, err, "NewWithConfig(%+v)", c)
	if c.Backend != "" {
		require.Equal(t, c.Backend, p.Backend())
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("cleanup: Poll.Close: %v", err)
		}
	})
	return p
}

// ---------------------------------------------------------------------------
// Registrations

// newRegistered makes a Registration, registers it with p and closes it at
// cleanup.
func newRegistered(t testing.TB, p *Poll, tok Token, interest Ready, opts PollOpt) (*Registration, *SetReadiness) {
	t.Helper()
	r, s := newUnregistered(t)
	require.NoError(t, p.Register(r, tok, interest, opts), "Register(%d, %s, %s)", tok, interest, opts)
	return r, s
}

// newUnregistered makes a Registration closed at cleanup (a Close that the
// test already did is fine).
func newUnregistered(t testing.TB) (*Registration, *SetReadiness) {
	t.Helper()
	r, s := NewRegistration()
	t.Cleanup(func() {
		if err := r.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("cleanup: Registration.Close: %v", err)
		}
	})
	return r, s
}

// ---------------------------------------------------------------------------
// Descriptors

var ownedFds struct {
	sync.Mutex
	m map[int]testing.TB // descriptor -> test that owns it
}

// own records fd as owned by t and closes it at cleanup unless closeFd
// closed it first.
func own(t testing.TB, fd int) int {
	t.Helper()
	ownedFds.Lock()
	if ownedFds.m == nil {
		ownedFds.m = make(map[int]testing.TB)
	}
	ownedFds.m[fd] = t
	ownedFds.Unlock()
	t.Cleanup(func() {
		ownedFds.Lock()
		owner, ok := ownedFds.m[fd]
		if ok && owner == t {
			delete(ownedFds.m, fd)
		}
		ownedFds.Unlock()
		if ok && owner == t {
			_ = unix.Close(fd)
		}
	})
	return fd
}

// closeFd closes a descriptor made by one of these helpers now, and makes
// its cleanup a no-op. Use it (not unix.Close) to close a test descriptor
// early, for example to provoke a hang-up.
func closeFd(t testing.TB, fd int) {
	t.Helper()
	require.NoError(t, tryCloseFd(t, fd))
}

// tryCloseFd is closeFd returning its failure instead of failing the test,
// for use from goroutines other than the test's (t is only used to check
// ownership, never to fail).
func tryCloseFd(t testing.TB, fd int) error {
	ownedFds.Lock()
	owner, ok := ownedFds.m[fd]
	if ok && owner == t {
		delete(ownedFds.m, fd)
	}
	ownedFds.Unlock()
	if !ok || owner != t {
		return fmt.Errorf("closeFd(%d): not a descriptor of this test", fd)
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close(%d): %w", fd, err)
	}
	return nil
}

// socketPair returns a connected non-blocking, close-on-exec AF_UNIX
// SOCK_STREAM pair. Both ends start writable and not readable.
func socketPair(t testing.TB) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err, "socketpair")
	return nonblocking(t, own(t, fds[0])), nonblocking(t, own(t, fds[1]))
}

// pipe returns a non-blocking, close-on-exec pipe. The read end is never
// writable; the write end is never readable.
func pipe(t testing.TB) (r, w int) {
	t.Helper()
	var fds [2]int
	require.NoError(t, unix.Pipe(fds[:]), "pipe")
	return nonblocking(t, own(t, fds[0])), nonblocking(t, own(t, fds[1]))
}

// nonblocking makes fd non-blocking and close-on-exec, the portable way
// (SOCK_NONBLOCK, pipe2 and accept4 are not on every unix). Tests create
// descriptors before they start subprocesses, so the short window before
// FD_CLOEXEC is set does not matter here.
func nonblocking(t testing.TB, fd int) int {
	t.Helper()
	require.NoError(t, unix.SetNonblock(fd, true), "set non-blocking")
	unix.CloseOnExec(fd)
	return fd
}

// writeFd writes all of data to a non-blocking descriptor (it must have
// room).
func writeFd(t testing.TB, fd int, data []byte) {
	t.Helper()
	require.NoError(t, tryWrite(fd, data))
}

// tryWrite is writeFd returning its failure instead of failing the test;
// safe from any goroutine.
func tryWrite(fd int, data []byte) error {
	for {
		n, err := unix.Write(fd, data)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write(%d): %w", fd, err)
		}
		if n != len(data) {
			return fmt.Errorf("write(%d): short write %d of %d", fd, n, len(data))
		}
		return nil
	}
}

// drain reads a non-blocking descriptor until it would block (or hits end
// of file) and returns the number of bytes read. Afterwards the descriptor
// is no longer readable (unless it is at EOF or the peer writes again).
func drain(t testing.TB, fd int) int {
	t.Helper()
	n, err := tryDrain(fd)
	require.NoError(t, err)
	return n
}

// tryDrain is drain returning its failure instead of failing the test; safe
// from any goroutine.
func tryDrain(fd int) (int, error) {
	var buf [16 << 10]byte
	total := 0
	for {
		n, err := unix.Read(fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) || (err == nil && n == 0) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("read(%d): %w", fd, err)
		}
		total += n
	}
}

// fill writes to a non-blocking descriptor until it would block and returns
// the number of bytes written: afterwards it is not writable until the peer
// reads.
func fill(t testing.TB, fd int) int {
	t.Helper()
	n, err := tryFill(fd)
	require.NoError(t, err)
	return n
}

// tryFill is fill returning its failure instead of failing the test; safe
// from any goroutine.
func tryFill(fd int) (int, error) {
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := unix.Write(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("write(%d): %w", fd, err)
		}
		total += n
	}
}

// waitKernelReady waits, with poll(2) directly and not through a Poll, until
// the kernel reports fd ready for any of events (POLLIN, POLLOUT, ...) or
// for an error or hang-up. Tests use it to know that readiness produced
// asynchronously (TCP over loopback) has arrived before they act on it.
func waitKernelReady(t testing.TB, fd int, events int16) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd, 50)
		if err != nil && !errors.Is(err, unix.EINTR) {
			require.NoError(t, err, "poll(2)")
		}
		if n > 0 && pfd[0].Revents&(events|unix.POLLERR|unix.POLLHUP) != 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "fd %d: kernel never reported events %#x", fd, events)
	}
}

// tcpSocket returns a non-blocking, close-on-exec, unconnected IPv4 TCP
// socket.
func tcpSocket(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err, "socket")
	return nonblocking(t, own(t, fd))
}

// resetOnClose makes closing a connected TCP socket send a RST instead of a
// FIN (SO_LINGER with a zero timeout): the peer then sees an error
// (ECONNRESET), which is how the tests produce Error readiness on demand.
func resetOnClose(t testing.TB, fd int) {
	t.Helper()
	require.NoError(t, unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}))
}

// closedPort returns a 127.0.0.1 TCP port that nothing listens on: that of a
// listener it opened and closed.
func closedPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// refusedConn starts a non-blocking TCP connect to 127.0.0.1 on a port
// nothing listens on and returns the socket: the connect fails with
// ECONNREFUSED, which the socket reports as an error (Error readiness, and
// SO_ERROR) once the RST arrives. Register it right away; the failure may
// already have happened.
func refusedConn(t testing.TB) int {
	t.Helper()
	port := closedPort(t)
	fd := tcpSocket(t)
	err := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	require.True(t, errors.Is(err, unix.EINPROGRESS),
		"non-blocking connect to closed port %d: want EINPROGRESS, got %v", port, err)
	return fd
}

// tcpPair returns a connected pair of non-blocking TCP sockets on
// 127.0.0.1: a client and the accepted server side.
func tcpPair(t testing.TB) (client, server int) {
	t.Helper()
	lfd := tcpSocket(t)
	require.NoError(t, unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(lfd, 1))
	sa, err := unix.Getsockname(lfd)
	require.NoError(t, err)
	client = tcpSocket(t)
	err = unix.Connect(client, sa)
	require.True(t, err == nil || errors.Is(err, unix.EINPROGRESS), "connect: %v", err)
	deadline := time.Now().Add(eventWait)
	for {
		nfd, _, err := unix.Accept(lfd)
		if err == nil {
			server = nonblocking(t, own(t, nfd))
			break
		}
		require.True(t, errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR), "accept: %v", err)
		require.True(t, time.Now().Before(deadline), "accept: timed out")
		// Wait for the connection with poll(2) on the listener, not a sleep.
		pfd := []unix.PollFd{{Fd: int32(lfd), Events: unix.POLLIN}}
		_, _ = unix.Poll(pfd, 100)
	}
	closeFd(t, lfd)
	return client, server
}

// ---------------------------------------------------------------------------
// Polling

// pollEvents makes one p.Poll(ev, timeout) call, requires it to succeed,
// checks rule 1 (no token twice in one call) and returns a copy of the
// events.
func pollEvents(t testing.TB, p *Poll, ev *Events, timeout time.Duration) []Event {
	t.Helper()
	n, err := p.Poll(ev, timeout)
	require.NoError(t, err, "Poll")
	require.Equal(t, ev.Len(), n, "Poll's count and ev.Len() differ")
	require.LessOrEqual(t, n, ev.Cap())
	out := make([]Event, 0, n)
	for e := range ev.All() {
		out = append(out, e)
	}
	requireUniqueTokens(t, out)
	return out
}

// requireUniqueTokens fails if a token appears twice in one call's events
// (rule 1).
func requireUniqueTokens(t testing.TB, evs []Event) {
	t.Helper()
	seen := make(map[Token]bool, len(evs))
	for _, e := range evs {
		require.False(t, seen[e.Token], "rule 1: token %d reported twice in one Poll call: %v", e.Token, evs)
		seen[e.Token] = true
	}
}

// pollUntil calls p.Poll(ev, ...) repeatedly, with short timeouts, until
// cond returns true for the events of one call, and returns those events. It
// fails the test if deadline (a duration from now) passes first. cond sees
// each call's events, also an empty slice when a call timed out. Every call
// is checked for rule 1 (see pollEvents).
func pollUntil(t testing.TB, p *Poll, ev *Events, cond func(evs []Event) bool, deadline time.Duration) []Event {
	t.Helper()
	end := time.Now().Add(deadline)
	var last []Event
	for {
		left := time.Until(end)
		if left <= 0 {
			require.FailNowf(t, "pollUntil: condition not met", "within %v; last events %v", deadline, last)
		}
		last = pollEvents(t, p, ev, min(left, 50*time.Millisecond))
		if cond(last) {
			return last
		}
	}
}

// waitEvent polls until an event for tok arrives and returns its readiness.
// Other tokens' events are ignored.
func waitEvent(t testing.TB, p *Poll, ev *Events, tok Token) Ready {
	t.Helper()
	var r Ready
	pollUntil(t, p, ev, func(evs []Event) bool {
		var ok bool
		r, ok = findToken(evs, tok)
		return ok
	}, eventWait)
	return r
}

// findToken returns the readiness of tok's event in evs.
func findToken(evs []Event, tok Token) (Ready, bool) {
	for _, e := range evs {
		if e.Token == tok {
			return e.Ready, true
		}
	}
	return 0, false
}

// requireNoEvents asserts that one Poll call with a short timeout reports
// nothing at all.
func requireNoEvents(t testing.TB, p *Poll, ev *Events) {
	t.Helper()
	evs := pollEvents(t, p, ev, noEventWait)
	require.Empty(t, evs, "want no events")
}

// requireOnly makes one Poll call that must report exactly one event, for
// tok with readiness want, and nothing else.
func requireOnly(t testing.TB, p *Poll, ev *Events, tok Token, want Ready) {
	t.Helper()
	evs := pollEvents(t, p, ev, noEventWait)
	require.Equal(t, []Event{{Token: tok, Ready: want}}, evs)
}

type pollResult struct {
	evs []Event
	err error
}

// pollAsync starts one p.Poll(ev, timeout) call in a new goroutine and
// returns the channel its result arrives on.
func pollAsync(p *Poll, ev *Events, timeout time.Duration) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() {
		_, err := p.Poll(ev, timeout)
		var evs []Event
		for e := range ev.All() {
			evs = append(evs, e)
		}
		ch <- pollResult{evs, err}
	}()
	return ch
}

// awaitPoll waits for a pollAsync result. If none arrives within eventWait
// it fails the test after closing p, which makes the stuck Poll return, so
// that no goroutine is leaked.
func awaitPoll(t testing.TB, p *Poll, ch <-chan pollResult, what string) pollResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(eventWait):
		_ = p.Close()
		<-ch
		require.FailNowf(t, "blocked Poll did not return", "%s: no wake-up within %v", what, eventWait)
		return pollResult{}
	}
}

// ---------------------------------------------------------------------------
// Waiting for the goroutine in Poll

// waitSelecting waits until p has entered its selector more than before
// times (see Stats.Selects): a goroutine calling Poll with a negative
// timeout is then in, or about to enter, its blocking wait. It is how a test
// makes the "wakes a blocked Poll" case likely without sleeping; the tests
// that use it are correct whichever way the race goes.
func waitSelecting(t testing.TB, p *Poll, before uint64) {
	t.Helper()
	testsupport.WaitFor(t, "Poll to enter its selector", func() bool { return p.Stats().Selects > before })
}

// waitAsleep waits until the goroutine in p.Poll has announced that it is
// about to block (the queue's sleep word), and fails the test if it does
// not within eventWait.
func waitAsleep(t testing.TB, p *Poll) {
	t.Helper()
	testsupport.WaitFor(t, "Poll to go to sleep", func() bool { return p.queue.sleep.Load() == queueAsleep })
}

// ---------------------------------------------------------------------------
// White box

// requireQueueEmpty checks that p holds no Registration: its readiness
// queue is empty (only the stub), the consumer holds no node and the
// timing wheel has no entry. Call it with no Poll in progress.
func requireQueueEmpty(t testing.TB, p *Poll) {
	t.Helper()
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	q := &p.queue
	require.True(t, q.tail == &q.stub && q.head.Load() == &q.stub && q.stub.next.Load() == nil,
		"readiness queue still holds nodes")
	require.Zero(t, p.held.Len(), "held list not empty")
	require.Zero(t, p.wheel.count.Load(), "timing wheel not empty")
	p.wheel.mu.Lock()
	defer p.wheel.mu.Unlock()
	for pos, v := range p.wheel.slotv {
		require.Empty(t, v, "wheel slot %d (level %d) not empty", pos, int64(pos)/p.wheel.slots)
	}
	for l, lv := range p.wheel.levels {
		require.Zero(t, lv.occupied, "wheel level %d still marks slots occupied", l)
	}
	require.Zero(t, p.wheel.entries.Len(), "wheel entries still allocated")
	require.Zero(t, p.wheel.nodes.Len(), "wheel still holds Registrations")
}

// ---------------------------------------------------------------------------
// Tables

// modes are the trigger modes every contract test runs in, named for
// subtests.
var modes = []struct {
	name string
	opts PollOpt
}{
	{"Edge", Edge},
	{"Level", Level},
	{"Oneshot", Oneshot}, // Level|Oneshot
	{"EdgeOneshot", Edge | Oneshot},
}

// forModes runs fn as a subtest per mode in modes whose name is in names
// (all of them when names is empty).
func forModes(t *testing.T, names []string, fn func(t *testing.T, opts PollOpt)) {
	for _, m := range modes {
		if len(names) > 0 && !slices.Contains(names, m.name) {
			continue
		}
		t.Run(m.name, func(t *testing.T) { fn(t, m.opts) })
	}
}

// requireNext asserts that the very next Poll call, with timeout 0, reports
// tok with exactly want (rule 5: "notifies at once").
func requireNext(t testing.TB, p *Poll, ev *Events, tok Token, want Ready) {
	t.Helper()
	evs := pollEvents(t, p, ev, 0)
	r, ok := findToken(evs, tok)
	require.True(t, ok, "next Poll(0) did not report token %d; got %v", tok, evs)
	require.Equal(t, want, r, "token %d", tok)
}

// requireEvent waits for tok and requires exactly want.
func requireEvent(t testing.TB, p *Poll, ev *Events, tok Token, want Ready) {
	t.Helper()
	require.Equal(t, want, waitEvent(t, p, ev, tok), "token %d", tok)
}
