package eventloop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/unipoll/unipoll/internal/testsupport"
	"github.com/unipoll/unipoll/poll"
	"github.com/unipoll/unipoll/socket"
)

// waitLimit bounds every wait for a condition: long, because the machine
// is shared and slow, and a failure shows as a timeout anyway.
const waitLimit = 20 * time.Second

// eventually is testsupport.WaitFor with this package's longer wait.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testsupport.WaitForWithin(t, waitLimit, what, cond)
}

// newLoop makes a Loop that the test closes at its end.
func newLoop(t testing.TB, c Config) *Loop {
	t.Helper()
	l, err := New(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// running is a Run in another goroutine.
type running struct {
	done   chan error
	cancel context.CancelFunc
}

// start runs l in a goroutine; stop (or the test's end) shuts it down and
// waits for Run to return.
func start(t testing.TB, l *Loop, h Handler) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{done: make(chan error, 1), cancel: cancel}
	go func() { r.done <- l.Run(ctx, h) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop shuts the Run down and returns its result; later calls return nil.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	if r.done == nil {
		return nil
	}
	r.cancel()
	select {
	case err := <-r.done:
		r.done = nil
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case <-time.After(waitLimit):
		t.Fatalf("Run did not return within %v of its context's end", waitLimit)
		return nil
	}
}

// pair returns a connected socket pair, closed at the test's end.
func pair(t testing.TB) (*socket.UnixConn, *socket.UnixConn) {
	t.Helper()
	a, b, err := socket.Pair()
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// drain reads c until it would block; it returns how many bytes it read.
func drain(c interface{ Read([]byte) (int, error) }) int {
	var buf [4096]byte
	total := 0
	for {
		n, err := c.Read(buf[:])
		total += n
		if err != nil || n == 0 {
			return total
		}
	}
}

// pipe returns a non-blocking pipe's two descriptors; the caller closes
// them. (pipe then fcntl, not pipe2, which darwin lacks; the tests start
// no process that could inherit them meanwhile.)
func pipe(t testing.TB) (r, w int) {
	t.Helper()
	var p [2]int
	require.NoError(t, unix.Pipe(p[:]))
	for _, fd := range p {
		unix.CloseOnExec(fd)
		require.NoError(t, unix.SetNonblock(fd, true))
	}
	return p[0], p[1]
}

var _ poll.Evented = poll.Fd(0)
