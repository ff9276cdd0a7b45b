//go:build linux

package child

// Helpers for this package's tests. Processes are real (/bin/sh, /bin/sleep,
// /bin/true), and so are Polls (poll.New, so the backend is the one
// UNIPOLL_BACKEND names). Every test runs on each way of watching this
// system has (paths). Waiting is for a condition with a deadline, never
// time.Sleep.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
)

const (
	noEventWait = 20 * time.Millisecond
	eventWait   = 10 * time.Second
)

// path is one way of watching.
type path struct {
	name string
	opts []Option
	want Method
}

var paths = []path{
	{"pidfd", nil, Pidfd},
	{"sigchld", []Option{UseSIGCHLD()}, SIGCHLD},
}

// forPaths runs f as a subtest per path.
func forPaths(t *testing.T, f func(t *testing.T, pa path)) {
	for _, pa := range paths {
		t.Run(pa.name, func(t *testing.T) { f(t, pa) })
	}
}

// start starts a command; the cleanup kills and reaps it if the test did
// not.
func start(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// sh starts /bin/sh -c script.
func sh(t testing.TB, script string) *exec.Cmd { return start(t, "/bin/sh", "-c", script) }

// watchOn watches cmd on path pa; the cleanup closes the Watcher.
func watchOn(t testing.TB, cmd *exec.Cmd, pa path) *Watcher {
	t.Helper()
	w, err := WatchCmd(cmd, pa.opts...)
	require.NoError(t, err)
	require.Equal(t, pa.want, w.Method())
	require.Equal(t, cmd.Process.Pid, w.Pid())
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// pollOnce, waitEvent and expectNoEvent are internal/onpoll/polltest's,
// with this package's waits.
var (
	waits         = polltest.Waits{Event: eventWait, NoEvent: noEventWait}
	pollOnce      = polltest.PollOnce
	waitEvent     = waits.WaitEvent
	expectNoEvent = waits.ExpectNoEvent
)

// waitEvents polls until every token in toks has been reported, and fails
// if one is reported twice (they are edge or oneshot registrations of
// exited processes).
func waitEvents(t testing.TB, p *poll.Poll, toks ...poll.Token) {
	t.Helper()
	want := map[poll.Token]bool{}
	for _, tok := range toks {
		want[tok] = true
	}
	seen := map[poll.Token]bool{}
	deadline := time.Now().Add(eventWait)
	for len(seen) < len(want) {
		require.True(t, time.Now().Before(deadline), "%d of %d tokens reported within %v", len(seen), len(want), eventWait)
		for tok := range pollOnce(t, p, time.Until(deadline)) {
			require.True(t, want[tok], "token %d reported, not expected", tok)
			require.False(t, seen[tok], "token %d reported twice", tok)
			seen[tok] = true
		}
	}
}

// waitFor is testsupport.WaitFor with this package's longer wait: a
// process to start or end on a loaded machine.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testsupport.WaitForWithin(t, eventWait, what, cond)
}

// procState returns the state letter of a process in /proc ("R", "S", "T",
// "Z"...), or "" if it has no entry.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name is in parentheses and may hold spaces: the state
	// follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// zombieChildren lists the pids of this process's children that are
// zombies, from /proc.
func zombieChildren(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	self := strconv.Itoa(os.Getpid())
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:])) // state, ppid, ...
		if len(f) >= 2 && f[0] == "Z" && f[1] == self {
			out = append(out, pid)
		}
	}
	return out
}

// requireSameStatus checks a Watcher's status against the owner's reaped
// state.
func requireSameStatus(t testing.TB, st ExitStatus, ps *os.ProcessState) {
	t.Helper()
	require.NotNil(t, ps)
	require.Equal(t, ps.Pid(), st.Pid())
	require.Equal(t, ps.Sys().(syscall.WaitStatus), st.Sys())
	require.Equal(t, ps.ExitCode(), st.ExitCode())
	require.Equal(t, ps.Exited(), st.Exited())
	require.Equal(t, ps.Success(), st.Success())
	require.Equal(t, ps.String(), st.String())
}
