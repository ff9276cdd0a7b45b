//go:build unix

package signal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	ossignal "os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/internal/onpoll/polltest"
	"github.com/unipoll/unipoll/poll"
)

// runHelper runs the helper named by helperEnv in a re-executed test binary.
func runHelper(name string) error {
	switch name {
	case "default-restored":
		return helperDefaultRestored()
	}
	return fmt.Errorf("unknown helper %q", name)
}

// helperDefaultRestored catches SIGTERM with a Watcher, closes it, and sends
// SIGTERM again, which must now end the process (SIGTERM's default action in
// a Go program; SIGUSR1's would be to do nothing, which proves nothing).
func helperDefaultRestored() error {
	p, err := poll.New()
	if err != nil {
		return err
	}
	defer p.Close()
	w, err := New(syscall.SIGTERM)
	if err != nil {
		return err
	}
	if err := p.Register(w, 1, poll.Readable, poll.Edge); err != nil {
		return err
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		return err
	}
	ev := poll.NewEvents(1)
	if n, err := p.Poll(ev, 5*time.Second); err != nil || n != 1 {
		return fmt.Errorf("no event for SIGTERM (%d, %v)", n, err)
	}
	if sig, ok := w.TryRecv(); !ok || sig != syscall.SIGTERM {
		return fmt.Errorf("TryRecv = %v, %v", sig, ok)
	}
	fmt.Println("caught")
	if err := w.Close(); err != nil {
		return err
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		return err
	}
	// The default action ends the process at once; waiting here gives it
	// time to, and a survivor says so.
	_, _ = p.Poll(ev, 5*time.Second)
	fmt.Println("survived")
	return nil
}

// When the last Watcher of a signal is closed, the signal's default action
// comes back: a re-executed test binary that caught SIGTERM with a Watcher
// and closed it is ended by the next SIGTERM.
func TestDefaultActionRestored(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=default-restored")
	out, err := cmd.Output()
	require.Equal(t, "caught\n", string(out), "helper output")
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "helper did not fail: %v", err)
	ws := exit.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled(), "helper: %v, stderr %q", err, exit.Stderr)
	require.Equal(t, syscall.SIGTERM, ws.Signal())
}

// The library never calls signal.Reset or signal.Ignore: a program's own
// signal.Notify channel keeps receiving after a Watcher of the same signal
// comes and goes. (This test's own Notify is what it proves something
// about.)
func TestProgramNotifyKept(t *testing.T) {
	ch := make(chan os.Signal, 1)
	ossignal.Notify(ch, syscall.SIGUSR2)
	defer ossignal.Stop(ch)

	p := polltest.New(t)
	w, err := New(syscall.SIGUSR2)
	require.NoError(t, err)
	require.NoError(t, p.Register(w, 1, poll.Readable, poll.Edge))
	raise(t, syscall.SIGUSR2)
	waitEvent(t, p, 1)
	require.Equal(t, syscall.SIGUSR2, <-ch, "the program's channel missed a signal a Watcher also saw")
	require.NoError(t, w.Close())

	raise(t, syscall.SIGUSR2)
	select {
	case sig := <-ch:
		require.Equal(t, syscall.SIGUSR2, sig)
	case <-time.After(eventWait):
		t.Fatal("the program's own Notify channel stopped receiving after the Watcher closed")
	}
}
