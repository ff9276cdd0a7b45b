//go:build linux

package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// Exit codes reach the Poll and Status, without reaping: the process is
// still a zombie when the owner's cmd.Wait() reaps it, so that returns at
// once, with the status Status gave.
func TestExitCodes(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		for i, code := range []int{0, 1, 3, 42, 255} {
			cmd := sh(t, fmt.Sprintf("exit %d", code))
			w := watchOn(t, cmd, pa)
			tok := poll.Token(i + 1)
			require.NoError(t, p.Register(w, tok, poll.Readable, poll.Edge))
			require.Equal(t, poll.Readable, waitEvent(t, p, tok))
			st, err := w.Status()
			require.NoError(t, err)
			require.True(t, st.Exited())
			require.Equal(t, code, st.ExitCode())
			require.Equal(t, code == 0, st.Success())
			require.False(t, st.Signaled())
			require.Equal(t, "Z", procState(cmd.Process.Pid), "the Watcher reaped the process")
			_ = cmd.Wait()
			requireSameStatus(t, st, cmd.ProcessState)
			again, err := w.Status()
			require.NoError(t, err, "Status after the owner reaped")
			require.Equal(t, st, again)
		}
	})
}

// Death by a signal, sent through the Watcher (pidfd_send_signal on the
// pidfd path).
func TestDeathBySignal(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGUSR1} {
			cmd := start(t, "/bin/sleep", "100")
			w := watchOn(t, cmd, pa)
			tok := poll.Token(i + 1)
			require.NoError(t, p.Register(w, tok, poll.Readable, poll.Level))
			_, err := w.Status()
			require.ErrorIs(t, err, ErrNotExited)
			expectNoEvent(t, p, tok)
			require.NoError(t, w.Signal(sig))
			waitEvent(t, p, tok)
			st, err := w.Status()
			require.NoError(t, err)
			require.True(t, st.Signaled())
			require.Equal(t, sig, st.Signal())
			require.Equal(t, -1, st.ExitCode())
			require.Equal(t, "signal: "+sig.String(), st.String())
			_ = cmd.Wait()
			requireSameStatus(t, st, cmd.ProcessState)
			require.ErrorIs(t, w.Signal(syscall.SIGTERM), os.ErrProcessDone, "Signal after reap")
		}
	})
}

// Stop and continue are not exits: the Watcher stays quiet and Status says
// ErrNotExited while the process is stopped and after it continues; the
// kill that follows is reported.
func TestStopContinue(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		cmd := start(t, "/bin/sleep", "100")
		w := watchOn(t, cmd, pa)
		require.NoError(t, p.Register(w, 1, poll.Readable, poll.Level))
		pid := cmd.Process.Pid

		require.NoError(t, w.Signal(syscall.SIGSTOP))
		waitFor(t, "the process to stop", func() bool { return procState(pid) == "T" })
		expectNoEvent(t, p, 1)
		_, err := w.Status()
		require.ErrorIs(t, err, ErrNotExited, "stopped")

		require.NoError(t, w.Signal(syscall.SIGCONT))
		waitFor(t, "the process to continue", func() bool { return procState(pid) != "T" })
		expectNoEvent(t, p, 1)
		_, err = w.Status()
		require.ErrorIs(t, err, ErrNotExited, "continued")

		require.NoError(t, w.Signal(syscall.SIGKILL))
		waitEvent(t, p, 1)
		st, err := w.Status()
		require.NoError(t, err)
		require.Equal(t, syscall.SIGKILL, st.Signal())
		_ = cmd.Wait()
		requireSameStatus(t, st, cmd.ProcessState)
	})
}

// The trigger modes: edge reports the exit once (also when the owner reaps
// afterwards, which gives a pidfd a new edge), level on every call until
// deregistered, oneshot once until Reregister; registering after the exit
// reports at once (rule 5).
func TestModes(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		edge, level, oneshot, late := sh(t, "exit 1"), sh(t, "exit 2"), sh(t, "exit 3"), sh(t, "exit 4")
		we, wl, wo, wlate := watchOn(t, edge, pa), watchOn(t, level, pa), watchOn(t, oneshot, pa), watchOn(t, late, pa)
		require.NoError(t, p.Register(we, 1, poll.Readable, poll.Edge))
		require.NoError(t, p.Register(wo, 3, poll.Readable, poll.Oneshot))
		waitEvents(t, p, 1, 3) // once each
		waitFor(t, "the level process to exit", func() bool { _, err := wl.Status(); return err == nil })
		require.NoError(t, p.Register(wl, 2, poll.Readable|poll.Hup, poll.Level))
		for _, w := range []*Watcher{we, wl, wo} {
			_, err := w.Status()
			require.NoError(t, err)
		}
		_ = edge.Wait() // reaping gives a pidfd a second edge
		_ = oneshot.Wait()
		for range 3 {
			got := pollOnce(t, p, noEventWait)
			require.NotContains(t, got, poll.Token(1), "edge: reported again")
			require.NotContains(t, got, poll.Token(3), "oneshot: reported again")
			require.Equal(t, poll.Readable, got[2], "level: not reported while exited, or with more than Readable")
		}
		require.NoError(t, p.Reregister(wo, 4, poll.Readable, poll.Oneshot))
		require.Contains(t, pollOnce(t, p, 0), poll.Token(4), "oneshot rearmed after the exit (rule 5)")
		require.NoError(t, p.Reregister(we, 5, poll.Readable, poll.Edge))
		require.Contains(t, pollOnce(t, p, 0), poll.Token(5), "edge reregistered after the exit (rule 5)")
		require.NoError(t, p.Deregister(wl))
		expectNoEvent(t, p, 2)

		// Registered after the exit: reported at once.
		waitFor(t, "the late process to exit", func() bool { _, err := wlate.Status(); return err == nil })
		require.NoError(t, p.Register(wlate, 6, poll.Readable, poll.Edge))
		require.Contains(t, pollOnce(t, p, 0), poll.Token(6))
		expectNoEvent(t, p, 6)
		// Interest without Readable: never reported.
		require.NoError(t, p.Reregister(wlate, 7, poll.Writable, poll.Level))
		expectNoEvent(t, p, 7)
		require.ErrorIs(t, p.Register(wlate, 8, poll.Readable, poll.Level), poll.ErrAlreadyRegistered)
		require.NoError(t, p.Reregister(wlate, 8, poll.Readable|poll.Writable, poll.Level))
		require.Equal(t, poll.Readable, pollOnce(t, p, 0)[8], "Readable back in the interest: reported")
		require.NoError(t, p.Deregister(wlate))
		require.NoError(t, p.Register(wlate, 9, poll.Writable|poll.Hup, poll.Edge))
		expectNoEvent(t, p, 9)
		require.NoError(t, p.Deregister(wlate))
		require.ErrorIs(t, p.Deregister(wlate), poll.ErrNotRegistered)
	})
}

// The pidfd_open path (used where the runtime holds no pidfd for the
// process, and before Go 1.26) works as the duplicate of the runtime's does.
func TestPidfdOpen(t *testing.T) {
	old := useRuntimePidfd
	useRuntimePidfd = false
	defer func() { useRuntimePidfd = old }()
	p := polltest.New(t)
	cmd := start(t, "/bin/sleep", "100")
	w := watchOn(t, cmd, paths[0])
	require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
	expectNoEvent(t, p, 1)
	require.NoError(t, w.Signal(syscall.SIGTERM))
	waitEvent(t, p, 1)
	st, err := w.Status()
	require.NoError(t, err)
	_ = cmd.Wait()
	requireSameStatus(t, st, cmd.ProcessState)

	cmd = start(t, "/bin/true")
	require.NoError(t, cmd.Wait())
	_, err = Watch(cmd.Process)
	require.ErrorIs(t, err, ErrReaped)
}

// Reaped before the Watcher read the status: ErrReaped on the pidfd path.
// On the SIGCHLD path the table's own look at the exit (the event's
// source) keeps the status.
func TestReapedBeforeStatus(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		cmd := sh(t, "exit 5")
		w := watchOn(t, cmd, pa)
		require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
		waitEvent(t, p, 1)
		_ = cmd.Wait()
		st, err := w.Status()
		if pa.want == SIGCHLD {
			require.NoError(t, err)
			requireSameStatus(t, st, cmd.ProcessState)
		} else {
			require.ErrorIs(t, err, ErrReaped)
		}
	})
}

// Wait reaps for the owner: ErrNotExited before the exit (it never blocks
// on a running process), the state after it; Status agrees afterwards.
func TestWait(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		r, wr, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		cmd := exec.Command("/bin/sh", "-c", "read x; exit 9")
		cmd.Stdin = r
		require.NoError(t, cmd.Start())
		w := watchOn(t, cmd, pa)
		require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
		_, err = w.Wait()
		require.ErrorIs(t, err, ErrNotExited)
		require.NoError(t, wr.Close())
		waitEvent(t, p, 1)
		ps, err := w.Wait()
		require.NoError(t, err)
		require.Equal(t, 9, ps.ExitCode())
		st, err := w.Status()
		require.NoError(t, err)
		requireSameStatus(t, st, ps)
		_, err = w.Wait()
		require.Error(t, err, "second Wait")

		// Watch (an os.Process, no Cmd): Wait is p.Wait.
		proc, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "exit 4"}, &os.ProcAttr{})
		require.NoError(t, err)
		w2, err := Watch(proc, pa.opts...)
		require.NoError(t, err)
		defer w2.Close()
		require.NoError(t, p.Register(w2, 2, poll.Readable, poll.Edge))
		waitEvent(t, p, 2)
		ps, err = w2.Wait()
		require.NoError(t, err)
		require.Equal(t, 4, ps.ExitCode())
	})
}

// One child, two Watchers on two Polls: both are notified, neither reaps.
func TestTwoPollsOneChild(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p1, p2 := polltest.New(t), polltest.New(t)
		cmd := start(t, "/bin/sleep", "100")
		w1, w2 := watchOn(t, cmd, pa), watchOn(t, cmd, pa)
		require.NoError(t, p1.Register(w1, 1, poll.Readable, poll.Edge))
		require.NoError(t, p2.Register(w2, 2, poll.Readable, poll.Edge))
		require.ErrorIs(t, p2.Register(w1, 3, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
		require.NoError(t, w1.Signal(syscall.SIGTERM))
		waitEvent(t, p1, 1)
		waitEvent(t, p2, 2)
		s1, err := w1.Status()
		require.NoError(t, err)
		s2, err := w2.Status()
		require.NoError(t, err)
		require.Equal(t, s1, s2)
		require.Equal(t, "Z", procState(cmd.Process.Pid))
		_ = cmd.Wait()
		requireSameStatus(t, s1, cmd.ProcessState)
	})
}

// Close: no event for the Watcher from a Poll call started afterwards
// (rule 7), the process is left alone, and a closed Watcher refuses
// everything with ErrClosed.
func TestClose(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		cmd := sh(t, "exit 6")
		w := watchOn(t, cmd, pa)
		require.NoError(t, p.Register(w, 1, poll.Readable, poll.Level))
		waitEvent(t, p, 1)
		require.NoError(t, w.Close())
		expectNoEvent(t, p, 1)
		require.ErrorIs(t, w.Close(), ErrClosed)
		_, err := w.Status()
		require.ErrorIs(t, err, ErrClosed)
		_, err = w.Wait()
		require.ErrorIs(t, err, ErrClosed)
		require.ErrorIs(t, w.Signal(syscall.SIGTERM), ErrClosed)
		require.ErrorIs(t, p.Register(w, 2, poll.Readable, poll.Edge), ErrClosed)
		require.ErrorIs(t, p.Deregister(w), ErrClosed)
		require.Equal(t, "Z", procState(cmd.Process.Pid), "Close touched the process")
		require.Error(t, cmd.Wait()) // exit status 6
		require.Equal(t, 6, cmd.ProcessState.ExitCode())

		// Closing a Watcher whose Poll is closed.
		q, err := poll.New()
		require.NoError(t, err)
		cmd = start(t, "/bin/sleep", "100")
		w = watchOn(t, cmd, pa)
		require.NoError(t, q.Register(w, 1, poll.Readable, poll.Edge))
		require.NoError(t, q.Close())
		// ... which may then move to another Poll.
		require.NoError(t, p.Register(w, 9, poll.Readable, poll.Edge))
		require.NoError(t, w.Signal(syscall.SIGKILL))
		waitEvent(t, p, 9)
		require.NoError(t, w.Close())
	})
}

// Bad input: exported sentinels, never a panic.
func TestBadInput(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		_, err := Watch(nil, pa.opts...)
		require.ErrorIs(t, err, ErrInvalidArgument)
		_, err = WatchCmd(nil, pa.opts...)
		require.ErrorIs(t, err, ErrInvalidArgument)
		_, err = WatchCmd(exec.Command("/bin/true"), pa.opts...)
		require.ErrorIs(t, err, ErrInvalidArgument, "not started")

		reaped := start(t, "/bin/true")
		require.NoError(t, reaped.Wait())
		_, err = WatchCmd(reaped, pa.opts...)
		require.ErrorIs(t, err, ErrReaped)
		_, err = Watch(reaped.Process, pa.opts...)
		require.ErrorIs(t, err, ErrReaped)

		released := start(t, "/bin/sleep", "100")
		proc, err := os.FindProcess(released.Process.Pid)
		require.NoError(t, err)
		require.NoError(t, proc.Release())
		_, err = Watch(proc, pa.opts...)
		require.ErrorIs(t, err, ErrInvalidArgument, "released")

		parent, err := os.FindProcess(os.Getppid())
		require.NoError(t, err)
		_, err = Watch(parent, pa.opts...)
		require.ErrorIs(t, err, ErrNotChild)
		require.NoError(t, parent.Release()) // its pidfd, now rather than at a GC (TestNoLeak counts)

		p := polltest.New(t)
		for _, w := range []*Watcher{nil, {}} {
			require.ErrorIs(t, w.Close(), ErrInvalidArgument)
			require.ErrorIs(t, p.Register(w, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
			require.ErrorIs(t, w.Reregister(p, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
			require.ErrorIs(t, w.Deregister(p), ErrInvalidArgument)
			_, err := w.Status()
			require.ErrorIs(t, err, ErrInvalidArgument)
			_, err = w.Wait()
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorIs(t, w.Signal(syscall.SIGTERM), ErrInvalidArgument)
			require.Zero(t, w.Pid())
			require.Empty(t, w.Method())
		}

		cmd := start(t, "/bin/sleep", "100")
		w := watchOn(t, cmd, pa)
		require.ErrorIs(t, w.Signal(nil), ErrInvalidArgument)
		require.ErrorIs(t, w.Register(nil, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
		require.ErrorIs(t, p.Deregister(w), poll.ErrNotRegistered)
		require.ErrorIs(t, p.Reregister(w, 1, poll.Readable, poll.Edge), poll.ErrNotRegistered)
		require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
		require.ErrorIs(t, p.Register(w, 2, poll.Readable, poll.Edge), poll.ErrAlreadyRegistered, "double Watch from one Poll")
		q := polltest.New(t)
		require.ErrorIs(t, q.Register(w, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
		require.ErrorIs(t, q.Reregister(w, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
		require.ErrorIs(t, p.Register(w, 1, poll.Ready(1<<7), poll.Edge), poll.ErrInvalidInterest)
	})
}

func TestErrorsMatch(t *testing.T) {
	require.True(t, errors.Is(ErrClosed, poll.ErrClosed))
	require.True(t, errors.Is(ErrInvalidArgument, poll.ErrInvalidArgument))
}

// Two Watchers of one child, and one is closed while the child runs: the
// other is still notified of the exit, and, on the SIGCHLD path, the pid
// stays in the table until then (Close takes out that Watcher alone).
func TestCloseOneOfTwoWatchers(t *testing.T) {
	forPaths(t, func(t *testing.T, pa path) {
		p := polltest.New(t)
		cmd, release := startReading(t)
		before := ReadStats()
		w1, w2 := watchOn(t, cmd, pa), watchOn(t, cmd, pa)
		require.NoError(t, p.Register(w1, 1, poll.Readable, poll.Edge))
		require.NoError(t, p.Register(w2, 2, poll.Readable, poll.Edge))
		require.NoError(t, w1.Close())
		if pa.want == SIGCHLD {
			require.Equal(t, before.Watched+1, ReadStats().Watched, "closing one Watcher of a pid took the pid out of the table")
		}
		release()
		waitEvent(t, p, 2)
		st, err := w2.Status()
		require.NoError(t, err)
		require.NoError(t, ignoreExit(cmd.Wait()))
		requireSameStatus(t, st, cmd.ProcessState)
		expectNoEvent(t, p, 1)
	})
}
