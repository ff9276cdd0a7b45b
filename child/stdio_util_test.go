//go:build linux

package child

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// Helpers for the pipe tests: real children with real pipes, one Poll.

// modes are the trigger modes every pipe test runs in.
var modes = []poll.PollOpt{poll.Edge, poll.Level, poll.Oneshot}

// startPiped starts /bin/sh -c script in a process group of its own, with
// pipes for streams. The cleanup closes the pipes, kills the group (a
// grandchild left behind included) and reaps the child if the test did not.
func startPiped(t testing.TB, streams Streams, script string) (*exec.Cmd, *Stdio) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipes, err := Start(cmd, streams)
	require.NoError(t, err)
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = pipes.Close()
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
	})
	return cmd, pipes
}

// reader reads one PipeReader on a Poll the way its trigger mode asks, and
// keeps what it read.
type reader struct {
	r    *PipeReader
	tok  poll.Token
	opts poll.PollOpt
	buf  []byte // read size: small, so that a pass takes several reads
	got  strings.Builder
	eof  bool
}

func newReader(t testing.TB, p *poll.Poll, r *PipeReader, tok poll.Token, opts poll.PollOpt) *reader {
	t.Helper()
	require.NoError(t, p.Register(r, tok, poll.Readable|poll.Hup, opts)) // Hup: see the end in the event that brings it (Edge)
	return &reader{r: r, tok: tok, opts: opts, buf: make([]byte, 4096)}
}

// onEvent is one event's pass. Edge: read until a short read or
// ErrWouldBlock, no further (the documented end of a pass: a pipe that
// forgot to call Drained there loses its next edge on poll(2), and the test
// hangs). Level: one read (the next Poll reports the rest). Oneshot: read
// until ErrWouldBlock, then Reregister. At io.EOF the pipe is closed.
func (rd *reader) onEvent(t testing.TB, p *poll.Poll, ev poll.Ready) {
	t.Helper()
	require.False(t, rd.eof, "%v reported after io.EOF and Close", rd.r)
	for {
		n, err := rd.r.Read(rd.buf)
		rd.got.Write(rd.buf[:n])
		switch {
		case errors.Is(err, io.EOF):
			rd.eof = true
			require.NoError(t, rd.r.Close())
			return
		case errors.Is(err, ErrWouldBlock):
			require.Zero(t, n)
			if rd.opts.IsOneshot() {
				require.NoError(t, p.Reregister(rd.r, rd.tok, poll.Readable|poll.Hup, rd.opts))
			}
			return
		}
		require.NoError(t, err)
		require.Positive(t, n, "Read returned 0 bytes and no error")
		if rd.opts == poll.Level || (rd.opts == poll.Edge && n < len(rd.buf) && ev&poll.Hup == 0) {
			return
		}
	}
}

// pump polls p, handing each event to on, until done holds; it fails the
// test after eventWait.
func pump(t testing.TB, p *poll.Poll, done func() bool, on func(ev poll.Event)) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	events := poll.NewEvents(16)
	for !done() {
		require.True(t, time.Now().Before(deadline), "not done within %v", eventWait)
		_, err := p.Poll(events, time.Until(deadline))
		require.NoError(t, err)
		for ev := range events.All() {
			on(ev)
		}
	}
}

// openPipes counts this process's pipe descriptors, from /proc.
func openPipes(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "pipe:") {
			n++
		}
	}
	return n
}

// waitWithin calls cmd.Wait on a goroutine and fails the test unless it
// returns within d; the cleanup of startPiped ends a Wait still blocked.
func waitWithin(t testing.TB, cmd *exec.Cmd, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Cleanup(func() { // no goroutine left for goleak
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // startPiped's group, grandchildren included
			<-done
		})
		require.FailNow(t, "cmd.Wait() blocked", "cmd.Wait() had not returned %v after the exit event", time.Since(start).Round(time.Millisecond))
		return nil
	}
}
