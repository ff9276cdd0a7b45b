//go:build unix

package signal

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/unipoll/unipoll/internal/sigrelay"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// Watchers hold no descriptor and no goroutine of their own: 200 Watchers
// of three signals, registered, signalled and closed (with their Polls),
// leave no relay goroutine and no descriptor behind, and the relay runs one
// goroutine per watched signal while they live, not one per Watcher.
func TestNoLeak(t *testing.T) {
	testsupport.RequireRoundLeavesNoAnonFds(t, eventWait, func() { noLeakRound(t) })
}

func noLeakRound(t *testing.T) {
	sigs := []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}
	var ws []*Watcher
	var ps []*poll.Poll
	for i := range 200 {
		w, err := New(sigs[i%3], sigs[(i+1)%3])
		require.NoError(t, err)
		p, err := poll.New()
		require.NoError(t, err)
		require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
		ws, ps = append(ws, w), append(ps, p)
	}
	require.Equal(t, 3, sigrelay.Active(), "one relay entry (and goroutine) per signal")
	raise(t, syscall.SIGWINCH)
	testsupport.WaitFor(t, "delivery to every SIGWINCH Watcher", func() bool {
		for i, w := range ws {
			watches := i%3 != 0 // sigs[2] is the first or the second signal
			if watches && w.Pending() != 1 {
				return false
			}
		}
		return true
	})
	for i := range ws {
		require.NoError(t, ws[i].Close())
		require.NoError(t, ps[i].Close())
	}
	require.Zero(t, sigrelay.Active())
	goleak.VerifyNone(t)
}
