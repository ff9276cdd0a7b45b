//go:build unix

// Package child reports the exit of child processes through a Poll, and
// carries their standard streams on it: a Watcher is a poll.Evented,
// Readable once its process has exited, and the pipes Start makes are
// poll.Evented too, so a program waits for children, their output,
// sockets, signals and channels with one Poll call. It never reaps:
// reaping stays with the process's owner, whose cmd.Wait() then returns at
// once with the right status, and children nobody watches are left alone.
//
// How a Watcher learns of the exit (Method):
//
//   - Linux: a pidfd registered straight into the Poll's selector (no
//     goroutine, no SIGCHLD); the status is read with waitid(P_PIDFD, ...,
//     WEXITED|WNOWAIT|WNOHANG), which leaves the process to be reaped.
//   - darwin and the BSDs: a kqueue of the Watcher's own with EVFILT_PROC
//     NOTE_EXIT for the process, registered with the Poll as a descriptor.
//   - Linux without pidfd (before 5.4, or refused by seccomp), or with
//     UseSIGCHLD: SIGCHLD, heard through the process-wide signal relay
//     (internal/sigrelay, which the signal package uses too), and a
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
//   - Start starts an exec.Cmd with pipes for the Streams asked for
//     (Stdin, Stdout, Stderr) and returns a Stdio: a PipeWriter for its
//     input, PipeReaders for its output, each a poll.Evented with Read or
//     Write, Fd, String and Close.
//   - ReadStats: the SIGCHLD fallback's table (open fallback Watchers,
//     pids not yet reported, scans), process-wide.
//   - Errors: ErrNotExited, ErrReaped, ErrNotChild, ErrNoStatus,
//     ErrSIGCHLDIgnored, ErrUnsupported, ErrClosed, ErrInvalidArgument,
//     ErrWouldBlock.
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
//
// # Child output on the Poll
//
// cmd.Wait() returns at once after the exit event only if nothing else
// holds it. os/exec connects a stream that is nil (the null device) or an
// *os.File straight to the child; any other value (a bytes.Buffer, an
// io.Writer, an io.Reader for Stdin) it copies through a pipe on a
// goroutine of its own, and cmd.Wait() waits for that goroutine, which
// ends only at the pipe's end of file. A grandchild that inherited the pipe
// (a daemon, `sh -c 'sleep 60 &'`) keeps it open, and cmd.Wait() blocks
// until the grandchild exits, and with it the goroutine that called it: on
// an event loop, the whole loop. exec.Cmd.WaitDelay bounds that wait (after
// it, cmd.Wait() closes the pipes and returns exec.ErrWaitDelay, output
// not yet copied is lost), but does not remove it.
//
// Start removes it: the child's ends of its pipes are *os.File values, so
// os/exec copies nothing, and this process reads and writes its own ends
// on the Poll, with no goroutine:
//
//	cmd := exec.Command("make", "all")
//	pipes, err := child.Start(cmd, child.Stdout|child.Stderr)
//	...
//	w, err := child.WatchCmd(cmd)
//	p.Register(pipes.Stdout, outToken, poll.Readable, poll.Edge)
//	p.Register(pipes.Stderr, errToken, poll.Readable, poll.Edge)
//	p.Register(w, childToken, poll.Readable, poll.Edge)
//	...
//	// on outToken: pipes.Stdout.Read until ErrWouldBlock (or io.EOF: Close it)
//	// on childToken: cmd.Wait() returns at once, whoever holds the pipes
//
// The rule, for a program that must not block on cmd.Wait(): give every
// stream an *os.File, nil, or a pipe from Start; never a Go reader or
// writer, or set WaitDelay and accept its wait. (cmd.StdoutPipe starts no
// goroutine either, but cmd.Wait() closes that pipe, so output not read by
// then is lost, and reading it blocks a goroutine.)
package child
