package netloop

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/eventloop"
	"github.com/unipoll/unipoll/internal/testsupport"
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
func newLoop(t testing.TB, c eventloop.Config) *eventloop.Loop {
	t.Helper()
	l, err := eventloop.New(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// start runs l in a goroutine; Stop (or the test's end) shuts it down
// and waits for Run to return.
func start(t testing.TB, l *eventloop.Loop, h eventloop.Handler) *testsupport.Running {
	t.Helper()
	return testsupport.StartRun(t, waitLimit, func(ctx context.Context) error { return l.Run(ctx, h) })
}

// runtimeGosched lets other goroutines run in a polling wait.
func runtimeGosched() { runtime.Gosched() }

// quiesce lets the running Loop go through a few iterations, so that an
// event that should not come would have come.
func quiesce(t *testing.T, l *eventloop.Loop) {
	t.Helper()
	testsupport.Quiesce(t, waitLimit, func() uint64 { return l.Stats().Iterations },
		func() {
			_ = l.Post(func(*eventloop.Loop) {})
			// And the poller itself: with several workers, an idle one may
			// run the posted function while the poller stays in its Poll,
			// whose calls are what is counted.
			l.WakePollers(1)
		})
}

// pipe is testsupport.Pipe: the caller closes the descriptors.
func pipe(t testing.TB) (r, w int) { return testsupport.Pipe(t) }

// setLimit sets an rlimit field, whose type is uint64 on Linux and darwin
// and int64 on FreeBSD.
func setLimit[T ~int64 | ~uint64](field *T, n int) { *field = T(n) }
