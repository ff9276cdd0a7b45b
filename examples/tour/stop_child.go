package main

import (
	"fmt"
	"os/exec"

	"github.com/unipoll/unipoll/child"
	"github.com/unipoll/unipoll/poll"
)

// childStop: a child process's exit. The Watcher reads the exit status
// without reaping; the child stays its owner's (here this stop's) to
// reap with cmd.Wait, which then returns at once. Its stdout is a pipe
// from child.Start, which childOutputStop reads on the same Poll: no
// goroutine copies it, so cmd.Wait waits for no pipe.
type childStop struct {
	cmd   *exec.Cmd
	w     *child.Watcher
	pipes *child.Stdio
}

func (*childStop) name() string { return "child" }

func (s *childStop) start(p *poll.Poll, tok poll.Token, say sayFunc) error {
	cmd := exec.Command("/bin/sh", "-c", "echo hello from the child; exit 3")
	pipes, err := child.Start(cmd, child.Stdout)
	if err != nil {
		return err
	}
	s.cmd, s.pipes = cmd, pipes
	w, err := child.WatchCmd(cmd)
	if err != nil {
		return err
	}
	s.w = w
	if err := p.Register(w, tok, poll.Readable, poll.Edge); err != nil {
		return err
	}
	say("Started `sh -c 'echo hello from the child; exit 3'` (pid %d) with its stdout on a pipe (child.Start),", w.Pid())
	say("  and watched it (%s) as token %d.", w.Method(), tok)
	return nil
}

func (s *childStop) handle(_ poll.Event, say sayFunc) (bool, error) {
	st, err := s.w.Status()
	if err != nil {
		return false, err
	}
	say("pid %d %v, not reaped yet", st.Pid(), st)
	err = s.cmd.Wait()
	say("then cmd.Wait() returned at once: %v", err)
	if code := s.cmd.ProcessState.ExitCode(); code != 3 {
		return false, fmt.Errorf("cmd.Wait reported exit code %d, the Watcher 3", code)
	}
	return true, nil
}

// close reaps the child if the tour ended before its exit was handled.
func (s *childStop) close() error {
	var err error
	if s.w != nil {
		err = s.w.Close()
	}
	if s.cmd != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	_ = s.pipes.Close()
	return err
}
