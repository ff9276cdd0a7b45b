//go:build linux

package main

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// prepareUringFloorOrSkip builds the io_uring floor, skipping the test
// where this machine lacks a C compiler or liburing.
func prepareUringFloorOrSkip(t *testing.T, r *Runner, name string, ccArgs ...string) func(cpu, port int) *exec.Cmd {
	t.Helper()
	start, err := prepareUringFloor(r, name, ccArgs...)
	if errors.Is(err, errSkip) {
		t.Skip(err)
	}
	require.NoError(t, err)
	return start
}

// TestUringFloorWithoutLiburing builds the floor against an empty sysroot,
// where cc finds neither liburing's header nor its library: that is a
// skip that says what to install, not a build error.
func TestUringFloorWithoutLiburing(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler (cc) on PATH")
	}
	r := testRunner(t)
	_, err := prepareUringFloor(r, "echo_uring_nolib", "--sysroot="+t.TempDir())
	require.ErrorIs(t, err, errSkip)
	require.ErrorContains(t, err, "apt-get install -y liburing-dev")
}

// TestUringFloorStarved runs the io_uring floor with a ring of four 64-byte
// buffers, which every message of 1 KiB or more runs dry: its receives end
// with ENOBUFS and are armed again as sends give buffers back, and chunks
// queue behind the send in flight. Its submission ring has one entry, so
// a batch of more fills it and submits before the wait. Six connections
// share the four buffers and every echo must still come back byte for
// byte (TestEchoServers runs it with its real rings).
func TestUringFloorStarved(t *testing.T) {
	r := testRunner(t)
	start := prepareUringFloorOrSkip(t, r, "echo_uring_starved", "-DNBUFS=4", "-DBUFSIZE=64", "-DSQ_ENTRIES=1")
	checkEchoServer(t, start, 6)
}

// TestUringFloorSyscalls counts the io_uring floor's system calls with perf
// stat: none of the read, write, recv or send calls an epoll server makes,
// and at most about one io_uring_enter per message (a receive completes
// into the buffer ring, its send goes in with the next wait, and one enter
// serves every connection ready by then), where the C epoll floor makes
// two to three calls per message.
func TestUringFloorSyscalls(t *testing.T) {
	r := testRunner(t)
	start := prepareUringFloorOrSkip(t, r, "echo_uring")
	res, sc, err := r.echoOnce(start, echoConfig{Conns: 20, Size: 16}, 50*time.Millisecond, 300*time.Millisecond, countPerf)
	if errors.Is(err, errSkip) {
		t.Skip(err) // no perf, or no permission for the tracepoint
	}
	require.NoError(t, err)
	require.Positive(t, res.AllMsgs)
	perMsg := float64(sc.Total) / float64(res.AllMsgs)
	t.Logf("%.2f system calls per message (%d messages): %s", perMsg, res.AllMsgs, topCalls(sc.ByName, float64(res.AllMsgs)))
	require.LessOrEqual(t, perMsg, 1.3, "total %d for %d messages: %v", sc.Total, res.AllMsgs, sc.ByName)
	for _, call := range []string{"read", "write", "recvfrom", "sendto", "recvmsg", "sendmsg"} {
		require.LessOrEqual(t, float64(sc.ByName[call])/float64(res.AllMsgs), 0.01, "%s: %d for %d messages", call, sc.ByName[call], res.AllMsgs)
	}
	if n, ok := sc.ByName["io_uring_enter"]; ok {
		require.Positive(t, n)
		require.LessOrEqual(t, float64(n)/float64(res.AllMsgs), 1.3, "io_uring_enter: %d for %d messages", n, res.AllMsgs)
	}
}
