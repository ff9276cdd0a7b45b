//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// asMain makes a re-executed test binary run the supervisor's main with the
// arguments after "--", so the tests can signal a real supervisor process.
const asMain = "UNIPOLL_SUPERVISOR_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Args = append([]string{"supervisor"}, os.Args[2:]...) // drop -test.run=^$
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

const deadline = 20 * time.Second

// supervisorProc is a running supervisor and its output, line by line.
type supervisorProc struct {
	cmd   *exec.Cmd
	lines chan string
	seen  []string
}

func startSupervisor(t *testing.T, args ...string) *supervisorProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, args...)...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	s := &supervisorProc{cmd: cmd, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return s
}

// waitLine reads output until a line matches re, and returns its
// submatches.
func (s *supervisorProc) waitLine(t *testing.T, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(deadline)
	for {
		select {
		case l, ok := <-s.lines:
			require.True(t, ok, "output ended without %q; it was:\n%s", re, strings.Join(s.seen, "\n"))
			s.seen = append(s.seen, l)
			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			require.FailNow(t, "timeout", "no line matching %q within %v; output:\n%s", re, deadline, strings.Join(s.seen, "\n"))
		}
	}
}

// finish waits for the supervisor to exit and returns all its output.
func (s *supervisorProc) finish(t *testing.T) string {
	t.Helper()
	for l := range s.lines {
		s.seen = append(s.seen, l)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "supervisor output:\n%s", strings.Join(s.seen, "\n"))
	case <-time.After(deadline):
		t.Fatalf("the supervisor did not exit; output:\n%s", strings.Join(s.seen, "\n"))
	}
	return strings.Join(s.seen, "\n")
}

// Every exit is reported with its status; each command is restarted with a
// doubling back-off until it has used up its restarts.
func TestRestartsAndReports(t *testing.T) {
	s := startSupervisor(t, "-max-restarts", "2", "-backoff", "20ms", "exit 3", "kill -9 $$")
	out := s.finish(t)
	require.Equal(t, 3, strings.Count(out, "exited: exit status 3"), out)
	require.Equal(t, 3, strings.Count(out, "exited: signal: killed"), out)
	for _, n := range []int{1, 2} {
		require.Contains(t, out, fmt.Sprintf("[%d] restart 1 in 20ms", n))
		require.Contains(t, out, fmt.Sprintf("[%d] restart 2 in 40ms", n))
		require.Contains(t, out, fmt.Sprintf("[%d] restarted 2 times; giving up", n))
	}
	require.True(t, strings.HasSuffix(out, "supervisor: all commands are done"), out)
}

// SIGTERM and SIGINT are forwarded to the running children; a restart that
// waits for its back-off is cancelled; the supervisor exits once every
// child has, having reaped them all.
func TestForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			s := startSupervisor(t, "-backoff", "1h", "exec sleep 100", "exec sleep 100", "exit 1")
			pids := map[int]bool{}
			for range 3 {
				m := s.waitLine(t, `\[\d\] started pid (\d+)`)
				pid, err := strconv.Atoi(m[1])
				require.NoError(t, err)
				pids[pid] = true
			}
			s.waitLine(t, `\[3\] restart 1 in 1h0m0s`)
			require.NoError(t, s.cmd.Process.Signal(sig))
			out := s.finish(t)
			require.Contains(t, out, fmt.Sprintf("got %v; forwarded to 2 running command(s)", sig))
			require.Equal(t, 2, strings.Count(out, "exited: signal: "+sig.String()), out)
			require.Equal(t, 1, strings.Count(out, "[3] started pid"), "a cancelled restart ran: %s", out)
			for pid := range pids {
				_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
				require.True(t, os.IsNotExist(err), "child %d still exists (a zombie, or alive)", pid)
			}
		})
	}
}

// No command: usage, exit status 2.
func TestUsage(t *testing.T) {
	s := startSupervisor(t)
	for l := range s.lines {
		s.seen = append(s.seen, l)
	}
	err := s.cmd.Wait()
	require.Error(t, err)
	require.Equal(t, 2, s.cmd.ProcessState.ExitCode())
}
