package testsupport

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Eventually sees a condition that another goroutine makes true, and gives
// up on one that never holds only once its deadline has passed.
func TestEventually(t *testing.T) {
	var flag atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		flag.Store(true)
	}()
	require.True(t, Eventually(EventWait, flag.Load))
	<-done

	const d = 30 * time.Millisecond
	start := time.Now()
	require.False(t, Eventually(d, func() bool { return false }))
	require.GreaterOrEqual(t, time.Since(start), d)

	looks := 0
	require.True(t, Eventually(0, func() bool { looks++; return true }))
	require.Equal(t, 1, looks, "a condition that holds is looked at once")
}

// WaitFor returns once the condition holds.
func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	WaitFor(t, "three increments", func() bool { return n.Load() == 3 })
	require.Equal(t, int32(3), n.Load())
}

// WaitForWithin fails the test, by FailNow, once its own deadline has
// passed without the condition.
func TestWaitForWithin(t *testing.T) {
	const d = 30 * time.Millisecond
	start := time.Now()
	ft := &failNowT{TB: t}
	done := make(chan struct{})
	go func() { // FailNow ends the goroutine it is called in
		defer close(done)
		WaitForWithin(ft, d, "nothing", func() bool { return false })
	}()
	<-done
	require.True(t, ft.failed, "a condition that never holds must fail the test")
	require.GreaterOrEqual(t, time.Since(start), d)
}

// failNowT records a failure instead of failing the test it wraps.
type failNowT struct {
	testing.TB
	failed bool
}

func (f *failNowT) Helper()               {}
func (f *failNowT) Errorf(string, ...any) { f.failed = true }
func (f *failNowT) FailNow()              { f.failed = true; runtime.Goexit() }

// OpenFds counts a pipe's two descriptors while they are open.
func TestOpenFds(t *testing.T) {
	before := OpenFds(t)
	require.Equal(t, before, OpenFdsNow())
	var p [2]int
	require.NoError(t, unix.Pipe(p[:]))
	require.Equal(t, before+2, OpenFds(t))
	require.NoError(t, unix.Close(p[0]))
	require.NoError(t, unix.Close(p[1]))
	require.Equal(t, before, OpenFds(t))
}

// BenchmarkLatencyChan runs BenchCPU and Latency on a wake-up through a Go
// channel, so that the helpers run wherever benchmarks run (CI runs each
// once).
func BenchmarkLatencyChan(b *testing.B) {
	ch := make(chan struct{}, 1)
	cpu := BenchCPU(b)
	Latency(b, Waiter{
		Wait: func() error { <-ch; return nil },
		Wake: func() error { ch <- struct{}{}; return nil },
	})
	cpu()
}
