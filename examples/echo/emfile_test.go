//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The EMFILE test runs the server in a child process (this test binary,
// re-executed) whose descriptor limit leaves room for only a few
// connections; lowering the limit in this process would starve the test
// itself and goleak. The clients live in the parent, so they are not
// counted against the child's limit. Linux only: the child sizes the limit
// from /proc/self/fd (see leaveRoom).

const (
	emfileChildEnv = "UNIPOLL_ECHO_EMFILE_CHILD"
	emfileRoom     = 3  // connections the child can hold at once
	emfileClients  = 12 // more than that, so accept must run out
)

// emfileCase is one of the two servers whose listener must pause: the child
// runs the one its environment names, and prints how often it paused.
type emfileCase struct {
	name  string
	serve func(logf func(string, ...any)) (srv echoServer, pauses func() int, err error)
}

var emfileCases = []emfileCase{
	{"Poll", func(logf func(string, ...any)) (echoServer, func() int, error) {
		srv, err := newServer("127.0.0.1:0", logf)
		return srv, func() int { return srv.backoffs }, err
	}},
	// The EventLoop mode's listener pauses as server.go's does.
	{"EventLoop", func(logf func(string, ...any)) (echoServer, func() int, error) {
		srv, err := newLoopServer("127.0.0.1:0", 1, false, logf)
		return srv, func() int { return srv.acceptPauses() }, err
	}},
}

func TestEMFILEBackoff(t *testing.T) {
	for _, tc := range emfileCases {
		t.Run(tc.name, func(t *testing.T) { emfileBackoff(t, tc.name) })
	}
}

// emfileBackoff runs the child with the server of mode, and its clients.
func emfileBackoff(t *testing.T, mode string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestEMFILEChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), emfileChildEnv+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	defer func() {
		_ = stdin.Close()
		for lines.Scan() {
		}
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	}()

	addr := childValue(t, lines, "ADDR ")
	// Every client connects first; only then does any send, read its echo
	// and hang up. So all of them are connected at once, which the child
	// has descriptors for only emfileRoom of: it must run out while
	// accepting, and the rest wait in the listen queue until hang-ups free
	// descriptors and the paused accept resumes.
	var dialed, wg sync.WaitGroup
	allDialed := make(chan struct{})
	errs := make(chan error, emfileClients)
	for i := range emfileClients {
		wg.Add(1)
		dialed.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			dialed.Done()
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			defer c.Close()
			<-allDialed
			if err := ping(c, fmt.Sprintf("hello %d", i)); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		}()
	}
	dialed.Wait()
	close(allDialed)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	require.NoError(t, stdin.Close()) // tells the child to stop
	pauses, err := strconv.Atoi(childValue(t, lines, "PAUSES "))
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	t.Logf("accept paused %d times for %d clients", pauses, emfileClients)
	require.Positive(t, pauses, "the child never ran out of descriptors")
	// Each pause lasts acceptBackoff; a spinning server would pause
	// thousands of times.
	require.Less(t, pauses, 100)
}

// childValue returns the rest of the first line from the child that
// starts with prefix.
func childValue(t *testing.T, lines *bufio.Scanner, prefix string) string {
	t.Helper()
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), prefix); ok {
			return v
		}
	}
	t.Fatalf("child exited without printing %q: %v", prefix, lines.Err())
	return ""
}

// ping sends msg on c and checks its echo.
func ping(c net.Conn, msg string) error {
	if err := c.SetDeadline(time.Now().Add(clientDeadline)); err != nil {
		return err
	}
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("echo %q, want %q", got, msg)
	}
	return nil
}

// TestEMFILEChild is the server side of TestEMFILEBackoff; it does nothing
// unless run by it, which names the mode in the environment.
func TestEMFILEChild(t *testing.T) {
	mode := os.Getenv(emfileChildEnv)
	if mode == "" {
		t.Skip("helper process for TestEMFILEBackoff")
	}
	i := slices.IndexFunc(emfileCases, func(c emfileCase) bool { return c.name == mode })
	require.GreaterOrEqual(t, i, 0, "no mode %q", mode)
	srv, pauses, err := emfileCases[i].serve(func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
	require.NoError(t, err)

	leaveRoom(t, emfileRoom)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Stop()
	}()
	fmt.Printf("ADDR %s\n", srv.Addr())
	require.NoError(t, srv.Run())
	fmt.Printf("PAUSES %d\n", pauses())
}

// leaveRoom lowers the descriptor limit and fills every free number below
// it but room, so that exactly room more descriptors can be opened. The
// limit alone is not enough: it caps descriptor numbers, not their count,
// and a process may have holes below its highest descriptor (an inherited
// one can sit at 250).
func leaveRoom(t *testing.T, room int) {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	lim.Cur = uint64(len(ents) + 64)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))

	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	var fillers []int
	for {
		fd, err := unix.FcntlInt(uintptr(null), unix.F_DUPFD_CLOEXEC, 0)
		if err == unix.EMFILE {
			break
		}
		require.NoError(t, err)
		fillers = append(fillers, fd)
	}
	require.GreaterOrEqual(t, len(fillers), room)
	// The fillers stay open until the process exits.
	for _, fd := range fillers[len(fillers)-room:] {
		require.NoError(t, unix.Close(fd))
	}
}
