//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEchoServers starts every echo server this machine can run, each in
// its own process as the runner does, and checks that it echoes 16-byte
// and 64 KiB messages byte for byte on several connections at once.
func TestEchoServers(t *testing.T) {
	r := testRunner(t)
	for _, s := range echoServers {
		t.Run(s.Name, func(t *testing.T) {
			if s.Pending != "" {
				t.Skipf("not built yet: %s", s.Pending)
			}
			start, err := s.Prepare(r)
			if errors.Is(err, errSkip) {
				t.Skip(err) // only the C floors, where there is no C compiler, no liburing or no io_uring
			}
			require.NoError(t, err)
			checkEchoServer(t, start, 4)
		})
	}
}

// checkEchoServer starts a server with start, unpinned, and runs echoCheck
// on conns connections at once.
func checkEchoServer(t *testing.T, start func(cpu, port int) *exec.Cmd, conns int) {
	t.Helper()
	checkEchoServerWith(t, start, conns, echoCheck)
}

// checkEchoServerWith starts a server with start, unpinned, and runs check
// on conns connections at once, each with its own seed.
func checkEchoServerWith(t *testing.T, start func(cpu, port int) *exec.Cmd, conns int, check func(addr string, seed byte) error) {
	t.Helper()
	port, err := freePort()
	require.NoError(t, err)
	cmd := start(-1, port)
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stopProcess(cmd, exited)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	require.NoError(t, waitListening(addr, exited, 20*time.Second), out.String())

	errs := make(chan error, conns)
	for i := range conns {
		go func() { errs <- check(addr, byte(i)) }()
	}
	for range conns {
		require.NoError(t, <-errs, out.String())
	}
}

// echoCheck sends a few messages of different sizes on one connection and
// checks each echo. The big one is written from a second goroutine: it
// does not fit in the socket buffers, and a server that is not read from
// stops reading.
func echoCheck(addr string, seed byte) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return err
	}
	for _, size := range []int{16, 1024, 64 << 10, 16} {
		msg := make([]byte, size)
		for i := range msg {
			msg[i] = seed + byte(i*7)
		}
		werr := make(chan error, 1)
		go func() { _, err := c.Write(msg); werr <- err }()
		got := make([]byte, size)
		if _, err := io.ReadFull(c, got); err != nil {
			return fmt.Errorf("%d bytes: %w", size, err)
		}
		if err := <-werr; err != nil {
			return err
		}
		if !bytes.Equal(got, msg) {
			return fmt.Errorf("%d bytes: the echo differs", size)
		}
	}
	return nil
}

// TestEchoOnce runs one whole measurement against the Go net server: the
// load generator in its own process, the server's CPU time from /proc, and
// strace's count of its system calls where strace can attach.
func TestEchoOnce(t *testing.T) {
	r := testRunner(t)
	var start func(cpu, port int) *exec.Cmd
	for _, s := range echoServers {
		if s.Name == "go-net" {
			var err error
			start, err = s.Prepare(r)
			require.NoError(t, err)
		}
	}
	_, lookErr := exec.LookPath("strace")
	counter := countStrace
	if lookErr != nil {
		counter = countNone
	}
	cfg := echoConfig{Conns: 20, Size: 16, Pinned: r.m.canPin()}
	res, sc, err := r.echoOnce(start, cfg, 50*time.Millisecond, 300*time.Millisecond, counter)
	require.NoError(t, err)
	require.Positive(t, res.Msgs)
	require.GreaterOrEqual(t, res.AllMsgs, res.Msgs)
	require.Positive(t, res.P99)
	require.GreaterOrEqual(t, res.P99, res.P50)
	require.InDelta(t, 300*time.Millisecond, res.Window, float64(200*time.Millisecond))
	if lookErr != nil {
		t.Logf("strace not installed; system calls not counted")
		return
	}
	require.NotNil(t, sc)
	// Every message needs at least a read and a write by the server.
	require.GreaterOrEqual(t, sc.Total, 2*res.AllMsgs, "%+v", sc.ByName)
}

// TestEchoOncePerf counts the server's system calls with perf stat, where
// perf can count the raw_syscalls tracepoint.
func TestEchoOncePerf(t *testing.T) {
	r := testRunner(t)
	var start func(cpu, port int) *exec.Cmd
	for _, s := range echoServers {
		if s.Name == "c-floor" {
			var err error
			if start, err = s.Prepare(r); errors.Is(err, errSkip) {
				t.Skip(err)
			}
			require.NoError(t, err)
		}
	}
	res, sc, err := r.echoOnce(start, echoConfig{Conns: 20, Size: 16}, 50*time.Millisecond, 300*time.Millisecond, countPerf)
	if errors.Is(err, errSkip) {
		t.Skip(err) // no perf, or no permission for the tracepoint
	}
	require.NoError(t, err)
	// The C floor makes one read and one write per message, and at most one
	// epoll_wait per message. How many waits it makes depends on how many
	// connections are ready at once, which is up to the scheduler (an idle
	// machine wakes the server for almost every message), so the count lies
	// between two and three per message, with room for the edges of the
	// window (messages in flight when counting starts and stops).
	perMsg := float64(sc.Total) / float64(res.AllMsgs)
	require.GreaterOrEqual(t, perMsg, 1.7, "total %d for %d messages", sc.Total, res.AllMsgs)
	require.LessOrEqual(t, perMsg, 3.3, "total %d for %d messages", sc.Total, res.AllMsgs)
	// By call, where this kernel has the tracepoints: a read and a write
	// per message, give or take the window's edges.
	for _, call := range []string{"read", "write"} {
		n, ok := sc.ByName[call]
		if !ok {
			continue
		}
		require.InDelta(t, 1.0, float64(n)/float64(res.AllMsgs), 0.3, "%s: %d for %d messages", call, n, res.AllMsgs)
	}
}

func TestParsePerfStat(t *testing.T) {
	out := "# started on Tue Nov 24 20:20:00 2026\n\n12345,,raw_syscalls:sys_enter,3000000000,100.00,,\n"
	s, err := parsePerfStat(out)
	require.NoError(t, err)
	require.Equal(t, uint64(12345), s.Total)
	require.Empty(t, s.ByName)
	_, err = parsePerfStat("<not supported>,,raw_syscalls:sys_enter,0,0,,\n")
	require.Error(t, err)

	// By call: counted calls join ByName, uncounted ones are left out.
	out = "300,,raw_syscalls:sys_enter,3000000000,100.00,,\n" +
		"100,,syscalls:sys_enter_read,3000000000,100.00,,\n" +
		"<not counted>,,syscalls:sys_enter_futex,0,0.00,,\n" +
		"120,,syscalls:sys_enter_write,3000000000,100.00,,\n"
	s, err = parsePerfStat(out)
	require.NoError(t, err)
	require.Equal(t, uint64(300), s.Total)
	require.Equal(t, map[string]uint64{"read": 100, "write": 120}, s.ByName)
	require.Equal(t, "write 0.60, read 0.50", topCalls(s.ByName, 200))
}
