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

// Bad input to Start: an exported sentinel and no pipe left open, never a
// panic; a cmd.Start that fails closes every pipe and leaves cmd's streams
// as they were.
func TestStartBadInput(t *testing.T) {
	before := openPipes(t)
	_, err := Start(nil, Stdout)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = Start(exec.Command("/bin/true"), 1<<5)
	require.ErrorIs(t, err, ErrInvalidArgument, "unknown stream")
	for _, st := range []Streams{Stdin, Stdout, Stderr} {
		cmd := exec.Command("/bin/true")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		_, err = Start(cmd, st)
		require.ErrorIs(t, err, ErrInvalidArgument, "stream %d set already", st)
		require.Nil(t, cmd.Process, "started anyway")
	}
	started := start(t, "/bin/true")
	_, err = Start(started, Stdout)
	require.ErrorIs(t, err, ErrInvalidArgument, "started already")

	missing := exec.Command("/nonexistent/program")
	_, err = Start(missing, Stdin|Stdout|Stderr)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Nil(t, missing.Stdin)
	require.Nil(t, missing.Stdout)
	require.Nil(t, missing.Stderr)
	require.Equal(t, before, openPipes(t), "pipes left open by a failed Start")

	// No stream asked for: a plain start.
	cmd := exec.Command("/bin/true")
	pipes, err := Start(cmd, 0)
	require.NoError(t, err)
	require.Equal(t, Stdio{}, *pipes)
	require.NoError(t, cmd.Wait())
}

// A nil or zero pipe refuses everything with ErrInvalidArgument and
// touches no descriptor (the zero fd is stdin); a nil Stdio closes
// nothing.
func TestZeroPipes(t *testing.T) {
	p := polltest.New(t)
	for _, r := range []*PipeReader{nil, {}} {
		_, err := r.Read(make([]byte, 1))
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorIs(t, r.Close(), ErrInvalidArgument)
		require.ErrorIs(t, p.Register(r, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
		require.ErrorIs(t, r.Reregister(p, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
		require.ErrorIs(t, r.Deregister(p), ErrInvalidArgument)
		require.Equal(t, -1, r.Fd())
		require.Empty(t, r.String())
	}
	for _, w := range []*PipeWriter{nil, {}} {
		_, err := w.Write([]byte("x"))
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorIs(t, w.Close(), ErrInvalidArgument)
		require.ErrorIs(t, p.Register(w, 1, poll.Writable, poll.Edge), ErrInvalidArgument)
		require.Equal(t, -1, w.Fd())
	}
	var s *Stdio
	require.NoError(t, s.Close())
}

// Registration follows the socket's rules: one Poll at a time (until that
// one is closed), Reregister and Deregister only with it, bad arguments
// refused by the Poll's own checks.
func TestPipeRegistration(t *testing.T) {
	p, q := polltest.New(t), polltest.New(t)
	_, pipes := startPiped(t, Stdout, "exec sleep 100")
	r := pipes.Stdout
	require.Contains(t, r.String(), "stdout of pid ")
	require.Positive(t, r.Fd())
	require.ErrorIs(t, p.Deregister(r), poll.ErrNotRegistered)
	require.ErrorIs(t, p.Reregister(r, 1, poll.Readable, poll.Edge), poll.ErrNotRegistered)
	require.ErrorIs(t, r.Register(nil, 1, poll.Readable, poll.Edge), ErrInvalidArgument)
	require.ErrorIs(t, p.Register(r, 1, poll.Ready(1<<7), poll.Edge), poll.ErrInvalidInterest)
	require.NoError(t, p.Register(r, 1, poll.Readable, poll.Edge))
	require.ErrorIs(t, p.Register(r, 2, poll.Readable, poll.Edge), poll.ErrAlreadyRegistered)
	require.ErrorIs(t, q.Register(r, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, q.Reregister(r, 1, poll.Readable, poll.Edge), poll.ErrRegisteredElsewhere)
	require.ErrorIs(t, q.Deregister(r), poll.ErrRegisteredElsewhere)
	require.NoError(t, p.Reregister(r, 3, poll.Readable, poll.Level))
	require.NoError(t, p.Deregister(r))
	require.NoError(t, q.Register(r, 4, poll.Readable, poll.Edge), "after Deregister, another Poll")
	require.NoError(t, q.Close())
	require.NoError(t, p.Register(r, 5, poll.Readable, poll.Edge), "the first Poll closed: it holds nothing")
	require.NoError(t, r.Close())
}

// Pipes leave nothing behind: after a hundred commands started with three
// pipes each, run, read and closed, as many pipe descriptors are open as
// before.
func TestPipesNoLeak(t *testing.T) {
	before := openPipes(t)
	p := polltest.New(t)
	for i := range 100 {
		cmd := exec.Command("/bin/sh", "-c", "echo out; echo err >&2")
		pipes, err := Start(cmd, Stdin|Stdout|Stderr)
		require.NoError(t, err)
		if i%2 == 0 {
			require.NoError(t, p.Register(pipes.Stdout, 1, poll.Readable, poll.Edge))
		}
		require.NoError(t, cmd.Wait())
		require.NoError(t, pipes.Close())
	}
	require.Equal(t, before, openPipes(t))
}
