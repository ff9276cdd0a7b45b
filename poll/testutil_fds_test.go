package poll

// Test helpers (see testutil_test.go for the conventions): descriptors,
// real and closed at the test's cleanup, and their kernel state.

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

var ownedFds struct {
	sync.Mutex
	m map[int]testing.TB // descriptor -> test that owns it
}

// own records fd as owned by t and closes it at cleanup unless closeFd
// closed it first.
func own(t testing.TB, fd int) int {
	t.Helper()
	ownedFds.Lock()
	if ownedFds.m == nil {
		ownedFds.m = make(map[int]testing.TB)
	}
	ownedFds.m[fd] = t
	ownedFds.Unlock()
	t.Cleanup(func() {
		ownedFds.Lock()
		owner, ok := ownedFds.m[fd]
		if ok && owner == t {
			delete(ownedFds.m, fd)
		}
		ownedFds.Unlock()
		if ok && owner == t {
			_ = unix.Close(fd)
		}
	})
	return fd
}

// closeFd closes a descriptor made by one of these helpers now, and makes
// its cleanup a no-op. Use it (not unix.Close) to close a test descriptor
// early, for example to provoke a hang-up.
func closeFd(t testing.TB, fd int) {
	t.Helper()
	require.NoError(t, tryCloseFd(t, fd))
}

// tryCloseFd is closeFd returning its failure instead of failing the test,
// for use from goroutines other than the test's (t is only used to check
// ownership, never to fail).
func tryCloseFd(t testing.TB, fd int) error {
	ownedFds.Lock()
	owner, ok := ownedFds.m[fd]
	if ok && owner == t {
		delete(ownedFds.m, fd)
	}
	ownedFds.Unlock()
	if !ok || owner != t {
		return fmt.Errorf("closeFd(%d): not a descriptor of this test", fd)
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close(%d): %w", fd, err)
	}
	return nil
}

// socketPair returns a connected non-blocking, close-on-exec AF_UNIX
// SOCK_STREAM pair. Both ends start writable and not readable.
func socketPair(t testing.TB) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err, "socketpair")
	return nonblocking(t, own(t, fds[0])), nonblocking(t, own(t, fds[1]))
}

// pipe returns a non-blocking, close-on-exec pipe. The read end is never
// writable; the write end is never readable.
func pipe(t testing.TB) (r, w int) {
	t.Helper()
	var fds [2]int
	require.NoError(t, unix.Pipe(fds[:]), "pipe")
	return nonblocking(t, own(t, fds[0])), nonblocking(t, own(t, fds[1]))
}

// nonblocking makes fd non-blocking and close-on-exec, the portable way
// (SOCK_NONBLOCK, pipe2 and accept4 are not on every unix). Tests create
// descriptors before they start subprocesses, so the short window before
// FD_CLOEXEC is set does not matter here.
func nonblocking(t testing.TB, fd int) int {
	t.Helper()
	require.NoError(t, unix.SetNonblock(fd, true), "set non-blocking")
	unix.CloseOnExec(fd)
	return fd
}

// writeFd writes all of data to a non-blocking descriptor (it must have
// room).
func writeFd(t testing.TB, fd int, data []byte) {
	t.Helper()
	require.NoError(t, tryWrite(fd, data))
}

// tryWrite is writeFd returning its failure instead of failing the test;
// safe from any goroutine.
func tryWrite(fd int, data []byte) error {
	for {
		n, err := unix.Write(fd, data)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write(%d): %w", fd, err)
		}
		if n != len(data) {
			return fmt.Errorf("write(%d): short write %d of %d", fd, n, len(data))
		}
		return nil
	}
}

// drain reads a non-blocking descriptor until it would block (or hits end
// of file) and returns the number of bytes read. Afterwards the descriptor
// is no longer readable (unless it is at EOF or the peer writes again).
func drain(t testing.TB, fd int) int {
	t.Helper()
	n, err := tryDrain(fd)
	require.NoError(t, err)
	return n
}

// tryDrain is drain returning its failure instead of failing the test; safe
// from any goroutine.
func tryDrain(fd int) (int, error) {
	var buf [16 << 10]byte
	total := 0
	for {
		n, err := unix.Read(fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) || (err == nil && n == 0) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("read(%d): %w", fd, err)
		}
		total += n
	}
}

// fill writes to a non-blocking descriptor until it would block and returns
// the number of bytes written: afterwards it is not writable until the peer
// reads.
func fill(t testing.TB, fd int) int {
	t.Helper()
	n, err := tryFill(fd)
	require.NoError(t, err)
	return n
}

// tryFill is fill returning its failure instead of failing the test; safe
// from any goroutine.
func tryFill(fd int) (int, error) {
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := unix.Write(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return total, nil
		}
		if err != nil {
			return total, fmt.Errorf("write(%d): %w", fd, err)
		}
		total += n
	}
}

// waitKernelReady waits, with poll(2) directly and not through a Poll, until
// the kernel reports fd ready for any of events (POLLIN, POLLOUT, ...) or
// for an error or hang-up. Tests use it to know that readiness produced
// asynchronously (TCP over loopback) has arrived before they act on it.
func waitKernelReady(t testing.TB, fd int, events int16) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd, 50)
		if err != nil && !errors.Is(err, unix.EINTR) {
			require.NoError(t, err, "poll(2)")
		}
		if n > 0 && pfd[0].Revents&(events|unix.POLLERR|unix.POLLHUP) != 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "fd %d: kernel never reported events %#x", fd, events)
	}
}

// tcpSocket returns a non-blocking, close-on-exec, unconnected IPv4 TCP
// socket.
func tcpSocket(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err, "socket")
	return nonblocking(t, own(t, fd))
}

// resetOnClose makes closing a connected TCP socket send a RST instead of a
// FIN (SO_LINGER with a zero timeout): the peer then sees an error
// (ECONNRESET), which is how the tests produce Error readiness on demand.
func resetOnClose(t testing.TB, fd int) {
	t.Helper()
	require.NoError(t, unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}))
}

// closedPort returns a 127.0.0.1 TCP port that nothing listens on: that of a
// listener it opened and closed.
func closedPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// refusedConn starts a non-blocking TCP connect to 127.0.0.1 on a port
// nothing listens on and returns the socket: the connect fails with
// ECONNREFUSED, which the socket reports as an error (Error readiness, and
// SO_ERROR) once the RST arrives. Register it right away; the failure may
// already have happened.
func refusedConn(t testing.TB) int {
	t.Helper()
	port := closedPort(t)
	fd := tcpSocket(t)
	err := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	require.True(t, errors.Is(err, unix.EINPROGRESS),
		"non-blocking connect to closed port %d: want EINPROGRESS, got %v", port, err)
	return fd
}

// tcpPair returns a connected pair of non-blocking TCP sockets on
// 127.0.0.1: a client and the accepted server side.
func tcpPair(t testing.TB) (client, server int) {
	t.Helper()
	lfd := tcpSocket(t)
	require.NoError(t, unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(lfd, 1))
	sa, err := unix.Getsockname(lfd)
	require.NoError(t, err)
	client = tcpSocket(t)
	err = unix.Connect(client, sa)
	require.True(t, err == nil || errors.Is(err, unix.EINPROGRESS), "connect: %v", err)
	deadline := time.Now().Add(eventWait)
	for {
		nfd, _, err := unix.Accept(lfd)
		if err == nil {
			server = nonblocking(t, own(t, nfd))
			break
		}
		require.True(t, errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR), "accept: %v", err)
		require.True(t, time.Now().Before(deadline), "accept: timed out")
		// Wait for the connection with poll(2) on the listener, not a sleep.
		pfd := []unix.PollFd{{Fd: int32(lfd), Events: unix.POLLIN}}
		_, _ = unix.Poll(pfd, 100)
	}
	closeFd(t, lfd)
	return client, server
}

// ---------------------------------------------------------------------------
// Polling
