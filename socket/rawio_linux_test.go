//go:build linux

package socket

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// sysRead and sysWrite move the same bytes and report the same errors
// whether they make a raw system call (up to rawMax) or an ordinary one
// (above it, and for empty buffers).
func TestRawIOBothPaths(t *testing.T) {
	fds, err := sysSocketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	// Room for the largest message at once, so that one write takes it.
	for _, fd := range fds {
		require.NoError(t, unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4*rawMax))
		require.NoError(t, unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4*rawMax))
	}

	buf := make([]byte, rawMax+1)
	n, err := sysRead(fds[1], buf[:16])
	require.ErrorIs(t, err, unix.EAGAIN, "raw read of an empty socket")
	require.Zero(t, n)
	n, err = sysRead(fds[1], buf)
	require.ErrorIs(t, err, unix.EAGAIN, "ordinary read of an empty socket")
	require.Zero(t, n)

	for _, size := range []int{0, 1, 100, rawMax, rawMax + 1} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		n, err := sysWrite(fds[0], msg)
		require.NoError(t, err, "write %d", size)
		require.Equal(t, size, n, "write %d", size)
		got := 0
		for got < size {
			// Read in a buffer of the message's size, so the read takes
			// the same path as the write.
			m, err := sysRead(fds[1], buf[got:size])
			require.NoError(t, err, "read %d after %d", size, got)
			require.Positive(t, m)
			require.Equal(t, msg[got:got+m], buf[got:got+m], "read %d", size)
			got += m
		}
	}

	require.NoError(t, unix.Close(fds[1]))
	_, err = sysWrite(fds[0], []byte("x"))
	require.ErrorIs(t, err, unix.EPIPE, "raw write to a closed peer")
	n, err = sysRead(fds[0], buf[:16])
	require.NoError(t, err)
	require.Zero(t, n, "raw read at EOF")

	closed, err := sysSocketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Close(closed[0]))
	require.NoError(t, unix.Close(closed[1]))
	_, err = sysRead(closed[0], buf[:16])
	require.ErrorIs(t, err, unix.EBADF, "raw read of a closed descriptor")
	_, err = sysWrite(closed[0], buf[:16])
	require.ErrorIs(t, err, unix.EBADF, "raw write to a closed descriptor")
}
