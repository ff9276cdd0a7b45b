//go:build linux

package child

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// A child's output, more than a pipe holds, read on the Poll with its exit
// event, in every mode: all of stdout and stderr arrives, in order, each
// ends with io.EOF, and cmd.Wait() after the exit event returns the status
// the Watcher read.
func TestStartOutput(t *testing.T) {
	const lines = 20000 // about 200 KB: more than a pipe's 64 KiB
	var want strings.Builder
	for i := range lines {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); done; echo oops >&2; exit 3`, lines)
	for _, opts := range modes {
		t.Run(opts.String(), func(t *testing.T) {
			p := polltest.New(t)
			cmd, pipes := startPiped(t, Stdout|Stderr, script)
			require.Nil(t, pipes.Stdin)
			w := watchOn(t, cmd, paths[0])
			require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
			out := newReader(t, p, pipes.Stdout, 2, opts)
			errs := newReader(t, p, pipes.Stderr, 3, opts)
			exited := false
			pump(t, p, func() bool { return exited && out.eof && errs.eof }, func(ev poll.Event) {
				switch ev.Token {
				case 1:
					require.False(t, exited, "exit reported twice")
					exited = true
					st, err := w.Status()
					require.NoError(t, err)
					require.Equal(t, 3, st.ExitCode())
				case 2:
					out.onEvent(t, p, ev.Ready)
				case 3:
					errs.onEvent(t, p, ev.Ready)
				}
			})
			require.Equal(t, want.String(), out.got.String())
			require.Equal(t, "oops\n", errs.got.String())
			var exit *exec.ExitError
			require.ErrorAs(t, waitWithin(t, cmd, eventWait), &exit)
			require.Equal(t, 3, cmd.ProcessState.ExitCode())
		})
	}
}

// A grandchild that inherits the child's stdout does not hold cmd.Wait():
// `sh -c 'sleep 5 & echo $!'` exits at once, and cmd.Wait() after the exit
// event returns at once, while the sleep still holds the pipe (a read
// would block: no EOF). The pipe reaches EOF only when the grandchild is
// killed. (With a Go writer as cmd.Stdout, cmd.Wait() would wait the 5 s.)
func TestStartGrandchildHoldsNoWait(t *testing.T) {
	for _, pa := range paths {
		t.Run(pa.name, func(t *testing.T) {
			p := polltest.New(t)
			cmd, pipes := startPiped(t, Stdout, "sleep 5 & echo $!")
			w := watchOn(t, cmd, pa)
			require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
			out := newReader(t, p, pipes.Stdout, 2, poll.Edge)
			exited := false
			pump(t, p, func() bool { return exited && strings.HasSuffix(out.got.String(), "\n") }, func(ev poll.Event) {
				switch ev.Token {
				case 1:
					exited = true
				case 2:
					out.onEvent(t, p, ev.Ready)
				}
			})
			grandchild, err := strconv.Atoi(strings.TrimSpace(out.got.String()))
			require.NoError(t, err, "the grandchild's pid, from the child's stdout")
			waitFor(t, "the grandchild to sleep", func() bool { return procState(grandchild) == "S" })

			require.NoError(t, waitWithin(t, cmd, 2*time.Second), "cmd.Wait() after the exit event, the grandchild holding stdout")
			require.False(t, out.eof)
			n, err := pipes.Stdout.Read(make([]byte, 16))
			require.Equal(t, 0, n)
			require.Equal(t, ErrWouldBlock, err, "the grandchild still holds the pipe")

			require.NoError(t, syscall.Kill(grandchild, syscall.SIGKILL))
			pump(t, p, func() bool { return out.eof }, func(ev poll.Event) {
				require.Equal(t, poll.Token(2), ev.Token)
				out.onEvent(t, p, ev.Ready)
			})
		})
	}
}

// Stdin with back pressure: 1 MiB through `cat` and back, on one Poll, in
// every mode. The writer stops at ErrWouldBlock (which must happen: two
// pipes and cat hold far less) and goes on at the next Writable event;
// closing stdin ends cat, whose stdout then reaches EOF.
func TestStartStdinBackPressure(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for _, opts := range modes {
		t.Run(opts.String(), func(t *testing.T) {
			p := polltest.New(t)
			cmd, pipes := startPiped(t, Stdin|Stdout, "exec cat")
			w := watchOn(t, cmd, paths[0])
			require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
			require.NoError(t, p.Register(pipes.Stdin, 2, poll.Writable, opts))
			out := newReader(t, p, pipes.Stdout, 3, opts)
			sent, blocked, exited := 0, 0, false
			write := func() {
				for sent < len(data) {
					n, err := pipes.Stdin.Write(data[sent:min(sent+100_000, len(data))])
					sent += n
					if errors.Is(err, ErrWouldBlock) {
						blocked++
						if opts.IsOneshot() {
							require.NoError(t, p.Reregister(pipes.Stdin, 2, poll.Writable, opts))
						}
						return
					}
					require.NoError(t, err)
				}
				require.NoError(t, pipes.Stdin.Close()) // cat's end of input
			}
			pump(t, p, func() bool { return exited && out.eof }, func(ev poll.Event) {
				switch ev.Token {
				case 1:
					exited = true
				case 2:
					require.Less(t, sent, len(data), "Writable after Close")
					write()
				case 3:
					out.onEvent(t, p, ev.Ready)
				}
			})
			require.Equal(t, len(data), sent)
			require.Positive(t, blocked, "Write never returned ErrWouldBlock")
			require.True(t, bytes.Equal(data, []byte(out.got.String())), "cat gave back %d bytes, different from the %d sent", out.got.Len(), len(data))
			require.NoError(t, waitWithin(t, cmd, eventWait))
		})
	}
}

// What Read and Write say: ErrWouldBlock (unwrapped, and EAGAIN) while
// nothing is there, data, then io.EOF for good; nothing reported before
// the data; EPIPE from a Write once nobody reads, which this process
// survives, with the pipe reported writable.
func TestPipeResults(t *testing.T) {
	p := polltest.New(t)
	cmd, pipes := startPiped(t, Stdin|Stdout, `read x; echo "got $x"`)
	require.NoError(t, p.Register(pipes.Stdout, 1, poll.Readable|poll.Hup, poll.Edge))
	buf := make([]byte, 64)
	n, err := pipes.Stdout.Read(buf)
	require.Zero(t, n)
	require.Equal(t, ErrWouldBlock, err)
	require.ErrorIs(t, err, syscall.EAGAIN)
	expectNoEvent(t, p, 1)
	n, err = pipes.Stdout.Read(nil)
	require.Zero(t, n)
	require.NoError(t, err, "a zero-length Read")

	n, err = pipes.Stdin.Write([]byte("hi\n"))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	ev := waitEvent(t, p, 1)
	require.NotZero(t, ev&poll.Readable)
	n, err = pipes.Stdout.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "got hi\n", string(buf[:n]))

	if ev&poll.Hup == 0 { // the child had not exited yet: its end is an edge of its own
		require.Equal(t, poll.Readable|poll.Hup, waitEvent(t, p, 1)&(poll.Readable|poll.Hup), "the end of the stream")
	}
	for range 2 {
		n, err = pipes.Stdout.Read(buf)
		require.Zero(t, n)
		require.Equal(t, io.EOF, err)
	}
	require.NoError(t, waitWithin(t, cmd, eventWait))

	require.NoError(t, p.Register(pipes.Stdin, 2, poll.Writable, poll.Level))
	require.NotZero(t, waitEvent(t, p, 2)&poll.Writable, "a pipe nobody reads is reported (Error, so Writable)")
	n, err = pipes.Stdin.Write([]byte("anyone?"))
	require.Zero(t, n)
	require.ErrorIs(t, err, syscall.EPIPE)
	require.Contains(t, err.Error(), "stdin of pid "+strconv.Itoa(cmd.Process.Pid))
}

// Close: a closed pipe is deregistered (no event from a later Poll call)
// and refuses everything with an error matching ErrClosed and os.ErrClosed;
// a child writing to a closed stdout dies of SIGPIPE; closing stdin is the
// child's end of input.
func TestPipeClose(t *testing.T) {
	p := polltest.New(t)
	cmd, pipes := startPiped(t, Stdin|Stdout|Stderr, "read x; exec cat")
	w := watchOn(t, cmd, paths[0])
	require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
	require.NoError(t, p.Register(pipes.Stdout, 2, poll.Readable, poll.Level))
	require.NoError(t, p.Register(pipes.Stderr, 3, poll.Readable, poll.Level))
	require.NoError(t, pipes.Stdout.Close())
	_, err := pipes.Stdin.Write([]byte("go\nthis goes nowhere\n"))
	require.NoError(t, err)
	require.NoError(t, pipes.Stdin.Close())
	waitEvent(t, p, 1)
	st, err := w.Status()
	require.NoError(t, err)
	require.Equal(t, syscall.SIGPIPE, st.Signal(), "cat writing to a closed pipe: %v", st)
	require.Equal(t, poll.Readable, waitEvent(t, p, 3), "stderr's end, while stdout (closed) says nothing")
	for range 3 {
		require.NotContains(t, pollOnce(t, p, noEventWait), poll.Token(2), "a closed pipe reported")
	}

	for _, c := range []interface {
		Close() error
		Fd() int
		poll.Evented
	}{pipes.Stdout, pipes.Stdin} {
		err := c.Close()
		require.ErrorIs(t, err, ErrClosed, "second Close")
		require.ErrorIs(t, err, poll.ErrClosed)
		require.Equal(t, -1, c.Fd())
		require.ErrorIs(t, p.Register(c, 9, poll.Readable, poll.Edge), ErrClosed)
		require.ErrorIs(t, p.Deregister(c), ErrClosed)
	}
	_, err = pipes.Stdout.Read(make([]byte, 8))
	require.ErrorIs(t, err, ErrClosed)
	require.Contains(t, err.Error(), "stdout of pid")
	_, err = pipes.Stdin.Write([]byte("x"))
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, pipes.Close(), "Stdio.Close skips the pipes closed already")
	require.ErrorIs(t, pipes.Stderr.Close(), ErrClosed)
	require.Error(t, cmd.Wait())
}
