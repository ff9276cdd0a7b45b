package testsupport

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A producer runs a window ahead of the consumer without waiting, parks at
// the window, and goes on once the consumer publishes a count that allows
// it.
func TestCredit(t *testing.T) {
	const window = 4
	c := NewCredit(window)
	for i := range uint64(window) {
		c.Take(i) // returns at once: within the window
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Take(window)
	}()
	WaitFor(t, "the producer to park", c.waiting.Load)
	select {
	case <-done:
		t.Fatal("Take returned a window ahead of a consumer that has published nothing")
	default:
	}
	c.Publish(1)
	WaitFor(t, "the producer to go on", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	require.False(t, c.waiting.Load())
}
