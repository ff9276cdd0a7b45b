//go:build linux

package child

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// startReading starts `sh -c 'read x; exit 5'`: it exits when release is
// called, so that it is watched (and in the SIGCHLD table) by then.
func startReading(t *testing.T) (cmd *exec.Cmd, release func()) {
	t.Helper()
	r, wr, err := os.Pipe()
	require.NoError(t, err)
	cmd = exec.Command("/bin/sh", "-c", "read x; exit 5")
	cmd.Stdin = r
	require.NoError(t, cmd.Start())
	require.NoError(t, r.Close())
	t.Cleanup(func() {
		_ = wr.Close()
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, func() {
		_, err := wr.Write([]byte("\n"))
		require.NoError(t, err)
	}
}

// The owner reaps at once, its own cmd.Wait() racing the Watcher, and
// nothing ever calls Status: the Watcher must report the exit on the Poll
// all the same (once, under Edge), and its pid must leave the SIGCHLD
// table (ReadStats), which every later scan would otherwise look at, and
// which would follow a new process given the same pid. Status afterwards
// is the status if a scan saw the exit before the reap, else ErrReaped
// (the pidfd path: always ErrReaped, nothing peeked before the reap).
func TestReapedBeforeSeen(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		for _, opts := range []poll.PollOpt{poll.Edge, poll.Level} {
			t.Run(opts.String(), func(t *testing.T) {
				p := polltest.New(t)
				before := ReadStats()
				cmd, release := startReading(t)
				w := watchOn(t, cmd, pa)
				require.NoError(t, p.Register(w, 1, poll.Readable, opts))
				if pa.want == SIGCHLD {
					require.Equal(t, before.Watched+1, ReadStats().Watched, "the pid is in the table while the process runs")
				}
				release()
				require.NoError(t, ignoreExit(cmd.Wait())) // the owner reaps at once
				require.Equal(t, poll.Readable, waitEvent(t, p, 1), "no exit event after the owner reaped")
				if opts == poll.Edge {
					expectNoEvent(t, p, 1)
				}
				waitFor(t, "the pid to leave the SIGCHLD table", func() bool { return ReadStats().Watched == before.Watched })
				require.Equal(t, before.Watchers+map[bool]int{true: 1}[pa.want == SIGCHLD], ReadStats().Watchers)

				st, err := w.Status()
				if err == nil && pa.want == SIGCHLD {
					requireSameStatus(t, st, cmd.ProcessState) // a scan saw the exit first
				} else {
					require.ErrorIs(t, err, ErrReaped)
				}
				require.NoError(t, w.Close())
				require.Equal(t, before, withScans(ReadStats(), before.Scans), "Close gave back the Watcher's place")
			})
		}
	})
}

// The same with the order forced: the scan that the exit's SIGCHLD brings
// is held (table.mu) until the owner has reaped, so the scan finds
// ECHILD, never the exit. The Watcher reports it (a Status-free wait on
// the Poll), leaves the table, and Status says ErrReaped.
func TestReapedBeforeAnyScan(t *testing.T) {
	p := polltest.New(t)
	before := ReadStats()
	cmd, release := startReading(t)
	w := watchOn(t, cmd, paths[1])
	require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
	require.Equal(t, before.Watched+1, ReadStats().Watched)

	table.mu.Lock()
	release()
	err := cmd.Wait()
	table.mu.Unlock()
	require.NoError(t, ignoreExit(err))
	require.Equal(t, 5, cmd.ProcessState.ExitCode())

	require.Equal(t, poll.Readable, waitEvent(t, p, 1), "no event for a process reaped before any scan")
	expectNoEvent(t, p, 1)
	waitFor(t, "the pid to leave the SIGCHLD table", func() bool { return ReadStats().Watched == before.Watched })
	require.Greater(t, ReadStats().Scans, before.Scans)
	_, err = w.Status()
	require.ErrorIs(t, err, ErrReaped)
	_, err = w.Wait()
	require.ErrorIs(t, err, ErrReaped)
}

// ignoreExit drops the *exec.ExitError of a non-zero exit.
func ignoreExit(err error) error {
	if _, ok := err.(*exec.ExitError); ok {
		return nil
	}
	return err
}

// withScans returns s with Scans set, for comparing the rest.
func withScans(s Stats, scans uint64) Stats {
	s.Scans = scans
	return s
}
