//go:build unix

package fdguard

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// eventWait bounds a wait for an event that must come: long enough for a
// loaded machine, short enough that a lost event fails rather than hangs.
const eventWait = 10 * time.Second

var (
	errNotOpen = errors.New("not open")
	errClosed  = errors.New("closed")
)

// testNames names errors so that a test can tell which rule made them.
type testNames struct{}

func (testNames) NotOpen(op string) error         { return fmt.Errorf("%s: %w", op, errNotOpen) }
func (testNames) Closed(op string) error          { return fmt.Errorf("%s: %w", op, errClosed) }
func (testNames) Wrap(op string, err error) error { return fmt.Errorf("test: %s: %w", op, err) }
func (testNames) Sys(op string, err error) error  { return os.NewSyscallError(op, err) }

// pipeGuard opens a non-blocking pipe and guards its read end.
func pipeGuard(t *testing.T) (*Guard[testNames], int) {
	t.Helper()
	var fds [2]int
	require.NoError(t, unix.Pipe(fds[:])) // Pipe2 is not on darwin; no fork runs here
	for _, fd := range fds {
		require.NoError(t, unix.SetNonblock(fd, true))
	}
	t.Cleanup(func() { _ = unix.Close(fds[1]) })
	g := new(Guard[testNames])
	*g = Opened(fds[0], testNames{})
	return g, fds[1]
}

// newPoll is polltest.New: a Poll closed at the test's cleanup.
var newPoll = polltest.New

// A nil and a zero Guard are never opened: every call says so, none
// panics, Sysfd is -1.
func TestGuardNotOpen(t *testing.T) {
	p := newPoll(t)
	for name, g := range map[string]*Guard[testNames]{"nil": nil, "zero": new(Guard[testNames])} {
		require.ErrorIs(t, g.RLock("read"), errNotOpen, name)
		require.ErrorIs(t, g.Close(), errNotOpen, name)
		require.ErrorIs(t, g.Register(p, 1, poll.Readable, poll.Edge), errNotOpen, name)
		require.ErrorIs(t, g.Reregister(p, 1, poll.Readable, poll.Edge), errNotOpen, name)
		require.ErrorIs(t, g.Deregister(p), errNotOpen, name)
		require.Equal(t, -1, g.Sysfd(), name)
	}
}

// One Poll at a time; a closed Poll is forgotten; Close deregisters from
// the Poll it remembers, and afterwards every call says closed.
func TestGuardRegistration(t *testing.T) {
	g, w := pipeGuard(t)
	p1, p2 := newPoll(t), newPoll(t)
	require.ErrorIs(t, g.Register(nil, 1, poll.Readable, poll.Edge), poll.ErrInvalidArgument)
	require.ErrorIs(t, g.Deregister(p1), poll.ErrNotRegistered)
	require.NoError(t, g.Register(p1, 1, poll.Readable, poll.Edge))
	require.ErrorIs(t, g.Register(p2, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, g.Reregister(p2, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.NoError(t, p1.Close())
	require.NoError(t, g.Register(p2, 2, poll.Readable, poll.Edge), "a closed Poll holds nothing")

	require.NoError(t, g.RLock("read"))
	require.True(t, g.Edge())
	fd := g.Fd()
	g.RUnlock()
	require.Equal(t, fd, g.Sysfd())

	_, err := unix.Write(w, []byte("x"))
	require.NoError(t, err)
	ev := poll.NewEvents(4)
	n, err := p2.Poll(ev, eventWait)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.NoError(t, g.Close())
	require.ErrorIs(t, p2.Deregister(poll.Fd(fd)), poll.ErrNotRegistered, "Close did not deregister")
	require.ErrorIs(t, g.Close(), errClosed)
	require.ErrorIs(t, g.RLock("read"), errClosed)
	require.Equal(t, -1, g.Sysfd())
}

// Drained ends an Edge pass: on every backend the next write makes a new
// event, and a Poll that no longer has the descriptor is no error.
func TestGuardDrained(t *testing.T) {
	g, w := pipeGuard(t)
	p := newPoll(t)
	require.NoError(t, g.Register(p, 1, poll.Readable, poll.Edge))
	ev := poll.NewEvents(4)
	buf := make([]byte, 8)
	for range 3 {
		_, err := unix.Write(w, []byte("x"))
		require.NoError(t, err)
		n, err := p.Poll(ev, eventWait)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the write after a Drained pass made no event")
		require.NoError(t, g.RLock("read"))
		_, err = unix.Read(g.Fd(), buf)
		require.NoError(t, err)
		_, err = unix.Read(g.Fd(), buf)
		require.ErrorIs(t, err, unix.EAGAIN)
		require.NoError(t, g.Drained("read", poll.Readable))
		g.RUnlock()
	}
	require.NoError(t, p.Deregister(poll.Fd(g.Sysfd())))
	require.NoError(t, g.RLock("read"))
	require.NoError(t, g.Drained("read", poll.Readable), "a Poll without the descriptor has no pass to end")
	g.RUnlock()
}
