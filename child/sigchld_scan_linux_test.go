//go:build linux

package child

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/onpoll/ureg"
	"github.com/unipoll/unipoll/poll"
)

// A Watcher entered in the SIGCHLD table after a scan copied it is not
// marked by that scan, even when the scan finds its pid exited: it may
// watch a new process given the pid of the one that exited (pid reuse),
// whose exit the scan's look says nothing about. The test enters such a
// Watcher by hand between the copy and the look, for the pid of a process
// that is exiting; the scan used to look first and copy after, and
// marked it.
func TestScanMarksOnlyWatchersItCopied(t *testing.T) {
	p := polltest.New(t)
	cmd, release := startReading(t)
	w := watchOn(t, cmd, paths[1])
	require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))

	late := &sigchldWatch{pid: cmd.Process.Pid, r: ureg.New()}
	entered := false
	hook := func() {
		if entered {
			return
		}
		entered = true
		table.mu.Lock()
		table.pids[late.pid] = append(table.pids[late.pid], late)
		table.mu.Unlock()
	}
	scanCopied.Store(&hook)
	t.Cleanup(func() {
		scanCopied.Store(nil)
		late.unlist()
		_ = late.r.Close()
	})

	release()
	require.Equal(t, poll.Readable, waitEvent(t, p, 1), "no exit event for the Watcher the scan copied")
	require.True(t, entered, "no scan ran after the exit")
	late.mu.Lock()
	defer late.mu.Unlock()
	require.False(t, late.seen || late.gone, "the scan marked a Watcher entered after its copy")
}
