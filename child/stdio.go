//go:build unix

package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/onpoll/fdguard"
)

// Streams names a command's standard streams, for Start to give pipes.
type Streams uint8

// The standard streams; combine them with |.
const (
	Stdin  Streams = 1 << iota // the child's standard input: a PipeWriter here
	Stdout                     // its standard output: a PipeReader here
	Stderr                     // its standard error: a PipeReader here
)

const allStreams = Stdin | Stdout | Stderr

// Stdio holds this process's ends of the pipes Start made for a command:
// nil for a stream that was not asked for.
type Stdio struct {
	Stdin  *PipeWriter // what this process writes to the child's standard input
	Stdout *PipeReader // what this process reads of the child's standard output
	Stderr *PipeReader // what this process reads of the child's standard error
}

// Close closes every pipe s holds (see PipeReader.Close and
// PipeWriter.Close) and returns their errors joined. Pipes closed already
// are skipped; a nil Stdio has nothing to close.
func (s *Stdio) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, e := range []*pipeEnd{s.Stdin.end(), s.Stdout.end(), s.Stderr.end()} {
		if e != nil {
			if err := e.Close(); err != nil && !errors.Is(err, ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Start starts cmd with a pipe for each of the streams asked for, and
// returns this process's ends of them: non-blocking, close-on-exec, each a
// poll.Evented to register with a Poll. Watch the process with WatchCmd
// as for any command.
//
// The child's end of each pipe is given to cmd as an *os.File (cmd.Stdin,
// cmd.Stdout, cmd.Stderr), so os/exec connects it directly and starts no
// goroutine to copy it, and Start closes this process's copy of it once
// cmd.Start returns. So cmd.Wait() waits for the process alone, never for
// a pipe: it returns at once after the Watcher's exit event, even while a
// grandchild that inherited the pipe keeps it open. That grandchild delays
// only the pipe's io.EOF.
//
// Streams not asked for are left as cmd has them (see the package doc on
// what a Go writer there costs). Start refuses, wrapping
// ErrInvalidArgument, a nil or started command, an unknown stream, and a
// stream cmd sets already; if cmd.Start fails, its error is returned and
// every pipe is closed.
func Start(cmd *exec.Cmd, streams Streams) (*Stdio, error) {
	if err := checkStart(cmd, streams); err != nil {
		return nil, err
	}
	var s Stdio
	var theirs []*os.File // the child's ends
	undo := func(err error) (*Stdio, error) {
		for _, f := range theirs {
			_ = f.Close()
		}
		_ = s.Close()
		if streams&Stdin != 0 {
			cmd.Stdin = nil
		}
		if streams&Stdout != 0 {
			cmd.Stdout = nil
		}
		if streams&Stderr != 0 {
			cmd.Stderr = nil
		}
		return nil, err
	}
	for _, st := range []Streams{Stdin, Stdout, Stderr} {
		if streams&st == 0 {
			continue
		}
		var ours *pipeEnd
		switch st {
		case Stdin:
			s.Stdin = &PipeWriter{}
			ours = s.Stdin.end()
		case Stdout:
			s.Stdout = &PipeReader{}
			ours = s.Stdout.end()
		case Stderr:
			s.Stderr = &PipeReader{}
			ours = s.Stderr.end()
		}
		their, err := openStreamPipe(st, ours)
		if err != nil {
			return undo(err)
		}
		theirs = append(theirs, their)
		switch st {
		case Stdin:
			cmd.Stdin = their
		case Stdout:
			cmd.Stdout = their
		case Stderr:
			cmd.Stderr = their
		}
	}
	if err := cmd.Start(); err != nil {
		return undo(err)
	}
	// The child has its copies now. Ours must go, or the child's output
	// would never reach end of file (we would hold a write end) and its
	// input would never be full or broken (we would hold a read end).
	for _, f := range theirs {
		_ = f.Close()
	}
	pid := " of pid " + strconv.Itoa(cmd.Process.Pid)
	for _, e := range []*pipeEnd{s.Stdin.end(), s.Stdout.end(), s.Stderr.end()} {
		if e != nil {
			// Named once the pid is known; nothing else has seen the pipe.
			*e = fdguard.Opened(e.Sysfd(), e.Name()+pipeName(pid))
		}
	}
	return &s, nil
}

func checkStart(cmd *exec.Cmd, streams Streams) error {
	switch {
	case cmd == nil:
		return fmt.Errorf("%w: nil exec.Cmd", ErrInvalidArgument)
	case cmd.Process != nil:
		return fmt.Errorf("%w: exec.Cmd already started", ErrInvalidArgument)
	case streams&^allStreams != 0:
		return fmt.Errorf("%w: unknown streams %#x (child.Stdin, Stdout, Stderr)", ErrInvalidArgument, uint8(streams&^allStreams))
	case streams&Stdin != 0 && cmd.Stdin != nil:
		return fmt.Errorf("%w: exec.Cmd's Stdin is set already; Start would make it a pipe", ErrInvalidArgument)
	case streams&Stdout != 0 && cmd.Stdout != nil:
		return fmt.Errorf("%w: exec.Cmd's Stdout is set already; Start would make it a pipe", ErrInvalidArgument)
	case streams&Stderr != 0 && cmd.Stderr != nil:
		return fmt.Errorf("%w: exec.Cmd's Stderr is set already; Start would make it a pipe", ErrInvalidArgument)
	}
	return nil
}

// openStreamPipe makes the pipe for one stream and opens ours with our
// end: non-blocking, while the child's end stays blocking (as programs
// expect their stdio; the two ends are separate open file descriptions, so
// the flag of one is not the other's) and is returned as an *os.File for
// os/exec. Both are close-on-exec: the child gets its end through
// os/exec's dup2, which clears the flag on its copy.
func openStreamPipe(st Streams, ours *pipeEnd) (theirs *os.File, err error) {
	r, w, err := pipeFds()
	if err != nil {
		return nil, os.NewSyscallError("pipe", err)
	}
	our, their, name := r, w, "stdout"
	switch st {
	case Stdin:
		our, their, name = w, r, "stdin"
	case Stderr:
		name = "stderr"
	}
	if err := unix.SetNonblock(our, true); err != nil {
		_ = unix.Close(r)
		_ = unix.Close(w)
		return nil, os.NewSyscallError("fcntl", err)
	}
	*ours = fdguard.Opened(our, pipeName(name))
	return os.NewFile(uintptr(their), "|"+name), nil
}
