package netloop

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/socket"
)

// In steady state a Conn's message costs no allocation: not the read
// (into the worker's buffer), not Data, not the queued write (the issue's
// "0 allocations per dispatched event"). A running Loop is driven from
// the test's goroutine, which waits for each echo before the next;
// testing.AllocsPerRun counts every goroutine's allocations, the Loop's
// included.
func TestNoAllocationPerMessage(t *testing.T) {
	l := newLoop(t, eventloop.Config{})
	// The client end blocks, so that a read waits for the echo.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	unix.CloseOnExec(fds[0]) // not SOCK_CLOEXEC, which darwin lacks
	unix.CloseOnExec(fds[1])
	server, err := socket.AdoptUnixConn(fds[0])
	require.NoError(t, err)
	client := fds[1]
	t.Cleanup(func() { _ = server.Close(); _ = unix.Close(client) })
	_, err = Add(l, server, echoConn{}, Config{})
	require.NoError(t, err)
	start(t, l, nil)

	msg := []byte("0123456789abcdef")
	buf := make([]byte, len(msg))
	one := func() {
		_, err := unix.Write(client, msg)
		require.NoError(t, err)
		for got := 0; got < len(buf); {
			n, err := unix.Read(client, buf[got:])
			require.NoError(t, err)
			require.NotZero(t, n, "the echo ended early")
			got += n
		}
	}
	for range 100 { // warm up: buffers, the run queue, the wheel
		one()
	}
	if a := testing.AllocsPerRun(1000, one); a != 0 {
		t.Errorf("%v allocations per message", a)
	}
}

// A Conn stays within the 384-byte size class: an idle connection's
// memory is mostly its Conn (a proxied pair is two), and the next class
// up is 416 bytes. A field that crosses it should take the place of
// another, or move out to where it is needed (as the TLS session sits
// behind a pointer).
func TestConnSizeClass(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Conn{}), uintptr(384), "a Conn takes more than 384 bytes")
}
