//go:build linux

package proptest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/child"
	"github.com/unipoll/unipoll/poll"
)

// The child kind: a child.Watcher of a real child process (/bin/sh reading
// its exit code from a pipe), watched through a pidfd in the selector or
// through the SIGCHLD fallback (drawn). The state machine makes the child
// exit with a code, kills it with a signal, stops and continues it, reads
// its status, has its owner reap it at once (before anything asked the
// Watcher: the "reaped before seen" case), and closes the Watcher, which
// then reaps the child as its owner and checks cmd.Wait() against the
// status. After every step the SIGCHLD table (child.ReadStats) holds
// exactly the fallback children whose exit is not yet known, and counts
// every open fallback Watcher.
//
// What the model relies on (child/watcher.go):
//   - Readable is set from the exit on, for good; nothing else is ever
//     set, whatever the interest.
//   - Edge: the exit is one edge; on the pidfd path the descriptor is
//     registered oneshot in the kernel for an edge registration, so
//     nothing follows it. Reregister after the exit reports it (rule 5).
//   - Stop and continue are not exits: nothing changes.
//   - An Exit or Kill waits until Status no longer returns ErrNotExited:
//     then the pidfd is readable in the kernel (the kernel marks it before
//     waitid can see the exit), or the fallback has set the readiness
//     (Status sets it itself if no scan has yet). So the readiness is
//     exact between operations.
//   - OwnerReap never calls Status: cmd.Wait() returns after the exit, so
//     the pidfd is readable; on the fallback it waits until the pid has
//     left the table (ReadStats), which happens only once its Watcher is
//     ready (child/sigchld_linux.go, T1). Status then gives ErrReaped, or
//     on the fallback the status, if a scan saw the exit before the reap;
//     whichever it gives, it gives for good.

func init() { registerKind(childKind{}) }

// childExitWait bounds the wait for a child to exit after it was told to.
const childExitWait = 10 * time.Second

type childKind struct{}

func (childKind) name() string { return "child" }

func (childKind) open(t *rapid.T, w *world) impl {
	fallback := rapid.Bool().Draw(t, "SIGCHLD fallback (else pidfd)")
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", "read code; exit $code")
	cmd.Stdin = r
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = wr.Close()
		t.Fatalf("start: %v", err)
	}
	var opts []child.Option
	if fallback {
		opts = append(opts, child.UseSIGCHLD())
	}
	cw, err := child.WatchCmd(cmd, opts...)
	if err != nil {
		_ = wr.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("WatchCmd: %v", err)
	}
	return &childImpl{cmd: cmd, w: cw, stdin: wr}
}

func (childKind) ops() []op {
	return []op{
		{"Exit", childExit},
		{"Kill", childKill},
		{"StopCont", childStopCont},
		{"Status", childStatus},
		{"OwnerReap", childOwnerReap},
		{"Close", childClose},
	}
}

type childImpl struct {
	cmd    *exec.Cmd
	w      *child.Watcher
	stdin  *os.File // the child reads its exit code from it
	exited bool
	code   int            // exit code, if exited by exit
	sig    syscall.Signal // killing signal, if killed
	reaped bool           // the owner's cmd.Wait() has returned
	// early: reaped before the Watcher read the status (OwnerReap of a
	// running child). answered: Status has answered since; saidReaped: it
	// said ErrReaped (else it gave the status a fallback scan saw in time).
	early, answered, saidReaped bool
}

var _ checker = (*childImpl)(nil)

func (im *childImpl) evented() poll.Evented         { return im.w }
func (im *childImpl) isFd() bool                    { return im.w.Method() != child.SIGCHLD }
func (im *childImpl) filtered(_, _ poll.Ready) bool { return false }

func (im *childImpl) ready(interest poll.Ready) (sure, maybe poll.Ready) {
	if !im.exited {
		return 0, 0
	}
	return poll.Readable & interest, poll.Readable & interest
}

func (im *childImpl) String() string {
	state := "running"
	switch {
	case im.exited && im.sig != 0:
		state = "killed by " + im.sig.String()
	case im.exited:
		state = fmt.Sprintf("exited %d", im.code)
	}
	if im.early {
		state += ", reaped before seen"
	} else if im.reaped {
		state += ", reaped"
	}
	return fmt.Sprintf("child %d (%s) %s", im.w.Pid(), im.w.Method(), state)
}

// awaitExit waits until the Watcher sees the exit, and records it.
func (im *childImpl) awaitExit(t *rapid.T, w *world, s *src) {
	deadline := time.Now().Add(childExitWait)
	for {
		_, err := im.w.Status()
		if err == nil {
			break
		}
		if !errors.Is(err, child.ErrNotExited) {
			w.fatalf(t, "%s.Status() = %v while waiting for the exit", s.label, err)
		}
		if time.Now().After(deadline) {
			w.fatalf(t, "%s: the exit was not seen within %v", s.label, childExitWait)
		}
		runtime.Gosched()
	}
	im.exited = true
	w.notify(s, poll.Readable)
}

func childExit(t *rapid.T, w *world, s *src) {
	im := s.impl.(*childImpl)
	if im.exited {
		t.Skip("exited already")
	}
	code := rapid.IntRange(0, 255).Draw(t, "exit code")
	_, err := fmt.Fprintf(im.stdin, "%d\n", code)
	w.logf("%s exits with %d (%v)", s.label, code, err)
	if err != nil {
		w.fatalf(t, "write the exit code: %v", err)
	}
	im.code = code
	im.awaitExit(t, w, s)
}

func childKill(t *rapid.T, w *world, s *src) {
	im := s.impl.(*childImpl)
	sig := rapid.SampledFrom([]syscall.Signal{syscall.SIGKILL, syscall.SIGTERM}).Draw(t, "signal")
	err := im.w.Signal(sig)
	w.logf("%s.Signal(%v) = %v", s.label, sig, err)
	if im.reaped {
		w.expectErr(t, "Signal after the owner reaped", err, os.ErrProcessDone)
		return
	}
	// A zombie takes the signal and ignores it: still no error.
	w.expectErr(t, "Signal", err, nil)
	if im.exited {
		return
	}
	im.sig = sig
	im.awaitExit(t, w, s)
}

// childStopCont stops and continues a running child: neither is an exit.
func childStopCont(t *rapid.T, w *world, s *src) {
	im := s.impl.(*childImpl)
	if im.exited {
		t.Skip("exited already")
	}
	pid := im.w.Pid()
	for _, step := range []struct {
		sig     syscall.Signal
		stopped bool
	}{{syscall.SIGSTOP, true}, {syscall.SIGCONT, false}} {
		err := im.w.Signal(step.sig)
		w.logf("%s.Signal(%v) = %v", s.label, step.sig, err)
		w.expectErr(t, "Signal", err, nil)
		deadline := time.Now().Add(childExitWait)
		for (procStateOf(pid) == 'T') != step.stopped {
			if time.Now().After(deadline) {
				w.fatalf(t, "%s: not %v after %v", s.label, map[bool]string{true: "stopped", false: "continued"}[step.stopped], childExitWait)
			}
			runtime.Gosched()
		}
		_, err = im.w.Status()
		w.expectErr(t, "Status of a stopped or continued child", err, child.ErrNotExited)
	}
}

// procStateOf returns the state letter of a process in /proc, or 0.
func procStateOf(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}

func childStatus(t *rapid.T, w *world, s *src) {
	im := s.impl.(*childImpl)
	st, err := im.w.Status()
	w.logf("%s.Status() = %v, %v", s.label, st, err)
	if !im.exited {
		w.expectErr(t, "Status before the exit", err, child.ErrNotExited)
		return
	}
	if im.early {
		im.checkEarly(t, w, s, err)
		if err != nil {
			return
		}
	} else {
		w.expectErr(t, "Status", err, nil)
	}
	im.checkStatus(t, w, s, st)
}

// checkEarly checks what Status says of a child reaped before it was seen:
// ErrReaped on the pidfd path; on the fallback ErrReaped, or the status if
// a scan saw the exit before the reap. The first answer is for good.
func (im *childImpl) checkEarly(t *rapid.T, w *world, s *src, err error) {
	reaped := errors.Is(err, child.ErrReaped)
	switch {
	case err != nil && !reaped, !reaped && im.w.Method() != child.SIGCHLD:
		w.fatalf(t, "%s: Status of a child reaped before it was seen: %v, %v", s.label, err, child.ErrReaped)
	case im.answered && reaped != im.saidReaped:
		w.fatalf(t, "%s: Status of a reaped child changed its answer: %v now, ErrReaped %v before", s.label, err, im.saidReaped)
	}
	im.answered, im.saidReaped = true, reaped
}

// childOwnerReap is the owner reaping at once, with nothing asking the
// Watcher: a running child is told to exit and its cmd.Wait() called at
// once (racing the SIGCHLD table's scan on the fallback); an exited one is
// reaped, and cmd.Wait() must agree with the status the Watcher read.
// Either way the Watcher must be (or stay) Readable.
func childOwnerReap(t *rapid.T, w *world, s *src) {
	im := s.impl.(*childImpl)
	if im.reaped {
		t.Skip("reaped already")
	}
	if im.exited {
		st, err := im.w.Status()
		w.expectErr(t, "Status before the owner reaps", err, nil)
		werr := im.cmd.Wait()
		w.logf("%s: cmd.Wait() = %v", s.label, werr)
		im.reaped = true
		if im.cmd.ProcessState.Sys().(syscall.WaitStatus) != st.Sys() {
			w.fatalf(t, "%s: cmd.Wait() gave %v, the Watcher %v", s.label, im.cmd.ProcessState, st)
		}
		return
	}
	code := rapid.IntRange(0, 255).Draw(t, "exit code")
	if _, err := fmt.Fprintf(im.stdin, "%d\n", code); err != nil {
		w.fatalf(t, "write the exit code: %v", err)
	}
	werr := im.cmd.Wait()
	w.logf("%s exits with %d and is reaped at once: cmd.Wait() = %v", s.label, code, werr)
	if got := im.cmd.ProcessState.ExitCode(); got != code {
		w.fatalf(t, "%s: cmd.Wait() gave %v, want exit status %d", s.label, im.cmd.ProcessState, code)
	}
	im.exited, im.code, im.reaped, im.early = true, code, true, true
	if im.w.Method() == child.SIGCHLD {
		want := fallbackStats(w)
		deadline := time.Now().Add(childExitWait)
		for child.ReadStats().Watched != want.Watched {
			if time.Now().After(deadline) {
				w.fatalf(t, "%s: reaped by its owner, never left the SIGCHLD table (%d pids in it, want %d)", s.label, child.ReadStats().Watched, want.Watched)
			}
			runtime.Gosched()
		}
	}
	w.notify(s, poll.Readable)
}

// fallbackStats is what child.ReadStats must say of the fallback children
// in the model: every open fallback Watcher counted, and the pid of each
// one whose exit is not yet known in the table.
func fallbackStats(w *world) child.Stats {
	var want child.Stats
	for _, s := range w.live() {
		if im, ok := s.impl.(*childImpl); ok && im.w.Method() == child.SIGCHLD {
			want.Watchers++
			if !im.exited {
				want.Watched++
			}
		}
	}
	return want
}

// check compares the SIGCHLD table with the model: no pid of a child whose
// exit is known is left in it (each scan would look at it again, and a
// reused pid would be followed), none missing. A scan removes a pid just
// after it marks its Watchers (T1), which Status may already have seen,
// so a pid may leave a moment late: the check waits for that.
func (im *childImpl) check(t *rapid.T, w *world, s *src) {
	want := fallbackStats(w)
	deadline := time.Now().Add(childExitWait)
	for {
		got := child.ReadStats()
		if got.Watchers == want.Watchers && got.Watched == want.Watched {
			return
		}
		if time.Now().After(deadline) {
			w.fatalf(t, "SIGCHLD table: %d Watchers and %d pids, want %d and %d", got.Watchers, got.Watched, want.Watchers, want.Watched)
		}
		runtime.Gosched()
	}
}

func (im *childImpl) checkStatus(t *rapid.T, w *world, s *src, st child.ExitStatus) {
	if im.sig != 0 {
		if !st.Signaled() || st.Signal() != im.sig {
			w.fatalf(t, "%s: status %v, want killed by %v", s.label, st, im.sig)
		}
		return
	}
	if !st.Exited() || st.ExitCode() != im.code {
		w.fatalf(t, "%s: status %v, want exit status %d", s.label, st, im.code)
	}
}

// childClose closes the Watcher, then reaps the child as its owner: the
// Watcher left it to be reaped, with the status it reported.
func childClose(t *rapid.T, w *world, s *src) {
	im := s.impl.(*childImpl)
	var st child.ExitStatus
	known := im.exited
	if im.exited {
		var err error
		st, err = im.w.Status()
		if im.early {
			im.checkEarly(t, w, s, err)
			known = err == nil
		} else {
			w.expectErr(t, "Status before Close", err, nil)
		}
	}
	w.closeSource(t, s, "Watcher", im.w.Close, child.ErrClosed)
	w.expectErr(t, "Register after Close", w.p.Register(im.w, w.drawToken(t, "token"), poll.Readable, poll.Level), poll.ErrClosed)
	im.reap()
	if known && im.cmd.ProcessState.Sys().(syscall.WaitStatus) != st.Sys() {
		w.fatalf(t, "%s: cmd.Wait() gave %v, the Watcher %v", s.label, im.cmd.ProcessState, st)
	}
}

// reap ends the child if it still runs, and reaps it.
func (im *childImpl) reap() {
	_ = im.stdin.Close() // EOF: the shell exits (with 1) if it was still reading
	if im.reaped {
		return
	}
	if !im.exited {
		_ = im.cmd.Process.Kill()
	}
	_ = im.cmd.Wait()
	im.reaped = true
}

func (im *childImpl) release(t *rapid.T, w *world, s *src) {
	if err := im.w.Close(); err != nil {
		t.Fatalf("%s.Close: %v", s.label, err)
	}
	if s.registered {
		w.deregistered(s, "closed")
	}
	im.reap()
}

func (im *childImpl) discard() {
	_ = im.w.Close()
	im.reap()
}
