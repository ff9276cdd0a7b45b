package testsupport

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// FullBacklog returns the address ("127.0.0.1:port") of a TCP listener
// that never accepts and whose accept queue is full: Linux drops the SYNs
// of every later connect, which then stays in progress until it times out
// (minutes). The listener and the connections that fill it are closed at
// the test's end.
//
// It fills the queue one blocking connect at a time, each made only while
// the queue has room, and reads the queue's length from the listener's
// TCP_INFO (on a listening socket tcpi_unacked is the queue's length and
// tcpi_sacked its limit), so it knows the queue is full without a timeout.
func FullBacklog(t testing.TB) string {
	t.Helper()
	ln := tcpSocket(t)
	require.NoError(t, unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(ln, 1))
	sa, err := unix.Getsockname(ln)
	require.NoError(t, err)
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
	queued := func() (n, limit uint32) {
		info, err := unix.GetsockoptTCPInfo(ln, unix.IPPROTO_TCP, unix.TCP_INFO)
		require.NoError(t, err)
		return info.Unacked, info.Sacked
	}
	for i := uint32(0); ; i++ {
		n, limit := queued()
		if n > limit {
			return addr.String()
		}
		c := tcpSocket(t)
		require.NoError(t, unix.Connect(c, sa))
		WaitFor(t, "a connection in the accept queue", func() bool { n, _ := queued(); return n > i })
	}
}

// tcpSocket opens a blocking IPv4 TCP socket that the test closes at its end.
func tcpSocket(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}
