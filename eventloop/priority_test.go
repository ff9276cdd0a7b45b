package eventloop

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/unipoll/unipoll/poll"
)

// order records the labels of the handlers the Loop calls, in order.
type order struct {
	mu  sync.Mutex
	got []string
}

func (o *order) add(s string) {
	o.mu.Lock()
	o.got = append(o.got, s)
	o.mu.Unlock()
}

func (o *order) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// labelled adds a Registration with a handler that records label and
// runs then (if not nil); it returns the Registration's SetReadiness.
func labelled(t *testing.T, l *Loop, o *order, label string, prio int, then func()) *poll.SetReadiness {
	t.Helper()
	src := newRegSource(t)
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, SourceFunc(func(*Loop, poll.Event) Action {
		o.add(label)
		if then != nil {
			then()
		}
		return Keep
	}), Priority(prio))
	require.NoError(t, err)
	return src.set
}

// Sources ready in the same iteration are called highest priority first,
// equal priorities in the order their events arrived.
func TestPriorityOrder(t *testing.T) {
	l := newLoop(t, Config{})
	o := &order{}
	prios := []int{0, 5, -3, 5, 2, 0}
	labels := []string{"a0", "b5", "c-3", "d5", "e2", "f0"}
	var sets []*poll.SetReadiness
	for i, p := range prios {
		sets = append(sets, labelled(t, l, o, labels[i], p, nil))
	}
	for _, s := range sets {
		require.NoError(t, s.SetReadiness(poll.Readable))
	}
	start(t, l, nil)
	eventually(t, "every call", func() bool { return len(o.list()) == len(labels) })
	require.Equal(t, []string{"b5", "d5", "e2", "a0", "f0", "c-3"}, o.list())
}

// With one call per iteration, priority holds across iterations: a source
// of higher priority that becomes ready goes before lower ones that were
// ready earlier and are still waiting, and among equals the earlier
// arrival goes first. None is lost.
func TestPriorityStrictAcrossIterations(t *testing.T) {
	l := newLoop(t, Config{MaxEventsPerIteration: 1})
	o := &order{}
	var h, l4 *poll.SetReadiness
	l4 = labelled(t, l, o, "L4", 0, nil)
	h = labelled(t, l, o, "H", 1, func() { require.NoError(t, l4.SetReadiness(poll.Readable)) })
	l1 := labelled(t, l, o, "L1", 0, func() { require.NoError(t, h.SetReadiness(poll.Readable)) })
	l2 := labelled(t, l, o, "L2", 0, nil)
	l3 := labelled(t, l, o, "L3", 0, nil)
	for _, s := range []*poll.SetReadiness{l1, l2, l3} {
		require.NoError(t, s.SetReadiness(poll.Readable))
	}
	start(t, l, nil)
	eventually(t, "every call", func() bool { return len(o.list()) == 5 })
	require.Equal(t, []string{"L1", "H", "L2", "L3", "L4"}, o.list())
}

func TestPriorityOptionIgnoresNil(t *testing.T) {
	l := newLoop(t, Config{})
	src := newRegSource(t)
	_, err := l.Add(src.reg, poll.Readable, poll.Edge, &recorder{}, nil, Priority(3), nil)
	require.NoError(t, err)
}
