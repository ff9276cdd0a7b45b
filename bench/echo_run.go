//go:build linux

package main

// One echo measurement: start a server, wait until it accepts, start the
// load generator against it, optionally count the server's system calls
// with strace, and stop both.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// echoConfig is one point of the echo scenario.
type echoConfig struct {
	Conns  int
	Size   int
	Pinned bool
}

func (c echoConfig) String() string {
	pin := "pinned"
	if !c.Pinned {
		pin = "unpinned"
	}
	return fmt.Sprintf("%d conns, %s, %s", c.Conns, sizeText(c.Size), pin)
}

func sizeText(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// syscallCount is a run's system calls: the total, and by name (strace:
// every call; perf stat: the calls of perfCalls).
type syscallCount struct {
	Total  uint64
	ByName map[string]uint64
}

// perfCalls are the system calls perf stat counts by name, beside the
// total: what an echo server's loop and the Go runtime's threads make.
// Those whose tracepoint this kernel lacks are left out.
var perfCalls = []string{"read", "write", "readv", "writev", "recvfrom", "sendto",
	"recvmsg", "sendmsg", "splice", "epoll_wait", "epoll_pwait", "epoll_pwait2",
	"nanosleep", "clock_nanosleep", "futex", "sched_yield", "tgkill", "io_uring_enter"}

// perfEvents is the -e list for perf stat: the total, and each of
// perfCalls whose tracepoint exists.
func perfEvents() string {
	evs := []string{"raw_syscalls:sys_enter"}
	for _, c := range perfCalls {
		for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
			if _, err := os.Stat(filepath.Join(dir, "events/syscalls/sys_enter_"+c)); err == nil {
				evs = append(evs, "syscalls:sys_enter_"+c)
				break
			}
		}
	}
	return strings.Join(evs, ",")
}

// tail keeps the last bytes written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastLines(string(t.buf), 5)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// How echoOnce counts the server's system calls, if at all.
type syscallCounter int

const (
	countNone   syscallCounter = iota
	countStrace                // strace -c -f: per call, but slows the server by 10x
	countPerf                  // perf stat on the syscall tracepoints: the total and the main calls, at full speed
)

// echoOnce measures start(cpu, port) under cfg's load for warmup+dur;
// loadArgs go to the load generator (-tls-ca FILE: over TLS).
func (r *Runner) echoOnce(start func(cpu, port int) *exec.Cmd, cfg echoConfig, warmup, dur time.Duration, counter syscallCounter, loadArgs ...string) (loadResult, *syscallCount, error) {
	var res loadResult
	serverCPU, loadCPU := -1, -1
	if cfg.Pinned && r.m.canPin() {
		serverCPU, loadCPU = r.m.serverCPU(), r.m.loadCPU()
	}
	port, err := freePort()
	if err != nil {
		return res, nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv := start(serverCPU, port)
	var srvOut tail
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return res, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	defer stopProcess(srv, exited)
	if err := waitListening(addr, exited, 20*time.Second); err != nil {
		return res, nil, fmt.Errorf("server: %w: %s", err, srvOut.String())
	}

	load := pinned(loadCPU, r.self, "-role", "load", "--", "-addr", addr, "-conns", strconv.Itoa(cfg.Conns),
		"-size", strconv.Itoa(cfg.Size), "-warmup", warmup.String(), "-dur", dur.String(), "-pid", strconv.Itoa(srv.Process.Pid))
	load.Args = append(load.Args, loadArgs...)
	var loadErr tail
	load.Stderr = &loadErr
	loadIn, err := load.StdinPipe()
	if err != nil {
		return res, nil, err
	}
	loadOut, err := load.StdoutPipe()
	if err != nil {
		return res, nil, err
	}
	if err := load.Start(); err != nil {
		return res, nil, err
	}
	loadDone := make(chan error, 1)
	defer func() {
		// Closing its input ends the load generator; one still dialing a
		// server that died is killed.
		loadIn.Close()
		select {
		case <-loadDone:
		case <-time.After(5 * time.Second):
			_ = load.Process.Kill()
			<-loadDone
		}
	}()
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(loadOut)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		loadDone <- load.Wait() // after the last read of its output, as Wait requires
	}()
	next := func(timeout time.Duration) (string, error) {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", fmt.Errorf("load generator exited: %s", loadErr.String())
			}
			return l, nil
		case e := <-exited:
			exited <- e // for stopProcess
			return "", fmt.Errorf("server exited (%v): %s", e, srvOut.String())
		case <-time.After(timeout):
			return "", fmt.Errorf("load generator silent for %v: %s", timeout, loadErr.String())
		}
	}
	if l, err := next(2 * time.Minute); err != nil || l != "READY" {
		return res, nil, fmt.Errorf("connecting: %q %v", l, err)
	}

	var st *tracer
	switch counter {
	case countStrace:
		st, err = startStrace(srv.Process.Pid, r.buildDir)
	case countPerf:
		st, err = startPerf(srv.Process.Pid, r.buildDir)
	}
	if err != nil {
		return res, nil, err
	}
	if _, err := io.WriteString(loadIn, "GO\n"); err != nil {
		return res, nil, err
	}
	l, err := next(warmup + dur + 2*time.Minute)
	if err != nil {
		return res, nil, err
	}
	if err := json.Unmarshal([]byte(l), &res); err != nil {
		return res, nil, fmt.Errorf("load result %q: %v", l, err)
	}
	var sc *syscallCount
	if st != nil {
		if sc, err = st.stop(); err != nil {
			return res, nil, err
		}
	}
	if res.Errors > 0 {
		return res, sc, fmt.Errorf("%d connections failed, first: %s", res.Errors, res.FirstErr)
	}
	if res.Msgs == 0 {
		return res, sc, fmt.Errorf("no round trip completed in the %v window (server CPU in it: %v)", res.Window.Round(time.Millisecond), res.ServerCPU)
	}
	return res, sc, nil
}

// waitListening dials addr until it connects, the server exits, or the
// timeout passes.
func waitListening(addr string, exited chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case e := <-exited:
			exited <- e
			return fmt.Errorf("exited before listening: %v", e)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after %v: %v", addr, timeout, err)
		}
	}
}

// stopProcess ends a server: SIGTERM, then SIGKILL if it lingers.
func stopProcess(cmd *exec.Cmd, exited chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// tracer is strace -c or perf stat attached to a server.
type tracer struct {
	cmd   *exec.Cmd
	out   string
	done  chan error
	parse func(string) (*syscallCount, error)
}

// startPerf counts the system calls of every thread of pid with perf stat
// on the raw_syscalls:sys_enter tracepoint, which costs the traced process
// almost nothing.
func startPerf(pid int, dir string) (*tracer, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, fmt.Errorf("%w: perf is not installed", errSkip)
	}
	out := filepath.Join(dir, fmt.Sprintf("perf-%d.txt", pid))
	cmd := exec.Command("perf", "stat", "-x", ",", "-e", perfEvents(), "-p", strconv.Itoa(pid), "-o", out)
	var stderr tail
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &tracer{cmd: cmd, out: out, done: make(chan error, 1), parse: parsePerfStat}
	go func() { t.done <- cmd.Wait() }()
	// perf stat prints nothing when it has attached. It opens its output
	// file once it has parsed its events (the slow part: a tracefs read per
	// system call, seconds on a busy machine), and then only opens the
	// counters; so wait for the file, then a moment, and fail if it exits
	// first (no permission, no tracepoint). A fixed wait was too short for
	// a CI run compiling beside it: perf was stopped before it had begun.
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-t.done:
			return nil, fmt.Errorf("%w: perf stat exited at once (%v): %s", errSkip, err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if _, err := os.Stat(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-t.done
			return nil, errors.New("perf stat did not open its output within 10s")
		}
	}
	select {
	case err := <-t.done:
		return nil, fmt.Errorf("%w: perf stat exited at once (%v): %s", errSkip, err, stderr.String())
	case <-time.After(200 * time.Millisecond):
	}
	return t, nil
}

// parsePerfStat reads perf stat -x, output: "COUNT,,EVENT,...", one line
// per event; a call perf could not count ("<not counted>") is left out.
func parsePerfStat(s string) (*syscallCount, error) {
	out := &syscallCount{ByName: map[string]uint64{}}
	total := false
	for _, line := range strings.Split(s, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		name, isCall := strings.CutPrefix(f[2], "syscalls:sys_enter_")
		if f[2] != "raw_syscalls:sys_enter" && !isCall {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			if isCall {
				continue
			}
			return nil, fmt.Errorf("perf stat count %q: %v", f[0], err)
		}
		if isCall {
			out.ByName[name] = n
		} else {
			out.Total, total = n, true
		}
	}
	if !total {
		return nil, fmt.Errorf("no raw_syscalls:sys_enter count in perf stat output %q", s)
	}
	return out, nil
}

// startStrace attaches strace -c -f to pid and returns once it has
// attached to the process's threads.
func startStrace(pid int, dir string) (*tracer, error) {
	if _, err := exec.LookPath("strace"); err != nil {
		return nil, fmt.Errorf("%w: strace is not installed (apt-get install -y strace)", errSkip)
	}
	out := filepath.Join(dir, fmt.Sprintf("strace-%d.txt", pid))
	cmd := exec.Command("strace", "-c", "-f", "-p", strconv.Itoa(pid), "-o", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// strace says "Process N attached" once per thread it has stopped;
	// the first one means tracing has begun.
	attached := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var all []string
		sent := false
		for sc.Scan() {
			all = append(all, sc.Text())
			if !sent && strings.Contains(sc.Text(), "attached") {
				attached <- ""
				sent = true
			}
		}
		if !sent {
			attached <- strings.Join(all, " | ")
		}
	}()
	st := &tracer{cmd: cmd, out: out, done: make(chan error, 1), parse: parseStraceSummary}
	go func() { st.done <- cmd.Wait() }()
	select {
	case msg := <-attached:
		if msg != "" {
			return nil, fmt.Errorf("strace did not attach: %s", msg)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		return nil, errors.New("strace did not attach within 10s")
	}
	return st, nil
}

// stop detaches the tracer and reads its count.
func (s *tracer) stop() (*syscallCount, error) {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	b, err := os.ReadFile(s.out)
	if err != nil {
		return nil, err
	}
	os.Remove(s.out)
	return s.parse(string(b))
}

// parseStraceSummary reads the table strace -c prints:
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 62.50    0.000010           1         8           read
//	...
//	100.00    0.000016           1        12         1 total
//
// The errors column is empty when there were none, so calls is the fourth
// field and the name the last.
func parseStraceSummary(s string) (*syscallCount, error) {
	out := &syscallCount{ByName: map[string]uint64{}}
	found := false
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || strings.HasPrefix(f[0], "%") || strings.HasPrefix(f[0], "-") {
			continue
		}
		calls, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			continue
		}
		name := f[len(f)-1]
		if name == "total" {
			out.Total = calls
			found = true
			continue
		}
		out.ByName[name] += calls
	}
	if !found {
		return nil, fmt.Errorf("no total in strace summary %q", s)
	}
	return out, nil
}
