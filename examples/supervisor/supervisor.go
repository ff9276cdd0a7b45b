//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/unipoll/unipoll/child"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/signal"
	"github.com/unipoll/unipoll/timer"
)

// config is the supervisor's command-line flags.
type config struct {
	backoff, maxBackoff, stable time.Duration
	maxRestarts                 int // -1: no limit
}

// Tokens: one for the signals, one for the back-off timer, then three per
// command: its child Watcher, its stdout and its stderr.
const (
	sigToken   poll.Token = 1
	timerToken poll.Token = 2
	firstTask  poll.Token = 3
)

// Which of a command's tokens an event is for.
const (
	exitSource = iota
	stdoutSource
	stderrSource
	sourcesPerTask
)

func taskToken(i, source int) poll.Token { return firstTask + poll.Token(i*sourcesPerTask+source) }

// task is one command line and its current process, if any.
type task struct {
	n        int // 1-based, for the reports
	command  string
	cmd      *exec.Cmd      // the running process, or nil
	w        *child.Watcher // its Watcher, or nil
	out      [2]*output     // its stdout and stderr, until they end or it exits
	started  time.Time
	restarts int
	delay    time.Duration // the next back-off
	restart  timer.Timeout // the scheduled restart, while waiting
	waiting  bool          // a restart is scheduled on the timer
	done     bool          // given up, or stopped by a signal
}

// supervisor owns the Poll and everything registered with it; one goroutine
// (run's) uses it.
type supervisor struct {
	cfg      config
	out      io.Writer
	p        *poll.Poll
	sigs     *signal.Watcher
	backoff  *timer.Timer[int] // restarts due, as task indexes
	tasks    []*task
	stopping bool
	buf      []byte // for reading the commands' output
}

func (s *supervisor) say(format string, args ...any) {
	fmt.Fprintf(s.out, "supervisor: "+format+"\n", args...)
}

// run supervises commands until every one of them is done: given up after
// maxRestarts, or ended after a SIGTERM or SIGINT.
func run(commands []string, cfg config, out io.Writer) error {
	p, err := poll.New()
	if err != nil {
		return err
	}
	defer p.Close()
	// The Watcher exists before any child does, so a SIGTERM that arrives
	// while the children start is not lost: it waits in the Watcher.
	sigs, err := signal.New(syscall.SIGTERM, syscall.SIGINT)
	if err != nil {
		return err
	}
	defer sigs.Close()
	if err := p.Register(sigs, sigToken, poll.Readable, poll.Edge); err != nil {
		return err
	}
	backoff, err := timer.New[int]()
	if err != nil {
		return err
	}
	defer backoff.Close()
	if err := p.Register(backoff, timerToken, poll.Readable, poll.Edge); err != nil {
		return err
	}
	s := &supervisor{cfg: cfg, out: out, p: p, sigs: sigs, backoff: backoff, buf: make([]byte, 16<<10)}
	defer s.cleanup()
	for i, c := range commands {
		s.tasks = append(s.tasks, &task{n: i + 1, command: c, delay: cfg.backoff})
		s.start(i)
	}
	events := poll.NewEvents(64)
	for !s.finished() {
		if _, err := p.Poll(events, -1); err != nil {
			return err
		}
		for ev := range events.All() {
			switch ev.Token {
			case sigToken:
				s.signalled()
			case timerToken:
				// Edge: take every restart that is due; the next one
				// makes a new event.
				for i := range s.backoff.Drain() {
					s.restartDue(i)
				}
			default:
				k := int(ev.Token - firstTask)
				i, source := k/sourcesPerTask, k%sourcesPerTask
				if source == exitSource {
					s.exited(i)
				} else {
					s.readable(i, source-stdoutSource)
				}
			}
		}
	}
	s.say("all commands are done")
	return nil
}

// start starts task i's command with pipes for its stdout and stderr
// (child.Start), and watches it. Its output comes back through the Poll,
// line by line, with no goroutine copying it, and cmd.Wait() waits for the
// process alone, never for a pipe that a process it left running still
// holds. A command that cannot be started, or watched, is given up.
func (s *supervisor) start(i int) {
	t := s.tasks[i]
	cmd := exec.Command("/bin/sh", "-c", t.command)
	pipes, err := child.Start(cmd, child.Stdout|child.Stderr)
	if err != nil {
		s.say("[%d] %v; giving up", t.n, err)
		t.done = true
		return
	}
	w, err := child.WatchCmd(cmd)
	if err == nil {
		err = s.p.Register(w, taskToken(i, exitSource), poll.Readable, poll.Edge)
	}
	var outs [2]*output
	for k, r := range []*child.PipeReader{pipes.Stdout, pipes.Stderr} {
		if err == nil {
			outs[k], err = newOutput(s.p, taskToken(i, stdoutSource+k), t.n, [2]string{"out", "err"}[k], r)
		}
	}
	if err != nil {
		// Not watched, so nothing would ever report it: end it here.
		s.say("[%d] watching pid %d: %v; giving up", t.n, cmd.Process.Pid, err)
		_ = pipes.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if w != nil {
			_ = w.Close()
		}
		t.done = true
		return
	}
	t.cmd, t.w, t.out, t.started = cmd, w, outs, time.Now()
	s.say("[%d] started pid %d: %s", t.n, cmd.Process.Pid, t.command)
}

// readable passes on the output task i's stream k (0 stdout, 1 stderr)
// has for us; at its end the stream is closed.
func (s *supervisor) readable(i, k int) {
	t := s.tasks[i]
	if o := t.out[k]; o != nil && o.readable(s.out, s.buf) {
		t.out[k] = nil
	}
}

// endOutput passes on what task i's streams still hold, and closes them:
// the command has exited, so everything it wrote is there (see output).
func (s *supervisor) endOutput(t *task) {
	for k, o := range t.out {
		if o != nil && !o.readable(s.out, s.buf) {
			o.close(s.out)
		}
		t.out[k] = nil
	}
}

// exited reports task i's exit, reaps the process, and schedules a
// restart unless the supervisor is stopping or the task has used up its
// restarts.
func (s *supervisor) exited(i int) {
	t := s.tasks[i]
	if t.w == nil {
		return // a stale event cannot come (Close deregisters), but be safe
	}
	st, err := t.w.Status()
	if errors.Is(err, child.ErrNotExited) {
		return // spurious: allowed by the contract
	}
	pid := t.w.Pid()
	_ = t.w.Close()
	s.endOutput(t)
	_ = t.cmd.Wait() // returns at once: the process has exited, and no goroutine copies its output
	ran := time.Since(t.started).Round(time.Millisecond)
	how := st.String()
	if err != nil { // reaped before Status could read it: cmd.Wait has it
		how = fmt.Sprintf("%v (%v)", t.cmd.ProcessState, err)
	}
	s.say("[%d] pid %d exited: %s after %v", t.n, pid, how, ran)
	t.cmd, t.w = nil, nil
	switch {
	case s.stopping:
		t.done = true
	case s.cfg.maxRestarts >= 0 && t.restarts >= s.cfg.maxRestarts:
		s.say("[%d] restarted %d times; giving up", t.n, t.restarts)
		t.done = true
	default:
		if ran >= s.cfg.stable {
			t.delay = s.cfg.backoff
		}
		s.say("[%d] restart %d in %v", t.n, t.restarts+1, t.delay)
		to, err := s.backoff.Set(t.delay, i)
		if err != nil {
			s.say("[%d] back-off timer: %v; giving up", t.n, err)
			t.done = true
			return
		}
		t.restart, t.waiting = to, true
		t.delay = min(2*t.delay, s.cfg.maxBackoff)
	}
}

// restartDue starts task i again when its back-off has expired.
func (s *supervisor) restartDue(i int) {
	t := s.tasks[i]
	if !t.waiting || s.stopping {
		return // cancelled by a signal, which may race the expiry
	}
	t.waiting, t.restart = false, timer.Timeout{}
	t.restarts++
	s.start(i)
}

// signalled forwards SIGTERM or SIGINT to every running child and stops
// restarting; the supervisor then exits once the children have. A second
// signal is forwarded too.
func (s *supervisor) signalled() {
	for sig, ok := s.sigs.TryRecv(); ok; sig, ok = s.sigs.TryRecv() {
		s.stopping = true
		running := 0
		for _, t := range s.tasks {
			if t.waiting {
				t.waiting, t.done = false, true
				s.backoff.Cancel(t.restart) // false if it expired meanwhile: restartDue ignores it
			}
			if t.w != nil {
				running++
				if err := t.w.Signal(sig); err != nil {
					s.say("[%d] forwarding %v: %v", t.n, sig, err)
				}
			}
		}
		s.say("got %v; forwarded to %d running command(s)", sig, running)
	}
}

// finished reports whether no task runs or waits for a restart.
func (s *supervisor) finished() bool {
	for _, t := range s.tasks {
		if !t.done {
			return false
		}
	}
	return true
}

// cleanup kills and reaps what still runs after an error.
func (s *supervisor) cleanup() {
	for _, t := range s.tasks {
		if t.w != nil {
			_ = t.w.Close()
			_ = t.cmd.Process.Kill()
			_ = t.cmd.Wait()
			s.endOutput(t)
		}
	}
}
