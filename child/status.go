//go:build unix

package child

import (
	"strconv"
	"syscall"
)

// ExitStatus is how a process ended, read without reaping it. Its methods
// answer as os.ProcessState's do, and String gives the same text. The zero
// ExitStatus, returned with an error, describes nothing.
type ExitStatus struct {
	pid int
	ws  syscall.WaitStatus
}

// Pid returns the process id.
func (s ExitStatus) Pid() int { return s.pid }

// Exited reports whether the process ended by calling exit (not by a
// signal).
func (s ExitStatus) Exited() bool { return s.ws.Exited() }

// ExitCode returns the exit code, or -1 if the process was killed by a
// signal.
func (s ExitStatus) ExitCode() int {
	if !s.ws.Exited() {
		return -1
	}
	return s.ws.ExitStatus()
}

// Success reports whether the process exited with code 0.
func (s ExitStatus) Success() bool { return s.ws.Exited() && s.ws.ExitStatus() == 0 }

// Signaled reports whether a signal ended the process.
func (s ExitStatus) Signaled() bool { return s.ws.Signaled() }

// Signal returns the signal that ended the process, or -1.
func (s ExitStatus) Signal() syscall.Signal { return s.ws.Signal() }

// CoreDumped reports whether the process dumped core as it ended.
func (s ExitStatus) CoreDumped() bool { return s.ws.CoreDump() }

// Sys returns the status in the system's encoding, as os.ProcessState.Sys
// does on Unix.
func (s ExitStatus) Sys() syscall.WaitStatus { return s.ws }

// String is "exit status N", "signal: NAME" or "signal: NAME (core
// dumped)", like os.ProcessState.String.
func (s ExitStatus) String() string {
	switch {
	case s.ws.Exited():
		return "exit status " + strconv.Itoa(s.ws.ExitStatus())
	case s.ws.Signaled():
		r := "signal: " + s.ws.Signal().String()
		if s.ws.CoreDump() {
			r += " (core dumped)"
		}
		return r
	}
	return "status " + strconv.FormatUint(uint64(s.ws), 10)
}
