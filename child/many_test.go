//go:build linux

package child

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// manyChildren is how many children TestThousandChildren starts.
const manyChildren = 1000

// A thousand children exit together (they all read one pipe, whose write
// end is closed at once). Every exit is reported exactly once; each
// Watcher's status is its child's; each child is still a zombie when its
// owner's cmd.Wait() reaps it, which returns that same status; two
// unwatched exec.Cmds started alongside get their own status, one with a
// goroutine blocked in its cmd.Wait() from the start, the other reaped
// only at the end (a zombie until then: nobody else reaped it); and no
// zombie is left (checked in /proc).
func TestThousandChildren(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		r, wr, err := os.Pipe()
		require.NoError(t, err)
		defer wr.Close()
		startOne := func(code int) *exec.Cmd {
			cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("read x; exit %d", code))
			cmd.Stdin = r
			require.NoError(t, cmd.Start())
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			return cmd
		}
		unwatched := startOne(7)
		unwatchedDone := make(chan error, 1)
		go func() { unwatchedDone <- unwatched.Wait() }()
		// Another, whose owner only reaps at the end: it must still be
		// there to reap (nothing here waits for pids it does not watch).
		unwatchedLate := startOne(9)

		cmds := make([]*exec.Cmd, manyChildren)
		ws := make([]*Watcher, manyChildren)
		for i := range cmds {
			cmds[i] = startOne(i % 256)
			ws[i] = watchOn(t, cmds[i], pa)
			require.NoError(t, p.Register(ws[i], poll.Token(i+1), poll.Readable, poll.Edge))
		}
		require.NoError(t, r.Close())

		began := time.Now()
		require.NoError(t, wr.Close()) // every child reads EOF and exits
		seen := make([]int, manyChildren)
		reported := 0
		ev := poll.NewEvents(256)
		deadline := time.Now().Add(time.Minute)
		for reported < manyChildren {
			require.True(t, time.Now().Before(deadline), "%d of %d exits reported", reported, manyChildren)
			_, err := p.Poll(ev, time.Until(deadline))
			require.NoError(t, err)
			for e := range ev.All() {
				i := int(e.Token) - 1
				require.True(t, i >= 0 && i < manyChildren, "token %d", e.Token)
				if seen[i] == 0 {
					reported++
				}
				seen[i]++
			}
		}
		t.Logf("%s: %d exits reported in %v", pa.name, manyChildren, time.Since(began))
		require.Empty(t, pollOnce(t, p, noEventWait), "events after every exit was reported")
		for i, n := range seen {
			require.Equal(t, 1, n, "child %d reported %d times", i, n)
		}

		for i, w := range ws {
			st, err := w.Status()
			require.NoError(t, err)
			require.Equal(t, i%256, st.ExitCode())
			require.Equal(t, "Z", procState(cmds[i].Process.Pid), "child %d is not a zombie before its owner's Wait", i)
			_ = cmds[i].Wait()
			requireSameStatus(t, st, cmds[i].ProcessState)
			require.NoError(t, w.Close())
		}
		select {
		case <-unwatchedDone:
		case <-time.After(eventWait):
			t.Fatal("the unwatched command's cmd.Wait() did not return")
		}
		require.Equal(t, 7, unwatched.ProcessState.ExitCode(), "the unwatched command's own status")
		// It exits with the others; once it has, nobody but its owner may
		// take it out of the zombie state.
		waitFor(t, "the late-reaped unwatched command to be a zombie", func() bool { return procState(unwatchedLate.Process.Pid) == "Z" })
		require.Error(t, unwatchedLate.Wait())
		require.Equal(t, 9, unwatchedLate.ProcessState.ExitCode(), "the late-reaped unwatched command's own status")
		require.Empty(t, zombieChildren(t), "zombies left")
	})
}
