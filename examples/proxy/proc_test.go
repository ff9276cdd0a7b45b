//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The binaries the tests run, built by TestMain with go build: the proxy
// (with -race when the tests have it) and examples/echo as its backend.
var proxyBin, echoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "proxy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	proxyBin, echoBin = filepath.Join(dir, "proxy"), filepath.Join(dir, "echo")
	code := 1
	if build(proxyBin, ".", raceEnabled) && build(echoBin, "../echo", false) {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// build runs go build of pkg into out.
func build(out, pkg string, race bool) bool {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "go build %s: %v\n", pkg, err)
		return false
	}
	return true
}

// procWait bounds waiting for a process to start, to exit, or to close
// its descriptors: generous, for a -race build on a loaded machine.
const procWait = 30 * time.Second

// proc is a running command and its log (stderr), line by line.
type proc struct {
	cmd  *exec.Cmd
	addr string // the address it logged it listens on

	mu    sync.Mutex
	lines []string
	ended chan struct{} // closed when stderr ends
}

var listening = regexp.MustCompile(`listening on ([^\s,]+)`)

// startProc starts bin with args and waits for its "listening on" line.
// The process is killed at the end of the test if it is still running.
func startProc(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), ended: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(p.ended)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case p.addr = <-addr:
	case <-time.After(procWait):
		require.FailNow(t, "no \"listening on\" line", "%s:\n%s", bin, p.log())
	}
	return p
}

// log is what the process has logged so far.
func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// fds counts the process's open sockets and pipes: what a pair opens (its
// two connections, and a pipe when it splices). Not every descriptor: the
// Go runtime opens its own poller (an epoll and an eventfd) the first
// time it sets a timer, which may be in the middle of a test.
func (p *proc) fds(t *testing.T) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		t.Skip("no /proc/PID/fd on this system: cannot count a process's descriptors")
	}
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && (strings.HasPrefix(target, "socket:") || strings.HasPrefix(target, "pipe:")) {
			n++
		}
	}
	return n
}

// signal sends sig to the process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// wait waits for the process to exit within d, and fails the test unless
// it exited with status 0. It returns how long the wait took.
func (p *proc) wait(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	// Its stderr ends when it exits; Wait only after reading all of it.
	select {
	case <-p.ended:
	case <-time.After(d):
		require.FailNow(t, "did not exit", "within %v; log:\n%s", d, p.log())
	}
	require.NoError(t, p.cmd.Wait(), "exit status; log:\n%s", p.log())
	return time.Since(start)
}
