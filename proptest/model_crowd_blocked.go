//go:build linux

package proptest

// The crowd (model_crowd.go) made ready from another goroutine while the
// world blocks in Poll(-1).

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/unipoll/unipoll/poll"
)

// CrowdBurstBlocked: another goroutine sets readiness on a range of members
// while the world blocks in Poll(-1) (at once, or once the poller sleeps).
func (w *world) CrowdBurstBlocked(t *rapid.T) {
	c := w.needCrowd(t)
	idx, desc := c.drawRange(t)
	bits := poll.Ready(rapid.Uint32Range(1, 31).Draw(t, "crowd readiness"))
	ends := w.mustReturn()
	for _, i := range idx {
		if m := c.m[i]; !m.closed && m.armed && bits&m.interest != 0 {
			ends = true
		}
	}
	if !ends {
		t.Skip("nothing would end Poll(-1)")
	}
	b := &crowdBurst{c: c, idx: idx, desc: desc, bits: bits, done: make(chan struct{})}
	b.atOnce = rapid.IntRange(0, 3).Draw(t, "when (0: at once, else once the poller sleeps)") == 0
	capacity := rapid.IntRange(1, 64).Draw(t, "capacity")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.probe = probeThisThread()
	w.pollDuring(t, capacity, -1, b)
}

// crowdBurst is the other goroutine's work in CrowdBurstBlocked.
type crowdBurst struct {
	c      *crowd
	idx    []int
	desc   string
	bits   poll.Ready
	atOnce bool
	probe  *threadProbe
	ret    atomic.Bool
	done   chan struct{}
	mu     sync.Mutex
	errs   []string
}

func (b *crowdBurst) start(p *poll.Poll) {
	go func() {
		defer close(b.done)
		if !b.atOnce {
			b.probe.waitAsleep(blockLimit, &b.ret)
		}
		for _, i := range b.idx {
			m := b.c.m[i]
			err := m.sr.SetReadiness(b.bits)
			if (err == nil) == m.closed {
				b.mu.Lock()
				b.errs = append(b.errs, fmt.Sprintf("SetReadiness of crowd member %d (closed %v) = %v", i, m.closed, err))
				b.mu.Unlock()
			}
		}
	}()
}

func (b *crowdBurst) returned() { b.ret.Store(true) }

func (b *crowdBurst) join(t *rapid.T, w *world) {
	select {
	case <-b.done:
	case <-time.After(blockLimit):
		w.fatalf(t, "the burst of SetReadiness on %s did not end within %v", b.desc, blockLimit)
	}
	w.logf("during Poll#%d, from another goroutine: %s.SetReadiness(%s)", w.calls+1, b.desc, b.bits)
	if len(b.errs) > 0 {
		w.fatalf(t, "burst: %v", b.errs)
	}
	for _, i := range b.idx {
		if m := b.c.m[i]; !m.closed {
			m.inflight |= b.bits
		}
	}
}
