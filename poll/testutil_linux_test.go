package poll

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// eventFd returns a non-blocking, close-on-exec eventfd with counter 0: it is
// writable and not readable until eventFdAdd.
func eventFd(t testing.TB) int {
	t.Helper()
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	require.NoError(t, err, "eventfd")
	return own(t, fd)
}

// eventFdAdd adds v to an eventfd's counter, making it readable.
func eventFdAdd(t testing.TB, fd int, v uint64) {
	t.Helper()
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	n, err := unix.Write(fd, b[:])
	require.NoError(t, err, "write(eventfd)")
	require.Equal(t, 8, n)
}
