package poll

// Resource leaks: descriptors here; goroutines are checked for the whole
// package by goleak in TestMain.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/testsupport"
)

// Creating and closing 1,000 Polls, each with a socketpair registered and
// polled, leaves the number of open descriptors where it was: a Poll
// releases every descriptor it opened (epoll instance, waker) and none it
// did not (the registered socketpair stays open until the test closes it).
func TestLeakDescriptors(t *testing.T) {
	const n = 1000
	for _, backend := range backends(t) {
		t.Run(backend, func(t *testing.T) { leakDescriptors(t, backend, n) })
	}
}

func leakDescriptors(t *testing.T, backend string, n int) {
	{
		before := testsupport.OpenFds(t)
		ev := NewEvents(4)
		for i := range n {
			p, err := NewWithConfig(Config{Backend: backend})
			require.NoError(t, err)
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			require.NoError(t, err)
			require.NoError(t, p.Register(Fd(fds[0]), Token(i), Readable|Writable, Level))
			if i%2 == 0 {
				got, err := p.Poll(ev, 0)
				require.NoError(t, err)
				require.Equal(t, 1, got)
			}
			require.NoError(t, p.Close())
			// Close must not have closed the registered descriptor.
			_, err = unix.Write(fds[1], []byte("x"))
			require.NoError(t, err, "Poll.Close closed a registered descriptor (iteration %d)", i)
			require.NoError(t, unix.Close(fds[0]))
			require.NoError(t, unix.Close(fds[1]))
		}
		require.Equal(t, before, testsupport.OpenFds(t), "open descriptors before and after %d Polls", n)

		// A failed NewWithConfig leaks nothing either.
		for range 100 {
			_, err := NewWithConfig(Config{Backend: backend, WheelSlots: -1})
			require.Error(t, err)
		}
		require.Equal(t, before, testsupport.OpenFds(t))
	}
}
