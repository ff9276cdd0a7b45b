package eventloop

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// start runs l in a goroutine; Stop (or the test's end) shuts it down
// and waits for Run to return.
func start(t testing.TB, l *Loop, h Handler) *testsupport.Running {
	t.Helper()
	return testsupport.StartRun(t, waitLimit, func(ctx context.Context) error { return l.Run(ctx, h) })
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

// pipe is testsupport.Pipe: the caller closes the descriptors.
func pipe(t testing.TB) (r, w int) { return testsupport.Pipe(t) }

var _ poll.Evented = poll.Fd(0)
