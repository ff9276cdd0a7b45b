//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// binary is the supervisor, built by TestMain with go build, so that the
// tests run and signal the real command.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "supervisor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "supervisor")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build of the supervisor:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
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
	cmd := exec.Command(binary, args...)
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

// Short commands restarted over and over, then SIGTERM at a moment nobody
// chose (a command may be running, exiting or waiting for its back-off):
// the supervisor exits with status 0, every process it started has its
// exit reported exactly once with its own status (or death by the
// SIGTERM), and none is left behind.
func TestShortCommandsThenSIGTERM(t *testing.T) {
	s := startSupervisor(t, "-backoff", "5ms", "-max-backoff", "10ms", "exit 0", "exec sleep 0.05", "exit 7")
	for left := map[string]bool{"1": true, "2": true, "3": true}; len(left) > 0; {
		delete(left, s.waitLine(t, `\[(\d)\] restart 3 in`)[1])
	}
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	out := s.finish(t)

	started := regexp.MustCompile(`\[(\d)\] started pid (\d+)`).FindAllStringSubmatch(out, -1)
	exited := regexp.MustCompile(`\[(\d)\] pid (\d+) exited: (exit status \d+|signal: \w+) after`).FindAllStringSubmatch(out, -1)
	require.GreaterOrEqual(t, len(started), 9, out)
	reports := map[string]int{}
	for _, m := range exited {
		reports[m[1]+" "+m[2]]++
		// Each ends on its own, or by the forwarded SIGTERM if that
		// reached it first (even an "exit 7" shell can be caught before
		// it runs its command).
		code := map[string]string{"1": "0", "2": "0", "3": "7"}[m[1]]
		require.Regexp(t, "^(exit status "+code+"|signal: terminated)$", m[3], "task %s, pid %s: %s", m[1], m[2], out)
	}
	for _, m := range started {
		require.Equal(t, 1, reports[m[1]+" "+m[2]], "task %s, pid %s: exits reported\n%s", m[1], m[2], out)
		_, err := os.Stat("/proc/" + m[2])
		require.True(t, os.IsNotExist(err), "child %s still exists (a zombie, or alive)", m[2])
	}
	require.Len(t, exited, len(started), out)
	require.Contains(t, out, "got terminated; forwarded to", out)
	require.True(t, strings.HasSuffix(out, "supervisor: all commands are done"), out)
}

// Each command's output comes through the supervisor's Poll, line by line
// with its number and stream, up to the last byte written before the exit
// (an unended last line included), and a long output in order.
func TestCapturesOutput(t *testing.T) {
	s := startSupervisor(t, "-max-restarts", "0",
		`echo hello; echo oops >&2; printf 'no newline'`,
		`i=0; while [ $i -lt 5000 ]; do echo "line $i"; i=$((i+1)); done; echo last`)
	out := s.finish(t)
	for _, want := range []string{"[1] out: hello", "[1] err: oops", "[1] out: no newline", "[2] out: last"} {
		require.Contains(t, strings.Split(out, "\n"), want, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[2] out: line ") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 5000)
	for i, l := range lines {
		require.Equal(t, fmt.Sprintf("[2] out: line %d", i), l)
	}
}

// A command that leaves a process running, which holds its stdout, is
// reported as soon as it exits, and the supervisor finishes: it waits for
// no pipe (with a Go writer as the command's stdout, cmd.Wait() would wait
// for the leftover sleep, 30 s).
func TestLeftoverProcessHoldsNothing(t *testing.T) {
	start := time.Now()
	s := startSupervisor(t, "-max-restarts", "0", "sleep 30 & echo left $!")
	m := s.waitLine(t, `^\[1\] out: left (\d+)$`)
	leftover, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(leftover, syscall.SIGKILL) })
	s.waitLine(t, `\[1\] pid \d+ exited: exit status 0`)
	out := s.finish(t)
	require.Less(t, time.Since(start), 10*time.Second, "the supervisor waited for the leftover process:\n%s", out)
	_, err = os.Stat(fmt.Sprintf("/proc/%d", leftover))
	require.NoError(t, err, "the leftover process was killed, not left alone")
}
