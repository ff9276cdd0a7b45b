package netloop

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// A listener out of descriptors pauses, and says so at Warn with the
// error, its address and the back-off; once descriptors are free it
// accepts the waiting client. The process really runs out: its soft
// RLIMIT_NOFILE is lowered and the room below it filled, and both are
// undone before the client is served.
func TestGroupLogsAcceptPause(t *testing.T) {
	logger, logs := newTestLogger()
	g, err := NewGroup(GroupConfig{Loops: 1, Logger: logger})
	require.NoError(t, err)
	ln, err := g.ListenTCP("tcp", "127.0.0.1:0", func(l *eventloop.Loop, c *socket.TCPConn) {
		_, _ = Add(l, c, newEcho(), Config{})
	})
	require.NoError(t, err)
	runGroup(t, g)
	// The client's socket is made while there is room; connecting needs
	// no new descriptor.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	unix.CloseOnExec(fd) // SOCK_CLOEXEC is not in every system's socket(2)
	client := os.NewFile(uintptr(fd), "client")
	defer client.Close()

	restore := exhaustDescriptors(t)
	port := ln.Addr().(*net.TCPAddr).Port
	connErr := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	var rec string
	if connErr == nil {
		rec = logs.waitLine(t, "level=WARN", `msg="netloop: out of descriptors, accept paused"`)
	}
	pauses := g.AcceptPauses()
	restore()
	require.NoError(t, connErr, "a connect completes in the kernel, without accept")
	require.Contains(t, rec, "err=", rec)
	require.Contains(t, rec, "too many open files", rec)
	require.Contains(t, rec, "local="+ln.Addr().String(), rec)
	require.Contains(t, rec, "backoff=100ms", rec)
	require.Positive(t, pauses)

	c, err := net.FileConn(client)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(waitLimit)))
	expectLines(t, c, "served after the pause\n", "served after the pause\n")
}

// exhaustDescriptors lowers the soft RLIMIT_NOFILE to a little above the
// descriptors open now and fills the room below it, so that the next
// descriptor the process makes fails with EMFILE; the limit alone caps
// numbers, not the count, and there may be holes below the highest. The
// returned function (also run at the test's end) frees them and restores
// the limit.
func exhaustDescriptors(t *testing.T) (restore func()) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no /proc/self/fd on this system: cannot count the descriptors to fill")
	}
	require.NoError(t, err)
	var saved unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &saved))
	lim := saved
	setLimit(&lim.Cur, len(ents)+64)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	var fillers []int
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		for _, f := range fillers {
			_ = unix.Close(f)
		}
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &saved))
	}
	t.Cleanup(restore)
	for {
		f, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EMFILE) {
			return restore
		}
		if err != nil {
			restore()
			require.NoError(t, err)
		}
		fillers = append(fillers, f)
	}
}
