//go:build unix

package sigrelay

import (
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/unipoll/unipoll/internal/testsupport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type counter struct{ n atomic.Int64 }

func (c *counter) Deliver(syscall.Signal) { c.n.Add(1) }

// Every subscriber of a signal sees a delivery; one goroutine serves a
// signal whatever the number of subscribers, and leaves with the last.
func TestFanOutAndLifecycle(t *testing.T) {
	a, b, c := &counter{}, &counter{}, &counter{}
	Subscribe(syscall.SIGUSR1, a)
	Subscribe(syscall.SIGUSR1, b)
	Subscribe(syscall.SIGUSR2, c)
	require.Equal(t, 2, Active())
	require.Equal(t, 2, Subscribed(syscall.SIGUSR1))

	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGUSR1))
	testsupport.WaitFor(t, "both subscribers", func() bool { return a.n.Load() == 1 && b.n.Load() == 1 })
	require.Zero(t, c.n.Load(), "a SIGUSR1 reached a SIGUSR2 subscriber")

	Unsubscribe(syscall.SIGUSR1, a)
	Unsubscribe(syscall.SIGUSR1, a) // not subscribed any more: nothing
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGUSR1))
	testsupport.WaitFor(t, "the remaining subscriber", func() bool { return b.n.Load() == 2 })
	require.Equal(t, int64(1), a.n.Load())

	Unsubscribe(syscall.SIGUSR1, b)
	Unsubscribe(syscall.SIGUSR2, c)
	require.Zero(t, Active())
	goleak.VerifyNone(t) // Unsubscribe of the last waits for the goroutine
}
