//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package child_test

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"syscall"

	"github.com/unipoll/unipoll/child"
	"github.com/unipoll/unipoll/poll"
)

// A child's exit comes back from the same Poll call as everything else. The
// Watcher reads the status without reaping; the owner's cmd.Wait() then
// returns at once.
func Example() {
	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()

	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	w, err := child.WatchCmd(cmd)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	if err := p.Register(w, 1, poll.Readable, poll.Edge); err != nil {
		panic(err)
	}

	events := poll.NewEvents(4)
	if _, err := p.Poll(events, -1); err != nil {
		panic(err)
	}
	for ev := range events.All() {
		st, err := w.Status()
		if err != nil {
			panic(err)
		}
		fmt.Println("token", ev.Token, "exited:", st)
	}
	err = cmd.Wait() // the process has exited: this returns at once
	fmt.Println("cmd.Wait:", err)
	// Output:
	// token 1 exited: exit status 3
	// cmd.Wait: exit status 3
}

// Signal sends a signal to the child (with pidfd_send_signal on Linux, so a
// reused pid cannot be hit), and Wait reaps it for its owner.
func ExampleWatcher_Signal() {
	p, _ := poll.New()
	defer p.Close()
	cmd := exec.Command("/bin/sleep", "60")
	_ = cmd.Start()
	w, _ := child.WatchCmd(cmd)
	defer w.Close()
	_ = p.Register(w, 1, poll.Readable, poll.Oneshot)

	_ = w.Signal(syscall.SIGTERM)
	events := poll.NewEvents(1)
	_, _ = p.Poll(events, -1)
	ps, err := w.Wait()
	fmt.Println(ps, err)
	// Output:
	// signal: terminated <nil>
}

// Start gives a command pipes that are sources on the Poll: its output is
// read there along with its exit, with no goroutine copying it, and
// cmd.Wait() after the exit event returns at once, whoever else still holds
// the pipes (a grandchild, say).
func ExampleStart() {
	p, err := poll.New()
	if err != nil {
		panic(err)
	}
	defer p.Close()

	cmd := exec.Command("/bin/sh", "-c", "echo hello; echo oops >&2; exit 2")
	pipes, err := child.Start(cmd, child.Stdout|child.Stderr)
	if err != nil {
		panic(err)
	}
	defer pipes.Close()
	w, err := child.WatchCmd(cmd)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	const exitToken, outToken, errToken = 1, 2, 3
	for _, err := range []error{
		p.Register(w, exitToken, poll.Readable, poll.Edge),
		// Hup too: under Edge, an event that brings the end of the output
		// with the last of it makes no other event, so read on to io.EOF.
		p.Register(pipes.Stdout, outToken, poll.Readable|poll.Hup, poll.Edge),
		p.Register(pipes.Stderr, errToken, poll.Readable|poll.Hup, poll.Edge),
	} {
		if err != nil {
			panic(err)
		}
	}

	// read takes what a pipe holds, and reports the end of its output.
	buf := make([]byte, 512)
	read := func(r *child.PipeReader, into *bytes.Buffer) (eof bool) {
		for {
			n, err := r.Read(buf)
			into.Write(buf[:n])
			switch {
			case err == io.EOF:
				return true
			case err == child.ErrWouldBlock:
				return false // the next edge brings us back
			case err != nil:
				panic(err)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	var outDone, errDone bool // each pipe's end counts once: a Hup may follow the event that read it
	events := poll.NewEvents(8)
	for left := 3; left > 0; {
		if _, err := p.Poll(events, -1); err != nil {
			panic(err)
		}
		for ev := range events.All() {
			switch ev.Token {
			case exitToken:
				st, _ := w.Status()
				fmt.Println("exited:", st)
				fmt.Println("cmd.Wait:", cmd.Wait()) // at once: no pipe to wait for
				left--
			case outToken:
				if !outDone && read(pipes.Stdout, &stdout) {
					outDone = true
					left--
				}
			case errToken:
				if !errDone && read(pipes.Stderr, &stderr) {
					errDone = true
					left--
				}
			}
		}
	}
	fmt.Printf("stdout %q, stderr %q\n", stdout.String(), stderr.String())
	// Output:
	// exited: exit status 2
	// cmd.Wait: exit status 2
	// stdout "hello\n", stderr "oops\n"
}
