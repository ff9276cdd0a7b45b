package eventloop

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slack is how late a timeout may run on this shared machine: the wheel
// promises one tick, the scheduler much less than that.
const slack = 2 * time.Second

// AfterFunc runs its function on the Loop, never before its delay, in
// deadline order, once each.
func TestAfterFuncAccuracyAndOrder(t *testing.T) {
	l := newLoop(t, Config{})
	start(t, l, nil)
	type fired struct {
		i  int
		at time.Duration
	}
	var mu sync.Mutex
	var got []fired
	begin := time.Now()
	delays := []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond}
	for i, d := range delays {
		_, err := l.AfterFunc(d, func(*Loop) {
			mu.Lock()
			got = append(got, fired{i, time.Since(begin)})
			mu.Unlock()
		})
		require.NoError(t, err)
	}
	eventually(t, "every function", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == len(delays) })
	mu.Lock()
	defer mu.Unlock()
	for k, f := range got {
		require.GreaterOrEqual(t, f.at, delays[f.i], "function %d ran early", f.i)
		require.Less(t, f.at, delays[f.i]+slack, "function %d ran late", f.i)
		if k > 0 {
			require.LessOrEqual(t, delays[got[k-1].i], delays[f.i], "out of deadline order: %v", got)
		}
	}
	require.Equal(t, uint64(len(delays)), l.Stats().Timers)
}

// cancel stops a function that has not run and says so; after it ran, or
// twice, cancel says false.
func TestAfterFuncCancel(t *testing.T) {
	l := newLoop(t, Config{})
	start(t, l, nil)
	var ran atomic.Int32
	cancel, err := l.AfterFunc(30*time.Millisecond, func(*Loop) { ran.Add(1) })
	require.NoError(t, err)
	require.True(t, cancel())
	require.False(t, cancel(), "cancelled twice")
	done := make(chan struct{})
	cancel2, err := l.AfterFunc(time.Millisecond, func(*Loop) { close(done) })
	require.NoError(t, err)
	<-done
	require.False(t, cancel2(), "cancel after it ran")
	// The cancelled one's deadline passes without it.
	probe := make(chan struct{})
	_, err = l.AfterFunc(60*time.Millisecond, func(*Loop) { close(probe) })
	require.NoError(t, err)
	<-probe
	require.Zero(t, ran.Load())
}

// AfterFunc from many goroutines at once, and from the functions
// themselves (a periodic task re-arming itself), with several workers.
func TestAfterFuncConcurrent(t *testing.T) {
	l := newLoop(t, Config{Workers: 3})
	start(t, l, nil)
	var ran, ticks atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				cancel, err := l.AfterFunc(time.Duration(i%5)*time.Millisecond, func(*Loop) { ran.Add(1) })
				require.NoError(t, err)
				if i%10 == 0 && cancel() {
					ran.Add(1) // counted as if it ran: it never will
				}
			}
		}()
	}
	var tick func(*Loop)
	tick = func(l *Loop) {
		if ticks.Add(1) < 5 {
			_, _ = l.AfterFunc(2*time.Millisecond, tick)
		}
	}
	_, err := l.AfterFunc(0, tick)
	require.NoError(t, err)
	wg.Wait()
	eventually(t, "every function", func() bool { return ran.Load() == 800 && ticks.Load() == 5 })
}

func TestAfterFuncErrors(t *testing.T) {
	l, err := New(Config{})
	require.NoError(t, err)
	_, err = l.AfterFunc(-1, func(*Loop) {})
	require.ErrorIs(t, err, ErrInvalidArgument)
	cancel, err := l.AfterFunc(time.Second, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.False(t, cancel())
	require.NoError(t, l.Close())
	cancel, err = l.AfterFunc(time.Second, func(*Loop) {})
	require.ErrorIs(t, err, ErrClosed)
	require.False(t, cancel())
	var zero Loop
	_, err = zero.AfterFunc(time.Second, func(*Loop) {})
	require.ErrorIs(t, err, ErrInvalidArgument)
}
