package channel

// Resource leaks: descriptors here; goroutines are checked for the whole
// package by goleak in TestMain.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// A channel holds no descriptor of its own: creating, using and closing
// 500 channels with their Polls (Receiver and Sender registered, values
// sent and polled, a bounded Send blocked and released by Close) leaves
// the number of open descriptors where it was.
func TestLeakDescriptors(t *testing.T) {
	before := testsupport.OpenFds(t)
	ev := poll.NewEvents(4)
	for i := range 500 {
		p, err := poll.New()
		require.NoError(t, err)
		tx, rx, err := NewBounded[int](1)
		require.NoError(t, err)
		require.NoError(t, p.Register(rx, 1, poll.Readable, poll.Level))
		require.NoError(t, p.Register(tx, 2, poll.Writable, poll.Edge))
		require.NoError(t, tx.Send(i))
		n, err := p.Poll(ev, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n) // Readable; Writable was cleared by the Send that filled it
		if i%2 == 0 {
			done := blockedSend(t, tx, rx, i)
			require.NoError(t, rx.Close())
			require.ErrorIs(t, sendResult(t, done), ErrDisconnected)
		} else {
			require.NoError(t, rx.Close())
		}
		require.NoError(t, tx.Close())
		require.NoError(t, p.Close())
	}
	require.Equal(t, before, testsupport.OpenFds(t), "open descriptors before and after 500 channels")
}
