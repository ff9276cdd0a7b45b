//go:build unix

package socket

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// openFds counts this process's open descriptors.
func openFds(t *testing.T) int { return testsupport.OpenFds(t) }

// TestNoDescriptorLeak creates and closes 1,000 TCP listener/dial/accept
// triples (each conn registered with a Poll when closed), 1,000 socket
// pairs and 1,000 Polls, and checks that the number of open descriptors is
// back where it started.
func TestNoDescriptorLeak(t *testing.T) {
	const n = 1000
	before := openFds(t)

	p, err := poll.New()
	require.NoError(t, err)
	ev := poll.NewEvents(8)
	for i := range n {
		ln, err := ListenTCP("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, p.Register(ln, 1, poll.Readable, poll.Level))
		c, err := DialTCP("tcp", ln.Addr().String())
		require.NoError(t, err)
		require.NoError(t, p.Register(c, 2, poll.Readable|poll.Writable, poll.Edge))
		var s *TCPConn
		for s == nil {
			s, err = ln.Accept()
			if errors.Is(err, ErrWouldBlock) {
				_, err = p.Poll(ev, testDeadline)
			}
			require.NoError(t, err, "iteration %d", i)
		}
		require.NoError(t, p.Register(s, 3, poll.Readable, poll.Edge))
		require.NoError(t, s.Close())
		require.NoError(t, c.Close())
		require.NoError(t, ln.Close())
	}
	require.NoError(t, p.Close())

	for range n {
		a, b, err := Pair()
		require.NoError(t, err)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	}
	for range n {
		q, err := poll.New()
		require.NoError(t, err)
		require.NoError(t, q.Close())
	}
	require.Equal(t, before, openFds(t))
}
