//go:build unix

package socket

import (
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// closer is what every socket type has in common.
type closer interface {
	poll.Evented
	io.Closer
	Fd() int
}

func TestOperationsAfterClose(t *testing.T) {
	w := newPoller(t)
	client, server := tcpPair(t, w)
	ln, err := ListenTCP("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	udp, err := ListenUDP("udp", "127.0.0.1:0")
	require.NoError(t, err)
	a, b, err := Pair()
	require.NoError(t, err)
	uln, err := ListenUnix(filepath.Join(t.TempDir(), "s"))
	require.NoError(t, err)

	all := []closer{client, server, ln, udp, a, b, uln}
	for _, s := range all {
		require.NoError(t, s.Close())
	}
	for _, s := range all {
		require.ErrorIs(t, s.Close(), ErrClosed, "%T: second Close", s)
		require.Equal(t, -1, s.Fd())
		require.ErrorIs(t, w.p.Register(s, 9, poll.Readable, poll.Edge), ErrClosed)
		require.ErrorIs(t, w.p.Reregister(s, 9, poll.Readable, poll.Edge), ErrClosed)
		require.ErrorIs(t, w.p.Deregister(s), ErrClosed)
	}
	buf := make([]byte, 4)
	for _, rw := range []io.ReadWriter{client, udp, a} {
		_, err := rw.Read(buf)
		require.ErrorIs(t, err, ErrClosed)
		_, err = rw.Write(buf)
		require.ErrorIs(t, err, ErrClosed)
	}
	_, err = ln.Accept()
	require.ErrorIs(t, err, ErrClosed)
	_, err = uln.Accept()
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = udp.ReadFrom(buf)
	require.ErrorIs(t, err, ErrClosed)
	_, err = udp.WriteTo(buf, udp.LocalAddr())
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, client.CloseWrite(), ErrClosed)
	require.ErrorIs(t, client.SetNoDelay(true), ErrClosed)
	require.ErrorIs(t, client.ConnectError(), ErrClosed)
	require.ErrorIs(t, a.CloseWrite(), ErrClosed)
	// Addresses stay readable.
	require.NotNil(t, client.LocalAddr())
	require.NotNil(t, ln.Addr())
}

// After Close the Poll has forgotten the descriptor, so a new socket that
// gets the same number registers without ErrAlreadyRegistered.
func TestCloseDeregisters(t *testing.T) {
	w := newPoller(t)
	a, b, err := Pair()
	require.NoError(t, err)
	require.NoError(t, w.p.Register(a, 1, poll.Readable, poll.Edge))
	fd := a.Fd()
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())

	c, d, err := Pair()
	require.NoError(t, err)
	closeIt(t, c)
	closeIt(t, d)
	require.Equal(t, fd, c.Fd(), "the kernel reuses the lowest free number")
	require.NoError(t, w.p.Register(c, 2, poll.Readable, poll.Edge))
	_, err = d.Write([]byte("x"))
	require.NoError(t, err)
	require.True(t, w.wait(2, poll.Readable).IsReadable())
	_, stale := w.pending[1]
	require.False(t, stale, "closed socket's token reported")
}

func TestRegistrationTracking(t *testing.T) {
	w1, w2 := newPoller(t), newPoller(t)
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)

	require.ErrorIs(t, w1.p.Reregister(a, 1, poll.Readable, poll.Edge), poll.ErrNotRegistered)
	require.ErrorIs(t, w1.p.Deregister(a), poll.ErrNotRegistered)
	require.NoError(t, w1.p.Register(a, 1, poll.Readable, poll.Edge))
	require.ErrorIs(t, w1.p.Register(a, 1, poll.Readable, poll.Edge), poll.ErrAlreadyRegistered)
	require.ErrorIs(t, w2.p.Register(a, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, w2.p.Deregister(a), poll.ErrRegisteredElsewhere)
	require.NoError(t, w1.p.Reregister(a, 3, poll.Readable, poll.Level))
	require.NoError(t, w1.p.Deregister(a))
	require.NoError(t, w2.p.Register(a, 1, poll.Readable, poll.Edge), "free to move once deregistered")

	// A closed Poll releases the socket too, with no Deregister on it first
	// (see TestClosedPollLetsGo).
	require.NoError(t, w2.p.Close())
	require.NoError(t, w1.p.Register(a, 1, poll.Readable, poll.Edge))
	require.ErrorIs(t, a.Register(nil, 1, poll.Readable, poll.Edge), poll.ErrInvalidArgument)
	require.ErrorIs(t, a.Deregister(nil), poll.ErrInvalidArgument)
}

// A socket whose Poll has been closed can be registered with another one
// at once, and gets its events there; while its Poll is open, another Poll
// is refused.
func TestClosedPollLetsGo(t *testing.T) {
	w1, w2 := newPoller(t), newPoller(t)
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, a)
	closeIt(t, b)

	require.NoError(t, w1.p.Register(a, 1, poll.Readable, poll.Edge))
	require.ErrorIs(t, w2.p.Register(a, 2, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, w2.p.Reregister(a, 2, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, w2.p.Deregister(a), poll.ErrRegisteredElsewhere)
	// The refusals did not disturb the registration with w1.
	_, err = b.Write([]byte("1"))
	require.NoError(t, err)
	require.True(t, w1.wait(1, poll.Readable).IsReadable())
	require.Equal(t, "1", string(w1.readN(1, a, 1)))

	require.NoError(t, w1.p.Close())
	require.ErrorIs(t, w2.p.Reregister(a, 2, poll.Readable, poll.Edge), poll.ErrNotRegistered,
		"the closed Poll is forgotten, so the socket is registered nowhere")
	require.NoError(t, w2.p.Register(a, 2, poll.Readable, poll.Edge))
	_, err = b.Write([]byte("2"))
	require.NoError(t, err)
	require.True(t, w2.wait(2, poll.Readable).IsReadable())
	require.Equal(t, "2", string(w2.readN(2, a, 1)))

	// And the new registration is the one Close undoes: w2's table no
	// longer has the number (while registered, Deregister would succeed).
	fd := a.Fd()
	require.NoError(t, a.Close())
	require.ErrorIs(t, w2.p.Deregister(poll.Fd(fd)), poll.ErrNotRegistered)
}

// Errors from a closed socket match both closed sentinels, so one check
// works whichever package a caller thinks of; a closed Poll's error is
// poll.ErrClosed only, since the socket itself is still open.
func TestClosedErrorsMatchBoth(t *testing.T) {
	w := newPoller(t)
	a, b, err := Pair()
	require.NoError(t, err)
	closeIt(t, b)
	require.NoError(t, w.p.Register(a, 1, poll.Readable, poll.Edge))
	require.NoError(t, a.Close())

	buf := make([]byte, 4)
	_, rerr := a.Read(buf)
	_, werr := a.Write(buf)
	for _, err := range []error{
		rerr, werr, a.Close(), a.CloseWrite(),
		w.p.Register(a, 1, poll.Readable, poll.Edge),
		w.p.Reregister(a, 1, poll.Readable, poll.Edge),
		w.p.Deregister(a),
	} {
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, err, net.ErrClosed)
		require.ErrorIs(t, err, poll.ErrClosed)
		require.NotErrorIs(t, err, ErrNotOpen, "it was open once")
		require.Contains(t, err.Error(), "use of closed network connection")
	}

	q, err := poll.New()
	require.NoError(t, err)
	require.NoError(t, q.Close())
	err = q.Register(b, 1, poll.Readable, poll.Edge)
	require.ErrorIs(t, err, poll.ErrClosed)
	require.NotErrorIs(t, err, ErrClosed, "the socket is open; the Poll is closed")
}

// Close racing with Read, Write and registration: every operation either
// works or reports ErrClosed (or would-block), and nothing panics. Run with
// -race.
func TestConcurrentClose(t *testing.T) {
	w := newPoller(t)
	for range 50 {
		a, b, err := Pair()
		require.NoError(t, err)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 64)
		op := func(f func() error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 20 {
					if err := f(); err != nil && !errors.Is(err, ErrWouldBlock) {
						errs <- err
						return
					}
				}
			}()
		}
		buf := make([]byte, 16)
		op(func() error { _, err := a.Read(buf); return err })
		op(func() error { _, err := a.Write([]byte("x")); return err })
		op(func() error {
			err := w.p.Register(a, 1, poll.Readable, poll.Edge)
			if errors.Is(err, poll.ErrAlreadyRegistered) {
				return w.p.Deregister(a)
			}
			return err
		})
		op(a.Close)
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.ErrorIs(t, err, ErrClosed)
		}
		_ = a.Close()
		require.NoError(t, b.Close())
	}
}
