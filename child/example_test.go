//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package child_test

import (
	"fmt"
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
