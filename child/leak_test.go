//go:build linux

package child

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

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
	before := testsupport.OpenFds(t)
	p := newPoll(t)
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
		require.Zero(t, watchedPids(), "%s: pids left in the table", pa.name)
		require.Zero(t, sigrelay.Active(), "%s: relay entries left", pa.name)
		for _, cmd := range cmds { // the runtime holds a pidfd per unreaped child
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	require.NoError(t, p.Close())
	goleak.VerifyNone(t)
	requireFdsBack(t, before)
}

// requireFdsBack fails unless the process's open descriptors come back to
// before within the usual deadline: a leaked descriptor stays, while one
// that something else in the process holds for a moment goes. 1 run in 200
// under -race with CPU burners saw two more descriptors at the first look
// (which ones was not recorded), so the failure now lists what is open.
func requireFdsBack(t *testing.T, before int) {
	t.Helper()
	if testsupport.Eventually(eventWait, func() bool { return testsupport.OpenFds(t) == before }) {
		return
	}
	var open []string
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		open = append(open, e.Name()+" -> "+target)
	}
	require.Equal(t, before, testsupport.OpenFds(t), "descriptors before and after; open now:\n%s", strings.Join(open, "\n"))
}
