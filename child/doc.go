//go:build unix

// Package child reports the exit of child processes through a Poll: a
// Watcher is a poll.Evented, Readable once its process has exited, so a
// program waits for children, sockets, signals and channels with one Poll
// call. It never reaps: reaping stays with the process's owner, whose
// cmd.Wait() then returns at once with the right status, and children
// nobody watches are left alone.
//
// How a Watcher learns of the exit (Method):
//
//   - Linux: a pidfd registered straight into the Poll's selector (no
//     goroutine, no SIGCHLD); the status is read with waitid(P_PIDFD, ...,
//     WEXITED|WNOWAIT|WNOHANG), which leaves the process to be reaped.
//   - darwin and the BSDs: a kqueue of the Watcher's own with EVFILT_PROC
//     NOTE_EXIT for the process, registered with the Poll as a descriptor.
//   - Linux without pidfd (before 5.4, or refused by seccomp), or with
//     UseSIGCHLD: SIGCHLD through the signal package's relay and a
//     process-wide table of watched pids, each looked at with
//     waitid(P_PID, pid, ..., WNOWAIT). Never wait(-1) or P_ALL.
//
// # Index
//
//   - Watch (an *os.Process) and WatchCmd (a started *exec.Cmd) make a
//     Watcher; UseSIGCHLD forces the fallback.
//   - Watcher.Register, Reregister, Deregister: poll.Evented.
//   - Watcher.Status reads the ExitStatus without reaping; Watcher.Wait
//     reaps, for the owner; Watcher.Signal sends a signal (pidfd_send_signal
//     on Linux, free of pid reuse); Watcher.Pid, Watcher.Method;
//     Watcher.Close.
//   - ExitStatus: Exited, ExitCode, Signaled, Signal, CoreDumped, Success,
//     Sys, String (as os.ProcessState's).
//   - ReadStats: the SIGCHLD fallback's table (open fallback Watchers,
//     pids not yet reported, scans), process-wide.
//   - Errors: ErrNotExited, ErrReaped, ErrNotChild, ErrNoStatus,
//     ErrSIGCHLDIgnored, ErrUnsupported, ErrClosed, ErrInvalidArgument.
//
// A typical use:
//
//	cmd := exec.Command("make", "all")
//	if err := cmd.Start(); err != nil { ... }
//	w, err := child.WatchCmd(cmd)
//	...
//	p.Register(w, childToken, poll.Readable, poll.Edge)
//	...
//	// on the event for childToken:
//	st, _ := w.Status() // how it ended, without reaping
//	_ = cmd.Wait()      // returns at once: the process has exited
//	w.Close()
package child
