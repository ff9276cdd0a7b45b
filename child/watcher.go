//go:build unix

package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/unipoll/unipoll/poll"
)

// Method is how a Watcher learns of the exit.
type Method string

// Methods, chosen by Watch: the process descriptor where the system has
// one, the SIGCHLD fallback where it does not (or when UseSIGCHLD asks).
const (
	// Pidfd (Linux 5.4 and later): a pidfd, readable once the process has
	// exited, registered straight into the Poll's selector. No goroutine,
	// no signal.
	Pidfd Method = "pidfd"
	// Kqueue (darwin and the BSDs): a kqueue descriptor of the Watcher's
	// own holding an EVFILT_PROC NOTE_EXIT filter for the process,
	// registered with the Poll as a descriptor (a kqueue is readable while
	// it has events).
	Kqueue Method = "kqueue"
	// SIGCHLD (Linux without pidfd, or forced): SIGCHLD through the signal
	// package's relay, and a process-wide table of watched pids looked at
	// with waitid(P_PID, pid, WEXITED|WNOWAIT|WNOHANG), never wait(-1).
	SIGCHLD Method = "sigchld"
)

// Option changes how Watch watches a process.
type Option func(*config)

type config struct {
	sigchld bool
}

// UseSIGCHLD makes Watch use the SIGCHLD fallback even where a process
// descriptor is available: for tests, and for comparing the two. On systems
// without waitid's WNOWAIT (the BSDs, darwin) Watch then returns
// ErrUnsupported.
func UseSIGCHLD() Option { return func(c *config) { c.sigchld = true } }

// mechanism is one way of watching: Pidfd, Kqueue or SIGCHLD. The
// Watcher serialises every call with its mutex.
type mechanism interface {
	register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error
	reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error
	deregister(p *poll.Poll) error
	// peek reports whether the process has exited, and how, without
	// reaping it.
	peek() (st ExitStatus, exited bool, err error)
	// signal sends sig to the process.
	signal(sig syscall.Signal) error
	// close deregisters what the mechanism registered and releases it.
	// It is called once, without the Watcher's mutex (the SIGCHLD
	// mechanism may wait for the relay's goroutine).
	close() error
}

// Watcher reports the exit of one child process through a Poll. It is a
// poll.Evented, Readable once the process has exited, for good:
//
//   - Level: on every Poll call from the exit on.
//   - Edge: once, at the exit.
//   - Oneshot: once, then disarmed until Reregister.
//
// Registering (or reregistering) a Watcher whose process has already
// exited reports it at once. Only Readable is ever reported; other
// interest bits are accepted and never seen. Stops and continues (SIGSTOP,
// SIGCONT) are not exits and are not reported.
//
// The Watcher never reaps the process: Status reads the exit status and
// leaves the process for its owner, whose cmd.Wait() or p.Wait() then
// returns at once with that status. Call Status before reaping; after that
// the status belongs to the reaper and Status returns ErrReaped (unless it
// had read it already). Wait is a convenience for the owner: it reaps.
//
// A Watcher is registered with one Poll at a time; to watch a process from
// several Polls, Watch it once per Poll: each Watcher is notified, and none
// reaps. A Watcher that is deregistered, or whose Poll is closed, may be
// registered with another Poll.
//
// Close the Watcher when done: it holds a descriptor (Pidfd, Kqueue) or a
// place in the SIGCHLD table.
//
// The zero Watcher is not usable: its methods return an error wrapping
// ErrInvalidArgument (Pid returns 0).
type Watcher struct {
	pid    int
	proc   *os.Process
	cmd    *exec.Cmd
	method Method

	mu     sync.Mutex // serialises every use of m, and guards the fields below
	m      mechanism
	closed bool
	st     ExitStatus
	known  bool // st holds the exit status
}

var _ poll.Evented = (*Watcher)(nil)

// Watch watches p, a child of this process that has not been reaped. Call
// it right after starting the process (cmd.Start, os.StartProcess) and
// before anything may reap it.
//
// Errors: ErrInvalidArgument for a nil or released process, ErrReaped if
// it has been reaped already, ErrNotChild if it is not this process's child
// (Linux; kqueue watches any process it may see), ErrSIGCHLDIgnored if
// SIGCHLD is ignored, ErrUnsupported if an option asks for what the system
// lacks.
func Watch(p *os.Process, opts ...Option) (*Watcher, error) {
	return watch(p, nil, opts)
}

// WatchCmd watches a started command's process (see Watch). Wait then
// reaps it with cmd.Wait, which also finishes the command's I/O copying.
func WatchCmd(cmd *exec.Cmd, opts ...Option) (*Watcher, error) {
	if cmd == nil {
		return nil, fmt.Errorf("%w: nil exec.Cmd", ErrInvalidArgument)
	}
	if cmd.Process == nil {
		return nil, fmt.Errorf("%w: exec.Cmd not started (call Start first)", ErrInvalidArgument)
	}
	if cmd.ProcessState != nil {
		return nil, fmt.Errorf("pid %d: %w (cmd.Wait has returned)", cmd.Process.Pid, ErrReaped)
	}
	return watch(cmd.Process, cmd, opts)
}

func watch(p *os.Process, cmd *exec.Cmd, opts []Option) (*Watcher, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil os.Process", ErrInvalidArgument)
	}
	if p.Pid <= 0 {
		return nil, fmt.Errorf("%w: process with pid %d (released?)", ErrInvalidArgument, p.Pid)
	}
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if sigchldIgnored() {
		return nil, fmt.Errorf("watch pid %d: %w", p.Pid, ErrSIGCHLDIgnored)
	}
	m, method, err := newMechanism(p, c)
	if err != nil {
		return nil, fmt.Errorf("watch pid %d: %w", p.Pid, err)
	}
	return &Watcher{pid: p.Pid, proc: p, cmd: cmd, method: method, m: m}, nil
}

// lock takes the mutex and fails if the Watcher is zero or closed; the lock
// is then not held.
func (w *Watcher) lock() error {
	if w == nil || w.m == nil {
		return errZeroWatcher
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Pid returns the process id (0 for a zero Watcher).
func (w *Watcher) Pid() int {
	if w == nil {
		return 0
	}
	return w.pid
}

// Method returns how the Watcher watches ("" for a zero Watcher).
func (w *Watcher) Method() Method {
	if w == nil {
		return ""
	}
	return w.method
}

// Status returns how the process ended, without reaping it. Before the
// exit it returns ErrNotExited; once it has returned a status it returns
// the same one for good, also after the process has been reaped. If the
// process was reaped before Status could read the status, it returns
// ErrReaped.
func (w *Watcher) Status() (ExitStatus, error) {
	if err := w.lock(); err != nil {
		return ExitStatus{}, err
	}
	defer w.mu.Unlock()
	return w.statusLocked()
}

func (w *Watcher) statusLocked() (ExitStatus, error) {
	if w.known {
		return w.st, nil
	}
	st, exited, err := w.m.peek()
	switch {
	case err != nil:
		return ExitStatus{}, fmt.Errorf("pid %d: %w", w.pid, err)
	case !exited:
		return ExitStatus{}, fmt.Errorf("pid %d: %w", w.pid, ErrNotExited)
	}
	w.st, w.known = st, true
	return st, nil
}

// Wait reaps the process, for the owner who watches its own child: once
// the Watcher has reported the exit, Wait returns at once with the
// process's state (cmd.Wait for WatchCmd, p.Wait for Watch). A non-zero
// exit is not an error here: the state says how it ended. Before the exit
// it returns ErrNotExited instead of blocking. Status keeps returning the
// status after Wait.
func (w *Watcher) Wait() (*os.ProcessState, error) {
	if err := w.lock(); err != nil {
		return nil, err
	}
	_, err := w.statusLocked()
	w.mu.Unlock()
	if err != nil && !errors.Is(err, ErrNoStatus) {
		return nil, err
	}
	// Reap without the lock: cmd.Wait also waits for the command's I/O
	// copying, which may take a while.
	var ps *os.ProcessState
	if w.cmd != nil {
		err = w.cmd.Wait()
		ps = w.cmd.ProcessState
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = nil
		}
	} else {
		ps, err = w.proc.Wait()
	}
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
			w.mu.Lock()
			if !w.known {
				w.st, w.known = ExitStatus{pid: w.pid, ws: ws}, true
			}
			w.mu.Unlock()
		}
	}
	return ps, err
}

// Signal sends sig to the process. On the pidfd path it is immune to pid
// reuse (pidfd_send_signal on the Watcher's own pidfd); elsewhere it goes
// through os.Process.Signal, which on Linux uses the runtime's pidfd when
// it has one. A process that has been reaped gives os.ErrProcessDone; a
// zombie not yet reaped takes the signal and ignores it.
func (w *Watcher) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if sig == nil || !ok {
		return fmt.Errorf("%w: signal %v is not a syscall.Signal", ErrInvalidArgument, sig)
	}
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return w.m.signal(s)
}

// Close stops watching: it deregisters the Watcher from its Poll (a Poll
// call started after Close returns never reports it) and releases its
// descriptor or its place in the SIGCHLD table. It does not reap or signal
// the process. Closing twice returns ErrClosed.
func (w *Watcher) Close() error {
	if err := w.lock(); err != nil {
		return err
	}
	w.closed = true
	m := w.m
	w.mu.Unlock()
	// Without the lock: the SIGCHLD mechanism may wait for the relay's
	// goroutine, which may be busy marking another Watcher.
	return m.close()
}

// Register implements poll.Evented. A process that has already exited is
// reported by the next Poll call.
func (w *Watcher) Register(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return w.m.register(p, t, interest, opts)
}

// Reregister implements poll.Evented.
func (w *Watcher) Reregister(p *poll.Poll, t poll.Token, interest poll.Ready, opts poll.PollOpt) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return w.m.reregister(p, t, interest, opts)
}

// Deregister implements poll.Evented.
func (w *Watcher) Deregister(p *poll.Poll) error {
	if err := w.lock(); err != nil {
		return err
	}
	defer w.mu.Unlock()
	return w.m.deregister(p)
}
