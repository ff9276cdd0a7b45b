//go:build linux

package child

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/sigrelay"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

// Watchers leave nothing behind once closed: 100 children per path,
// watched, registered, some killed and reported, some not, every Watcher
// closed: no descriptor (pidfds), no table entry, no SIGCHLD subscription
// and no goroutine (the relay) remain. The SIGCHLD path holds one relay
// goroutine while any of its Watchers lives, however many there are.
func TestNoLeak(t *testing.T) {
	testsupport.RequireRoundLeavesNoAnonFds(t, eventWait, func() { noLeakRound(t) })
}

func noLeakRound(t *testing.T) {
	p := polltest.New(t)
	for _, pa := range paths {
		var ws []*Watcher
		var cmds []*exec.Cmd
		for i := range 100 {
			cmd := start(t, "/bin/sleep", "100")
			cmds = append(cmds, cmd)
			w, err := WatchCmd(cmd, pa.opts...)
			require.NoError(t, err)
			require.NoError(t, p.Register(w, poll.Token(i+1), poll.Readable, poll.Edge))
			ws = append(ws, w)
			if i%2 == 0 {
				require.NoError(t, w.Signal(syscall.SIGKILL))
			}
		}
		if pa.want == SIGCHLD {
			require.Equal(t, 1, sigrelay.Active(), "one relay entry for SIGCHLD")
			require.Equal(t, 1, sigrelay.Subscribed(syscall.SIGCHLD))
		}
		var killed []poll.Token
		for i := 0; i < len(ws); i += 2 {
			killed = append(killed, poll.Token(i+1))
		}
		waitEvents(t, p, killed...)
		for _, w := range ws {
			require.NoError(t, w.Close())
		}
		require.Zero(t, ReadStats().Watched, "%s: pids left in the table", pa.name)
		require.Zero(t, ReadStats().Watchers, "%s: fallback Watchers left open", pa.name)
		require.Zero(t, sigrelay.Active(), "%s: relay entries left", pa.name)
		for _, cmd := range cmds { // the runtime holds a pidfd per unreaped child
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	require.NoError(t, p.Close())
	goleak.VerifyNone(t)
}
