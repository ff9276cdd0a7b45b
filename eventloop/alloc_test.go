package eventloop

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// chanSource signals every call on a channel, so that the test can wait
// for the dispatch it caused.
type chanSource chan struct{}

func (c chanSource) Ready(*Loop, poll.Event) Action {
	c <- struct{}{}
	return Keep
}

// In steady state the Loop allocates nothing per dispatched event: not
// for a handler's event or a posted function (the issue's "0 allocations
// per dispatched event"; netloop's test does a Conn's message). A running
// Loop is driven from the test's goroutine, which waits for each dispatch
// before the next; testing.AllocsPerRun counts every goroutine's
// allocations, the Loop's included.
func TestNoAllocationPerEvent(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	called := make(chanSource, 1)
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, called)
	require.NoError(t, err)

	posted := make(chan struct{}, 1)
	task := func(*Loop) { posted <- struct{}{} }
	start(t, l, nil)

	cases := []struct {
		name string
		one  func()
	}{
		{"handler", func() {
			require.NoError(t, src.set.SetReadiness(poll.Readable))
			<-called
		}},
		{"post", func() {
			require.NoError(t, l.Post(task))
			<-posted
		}},
	}
	for _, c := range cases {
		for range 100 { // warm up: buffers, the run queue, the wheel
			c.one()
		}
		if a := testing.AllocsPerRun(1000, c.one); a != 0 {
			t.Errorf("%s: %v allocations per event", c.name, a)
		}
	}
}
