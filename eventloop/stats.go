package eventloop

import "sync/atomic"

// Stats are a Loop's counters since New.
type Stats struct {
	// Iterations is the number of Poll calls Run made.
	Iterations uint64
	// Calls is the number of calls of SourceHandler.Ready.
	Calls uint64
	// Tasks is the number of posted functions run.
	Tasks uint64
	// Timers is the number of AfterFunc functions that ran (netloop's
	// Conn deadline checks among them).
	Timers uint64
	// Stale counts events for sources that had been removed by the time
	// the event was routed or its turn came (their token's generation was
	// over): dropped, as they must be.
	Stale uint64
	// Dropped counts queued calls dropped because their source was
	// disarmed or removed before its turn came.
	Dropped uint64
	// ActionErrors counts Again and Disarm actions whose Reregister
	// failed; each removed its source.
	ActionErrors uint64
	// WorkerCalls is, per worker of the last Run, the handler calls it
	// made: how evenly several workers shared the load.
	WorkerCalls []uint64
}

type stats struct {
	iterations, tasks, timers, stale, dropped, actionErrors atomic.Uint64
	callsDone                                               atomic.Uint64 // calls of the workers of earlier Runs
}

// counter is a counter with one writer: it increments with a load and a
// store, not a read-modify-write, and others may read it at any time.
type counter struct{ v atomic.Uint64 }

func (c *counter) inc()         { c.v.Store(c.v.Load() + 1) }
func (c *counter) load() uint64 { return c.v.Load() }

// Stats returns the Loop's counters. Safe from any goroutine at any time.
func (l *Loop) Stats() Stats {
	if l == nil || l.p == nil {
		return Stats{}
	}
	s := &l.stats
	st := Stats{
		Iterations:   s.iterations.Load(),
		Calls:        s.callsDone.Load(),
		Tasks:        s.tasks.Load(),
		Timers:       s.timers.Load(),
		Stale:        s.stale.Load(),
		Dropped:      s.dropped.Load(),
		ActionErrors: s.actionErrors.Load(),
	}
	l.mu.Lock()
	for _, w := range l.lastWorkers {
		c := w.calls.load()
		st.WorkerCalls = append(st.WorkerCalls, c)
		if l.active {
			st.Calls += c - w.accounted
		}
	}
	l.mu.Unlock()
	return st
}
